"""``rates run``: advance one algorithm (several seeds at once) and write a Trajectory JSON.

Everything is validated before the first step (data, separability, gamma's solver, every option), so bad
input exits with code 2 and one line naming the option, and no output file is created. The options' values
are checked by :mod:`rates.numeric.run_parameters`, as ``rates fit``, ``rates sweep`` and ``rates report``
check theirs.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import typing
from pathlib import Path
from typing import Optional

import typer

from rates.errors import InputError
from rates.numeric.data import CSV_LAYOUT
from rates.numeric.run_parameters import check_options, parse_seeds

if typing.TYPE_CHECKING:
    from rates.numeric.engine import RunSpec
    from rates.numeric.run_config import RunConfig


SEED_MEANING = ("--seeds: reshuffling streams (which samples form each mini-batch; nothing in a full-batch run); "
                "--data-seeds: draws of a generated dataset (presets, gaussian:...); files and orthogonal data "
                "ignore them")


def seed_plan(seed: int, seeds: Optional[str], data_seeds: Optional[str]) -> tuple[list[int], list[int]]:
    """(data draws, reshuffling streams): ``--data-seeds`` defaults to ``--seed``, ``--seeds`` to ``--seed``."""
    return parse_seeds(seed, data_seeds, "--data-seeds"), parse_seeds(seed, seeds, "--seeds")


def refuse_identical_replicates(specs: list[RunSpec], n: int, shuffles: list[int]) -> None:
    """Several reshuffling streams of a full-batch run would be byte-identical copies: refuse them (exit 2).

    Full-batch runs from ``W_0 = 0`` use no random numbers, so their reshuffling seed changes nothing; counting
    the copies as replicates would narrow the confidence interval without any new information.
    """
    if len(shuffles) < 2:
        return
    from rates.numeric.engine import resolve_spec

    if resolve_spec(specs[0], n).recipe.source == "full":
        raise InputError("--seeds", f"{specs[0].algo} is full batch, deterministic given the data: {len(shuffles)} "
                                    "reshuffling streams would be identical runs; vary the data with --data-seeds")


def simulate_plan(make_spec, data: str, data_seeds: list[int], shuffles: list[int], steps: int, checkpoints: int,
                  device: str, engine: str = "auto", progress: bool = False):
    """Run every (data draw, reshuffling stream) pair in one :func:`rates.numeric.engine.simulate_draws` call (runs of
    one recipe on draws of one shape advance together, each on its own data).

    The memory/time estimate is checked on the first draw (one draw tells the size of all) before any step, and
    a diverged run (NaN gaps) is refused before anything is saved. ``meta`` keeps the engine's timing of the
    whole call (every draw) and adds ``call_wall_s``: the whole of this function (drawing the data, the max
    margins, stepping, measures).
    """
    from rates import budget
    from rates.numeric.data import (
        parse_data,  # here, not at the top: torch costs seconds that `rates --help` must not pay
    )
    from rates.numeric.engine import prepare_draw, prepare_draws, resolve_spec, simulate_draws, solve_margins
    from rates.numeric.trajectory import Trajectory, require_finite

    started = time.perf_counter()
    dataset = parse_data(data, seed=data_seeds[0])
    specs = [make_spec(s) for s in shuffles]
    refuse_identical_replicates(specs, dataset.n, shuffles)
    estimate = budget.estimate_linear_runs(len(data_seeds) * len(shuffles), steps, checkpoints,
                                           dataset.n, dataset.k, dataset.d, calls=1)
    if estimate.seconds > budget.ANNOUNCE_SECONDS:  # worth announcing? measure this engine's rate first
        seconds = budget.measured_seconds(
            lambda s, specs=specs, dataset=dataset: simulate_draws(
                specs, [dataset] * len(data_seeds), s, checkpoints=min(checkpoints, s), device=device,
                engine=engine),
            steps)
        estimate = dataclasses.replace(estimate, seconds=seconds)
    budget.check(estimate, option="--data-seeds" if len(data_seeds) > 1 else "--seeds")
    # every draw's max margins are solved before the runs: by this process, or shared with a second one when
    # the second draw (the first pays the imports) says that the rest would take long
    norms = [resolve_spec(spec, dataset.n).algorithm.norm for spec in specs]
    datasets = [solve_margins(dataset, norms)]  # the first draw, already loaded above
    second = time.perf_counter()
    datasets += [prepare_draw(data, seed, norms) for seed in data_seeds[1:2]]
    rest = data_seeds[2:]
    datasets += prepare_draws(data, rest, norms, serial_seconds=(time.perf_counter() - second) * len(rest))
    trajectory = simulate_draws(specs, datasets, steps, checkpoints=checkpoints, device=device, progress=progress,
                                engine=engine)
    for run, (data_seed, _) in zip(trajectory.runs, itertools.product(data_seeds, shuffles)):
        run.config = run.config.with_draw(data_seed)
    require_finite(trajectory.runs)
    meta = {**trajectory.meta, "data_seeds": data_seeds, "seeds": shuffles, "seed_meaning": SEED_MEANING}
    meta["data"] = {**meta.get("data", {}), "spec": data}
    meta["call_wall_s"] = time.perf_counter() - started
    return Trajectory(trajectory.runs, meta)


def simulate_steps(simulate, steps: Optional[int], budget_steps: int, budget_seconds: float, checkpoints: int):
    """``(trajectory, None)`` for a fixed step count; for ``--steps auto`` (``steps`` None) the stages of
    :func:`rates.studies.auto_steps.run_until_window` (plan and stages on stderr) and their outcome."""
    if steps is not None:
        return simulate(steps), None
    import sys

    from rates.studies.auto_steps import run_until_window

    return run_until_window(simulate, budget_steps, budget_seconds, checkpoints,
                            echo=lambda line: print(line, file=sys.stderr, flush=True))


def _schedule_text(config: RunConfig) -> str:
    """``a=1/2`` for the polynomial family (as it always read), the schedule's expression otherwise."""
    if config.general_schedule:
        return f"schedule={config.schedule.text}"
    return f"a={config.a}"


