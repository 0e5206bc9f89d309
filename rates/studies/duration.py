"""How long a study's simulation will take: a timed probe of each recipe, the tasks scheduled on the workers.

Setting
    A study (:mod:`rates.studies.runner`) is a list of tasks, each a few run configurations advanced ``steps``
    steps on one dataset. The cost of one configuration-step differs by more than 10x between recipes and
    datasets (measured on the 2-core machine, fused engine, one thread: per-sample steps on n = 40 about
    2 us, a mini-batch sign step 4 us, a full-batch step on n = 64 about 20 us, a spectral step at b = 64
    about 30 us, Adam on k = 10, n = 100 about 30 us) and by 20-60x between the fused (numba) and the torch
    engine. One constant per study cannot follow that: the constants measured on the torch engine printed
    "expected ~35 min" for a minibatch study that the fused engine finished in 40 s.

Algorithm
    For every distinct (data shape n, d, k; recipe) of the tasks one run is advanced on one thread, with
    the engine the study will use (:func:`rates.numeric.engine.resolve_engine`), until ``PROBE_SECONDS`` of wall
    time have passed (or the task's own horizon is reached), after a short warm-up that absorbs the
    kernel's load from the numba cache. The fused kernels cost the same per run whether a run is alone or
    in a group (measured: within 10 % on every task of the minibatch and signadam studies), so a group
    costs runs x per-run time; the torch engine's step costs about the same for one run as for a group
    (its cost is Python and kernel overhead), so there the whole group is probed. A task's time is
    ``steps`` times the sum over its groups plus ``TASK_SETUP_S``; the study's time is the schedule of the
    tasks, dearest first, on the worker processes (each takes the next task when free, as Dask does with
    the priorities :func:`rates.studies.runner.run_tasks` gives), plus ``WORKER_START_S`` when workers start.
    The machine's other load (1-minute load average before the probe) slows the study's workers more than
    the single probing thread; the estimate scales by the ratio of their CPU shares.

Guarantee
    An estimate, not a bound: measured against the full studies on the shared 2-core machine (docs/studies.md,
    "The paper studies"). The probe itself takes about ``PROBE_SECONDS`` per distinct recipe (1-2 s for
    a study).
"""

from __future__ import annotations

import heapq
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np

PROBE_SECONDS = 0.03  # wall time per probed recipe: ~10^3-10^4 fused steps, enough to average over epochs
WARMUP_STEPS = 16
# measured (2-core machine): the first simulate() in a fresh process (torch, cvxpy, numba cache) takes 8.6 s
WORKER_START_S = 9.0
# measured: max-margin solves, references and data facts of one task, 0.02-3.8 s after the first (median 0.3 s)
TASK_SETUP_S = 0.5


@dataclass
class StudyEstimate:
    """Expected seconds of a study's simulation, per task (one core each) and for the whole schedule."""

    seconds: float
    task_seconds: dict[str, float]
    workers: int
    stepper: str
    load: float
    probe_s: float
    config_steps: int
    runs: int
    notes: list[str] = field(default_factory=list)


def _cost_key(data, run, stepper: str, group_size: int) -> tuple:
    # the fused kernels' per-run cost depends on the recipe and the data's shape only; torch's on the group too
    return (data.n, data.d, data.k, run.recipe, stepper, group_size if stepper == "torch" else 1)


def _time_fused(run, data, cap: int) -> float:
    """Seconds per step of one run on one thread of the fused kernels."""
    from rates.numeric.fused.group import FusedGroup

    group = FusedGroup([run], np.asarray(data.H), np.asarray(data.y), int(data.k), threads=1)
    started = time.perf_counter()
    group.advance_to(min(WARMUP_STEPS, cap))
    if group.t >= cap:
        return (time.perf_counter() - started) / max(group.t, 1)
    first, started, chunk = group.t, time.perf_counter(), 64
    while True:
        group.advance_to(min(cap, group.t + chunk))
        elapsed = time.perf_counter() - started
        if elapsed >= PROBE_SECONDS or group.t >= cap:
            return elapsed / (group.t - first)
        chunk *= 4


