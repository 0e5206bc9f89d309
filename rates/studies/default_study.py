"""The default study of ``rates report`` (``rates report default --out DIR``), and the run-fit-write path the
other studies share (:func:`write_outputs`, :func:`run_study_plan`).

SignGD, NGD and Spectral-GD at a in {3/10, 1/2, 3/4, 1} and Adam (eps = 0, beta1 = 0.9, beta2 = 0.999) at a in
{1/2, 2/3, 4/5} on the ``default`` Gaussian preset, eta_0 = 1, W_0 = 0, each for the steps of
:data:`DEFAULT_STUDY_STEPS` (the shortest that decide its rows). Full-batch runs from W_0 = 0 are deterministic,
so a *seed* is a fresh data draw of the preset (``parse_data("default", seed)``): seeds measure how the slope
varies with the data, and each seed has its own max margin gamma.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from rates.errors import InputError
from rates.io import write_text_atomic
from rates.numeric.run_config import RunConfig
from rates.numeric.trajectory import Run, Trajectory
from rates.numeric.trajectory import save as save_trajectory
from rates.studies.fitting import FitRecord, fit_record_of, group_runs
from rates.studies.verdict_table import _is_direction_record, bound_label, verdict_table

# (algorithm, a) of the default study; a as exact strings so file names and tables stay exact.
DEFAULT_STUDY_CONFIGS: tuple[tuple[str, str], ...] = tuple(
    [(algo, a) for algo in ("signgd", "ngd", "spectral-gd") for a in ("3/10", "1/2", "3/4", "1")]
    + [("adam", a) for a in ("1/2", "2/3", "4/5")])


DEFAULT_STUDY_DATA = "default"


DEFAULT_STUDY_ETA0 = 1.0


DEFAULT_STUDY_SEEDS = 3


# Steps per algorithm (or per algorithm and a), each the shortest that decides its rows on 3 data draws
# (measured with the fused engine): SignGD and NGD are decided at 2.5e5; Spectral-GD at a = 3/4 needs a
# narrower interval (95% upper limit of its slope against the slowest term's -0.27 + 0.05: -0.208 at 2.5e5,
# -0.218 at 5e5, only just, -0.228 at 1e6); Adam leaves its plateau late: at 2.5e5 every a still bends, at 1e6
# a = 2/3 and 4/5 are decided and a = 1/2 still bends (-0.53 +- 0.1), at 2e6 it is decided.
DEFAULT_STUDY_STEPS: dict[str, Any] = {
    "signgd": 250_000, "ngd": 250_000,
    "spectral-gd": {"3/10": 250_000, "1/2": 250_000, "3/4": 1_000_000, "1": 250_000},
    "adam": {"1/2": 2_000_000, "2/3": 1_000_000, "4/5": 1_000_000}}


QUICK_STUDY_STEPS = 400


QUICK_STUDY_SEEDS = 1


STUDY_CHECKPOINTS = 60


def run_slug(config: RunConfig) -> str:
    """File-name stem of a configuration: ``signgd_a3-4`` (a written exactly, '/' -> '-'); a general schedule is
    named by a digest of its text (``signgd_schedule-1a2b3c4d``)."""
    if config.general_schedule:
        import hashlib

        return f"{config.algo}_schedule-{hashlib.sha1(config.schedule.text.encode()).hexdigest()[:8]}"
    return f"{config.algo}_a{str(config.a).replace('/', '-')}"


def write_outputs(records: Sequence[FitRecord], out_dir: Path, seeds_note: str, caption: str,
                  figures: bool = True, meta: Optional[dict[str, Any]] = None, trajectories: bool = True,
                  slug: Callable[[RunConfig], str] = run_slug, columns: Sequence[str] = ()) -> list[Path]:
    """Per-configuration trajectories, the verdict table (Markdown, LaTeX document, JSON), figures.

    ``rates sweep`` keeps its own per-task trajectories (``trajectories=False``), names figures by a
    ``slug`` unique over its configurations and shows the ``columns`` its grid varies.
    """
    from rates.output.plots import plot_fit

    written: list[Path] = []
    for rec in records:
        name = slug(rec.config)
        if trajectories:
            written.append(save_trajectory(Trajectory(rec.runs, dict(meta or {})),
                                           out_dir / "trajectories" / f"{name}.json"))
        if figures and not _is_direction_record(rec):  # a limit direction has no rate to draw
            paths = [out_dir / "figures" / f"{name}{ext}" for ext in (".png", ".pdf")]
            plot_fit(rec.runs, rec.verdict, rec.prediction, paths, title=rec.title,
                     bound_label=bound_label(rec))
            written += paths
    table = verdict_table(records, caption=caption, seeds_note=seeds_note, columns=columns)
    written.append(write_text_atomic(out_dir / "table.md", table.to_markdown()))
    written.append(write_text_atomic(out_dir / "table.tex", table.to_latex()))  # to \\input into a paper
    written.append(write_text_atomic(out_dir / "table.json", table.to_json()))
    written.append(write_text_atomic(out_dir / "fits.json",
                                     json.dumps([rec.to_json() for rec in records], indent=1, default=str) + "\n"))
    return written


# Cost order of the study's algorithms per step on CPU (measured: NGD > Adam > Spectral-GD > SignGD);
# submitting the dearest tasks first keeps both cores busy until the end.
_COST_ORDER = ("ngd", "adam", "spectral-gd", "signgd")


def steps_of(steps: Any, algo: str, a: str) -> int:
    """The number of steps of ``(algo, a)``: one number, one per algorithm, or one per algorithm and a."""
    if isinstance(steps, Mapping):
        steps = steps[algo]
    if isinstance(steps, Mapping):
        steps = steps[a]
    return int(steps)


def steps_text(steps: Any) -> str:
    if not isinstance(steps, Mapping):
        return f"{int(steps)} steps"
    parts = []
    for algo, value in steps.items():
        if isinstance(value, Mapping):
            parts += [f"{algo} a = {a}: {int(n):.3g}" for a, n in value.items()]
        else:
            parts.append(f"{algo} {int(value):.3g}")
    return "steps " + ", ".join(parts)


def study_tasks(seeds: Sequence[int], steps: Any, device: str, eta0: float = DEFAULT_STUDY_ETA0) -> list:
    """The default study's engine tasks: one per (seed, algorithm, number of steps), its values of a on one runs
    axis, on a fresh data draw of the ``default`` preset; the dearest algorithms first (:data:`_COST_ORDER`).
    ``steps`` is one number, one per algorithm or one per algorithm and a (:data:`DEFAULT_STUDY_STEPS`)."""
    from rates.numeric.engine import RunSpec
    from rates.numeric.tasks import EngineTask

    groups: dict[tuple[int, str, int], list[str]] = {}
    for seed in seeds:
        for algo, a in DEFAULT_STUDY_CONFIGS:
            groups.setdefault((seed, algo, steps_of(steps, algo, a)), []).append(a)
    order = sorted(groups, key=lambda key: (_COST_ORDER.index(key[1]) if key[1] in _COST_ORDER else -1,
                                            -key[2], key[0]))
    return [EngineTask(specs=tuple(RunSpec(algo, a, eta0=eta0, seed=seed, adam_eps=0.0) for a in groups[key]),
                       data=DEFAULT_STUDY_DATA, data_seed=seed, steps=n, checkpoints=STUDY_CHECKPOINTS,
                       device=device, label=f"seed {seed}, {algo}, {n:.3g} steps")
            for key in order for seed, algo, n in [key]]


def simulate_study_seeds(seeds: Sequence[int], steps: Any, device: str, progress: bool,
                         eta0: float = DEFAULT_STUDY_ETA0, parallel: bool = True,
                         scheduler: Optional[str] = None, workers: Optional[int] = None) -> list[Run]:
    """All runs of the study, ordered by seed then configuration.

    Each (seed, algorithm) pair is one task of :func:`rates.sweep.run_tasks` (full-batch runs are
    independent, and the engine's results do not depend on which runs share a batch): ``scheduler``
    ``None`` runs them on an embedded Dask LocalCluster with one worker per core (in this process when
    ``parallel`` is False), ``"serial"``/``"local"`` choose explicitly, an address uses a running cluster.
    """
    from rates.numeric.tasks import executor_name, run_tasks

    seeds = list(seeds)
    tasks = study_tasks(seeds, steps, device, eta0)
    trajectories = run_tasks(tasks, executor_name(scheduler, parallel), workers=workers, progress=progress)
    done = {(task.data_seed, spec.algo, str(spec.a)): run for task, trajectory in zip(tasks, trajectories)
            for spec, run in zip(task.specs, trajectory.runs)}
    return [done[(seed, algo, a)] for seed in seeds for algo, a in DEFAULT_STUDY_CONFIGS]


def run_default_study(out_dir: Path, options) -> list[Path]:
    """``rates report default``: the configurations of :data:`DEFAULT_STUDY_CONFIGS`, several data draws.

    Each (data draw, algorithm) is one batched ``simulate`` call (the algorithm's values of a on one runs
    axis) on a fresh draw of the ``default`` preset, in parallel processes; the runs are then regrouped per
    configuration, judged and written. ``options.data_seeds`` are the draws (``--data-seeds``); every run is
    full batch, so more than one reshuffling stream (``--seeds``) is refused: it would copy each run.
    ``options.quick`` shrinks steps and draws for tests: a quick run never reaches the asymptotic window, so its
    verdicts are ``inconclusive`` and the table says why.
    """
    if options.shuffle_seeds is not None and len(options.shuffle_seeds) > 1:
        raise InputError("seeds", f"the default study is full batch, deterministic given the data: "
                                    f"{len(options.shuffle_seeds)} reshuffling streams would be identical runs; "
                                    "vary the data with --data-seeds")
    default = QUICK_STUDY_SEEDS if options.quick else DEFAULT_STUDY_SEEDS
    draws = list(options.data_seeds) if options.data_seeds is not None else list(range(default))
    steps = QUICK_STUDY_STEPS if options.quick else DEFAULT_STUDY_STEPS
    return run_study_plan(Path(out_dir), draws, steps, DEFAULT_STUDY_ETA0, options)


def _device_of(config: RunConfig, default: str) -> Any:
    return default if config.device is None else config.device


def run_study_plan(out_dir: Path, data_seeds: Sequence[int], steps: Any, eta0: float, options) -> list[Path]:
    """The default study's configurations on the given data draws (``run_default_study`` fixes the size)."""
    if not data_seeds:
        raise InputError("data_seeds", "needs at least one data draw")
    from rates import budget

    budget.check_count(len(data_seeds), "data_seeds", runs_per_seed=len(DEFAULT_STUDY_CONFIGS),
                       checkpoints=STUDY_CHECKPOINTS, what="data draw(s)")  # before the tasks are built
    started = time.perf_counter()
    # quick runs stay in-process: starting worker processes would cost more than the runs
    runs = simulate_study_seeds(list(data_seeds), steps, options.device, options.progress, eta0,
                                parallel=not options.quick, scheduler=getattr(options, "scheduler", None))
    simulated = time.perf_counter() - started
    records = [fit_record_of(group) for group in group_runs(runs)]
    draws = ", ".join(str(s) for s in data_seeds)
    seeds_note = (f"Replicates: data draws {draws} of the '{DEFAULT_STUDY_DATA}' preset (--data-seeds); every run "
                  f"is full batch from W_0 = 0, deterministic given the data, so each draw is one independent "
                  f"replicate; "
                  f"{steps_text(steps)}, eta_0 = {eta0:g}, Adam with beta1 = 0.9, beta2 = 0.999, eps = 0; "
                  f"{simulated:.0f} s of simulation on {_device_of(runs[0].config, options.device)}.")
    meta = {"study": "default", "data": DEFAULT_STUDY_DATA, "data_seeds": list(data_seeds),
            "steps": steps,
            "eta0": eta0, "seed_meaning": "data draws of the preset; the runs are full batch (no reshuffling)",
            "simulation_wall_s": simulated}
    return write_outputs(records, out_dir, seeds_note, caption="Default study: predicted vs fitted margin-gap rates",
                         meta=meta)
