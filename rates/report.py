"""Predicted-vs-fitted verdict tables and the default study of ``rates report``.

Setting
    Runs of one configuration (algorithm, norm, a, eta_0, ...) over several seeds are grouped, judged by
    :func:`rates.compare.judge` against the Prediction of ``rates.theorems.predict`` (the bound's shape over
    the same window) and written as one table row: predicted rate with its source and status, the bound's
    local slope over the window, the fitted slope ± bootstrap error, the window, the seeds, the fitted log
    power and the verdict. Every table is a :class:`rates.tables.Table` (LaTeX booktabs / Markdown / JSON).

Default study (``rates report default --out DIR``)
    SignGD, NGD and Spectral-GD at a in {3/10, 1/2, 3/4, 1} and Adam (eps = 0, beta1 = 0.9, beta2 = 0.999)
    at a in {1/2, 2/3, 4/5} on the ``default`` Gaussian preset, eta_0 = 1, W_0 = 0. Full-batch runs from
    W_0 = 0 are deterministic, so a *seed* is a fresh data draw of the preset (``parse_data("default",
    seed)``): seeds measure how the slope varies with the data, and each seed has its own max margin gamma.

Reference
    Rates: SIGNADAM ``003_35ca27fd72435096.txt`` Cor. 5.4 / C.5 (NSD) and Cor. 6.4 (Adam); THEORY.md
    section 4 (one-sided verdicts, local slopes).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import sympy as sp

from rates.compare import DEFAULT_TOLERANCE, Verdict, judge
from rates.errors import InputError
from rates.io import write_text_atomic
from rates.tables import Cell, Table, latex_document, latex_escape
from rates.trajectory import Run, Trajectory
from rates.trajectory import save as save_trajectory

FIT_SCHEMA = "rates.fit/1"
# Config keys that differ between seeds of one configuration (or say nothing about it).
_PER_SEED_KEYS = ("seed", "data_seed", "device", "dtype", "wall_s", "elapsed_s", "gamma")


# --------------------------------------------------------------------------------------------- fitting


@dataclass
class FitRecord:
    """One configuration judged: its runs (seeds), the Prediction and the Verdict."""

    config: dict[str, Any]
    seeds: list[Any]
    prediction: Any
    verdict: Verdict
    runs: list[Run]

    @property
    def title(self) -> str:
        return f"{self.config.get('algo')} ({self.config.get('norm')}), a = {self.config.get('a')}"

    def to_json(self) -> dict[str, Any]:
        return {"schema": FIT_SCHEMA, "config": self.config, "seeds": self.seeds,
                "prediction": _prediction_json(self.prediction), "verdict": self.verdict.to_json()}


def config_key(config: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in config.items() if k not in _PER_SEED_KEYS}, sort_keys=True, default=str)


def group_runs(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs that differ only by seed form one configuration; groups keep the order of first appearance."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(config_key(run.config), []).append(run)
    return list(groups.values())


def exact_a(config: dict[str, Any]) -> sp.Rational:
    value = config.get("a")
    try:
        frac = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise InputError("--from", f"config a = {value!r} is not a number") from None
    return sp.Rational(frac.numerator, frac.denominator)


def prediction_for(config: dict[str, Any]):
    """The Prediction of ``rates.theorems`` for a run's configuration."""
    from rates.algorithms import ALGORITHMS, resolve_algorithm
    from rates.theorems import predict

    name = str(config["algo"])
    # The engine records momentum 0.0 for Adam, whose betas are its own (resolve_algorithm refuses both).
    momentum = None if name in ALGORITHMS and ALGORITHMS[name].adam else config.get("momentum")
    algorithm = resolve_algorithm(name, norm=config.get("norm"), n=config.get("n"), batch=config.get("batch"),
                                  momentum=momentum, vr=bool(config.get("vr", False)))
    return predict(algorithm, exact_a(config))