def _time_torch(runs, data, cap: int, device) -> float:
    """Seconds per step of a group of runs on the torch engine (one thread on the CPU)."""
    import torch

    from rates.numeric.engine import DTYPE, run_group

    H = torch.as_tensor(np.asarray(data.H), dtype=DTYPE).to(device)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long).to(device)
    steps = min(cap, WARMUP_STEPS)
    while True:
        started = time.perf_counter()
        run_group(runs, H, y, int(data.k), steps, np.array([steps]), engine="torch")
        elapsed = time.perf_counter() - started
        if elapsed >= PROBE_SECONDS or steps >= cap:
            return elapsed / steps
        steps = min(cap, steps * 4)


def _contention(load: float, workers: int, cores: int) -> float:
    """How much slower a study worker runs than the probing thread, from the machine's other load."""
    probe_share = min(1.0, cores / (load + 1.0))
    worker_share = min(1.0, cores / (load + workers))
    return probe_share / worker_share


def schedule_seconds(task_seconds: Sequence[float], workers: int) -> float:
    """Makespan of tasks taken in the given order by the first free of ``workers`` processes."""
    free = [0.0] * max(1, workers)
    for seconds in task_seconds:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def estimate(tasks: Sequence, device: str = "auto", parallel: bool = True,
             load_data: Optional[Callable] = None) -> StudyEstimate:
    """Probe the recipes of ``tasks`` (:class:`rates.studies.runner.StudyTask`) and schedule them (module docstring).

    ``load_data(task)`` gives a task's dataset (the study's cached loader); by default it is generated anew.
    """
    from rates.numeric.engine import resolve_device, resolve_engine, resolve_spec
    from rates.numeric.fused.group import supports

    if load_data is None:
        from rates.numeric.data import parse_data

        def load_data(task):
            return parse_data(task.data, seed=task.data_seed)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    cores = os.cpu_count() or 1
    workers = min(len(tasks), cores) if parallel else 1
    dev = resolve_device(device)
    engine = resolve_engine("auto", dev)
    costs: dict[tuple, float] = {}
    task_seconds: dict[str, float] = {}
    steppers = set()
    probe_started = time.perf_counter()
    for task in tasks:
        data = load_data(task)
        groups: dict = {}
        for spec in task.specs:
            run = resolve_spec(spec, data.n)
            groups.setdefault(run.recipe, []).append(run)
        per_step = 0.0
        for recipe, runs in groups.items():
            stepper = "fused" if engine == "fused" and supports(recipe) else "torch"
            steppers.add(stepper)
            key = _cost_key(data, runs[0], stepper, len(runs))
            if key not in costs:
                costs[key] = (_time_fused(runs[0], data, task.steps) if stepper == "fused"
                              else _time_torch(runs, data, task.steps, dev))
            per_step += costs[key] * (len(runs) if stepper == "fused" else 1)
        task_seconds[task.key] = per_step * task.steps + TASK_SETUP_S
    probe_s = time.perf_counter() - probe_started
    slowdown = _contention(load, workers, cores)
    ordered = sorted(task_seconds.values(), reverse=True)
    seconds = schedule_seconds([s * slowdown for s in ordered], workers) + (WORKER_START_S if parallel else 0.0)
    return StudyEstimate(seconds, task_seconds, workers, "/".join(sorted(steppers)), load, probe_s,
                         int(sum(len(t.specs) * t.steps for t in tasks)), int(sum(len(t.specs) for t in tasks)))


def by_estimated_cost(tasks: Sequence, plan: StudyEstimate) -> list:
    """The tasks with their probed seconds as ``cost``, so the dearest start first."""
    return [replace(t, cost=plan.task_seconds.get(t.key, t.cost)) for t in tasks]


def print_plan(name: str, tasks: Sequence, plan: StudyEstimate, stream=None) -> None:
    """The study's size and expected simulation time, before it starts."""
    stream = stream or sys.stderr
    longest = max(plan.task_seconds.values()) if plan.task_seconds else 0.0
    print(f"rates report {name}: {len(tasks)} tasks, {plan.runs} runs, {plan.config_steps:.3g} config-steps on "
          f"{plan.workers} process(es), {plan.stepper} engine; simulation expected ~{_minutes(plan.seconds)} "
          f"(longest task {_minutes(longest)}; probed in {plan.probe_s:.1f} s at load {plan.load:.1f})",
          file=stream, flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
