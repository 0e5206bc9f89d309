"""``rates fit``: fit the margin gap's rate of a Trajectory (read or run) and judge it against the theorem.

Prints, per configuration: the replicates (independent of given), the hypothesis gate (which theorem covers
the run and each hypothesis with its numbers), the predicted rate with its source, the bound's slope envelope
over the window, the fitted slope ± bootstrap error with its window, the fitted log power, the rebuilt t0/t1
with the data's constants, and the verdict (docs/design.md, "Interfaces"; rules in :mod:`rates.judge.compare` and
:func:`rates.studies.fitting.fit_group`). Exit code 1 when a verdict is ``violated``; 0 for every other verdict
(``inconclusive``, ``no-theorem``, ``not-applicable`` included); 2 on bad input.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
import typing
from pathlib import Path
from typing import Optional

import typer

from cli.run import check_algorithm_options, parse_seeds, seed_plan, simulate_plan, simulate_steps
from cli.run import run as run_command
from rates.errors import InputError
from rates.judge.compare import DEFAULT_TOLERANCE, choose_window, measurement_lines, parse_window
from rates.numeric.data import CSV_LAYOUT
from rates.numeric.run_parameters import check_options

if typing.TYPE_CHECKING:
    from rates.numeric.trajectory import Run
    from rates.studies.fitting import FitRecord

PLOT_LIMIT = 1e300  # the log axis pads its limits by a factor of 2: larger gaps overflow float64


def _check_plottable(runs) -> None:
    """Refuse, before drawing, gaps that no axis can hold (a hand-made file: no run produces them)."""
    import numpy as np

    largest = max((float(np.max(np.abs(run.gap))) for run in runs if len(run.gap)), default=0.0)
    if largest > PLOT_LIMIT:
        raise InputError("--plot", f"the margin gaps reach {largest:.3g}, beyond what a log axis can draw "
                                   f"(<= {PLOT_LIMIT:g}); drop --plot to fit without a figure")


def _plot_path(base: Path, slug: str, several: bool) -> Path:
    return base.with_name(f"{base.stem}_{slug}{base.suffix}") if several else base


def describe(record: FitRecord) -> str:
    """The human-readable verdict block: every number with its source, window and uncertainty."""
    from rates.studies.verdict_table import source_text

    v, pred = record.verdict, record.prediction
    seeds = ", ".join(str(s) for s in record.seeds)
    lines = [f"{record.title}  (seeds {seeds})"]
    if record.replicates is not None:
        rep = record.replicates
        lines.append(f"  replicates     : {rep['independent']} independent of {rep['runs']} run(s) ({rep['varies']})")
    if record.gate is not None:
        gate = record.gate
        family = "none" if gate.family is None else f"{gate.family.name} [{gate.family.source.seed} " \
                                                    f"{gate.family.source.theorem}]"
        if gate.family is not None and gate.family.origin:
            family += f" (plug-in {gate.family.origin})"
        lines.append(f"  theorem        : {family} - {gate.outcome}")
        lines += [f"    {finding.status:<7} {hyp.name}: {finding.detail}" for hyp, finding in gate.checks]
    if pred is not None:
        applied = record.gate is None or record.gate.outcome == "covered"
        name = "predicted rate" if applied else "family rate   "
        lines.append(f"  {name} : O({pred.rate.text})  [{source_text(pred)}]"
                     + ("" if applied else "  (not applied to this run: see the theorem's hypotheses)"))
    lines += measurement_lines(v, pred.rate.exponent if pred is not None else None)
    target = v.context.get("gap_target")
    if target is not None:
        from rates.studies.fitting import gap_target_text

        lines.append(f"  gap fitted     : {gap_target_text(target)}")
    if v.assessment is not None:
        lines.append(f"  (i) bound      : {v.assessment.bound.outcome} - {v.assessment.bound.text}")
        lines.append(f"  (ii) dominant  : {v.assessment.dominant.text}")
        rate = f"O({pred.rate.text}) [{source_text(pred)}]: " if pred is not None else ""
        lines.append(f"  (iii) stated   : {v.assessment.stated_rate.outcome} - {rate}{v.assessment.stated_rate.text}")
    lines.append(f"  verdict        : {v.label} (tolerance {v.tolerance:g}) - {v.reason}")
    lines += [f"  note           : {note}" for note in v.notes if not note.startswith("gap fitted: ")]
    return "\n".join(lines)


def _certificates(record) -> list:
    """(certificate, t_d) per run of a record the proof chain covers (rates.numeric.certificate); [] otherwise."""
    from rates.numeric.certificate import certify, coverage
    from rates.studies.fitting import descent_start_of

    runs = getattr(record, "runs", None) or []
    if not runs or getattr(record, "prediction", None) is None:
        return []
    why, source = coverage(runs[0].config, (runs[0].config.data_facts or {}).get("n"))
    if why is not None and not source:
        return []
    return [(certify(run), descent_start_of([run], record.prediction)) for run in runs]  # t_d of each run's own data


def _certificate_lines(certificates) -> list[str]:
    from rates.numeric.certificate import describe as describe_certificate

    several = len(certificates) > 1
    lines = []
    for index, (cert, start) in enumerate(certificates):
        lines += describe_certificate(cert, start, f" #{index}" if several else "")
        if not cert.applies:
            break  # the reason is the configuration's, the same for every run
    return lines


def _plot_certificates(records, certificates, plot: Path) -> list[Path]:
    """B(t) beside the gap, one figure per certified configuration (its first run)."""
    from rates.output.plots import plot_certificate
    from rates.studies.default_study import run_slug

    figures = []
    for rec, certs in zip(records, certificates):
        certified = [cert for cert, _ in certs if cert.applies and cert.s0 is not None]
        if certified:
            base = _plot_path(plot, run_slug(rec.config), len(records) > 1)
            figures.append(plot_certificate(certified[0], base.with_name(f"{base.stem}_certificate{base.suffix}"),
                                            title=rec.title))
    return figures


def simulate_seeds(options: dict, data_seeds: list[int], seeds: list[int], device: str, steps: Optional[int],
                   checkpoints: int, out: Optional[Path], window: Optional[tuple[float, float]] = None,
                   progress: bool = False, keep_weights: str = "none", budget: tuple[int, float] = (0, 0.0),
                   side_measures: bool = False) -> list[Run]:
    """Run one configuration for every (data draw, reshuffling stream) pair, exactly as ``rates run`` does.

    ``data_seeds`` are draws of a generated dataset, ``seeds`` reshuffling streams (``cli.run.SEED_MEANING``);
    several streams of a full-batch run are refused (they would be identical copies). A user ``window`` is
    checked against the runs' checkpoints before ``out`` is written, so a bad ``--window`` leaves no file behind.
    ``steps`` None is ``--steps auto`` within ``budget`` (steps, seconds), as in ``rates run``.
    """
    from rates.numeric.engine import RunSpec
    from rates.numeric.measures import large_side_measures
    from rates.numeric.trajectory import Trajectory, save

    def make_spec(shuffle: int) -> RunSpec:
        return RunSpec(seed=shuffle, **{k: v for k, v in options.items() if k not in ("data", "steps", "engine")})

    with large_side_measures(side_measures):
        trajectory, outcome = simulate_steps(
            lambda count: simulate_plan(make_spec, options["data"], data_seeds, seeds, count, checkpoints, device,
                                        engine=options.get("engine", "auto"), progress=progress),
            steps, *budget, checkpoints)
    if outcome is not None:
        print(outcome.text(), file=sys.stderr)
    for run in trajectory.runs if window is not None else ():
        choose_window(run, window)
    for run in trajectory.runs:
        run.keep_weights = keep_weights
    if out is not None:
        save(Trajectory(trajectory.runs, {**trajectory.meta, "command": "rates fit"}), out)
    return trajectory.runs


def _user_bound_record(runs, bound, tolerance: float, window):
    """One configuration's independent replicates judged against the user's bound (:mod:`rates.judge.user_bound`)."""
    from rates.judge.user_bound import judge_user_bound
    from rates.studies.fitting import independent_replicates

    independent, replicates = independent_replicates(runs)
    seeds = [run.config.seed_or(i) for i, run in enumerate(independent)]
    return judge_user_bound(independent, bound, tolerance, window, seeds=seeds, replicates=replicates)


def _fit_parameters() -> list[inspect.Parameter]:
    """``rates fit`` takes the options of ``rates run`` (one source of truth: cli/run.py) plus its own.

    The options ``rates run`` requires (--algo, --a, --steps) become optional here, because ``--from``
    replaces them; ``--out`` keeps its meaning (save the simulated Trajectory) but is optional.
    """
    hints = typing.get_type_hints(run_command)
    own = {
        "from_file": (Optional[Path], typer.Option(None, "--from", help="fit a Trajectory JSON instead of running")),
        "window": (Optional[str], typer.Option(None, "--window", help="fit window T0:T1 (default: automatic)")),
        "tolerance": (float, typer.Option(DEFAULT_TOLERANCE, "--tolerance",
                                          help="slope tolerance of 'tight', in (0, 1)")),
        "plot": (Optional[Path], typer.Option(None, "--plot", help="draw the fit to FILE.png or FILE.pdf")),
        "certificate": (bool, typer.Option(True, "--certificate/--no-certificate", help=(
            "check the facts the theorem's proof uses at every step and certify gap(t) <= B(t) (SIGNADAM Thm 5.3 "
            "and MINIBATCH Thm 4.1 at b = n; one extra float64 pass over the run)"))),
        "as_json": (bool, typer.Option(False, "--json", help="print the fit records as JSON")),
        "bound": (Optional[str], typer.Option(None, "--bound", help=(
            "judge your own bound instead of the theorem's: a sum of terms, each with its own unknown constant "
            "C..., in t, log, sqrt, exp and the schedule's power sums S(p), e.g. 'C1/S(1) + C2*S(2)/S(1)' or "
            "'C1*log(t)/t^(1/4) + C2/t'"))),
    }
    params = [inspect.Parameter("from_file", inspect.Parameter.KEYWORD_ONLY, default=own["from_file"][1],
                                annotation=own["from_file"][0])]
    for name, param in inspect.signature(run_command).parameters.items():
        info, annotation = copy.copy(param.default), hints[name]
        if info.default is ...:
            info.default, annotation = None, Optional[annotation]
        if name == "seeds":
            info.help = "reshuffling streams (0..4 or 0,3,7), as in rates run; with --from: the runs to fit"
        if name == "data_seeds":
            info.help = "data draws (0..4 or 0,3,7), as in rates run; with --from: the runs to fit"
        if name == "out":
            info.help = "also save the simulated Trajectory JSON"
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation))
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)
               for name, (annotation, info) in own.items() if name != "from_file"]
    return params


def fit(**options) -> None:
    """Fit the empirical rate of the margin gap (of a run or a file) and judge it against the predicted bound."""
    from_file, window, tolerance, plot, as_json, bound_text, with_certificate = (
        options.pop(k) for k in ("from_file", "window", "tolerance", "plot", "as_json", "bound", "certificate"))
    algo, a, steps, out = options["algo"], options["a"], options["steps"], options.pop("out")
    schedule = options.pop("schedule")
    seed, seeds, data_seeds = options.pop("seed"), options.pop("seeds"), options.pop("data_seeds")
    device, checkpoints, progress = options.pop("device"), options.pop("checkpoints"), options.pop("progress")
    keep_weights = options.pop("keep_weights")
    budget = (options.pop("budget_steps"), options.pop("budget_seconds"))
    side_measures = options.pop("side_measures")
    if from_file is None and algo is not None:  # checked before sympy, matplotlib and torch are imported (seconds)
        check_algorithm_options(algo, options.get("norm"), options.get("batch"), options.get("momentum"),
                                bool(options.get("vr")))
    from cli import per_sample  # here: it loads sympy, which `rates --help` must not wait for
    from rates.numeric.trajectory import load
    from rates.output.plots import check_figure_path, plot_fit
    from rates.progress import wanted as progress_wanted
    from rates.schedule import schedule_from_options
    from rates.studies.default_study import run_slug
    from rates.studies.fitting import fit_record_of, group_runs
    from rates.studies.verdict_table import bound_label

    if not (0 < tolerance < 1):
        raise InputError("--tolerance", f"must be in (0, 1), got {tolerance:g}")
    user_bound = None
    if bound_text is not None:  # read before anything runs: a bad bound writes nothing
        from rates.judge.user_bound import parse_bound

        user_bound = parse_bound(bound_text)
    user_window = parse_window(window) if window is not None else None
    wanted = parse_seeds(seed, seeds) if seeds is not None else None
    wanted_draws = parse_seeds(seed, data_seeds, "--data-seeds") if data_seeds is not None else None
    if plot is not None:
        check_figure_path(plot)
    if from_file is not None:
        given = [name for name, value in (("--algo", algo), ("--a", a), ("--schedule", schedule), ("--steps", steps),
                                          ("--out", out)) if value is not None]
        if given:
            raise InputError("--from", f"fits a saved Trajectory; drop the run options {', '.join(given)}")
        runs = load(from_file).runs
        if wanted is not None:
            runs = [run for run in runs if run.config.seed in wanted]
            if not runs:
                raise InputError("--seeds", f"no run of {from_file} has a seed in {seeds}")
        if wanted_draws is not None:
            runs = [run for run in runs if run.config.draw_seed in wanted_draws]
            if not runs:
                raise InputError("--data-seeds", f"no run of {from_file} has a data seed in {data_seeds}")
        if user_window is not None:
            for run in runs:  # refuse a window outside any run before fitting or writing anything
                choose_window(run, user_window)
        if user_bound is not None:
            from rates.judge.user_bound import check_positive

            for run in runs:
                check_positive(user_bound, run.config.schedule, run.config.eta0, run.t, user_window)
    else:
        for name, value in (("--algo", algo), ("--steps", steps)):
            if value is None:
                raise InputError(name, "is needed to run (or give --from FILE.json)")
        if a is None and schedule is None:
            raise InputError("--a", "is needed to run, or --schedule (or give --from FILE.json)")
        from rates.studies.auto_steps import check_budget, parse_steps

        steps = parse_steps(steps)
        if steps is None:
            check_budget(*budget)
        check_options({**options, "steps": steps or 1, "seed": seed, "seeds": seeds, "data_seeds": data_seeds,
                       "device": device, "checkpoints": checkpoints})
        if user_window is not None and steps is not None and not user_window[1] <= steps:
            raise InputError("--window", f"{window} lies outside the run's checkpoints [1, {steps}]")
        learning_rate = schedule_from_options(a, schedule)
        options["a"] = str(learning_rate.a) if learning_rate.is_polynomial else None
        options["schedule"] = None if learning_rate.is_polynomial else learning_rate
        if user_bound is not None:  # a term that is not positive where this run can be judged: refused before it runs
            from rates.judge.user_bound import check_positive, planned_checkpoints

            check_positive(user_bound, learning_rate, options["eta0"], planned_checkpoints(steps or budget[0]),
                           user_window)
        draws, shuffles = seed_plan(seed, seeds, data_seeds)
        from rates.numeric.trajectory import KEEP_WEIGHTS

        if keep_weights not in KEEP_WEIGHTS:
            raise InputError("--keep-weights", f"must be one of {', '.join(KEEP_WEIGHTS)}, got {keep_weights!r}")
        runs = simulate_seeds(options, draws, shuffles, device, steps, checkpoints, out, user_window,
                              progress=progress_wanted(progress), keep_weights=keep_weights, budget=budget,
                              side_measures=side_measures)

    # per-sample runs covered by MINIBATCH Thm 4.9 are judged on their limit direction, never on a rate
    if user_bound is not None:  # the user's own bound judges every schedule, derived rate or not
        records = [_user_bound_record(group, user_bound, tolerance, user_window) for group in group_runs(runs)]
    else:
        records = [fit_record_of(group, tolerance, user_window) for group in group_runs(runs)]
    certificates = [_certificates(rec) if with_certificate and user_bound is None else [] for rec in records]
    figures = []
    if plot is not None:
        _check_plottable(runs)
        for rec in records:
            if isinstance(rec, per_sample.PerSampleRecord):
                print(f"figure: none for {rec.title} (judged on its limit direction; no rate to draw)", file=sys.stderr)
                continue
            own = user_bound is not None
            figures.append(plot_fit(rec.runs, rec.verdict, rec.on_run if own else rec.prediction,
                                    _plot_path(plot, run_slug(rec.config), len(records) > 1),
                                    title=rec.title, bound_label="user bound" if own else bound_label(rec)))
        figures += _plot_certificates(records, certificates, plot)
    if as_json:
        print(json.dumps([{**rec.to_json(), **({"certificates": [c.to_json() for c, _ in certs]} if certs else {})}
                          for rec, certs in zip(records, certificates)], indent=1, default=str))
    else:
        print("\n\n".join("\n".join([rec.describe() if hasattr(rec, "describe") else describe(rec)]
                                     + _certificate_lines(certs)) for rec, certs in zip(records, certificates)))
        for figure in figures:
            print(f"figure: {figure} (and {figure.with_suffix('.pdf' if figure.suffix.lower() == '.png' else '.png')})")
    if any(rec.verdict.label == "violated" or getattr(rec.verdict, "refuted", False) for rec in records):
        raise typer.Exit(1)


fit.__doc__ += "\n\n" + CSV_LAYOUT
fit.__signature__ = inspect.Signature(_fit_parameters())
fit.__annotations__ = {p.name: p.annotation for p in fit.__signature__.parameters.values()}


def register(app: typer.Typer) -> None:
    app.command("fit")(fit)