def fit_group(runs: Sequence[Run], tolerance: float = DEFAULT_TOLERANCE,
              window: Optional[tuple[float, float]] = None, prediction: Any = None) -> FitRecord:
    """Judge the seeds of one configuration against its Prediction."""
    config = {k: v for k, v in runs[0].config.items() if k not in _PER_SEED_KEYS}
    prediction = prediction if prediction is not None else prediction_for(runs[0].config)
    exponent = float(prediction.rate.exponent)
    verdict = judge(runs, prediction, exponent=exponent, tolerance=tolerance, window=window)
    seeds = [run.config.get("seed", i) for i, run in enumerate(runs)]
    return FitRecord(config, seeds, prediction, verdict, list(runs))


def fit_trajectory(trajectory: Trajectory, tolerance: float = DEFAULT_TOLERANCE,
                   window: Optional[tuple[float, float]] = None) -> list[FitRecord]:
    return [fit_group(group, tolerance, window) for group in group_runs(trajectory.runs)]


# ---------------------------------------------------------------------------------------------- tables


def _prediction_json(prediction: Any) -> Any:
    to_json = getattr(prediction, "to_json", None)
    return to_json() if callable(to_json) else str(prediction)


def source_text(prediction: Any) -> str:
    """``SIGNADAM 003_... Cor. 5.4 [given]``: where a predicted rate comes from and how firm it is."""
    source = getattr(prediction, "source", "")
    if hasattr(source, "to_json"):
        source = source.to_json()
    if isinstance(source, dict):
        source = " ".join(str(source[k]) for k in ("seed", "theorem") if source.get(k))
    status = getattr(prediction, "status", "")
    status = f" [{status}]" if status and not str(status).startswith("[") else (f" {status}" if status else "")
    return f"{source}{status}".strip()


def _pm(value: Optional[float], err: Optional[float], digits: int = 3) -> tuple[str, str]:
    if value is None:
        return "-", "--"
    text = f"{value:+.{digits}f} ± {err:.{digits}f}"
    return text, f"${value:+.{digits}f} \\pm {err:.{digits}f}$"


def _window_cells(verdict: Verdict) -> Cell:
    w = verdict.window
    if verdict.fit is None:
        return Cell("-", "--")
    return Cell(f"[{w.t0:.3g}, {w.t1:.3g}] ({w.points} pts)", f"$[{_sci(w.t0)}, {_sci(w.t1)}]$ ({w.points})",
                value={"t0": w.t0, "t1": w.t1, "points": w.points, "source": w.source})


def _sci(x: float) -> str:
    mantissa, _, exponent = f"{x:.2e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = int(exponent)
    return f"{mantissa}\\cdot 10^{{{power}}}" if mantissa != "1" else f"10^{{{power}}}"


