"""The one simulation path of the seed studies: tasks -> runs with their checkpoint measures.

Setting
    A study is a list of :class:`StudyTask`: one dataset (a ``--data`` spec and a data seed) and the run
    configurations advanced together on it. :func:`run_tasks` is the only function through which the
    studies simulate, so a task runner (``rates sweep``) can replace it in one place.

Algorithm
    A task is one :func:`rates.engine.simulate` call; its runs carry the measures MINIBATCH reports
    (:mod:`rates.measures`: relative margin errors and cosines to each norm's ``W*`` and, on orthogonal
    scale-skewed data, to the bias matrix ``M``). Tasks run in parallel processes (one per core) unless
    ``parallel`` is off; results do not depend on it (each run's randomness is its own seeded stream).

Guarantee
    ``run_tasks`` returns, per task key, the runs in the order of the task's specs and the wall time.

Reference
    MINIBATCH ``002_e8731d42f3942599.txt`` sec. 3 and 5 (relative error, cosine similarity); engine and
    records as in :mod:`rates.engine`.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from rates.trajectory import Run


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
    from rates.data import parse_data

    return parse_data(spec, seed=data_seed)


def result_data(result: "TaskResult"):
    return dataset(result.meta["spec"], result.meta["data_seed"])


def run_task(task: StudyTask, device: str = "cpu", progress: bool = False) -> TaskResult:
    """Simulate one task in this process."""
    import torch

    from rates.engine import simulate

    torch.set_num_threads(1)  # parallelism is across tasks; the per-step kernels are tiny
    data = load_data(task)
    started = time.perf_counter()
    runs = simulate(list(task.specs), data, task.steps, checkpoints=task.checkpoints, device=device,
                    progress=progress).runs
    for run in runs:
        run.config["data_seed"] = task.data_seed
        run.config["task"] = task.key
    return TaskResult(task.key, runs, time.perf_counter() - started,
                      {"spec": task.data, "data_seed": task.data_seed, "data": data.name, "n": data.n,
                       "d": data.d, "k": data.k})


def run_tasks(tasks: Sequence[StudyTask], device: str = "cpu", progress: bool = False,
              parallel: bool = True) -> dict[str, TaskResult]:
    """All tasks, dearest first, in parallel processes when ``parallel`` (one per core); keyed by task key."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if len({t.key for t in tasks}) != len(tasks):
        raise ValueError("study task keys must be unique")
    ordered = sorted(tasks, key=lambda t: -t.cost)
    workers = min(len(ordered), os.cpu_count() or 1) if parallel else 1
    results: dict[str, TaskResult] = {}
    started = time.perf_counter()

    def report(result: TaskResult) -> None:
        if progress:
            print(f"  [{len(results)}/{len(ordered)}] {result.key}: {len(result.runs)} runs, {result.wall_s:.1f} s "
                  f"(elapsed {time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    if workers <= 1:
        for task in ordered:
            results[task.key] = run_task(task, device)
            report(results[task.key])
    else:
        # spawn, not fork: a forked child of a process that touched OpenMP threads can deadlock
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(run_task, task, device): task for task in ordered}
            for future in as_completed(futures):
                result = future.result()
                results[result.key] = result
                report(result)
    return {task.key: results[task.key] for task in tasks}


# ------------------------------------------------------------------------------------------- measures

def describe(values: Sequence[float], digits: int = 3) -> str:
    """``mean [min, max]`` of a few numbers (or the number alone)."""
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return f"{v[0]:.{digits}g}"
    return f"{v.mean():.{digits}g} [{v.min():.{digits}g}, {v.max():.{digits}g}]"


def print_plan(name: str, tasks: Sequence[StudyTask], seconds_per_config_step: float, parallel: bool,
               stream=None) -> float:
    """Print the study's size and expected duration before it starts; returns the estimate in seconds."""
    stream = stream or sys.stderr
    config_steps = sum(len(t.specs) * t.steps for t in tasks)
    workers = min(len(tasks), os.cpu_count() or 1) if parallel else 1
    estimate = config_steps * seconds_per_config_step / max(workers, 1)
    print(f"rates report {name}: {len(tasks)} tasks, {sum(len(t.specs) for t in tasks)} runs, "
          f"{config_steps:.3g} config-steps on {workers} process(es); expected ~{estimate / 60:.1f} min",
          file=stream, flush=True)
    return estimate