def check_algorithm_options(algo: str, norm: Optional[str], batch: Optional[int], momentum: Optional[float],
                            vr: bool) -> None:
    """The algorithm's name and the options its registry entry checks on their own (the data's n is checked
    with the data): before the engine's imports, so a bad name is refused at once."""
    from rates.numeric.algorithms import resolve_algorithm

    resolve_algorithm(algo, norm=norm, batch=batch, momentum=momentum, vr=vr)


def summary(trajectory) -> str:
    """Short report: gamma with its solver and certified accuracy, final t, gap and margin per run."""
    lines = []
    for run in trajectory.runs:
        c, g = run.config, run.gamma
        lines.append(
            f"{c.algo} (norm {c.norm}, family {c.family}) {_schedule_text(c)} eta0={c.eta0} "
            f"seed={c.seed} "
            f"data_seed={c.recorded_data_seed}"
            f"  gamma={g['value']:.12g} [{g['norm']}-norm max margin, computed by {g['solver']}, "
            f"accuracy {g['accuracy']:.1e}]"
            f"  t={int(run.t[-1])}  gap={run.gap[-1]:.6g}  margin={run.margin[-1]:.12g}  log L={run.log_loss[-1]:.6g}")
    meta = trajectory.meta
    line = (f"{len(trajectory.runs)} run(s) x {meta['steps']} steps on {meta['device']} in {meta['wall_s']:.2f} s "
            f"({meta['config_steps_per_s']:.0f} config-steps/s")
    if "cpu_s" in meta:
        line += f"; {meta['cpu_s']:.2f} CPU s"
    line += ")"
    if "call_wall_s" in meta:
        line += f"; {meta['call_wall_s']:.2f} s with the data draws and max margins"
    lines.append(line)
    return "\n".join(lines)