def verdict_table(records: Sequence[FitRecord], caption: str = "Predicted vs fitted margin-gap rates",
                  label: str = "tab:fits", seeds_note: str = "", columns: Sequence[str] = ()) -> Table:
    """One row per configuration: prediction (with source), bound's local slope, fit, window, verdict.

    ``columns`` names further config keys shown after ``a`` (``rates sweep``: the options its grid varies).
    """
    table = Table(["algorithm", "a", *columns, "predicted rate", "source", "bound local slope",
                   "fitted slope ± s.e.", "window t", "seeds", "log power k", "verdict"], caption=caption, label=label)
    tolerances = set()
    for rec in records:
        v = rec.verdict
        tolerances.add(v.tolerance)
        rate = rec.prediction.rate
        fit_text, fit_latex = _pm(v.fit.slope if v.fit else None, v.fit.stderr if v.fit else None)
        k_text, k_latex = _pm(v.log_power.slope if v.log_power else None,
                              v.log_power.stderr if v.log_power else None, 2)
        local = v.predicted_local_slope
        table.add(
            Cell(str(rec.config.get("algo")), value=rec.config.get("algo")),
            Cell(str(rec.config.get("a")), f"${sp.latex(exact_a(rec.config))}$", value=str(rec.config.get("a"))),
            *(Cell(str(rec.config.get(column)), value=rec.config.get(column)) for column in columns),
            Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent), "log_power": int(rate.log_power),
                                                     "text": rate.text}),
            # a wrapped cell: the seed file name and theorem list would widen the table past the page
            Cell(source_text(rec.prediction),
                 r"\parbox[t]{3.1cm}{\raggedright\footnotesize "
                 + latex_escape(source_text(rec.prediction)).replace(r"\_", r"\_\allowbreak{}") + "}"),
            Cell("-" if local is None else f"{local:+.3f}", "--" if local is None else f"${local:+.3f}$", value=local),
            Cell(fit_text, fit_latex, value=None if v.fit is None else
                 {"slope": v.fit.slope, "stderr": v.fit.stderr, "ci95": [v.fit.ci_low, v.fit.ci_high]}),
            _window_cells(v),
            Cell(str(len(rec.seeds)), value=list(rec.seeds)),
            Cell(k_text, k_latex, value=None if v.log_power is None else
                 {"k": v.log_power.slope, "stderr": v.log_power.stderr}),
            Cell(v.label, value={"verdict": v.label, "reason": v.reason}),
        )
    table.notes.append(
        "Fitted slope: least squares of log gap on log t over the window, mean over seeds; ± is the bootstrap "
        "standard error (resampling seeds and checkpoints, seeded). Window: after the empirical entry into the "
        "separable, monotone-loss phase (full-batch NSD: loss falling at least at the descent lemma's rate "
        "(gamma/4) sum eta), the last two decades of the run, t >= 1e3, above 100x the margin solver's "
        "accuracy; several seeds share the intersection of their windows.")
    table.notes.append(
        "Bound local slope: least-squares slope of the bound's shape (exact partial sums, unit constants) over "
        "the same checkpoints. Verdicts are one-sided (THEORY.md sec. 4): tight = within tolerance "
        f"{', '.join(f'{t:g}' for t in sorted(tolerances)) or DEFAULT_TOLERANCE}; loose = faster than the bound; "
        "violated = slower with the 95% interval excluding the bound; inconclusive = too short, at the floor, "
        "not separated, too uncertain, or a slope that still bends across the window.")
    table.notes.append("Log power k: slope of log(gap t^r) on log log t with r the predicted exponent.")
    for rec in records:
        if rec.verdict.label in ("inconclusive", "violated"):
            table.notes.append(f"{rec.config.get('algo')} a = {rec.config.get('a')}, {rec.verdict.label}: "
                               f"{rec.verdict.reason}.")
    if seeds_note:
        table.notes.append(seeds_note)
    return table


def load_fit_inputs(paths: Sequence[str | os.PathLike], tolerance: float = DEFAULT_TOLERANCE,
                    option: str = "--fits") -> list[FitRecord]:
    """Fit every configuration found in the Trajectory files (``rates run --out`` / ``rates report``).

    Runs are pooled across files before grouping, so seeds saved in separate files form one row.
    """
    from rates.trajectory import load

    runs: list[Run] = []
    for path in paths:
        try:
            runs += load(path).runs
        except InputError as err:
            raise InputError(option, err.message) from None
    return [fit_group(group, tolerance) for group in group_runs(runs)]


def fits_table(paths: Sequence[str | os.PathLike], tolerance: float = DEFAULT_TOLERANCE) -> Table:
    """Predicted vs fitted table of ``rates table --fits FILES...``."""
    return verdict_table(load_fit_inputs(paths, tolerance))


# ------------------------------------------------------------------------------------------ the study

# (algorithm, a) of the default study; a as exact strings so file names and tables stay exact.
DEFAULT_STUDY_CONFIGS: tuple[tuple[str, str], ...] = tuple(
    [(algo, a) for algo in ("signgd", "ngd", "spectral-gd") for a in ("3/10", "1/2", "3/4", "1")]
    + [("adam", a) for a in ("1/2", "2/3", "4/5")])
