"""``rates tightness --algo signgd --a 0.3 [--budget N] [--seed S] [--steps T] [--json]``: worst-case rate search.

Searches small datasets (``||h_i||_1 <= 1``, n <= 6, k <= 3, d <= 3) for the slowest-decaying margin gap of a
full-batch algorithm (:mod:`rates.judge.tightness`) and prints the worst empirical exponent found (fit window and 95%
interval) against the bound's exponent (``rates predict``, with its source). Reproducible: the budget counts
engine runs and all randomness comes from ``--seed``. Exit 0 whatever the answer (a search result is not a
check); 2 on bad input.
"""

from __future__ import annotations

import json
import sys

import typer

from rates.errors import InputError

MIN_SEARCH_STEPS = 12_000  # as rates.judge.tightness.search_worst_rate requires
SEARCHED_FAMILIES = ("nsd", "adam")


def tightness(
    algo: str = typer.Option(..., "--algo", help="full-batch algorithm: {FULL_BATCH_ALGORITHMS}"),
    a: str = typer.Option(..., "--a", help="schedule exponent a in (0, 1] of eta_t = (t+2)^-a"),
    budget: int = typer.Option(12, "--budget", help="engine runs (datasets evaluated), >= 1"),
    seed: int = typer.Option(0, "--seed", help="seed of every random choice of the search"),
    steps: int = typer.Option(20000, "--steps", help="steps per run, >= 12000"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Search small datasets for the slowest margin-gap decay and compare it with the bound's exponent."""
    from cli.run import check_algorithm_options
    from rates.schedule import parse_exponent_fraction

    if budget < 1:
        raise InputError("--budget", f"must be an integer >= 1, got {budget}")
    if seed < 0:
        raise InputError("--seed", f"must be an integer >= 0 (a numpy seed), got {seed}")
    parse_exponent_fraction(a, "--a")  # these before sympy and the engine are imported (seconds)
    try:
        check_algorithm_options(algo, None, None, None, False)
    except InputError as err:
        _refuse_as_algo(algo, err)
    # rates.judge.tightness checks these too, after sympy and the engine: here they are refused at once
    if steps < MIN_SEARCH_STEPS:
        raise InputError("steps", f"must be >= {MIN_SEARCH_STEPS} (the late window starts near t = 1000 and needs a "
                                  f"decade), got {steps}")
    from rates.numeric.algorithms import resolve_algorithm

    if resolve_algorithm(algo, None, n=6, batch=None, momentum=None, vr=False).family not in SEARCHED_FAMILIES:
        raise InputError("algo", f"the search covers full-batch algorithms ({', '.join(SEARCHED_FAMILIES)} "
                                 f"families); got {algo!r}")
    from rates.judge.tightness import search_worst_rate
    from rates.symbolic.theorems import predict  # noqa: F401  (import errors surface before the search starts)

    def progress(evaluation, candidate, best):
        if not as_json:
            scored = candidate.exponent == candidate.exponent  # nan when the comparator had no fit
            found = candidate.label + (f", r_hat = {candidate.exponent:.3f}" if scored else "")
            print(f"  run {evaluation + 1}/{budget}: {found}; worst so far "
                  f"{'-' if best is None else f'{best.exponent:.3f}'}", file=sys.stderr)

    try:
        result = search_worst_rate(algo, a, budget=budget, seed=seed, steps=steps, progress=progress)
    except InputError as err:
        _refuse_as_algo(algo, err)
    if as_json:
        print(json.dumps(result.to_json(), indent=1))
        return
    worst = result.worst
    print(f"algorithm {result.algo}, a = {result.a}, seed {result.seed}, budget {result.budget} runs of {result.steps} "
          f"steps ({result.scored} with a decided comparator verdict)")
    print(f"bound exponent r = {result.bound_exponent} (log power {result.bound_log_power}) "
          f"[rates predict: {_source(algo, a)}]")
    if worst is not None:
        print(f"worst empirical exponent r_hat = {worst.exponent:.3f} (95% CI [{worst.ci[0]:.3f}, {worst.ci[1]:.3f}], "
              f"{worst.window}); bound's local exponent on that window {worst.bound_local:.3f}; comparator: "
              f"{worst.label} ({worst.reason})")
        print(f"worst dataset: n = {len(worst.y)}, k = {worst.k}, d = {worst.H.shape[1]}, gamma = {worst.gamma:.4g}, "
              f"y = {worst.y.tolist()}, H = {json.dumps([[round(v, 6) for v in row] for row in worst.H.tolist()])}")
    print(f"verdict: {result.verdict}")


def _source(algo: str, a: str) -> str:
    """The source ``rates predict`` cites for the algorithm's full-batch rate (SIGNADAM for entry-wise norms,
    MINIBATCH at b = n for Schatten norms such as spectral-gd's), never a fixed text."""
    from cli.predict import prediction_source
    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.schedules import parse_exponent
    from rates.symbolic.theorems import predict

    config = resolve_algorithm(algo, None, n=6, batch=None, momentum=None, vr=False)
    return prediction_source(predict(config, parse_exponent(a)))


_OPTIONS = ("--algo", "--a", "--budget", "--seed", "--steps")


def register(app: typer.Typer) -> None:
    app.command("tightness")(tightness)


def _refuse_as_algo(algo: str, err: InputError) -> None:
    """Re-raise ``err``; one about an option of rates run that this command does not have (nsd's --norm) is
    said against --algo."""
    if err.option in _OPTIONS:
        raise err
    from cli.help_lists import full_batch_algorithms

    raise InputError("--algo", f"{algo}: {err.message}; rates tightness has no {err.option}: choose an "
                               f"algorithm with its own norm ({full_batch_algorithms()})") from None