def run(
    algo: str = typer.Option(..., "--algo", help="{ALGORITHMS}"),
    norm: Optional[str] = typer.Option(None, "--norm", help="for --algo nsd: {NORMS}"),
    a: Optional[str] = typer.Option(None, "--a", help="schedule exponent a in (0, 1]: eta_t = eta_0 (t+2)^(-a) "
                                    "(or --schedule)"),
    schedule: Optional[str] = typer.Option(None, "--schedule", help="the learning rate as an expression in the step "
                                           "t (from 0) and eta0, instead of --a: e.g. 'eta0/((t+2)*log(t+2))', "
                                           "'Min(eta0*(t+1)/100, eta0/sqrt(t+2))' (log, exp, sqrt, Min, Max, "
                                           "Piecewise, sin, cos, floor, ceiling, Abs)"),
    eta0: float = typer.Option(1.0, "--eta0", help="eta_0 > 0"),
    steps: str = typer.Option(..., "--steps", help="number of steps >= 1, or auto: run in stages (10x longer, or sized "
                              "by the entry once seen) from the shortest run that can have a window, until the "
                              "comparator's window is reached past the observable entry (the plan is printed "
                              "first), within --budget-steps and --budget-seconds"),
    budget_steps: int = typer.Option(1_000_000, "--budget-steps", help="with --steps auto: the most steps of one "
                                     "stage (>= 10000)"),
    budget_seconds: float = typer.Option(900.0, "--budget-seconds", help="with --steps auto: the time all stages "
                                         "together may take (> 0); a stage that would pass it is not started"),
    data: str = typer.Option("default", "--data",
                             help="PRESET ({PRESETS}) | gaussian:k=..,d=..,per_class=..[,sigma=..] | "
                                  "orthogonal:counts=.. | sklearn:digits|wine|breast_cancer|iris (bundled) | "
                                  "FILE.npz (H or X, y) | FILE.csv (features, then integer label; see below) | "
                                  "FILE.arff | libsvm:FILE; append +standardize (centre, unit variance) or +scale "
                                  "(unit variance only), e.g. sklearn:wine+scale"),
    batch: Optional[int] = typer.Option(None, "--batch",
                                        help="batch size b dividing n (random reshuffling); omit for full batch"),
    momentum: Optional[float] = typer.Option(None, "--momentum", help="momentum beta in [0, 1)"),
    vr: bool = typer.Option(False, "--vr", help="SVRG-style variance reduction (needs --batch b < n)"),
    seed: int = typer.Option(0, "--seed", help="seed of the reshuffling, and of the data draw unless --data-seeds"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="several reshuffling streams: 0..4 or 0,3,7 "
                                        "(refused for full-batch runs, which they would not change)"),
    data_seeds: Optional[str] = typer.Option(None, "--data-seeds", help="several draws of a generated dataset: "
                                             "0..4 or 0,3,7 (default: --seed)"),
    device: str = typer.Option("auto", "--device",
                               help="{DEVICES} | cuda:I (auto: cuda when available and the runs are large)"),
    engine: str = typer.Option("auto", "--engine",
                               help="{ENGINES}: fused runs compiled CPU kernels, gemm the full-batch gradient as two "
                               "BLAS matrix products per step (large data sets), torch the batched torch program, "
                               "graph that program replayed as CUDA graphs (cuda only); auto picks fused on the CPU "
                               "(gemm for full-batch runs from k d n = 2e5 on, SignGD from 1.5e5), graph on cuda"),
    polar: str = typer.Option("exact", "--polar", help="spectral directions: {POLAR_METHODS} (exact: an SVD; "
                              "newton-schulz: Muon's iteration)"),
    checkpoints: int = typer.Option(60, "--checkpoints", help="number of log-spaced checkpoints >= 2"),
    adam_beta1: float = typer.Option(0.9, "--adam-beta1", help="Adam beta1 in [0, 1)"),
    adam_beta2: float = typer.Option(0.999, "--adam-beta2", help="Adam beta2 in [0, 1)"),
    adam_eps: float = typer.Option(0.0, "--adam-eps", help="Adam eps >= 0 (0 as in SIGNADAM Thm 6.3)"),
    out: str = typer.Option(..., "--out", help="Trajectory JSON to write"),
    keep_weights: str = typer.Option("none", "--keep-weights", help="also write the iterates W_t: none, final "
                                     "(W at the last step) or checkpoints (W_t at every checkpoint)"),
    init_scale: float = typer.Option(0.0, "--init-scale", help="W_0 = init-scale x N(0, 1) entries, seeded by "
                                     "--seed (>= 0; 0: W_0 = 0, as the linear theorems assume)"),
    progress: bool = typer.Option(True, "--progress/--no-progress",
                                  help="progress bar with ETA on stderr (drawn only on a terminal)"),
    side_measures: bool = typer.Option(False, "--side-measures", help="on large data (n(k-1) kd > 1e5) also solve "
                                       "the max margins of the norms other than the run's (up to 30 s each) for the "
                                       "cosines and margin errors in those norms; small data always get them"),
) -> None:
    """Run an optimiser from W = 0 (or a seeded Gaussian W_0, --init-scale) and record gap, margins, log-loss
    and ||W|| at log-spaced checkpoints."""
    from rates.numeric.engine import RunSpec
    from rates.numeric.trajectory import save
    from rates.progress import wanted
    from rates.schedule import schedule_from_options
    from rates.studies.auto_steps import check_budget, parse_steps

    fixed_steps = parse_steps(steps)
    if fixed_steps is None:
        check_budget(budget_steps, budget_seconds)
    learning_rate = schedule_from_options(a, schedule)
    check_options(dict(steps=fixed_steps or 1, seed=seed, eta0=eta0, batch=batch, momentum=momentum, device=device,
                       engine=engine, polar=polar, checkpoints=checkpoints, seeds=seeds, data_seeds=data_seeds))
    check_algorithm_options(algo, norm, batch, momentum, vr)
    if Path(out).is_dir():  # checked now: os.replace onto a directory would fail only after the whole run
        raise InputError("--out", f"must be a file path, got the directory {out!r}")
    draws, shuffles = seed_plan(seed, seeds, data_seeds)
    from rates.numeric.run_parameters import check
    from rates.numeric.trajectory import KEEP_WEIGHTS

    if keep_weights not in KEEP_WEIGHTS:
        raise InputError("--keep-weights", f"must be one of {', '.join(KEEP_WEIGHTS)}, got {keep_weights!r}")
    init_scale = check("init_scale", init_scale, "--init-scale")

    def make_spec(shuffle: int) -> RunSpec:
        return RunSpec(algo=algo, schedule=learning_rate, eta0=eta0, seed=shuffle, norm=norm, batch=batch,
                       momentum=momentum, vr=vr, adam_beta1=adam_beta1, adam_beta2=adam_beta2, adam_eps=adam_eps,
                       polar=polar, init_scale=init_scale)

    from rates.numeric.measures import large_side_measures

    with large_side_measures(side_measures):
        trajectory, outcome = simulate_steps(
            lambda count: simulate_plan(make_spec, data, draws, shuffles, count, checkpoints, device, engine=engine,
                                        progress=wanted(progress)),
            fixed_steps, budget_steps, budget_seconds, checkpoints)
    trajectory.meta["command"] = "rates run"
    for kept_run in trajectory.runs:
        kept_run.keep_weights = keep_weights
    save(trajectory, out)
    typer.echo(summary(trajectory))
    if outcome is not None:
        typer.echo(outcome.text())
    from rates.numeric.data import transform_effect

    effect = transform_effect(data, draws[0])
    if effect is not None:
        typer.echo(effect)
    typer.echo(f"wrote {out}")


run.__doc__ += "\n\n" + CSV_LAYOUT


def register(app: typer.Typer) -> None:
    app.command("run")(run)