DEFAULT_STUDY_DATA = "default"
DEFAULT_STUDY_ETA0 = 1.0
DEFAULT_STUDY_SEEDS = 3
DEFAULT_STUDY_STEPS = 250_000
QUICK_STUDY_STEPS = 400
QUICK_STUDY_SEEDS = 1
STUDY_CHECKPOINTS = 60


def run_slug(config: dict[str, Any]) -> str:
    """File-name stem of a configuration: ``signgd_a3-4`` (a written exactly, '/' -> '-')."""
    return f"{config.get('algo')}_a{str(config.get('a')).replace('/', '-')}"


def write_outputs(records: Sequence[FitRecord], out_dir: Path, seeds_note: str, caption: str,
                  figures: bool = True, meta: Optional[dict[str, Any]] = None, trajectories: bool = True,
                  slug: Callable[[dict[str, Any]], str] = run_slug, columns: Sequence[str] = ()) -> list[Path]:
    """Per-configuration trajectories, the verdict table (Markdown, LaTeX document, JSON), figures.

    ``rates sweep`` keeps its own per-task trajectories (``trajectories=False``), names figures by a
    ``slug`` unique over its configurations and shows the ``columns`` its grid varies.
    """
    from rates.plots import plot_fit

    written: list[Path] = []
    for rec in records:
        name = slug(rec.config)
        if trajectories:
            written.append(save_trajectory(Trajectory(rec.runs, dict(meta or {})),
                                           out_dir / "trajectories" / f"{name}.json"))
        if figures:
            paths = [out_dir / "figures" / f"{name}{ext}" for ext in (".png", ".pdf")]
            plot_fit(rec.runs, rec.verdict, rec.prediction, paths, title=rec.title,
                     bound_label=f"bound {rec.prediction.rate.text}")
            written += paths
    table = verdict_table(records, caption=caption, seeds_note=seeds_note, columns=columns)
    written.append(write_text_atomic(out_dir / "table.md", table.to_markdown()))
    written.append(write_text_atomic(out_dir / "table.tex", latex_document(table.to_latex())))
    written.append(write_text_atomic(out_dir / "table.json", table.to_json()))
    written.append(write_text_atomic(out_dir / "fits.json",
                                     json.dumps([rec.to_json() for rec in records], indent=1, default=str) + "\n"))
    return written


# Cost order of the study's algorithms per step on CPU (measured: NGD > Adam > Spectral-GD > SignGD);
# submitting the dearest tasks first keeps both cores busy until the end.
_COST_ORDER = ("ngd", "adam", "spectral-gd", "signgd")


def study_tasks(seeds: Sequence[int], steps: int, device: str, eta0: float = DEFAULT_STUDY_ETA0) -> list:
    """The default study's engine tasks: one per (seed, algorithm), its values of a on one runs axis, on a
    fresh data draw of the ``default`` preset; the dearest algorithms first (:data:`_COST_ORDER`)."""
    from rates.engine import RunSpec
    from rates.sweep import EngineTask

    algos = list(dict.fromkeys(algo for algo, _ in DEFAULT_STUDY_CONFIGS))
    pairs = sorted(((seed, algo) for seed in seeds for algo in algos),
                   key=lambda pair: (_COST_ORDER.index(pair[1]) if pair[1] in _COST_ORDER else -1, pair[0]))
    return [EngineTask(specs=tuple(RunSpec(name, a, eta0=eta0, seed=seed, adam_eps=0.0)
                                   for name, a in DEFAULT_STUDY_CONFIGS if name == algo),
                       data=DEFAULT_STUDY_DATA, data_seed=seed, steps=int(steps), checkpoints=STUDY_CHECKPOINTS,
                       device=device, label=f"seed {seed}, {algo}")
            for seed, algo in pairs]


