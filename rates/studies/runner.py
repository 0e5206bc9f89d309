"""The one simulation path of the seed studies: tasks -> runs with their checkpoint measures.

Setting
    A study is a list of :class:`StudyTask`: one dataset (a ``--data`` spec and a data seed) and the run
    configurations advanced together on it. :func:`run_tasks` is the only function through which the
    studies simulate, so a task runner (``rates sweep``) can replace it in one place.

Algorithm
    A task is one :func:`rates.numeric.engine.simulate` call; its runs carry the measures MINIBATCH reports
    (:mod:`rates.numeric.measures`: relative margin errors and cosines to each norm's ``W*`` and, on orthogonal
    scale-skewed data, to the bias matrix ``M``). Tasks run in parallel processes (one per core) unless
    ``parallel`` is off; results do not depend on it (each run's randomness is its own seeded stream). The
    tasks go to :func:`rates.sweep.run_tasks`, the runner ``rates sweep`` uses (Dask), so ``rates report
    --scheduler`` sends a study to a cluster.

Guarantee
    ``run_tasks`` returns, per task key, the runs in the order of the task's specs and the wall time.

Reference
    MINIBATCH sec. 3 and 5 (relative error, cosine similarity); engine and
    records as in :mod:`rates.numeric.engine`.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

import numpy as np

from rates.numeric.trajectory import Run


@dataclass(frozen=True)
class StudyTask:
    """One dataset and the configurations advanced on it; ``cost`` orders the tasks (dearest first)."""

    key: str
    data: str
    data_seed: Optional[int]
    specs: tuple
    steps: int
    checkpoints: int = 60
    cost: float = 1.0


@dataclass
class TaskResult:
    key: str
    runs: list[Run]
    wall_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def load_data(task: StudyTask):
    return dataset(task.data, task.data_seed)


@functools.lru_cache(maxsize=64)
def dataset(spec: str, data_seed: Optional[int]):
    """The dataset of a task (cached: studies measure the same data again after simulating)."""
    from rates.numeric.data import parse_data

    return parse_data(spec, seed=data_seed)


def result_data(result: TaskResult):
    return dataset(result.meta["spec"], result.meta["data_seed"])


def run_tasks(tasks: Sequence[StudyTask], device: str = "cpu", progress: bool = False,
              parallel: bool = True, scheduler: Optional[str] = None) -> dict[str, TaskResult]:
    """All tasks, dearest first, on the task runner of ``rates sweep`` (:func:`rates.sweep.run_tasks`);
    keyed by task key in the order given.

    ``scheduler`` is ``rates report --scheduler``: None runs an embedded Dask LocalCluster with one worker per
    core (in this process when ``parallel`` is False), ``serial``/``local`` choose explicitly, an address uses
    a running cluster.
    """
    from rates.numeric.tasks import EngineTask, executor_name
    from rates.numeric.tasks import run_tasks as run_engine_tasks

    if len({t.key for t in tasks}) != len(tasks):
        raise ValueError("study task keys must be unique")
    ordered = sorted(tasks, key=lambda t: -t.cost)
    engine_tasks = [EngineTask(specs=tuple(t.specs), data=t.data, data_seed=t.data_seed, steps=int(t.steps),
                               checkpoints=int(t.checkpoints), device=device, label=t.key) for t in ordered]
    started = time.perf_counter()
    trajectories = run_engine_tasks(engine_tasks, executor_name(scheduler, parallel), progress=progress)
    results: dict[str, TaskResult] = {}
    for task, trajectory in zip(ordered, trajectories):
        data = load_data(task)
        for run in trajectory.runs:
            run.config = run.config.with_draw(task.data_seed, task=task.key)
        results[task.key] = TaskResult(task.key, trajectory.runs, float(trajectory.meta.get("wall_s", 0.0)),
                                       {"spec": task.data, "data_seed": task.data_seed, "data": data.name,
                                        "n": data.n, "d": data.d, "k": data.k})
    if progress:
        print(f"  {len(ordered)} tasks done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return {task.key: results[task.key] for task in tasks}


# ------------------------------------------------------------------------------------------- measures

def describe(values: Sequence[float], digits: int = 3) -> str:
    """``mean [min, max]`` of a few numbers (or the number alone)."""
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return f"{v[0]:.{digits}g}"
    return f"{v.mean():.{digits}g} [{v.min():.{digits}g}, {v.max():.{digits}g}]"


def fit_runs(runs):
    """:func:`rates.studies.fitting.fit_group` of one configuration's runs (the one fit path of the studies)."""
    from rates.studies import fitting

    return fitting.fit_group(runs)


STUDY_CHECKPOINTS_FLOOR = 16  # the fewest checkpoints a study's run records (a floor for the seed-count check)


def study_seeds(options, default: int) -> list[int]:
    """Seeds ``0..N-1`` of a study: the count of ``--seeds`` (``options.seeds``) or the study's own default."""
    from rates.errors import InputError

    count = options.seeds if options.seeds is not None else default
    if count < 1:
        raise InputError("seeds", f"must be a positive number of seeds, got {count}")
    from rates import budget

    budget.check_count(count, "seeds", checkpoints=STUDY_CHECKPOINTS_FLOOR)  # before the tasks are built
    return list(range(count))


def simulate_study(name: str, tasks: Sequence[StudyTask], options):
    """Announce the plan (with ``--progress``: the probed duration of :mod:`rates.numeric.duration`), run every
    task, dearest first, and return ``(results, seconds taken)``."""
    if options.progress:
        from rates.numeric.duration import estimate

        plan = estimate(tasks, options.device, parallel=not options.quick, load_data=load_data)
        print_plan(name, tasks, plan)
        tasks = by_estimated_cost(tasks, plan)
    started = time.perf_counter()
    results = run_tasks(tasks, device=options.device, progress=options.progress, parallel=not options.quick,
                        scheduler=getattr(options, "scheduler", None))
    return results, time.perf_counter() - started


def by_estimated_cost(tasks: Sequence[StudyTask], plan) -> list[StudyTask]:
    """The tasks with their probed seconds (``plan``, :func:`rates.numeric.duration.estimate` of the same
    tasks) as ``cost``, so the dearest start first."""
    return [replace(task, cost=seconds) for task, seconds in zip(tasks, plan.task_seconds)]


def print_plan(name: str, tasks: Sequence[StudyTask], plan, stream=None) -> None:
    """The study's size and expected simulation time (``plan``, :func:`rates.numeric.duration.estimate`),
    before it starts."""
    stream = stream or sys.stderr
    longest = max(plan.task_seconds, default=0.0)
    print(f"rates report {name}: {len(tasks)} tasks, {plan.runs} runs, {plan.config_steps:.3g} config-steps on "
          f"{plan.workers} process(es), {plan.stepper} engine; simulation expected ~{_minutes(plan.seconds)} "
          f"(longest task {_minutes(longest)}; probed in {plan.probe_s:.1f} s at load {plan.load:.1f})",
          file=stream, flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