def simulate_study_seeds(seeds: Sequence[int], steps: int, device: str, progress: bool,
                         eta0: float = DEFAULT_STUDY_ETA0, parallel: bool = True,
                         scheduler: Optional[str] = None, workers: Optional[int] = None) -> list[Run]:
    """All runs of the study, ordered by seed then configuration.

    Each (seed, algorithm) pair is one task of :func:`rates.sweep.run_tasks` (full-batch runs are
    independent, and the engine's results do not depend on which runs share a batch): ``scheduler``
    ``None`` runs them on an embedded Dask LocalCluster with one worker per core (in this process when
    ``parallel`` is False), ``"serial"``/``"local"`` choose explicitly, an address uses a running cluster.
    """
    from rates.sweep import executor_name, run_tasks

    seeds = list(seeds)
    tasks = study_tasks(seeds, steps, device, eta0)
    trajectories = run_tasks(tasks, executor_name(scheduler, parallel), workers=workers, progress=progress)
    done = {(task.data_seed, task.specs[0].algo): trajectory.runs for task, trajectory in zip(tasks, trajectories)}
    algos = list(dict.fromkeys(algo for algo, _ in DEFAULT_STUDY_CONFIGS))
    return [run for seed in seeds for algo in algos for run in done[(seed, algo)]]


def run_default_study(out_dir: Path, options) -> list[Path]:
    """``rates report default``: the configurations of :data:`DEFAULT_STUDY_CONFIGS`, several data seeds.

    Each (seed, algorithm) is one batched ``simulate`` call (the algorithm's values of a on one runs axis)
    on a fresh data draw of the ``default`` preset, in parallel processes; the runs are then regrouped per
    configuration, judged and written. ``options.quick`` shrinks steps and seeds for tests: a quick run
    never reaches the asymptotic window, so its verdicts are ``inconclusive`` and the table says why.
    """
    n_seeds = options.seeds if options.seeds is not None else (QUICK_STUDY_SEEDS if options.quick else DEFAULT_STUDY_SEEDS)
    steps = QUICK_STUDY_STEPS if options.quick else DEFAULT_STUDY_STEPS
    return run_study_plan(Path(out_dir), n_seeds, steps, DEFAULT_STUDY_ETA0, options)


def run_study_plan(out_dir: Path, n_seeds: int, steps: int, eta0: float, options) -> list[Path]:
    """The default study's configurations with the given size (``run_default_study`` fixes the size)."""
    if n_seeds < 1:
        raise InputError("--seeds", f"must be a positive number of seeds, got {n_seeds}")
    started = time.perf_counter()
    # quick runs stay in-process: starting worker processes would cost more than the runs
    runs = simulate_study_seeds(list(range(n_seeds)), steps, options.device, options.progress, eta0,
                                parallel=not options.quick, scheduler=getattr(options, "scheduler", None))
    simulated = time.perf_counter() - started
    records = [fit_group(group) for group in group_runs(runs)]
    seeds_note = (f"Seeds 0..{n_seeds - 1}: independent data draws of the '{DEFAULT_STUDY_DATA}' preset "
                  f"(full-batch runs from W_0 = 0 are deterministic given the data); {steps} steps, eta_0 = {eta0:g}, "
                  f"W_0 = 0, Adam with beta1 = 0.9, beta2 = 0.999, eps = 0; {simulated:.0f} s of simulation "
                  f"on {runs[0].config.get('device', options.device)}.")
    meta = {"study": "default", "data": DEFAULT_STUDY_DATA, "seeds": list(range(n_seeds)), "steps": steps, "eta0": eta0,
            "seed_meaning": "data draw of the preset (and reshuffling seed, unused by full-batch runs)",
            "simulation_wall_s": simulated}
    return write_outputs(records, out_dir, seeds_note, caption="Default study: predicted vs fitted margin-gap rates",
                         meta=meta)


def fits_table_for_cli(fits: bool, files: Optional[Sequence[Path]]) -> Table:
    """``rates table --fits FILES...``: the flag and its files are checked here, in one place."""
    if not files:
        raise InputError("--fits", "give one or more Trajectory files after --fits (rates run --out / rates report)")
    if not fits:
        raise InputError("--fits", f"file arguments need --fits (got {files[0]})")
    return fits_table(files)
