"""How long a list of engine tasks will take: a timed probe of each recipe, the tasks scheduled on the workers.

Setting
    A task list (a study's tasks, :mod:`rates.studies.runner`; a sweep's or any caller's
    :class:`rates.numeric.tasks.EngineTask`) is a list of tasks, each a few run configurations advanced
    ``steps`` steps on one dataset. The cost of one configuration-step differs by more than 10x between
    recipes and datasets (measured on the 2-core machine, fused engine, one thread: per-sample steps on
    n = 40 about 0.5 us, a mini-batch sign step at b = 1 under 1 us and at b = 64 about 7 us, a spectral step
    at b = 64 about 16 us, a full-batch step on n = 64 about 20 us, Adam on k = 10, n = 100 about 30 us) and by
    20-60x between the fused (numba) and the torch engine. One constant cannot follow that: the torch
    engine's constants (:mod:`rates.budget`) put the minibatch study, 10 min on that machine, at 4.3 h, and
    one factor for the whole list, probed on the task the constants call costliest (SignSGD, among the
    cheapest per step), at 3 min.

Algorithm
    For every distinct (data shape n, d, k; recipe -- the algorithm's chain, batch size and polar method;
    stepper) of the tasks one run is advanced on one thread, with the engine the task will use
    (:func:`rates.numeric.engine.resolve_engine`), after a short warm-up that absorbs the kernel's load from
    the numba cache, in a few chunks until its share of the probing time has passed (or the task's own
    horizon is reached); the fastest chunk's rate counts, since a chunk of milliseconds is now and then
    descheduled on a shared machine and the machine's load is accounted for below.
    The probing time is capped: each recipe gets ``PROBE_SECONDS``, or, when the list has more recipes than
    fit, an equal share of what is left of ``PROBE_BUDGET_SECONDS`` (the kernels' first load and each probe's
    set-up included), at least ``MIN_PROBE_SECONDS``: about 1.5 s in all whatever the list (measured: 1.5 s
    for the 51 recipes of the minibatch study), more only for a list of hundreds of recipes. A recipe probed
    once is not probed again in this process.
    The fused kernels cost about the same per run whether a run is alone or in a group (measured: within
    10 % on the tasks of the minibatch and signadam studies, a group of four SignSGD runs at b = 1 25 %
    cheaper per run), so a group costs runs x per-run time; the torch engine's step costs about the same for
    one run as for a group (its cost is Python and kernel overhead), so there the whole group is probed.
    A task's time is ``steps`` times the sum over its groups, plus ``DRAW_SETUP_S`` for the first task on each
    data draw (the max margins are cached, in memory and on disk, for the draw's later tasks); the list's
    time is the schedule of the tasks (in the order given, or dearest first) on the worker processes (each
    takes the next task when free, as Dask does with the priorities :func:`rates.numeric.tasks.run_tasks`
    gives), plus ``WORKER_START_S`` when workers start. The machine's other load (1-minute load average
    before the probe) slows the workers more than the single probing thread; the estimate scales by the
    ratio of their CPU shares.

Guarantee
    An estimate, not a bound: measured against the full studies on the shared 2-core machine (docs/studies.md,
    "The paper studies"). The minibatch study's 36 tasks (9.6 min wall on the idle machine, 1083 s CPU) were
    estimated at 7.3-7.6 min for an idle machine (440-455 s: 845-885 s of tasks on two workers) and
    10.5-10.9 min at load 1.1-1.5; with the faster kernels of 25 Nov 2026 the full study announced a
    simulation of ~9.5 min (probed in 1.5 s at load 0.9) and simulated for 462 s (8.4 min wall in all).
"""

from __future__ import annotations

import heapq
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

PROBE_SECONDS = 0.03  # wall time per probed recipe: ~10^3-10^4 fused steps, enough to average over epochs
PROBE_BUDGET_SECONDS = 1.5  # all probes of one list together; recipes share it when many
MIN_PROBE_SECONDS = 0.005  # a recipe's probe when the budget is spent: its time passes the budget by this per recipe
PROBE_CHUNKS = 4  # per recipe: the fastest of about this many timed chunks
WARMUP_STEPS = 16
# measured (2-core machine): the first simulate() in a fresh process (torch, cvxpy, numba cache) takes 8.6 s
WORKER_START_S = 9.0
# max-margin solves, references and data facts of one data draw: measured 0.02-3.8 s (median 0.3 s) on the studies'
# tasks after the first, 0.1-0.16 s for a fresh draw of the minibatch preset
DRAW_SETUP_S = 0.3

# seconds per step of one run (fused) or of a group (torch), per cost key, for the life of this process
_probed: dict[tuple, float] = {}


@dataclass
class DurationEstimate:
    """Expected seconds of a task list, per task (one core each, in the tasks' order) and for the whole schedule."""

    seconds: float
    task_seconds: list[float]
    workers: int
    stepper: str
    load: float
    probe_s: float
    config_steps: int
    runs: int
    notes: list[str] = field(default_factory=list)


def _cost_key(data, run, stepper: str, group_size: int, device: Any) -> tuple:
    # the fused kernels' per-run cost depends on the recipe and the data's shape only (a schedule outside the
    # polynomial family adds its table's filling); torch's on the group too
    return (data.n, data.d, data.k, run.recipe, stepper, group_size if stepper == "torch" else 1, str(device),
            run.schedule.is_polynomial)


def _time_fused(run, data, cap: int, seconds: float) -> tuple[float, bool]:
    """Seconds per step of one run on one thread of the fused kernels, probed for about ``seconds``, and
    whether the probe ran that long (not cut short by the horizon ``cap``).

    The probe runs in about ``PROBE_CHUNKS`` chunks and keeps the fastest chunk's rate: on a shared machine
    a chunk of a few milliseconds is now and then descheduled (whole probes read up to 1.6x slow), and the
    machine's load is accounted for separately (:func:`_contention`)."""
    from rates.numeric.fused.group import FusedGroup

    group = FusedGroup([run], np.asarray(data.H), np.asarray(data.y), int(data.k), threads=1)
    started = time.perf_counter()
    group.advance_to(min(WARMUP_STEPS, cap))
    if group.t >= cap:  # the warm-up is the whole run: timed with the kernels' load
        return (time.perf_counter() - started) / max(group.t, 1), False
    begun, fastest, chunk = time.perf_counter(), float("inf"), 64
    while True:
        start, first = time.perf_counter(), group.t
        group.advance_to(min(cap, group.t + chunk))
        now = time.perf_counter()
        rate = (now - start) / (group.t - first)
        fastest = min(fastest, rate)
        if now - begun >= seconds or group.t >= cap:
            return fastest, now - begun >= seconds
        # the next chunks: each about 1/PROBE_CHUNKS of the probe's time (at most 4x the last one)
        chunk = int(min(4 * chunk, max(64, seconds / PROBE_CHUNKS / rate)))


def _time_torch(runs, data, cap: int, device, seconds: float) -> tuple[float, bool]:
    """Seconds per step of a group of runs on the torch engine (one thread on the CPU), timed over about
    ``seconds``, and whether the probe ran that long."""
    import torch

    from rates.numeric.engine import DTYPE, run_group

    H = torch.as_tensor(np.asarray(data.H), dtype=DTYPE).to(device)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long).to(device)
    steps = min(cap, WARMUP_STEPS)
    while True:
        started = time.perf_counter()
        run_group(runs, H, y, int(data.k), steps, np.array([steps]), engine="torch")
        elapsed = time.perf_counter() - started
        if elapsed >= seconds or steps >= cap:
            return elapsed / steps, elapsed >= seconds
        steps = min(cap, steps * 4)


def _contention(load: float, workers: int, cores: int) -> float:
    """How much slower a worker runs than the probing thread, from the machine's other load."""
    probe_share = min(1.0, cores / (load + 1.0))
    worker_share = min(1.0, cores / (load + workers))
    return probe_share / worker_share


def schedule_seconds(task_seconds: Sequence[float], workers: int) -> float:
    """Makespan of tasks taken in the given order by the first free of ``workers`` processes."""
    free = [0.0] * max(1, workers)
    for seconds in task_seconds:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def machine_load() -> float:
    """The machine's 1-minute load average (0 where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def probe_recipe(key: tuple, runs: list, data: Any, horizon: int, device: Any, seconds: float) -> tuple[float, bool]:
    """Seconds per step of the cost ``key`` (one run of the fused kernels, or the torch group ``runs``) timed on
    this machine for about ``seconds``, and whether the probe ran that long (:func:`_time_fused`,
    :func:`_time_torch`)."""
    if key[4] == "fused":
        return _time_fused(runs[0], data, horizon, seconds)
    return _time_torch(runs, data, horizon, device, seconds)


def estimate(tasks: Sequence, device: Optional[str] = None, parallel: bool = True, workers: Optional[int] = None,
             load_data: Optional[Callable] = None, dearest_first: bool = True, load: Optional[float] = None,
             probe: Optional[Callable[..., tuple[float, bool]]] = None) -> DurationEstimate:
    """Probe the recipes of ``tasks`` and schedule them (module docstring).

    A task has ``key``, ``data``, ``data_seed``, ``specs`` and ``steps`` (:class:`rates.studies.runner.StudyTask`,
    :class:`rates.numeric.tasks.EngineTask`). ``device`` overrides the tasks' own ``device`` (``auto`` when they
    have none). ``parallel``: the tasks run on ``workers`` worker processes (default one per core, at most one
    per task) that start first; else one after another in this process. ``dearest_first``: the runner will
    order them by this estimate (a study does); else they run in the order given. ``load_data(task)`` gives a
    task's dataset; one draw per data spec is probed (the cost depends on its shape only). ``load`` (default:
    :func:`machine_load` now) and ``probe`` (default :func:`probe_recipe`, whose costs this process keeps; an
    injected probe's are not kept) make the estimate a function of given timings, as the tests use it. Raises
    :class:`rates.errors.RatesError` (a cuda device this machine lacks) before any probe.
    """
    from rates.numeric.engine import device_for_work, resolve_engine, resolve_spec, step_work
    from rates.numeric.fused.group import supports

    if load_data is None:
        from rates.numeric.data import parse_data

        def load_data(task):
            return parse_data(task.data, seed=task.data_seed)

    load = machine_load() if load is None else float(load)
    kept = _probed if probe is None else {}  # an injected probe's figures do not outlive the call
    probe = probe_recipe if probe is None else probe
    cores = os.cpu_count() or 1
    count = max(1, min(len(tasks), int(workers or cores))) if parallel else 1
    datasets: dict[str, Any] = {}
    steppers: dict[str, tuple[Any, str]] = {}
    resolved: dict[tuple, Any] = {}
    first_of: dict[tuple, tuple[list, Any, int, Any]] = {}  # per cost key: the runs, data, horizon, device to probe
    # per kind of task (data spec, specs, device): its groups as (cost key, multiplier of the key's per-step cost)
    kinds: dict[tuple, list[tuple[tuple, int]]] = {}
    for task in tasks:
        name = device if device is not None else getattr(task, "device", "auto")
        kind = (task.data, tuple(task.specs), name)
        if kind in kinds:
            continue
        if task.data not in datasets:
            datasets[task.data] = load_data(task)
        data = datasets[task.data]
        dev = device_for_work(name, step_work(task.specs, [data]))  # where the task itself will run
        if str(dev) not in steppers:
            steppers[str(dev)] = (dev, resolve_engine("auto", dev))
        dev, engine = steppers[str(dev)]
        groups: dict = {}
        for spec in task.specs:
            if (spec, data.n) not in resolved:
                resolved[(spec, data.n)] = resolve_spec(spec, data.n)
            run = resolved[(spec, data.n)]
            groups.setdefault(run.recipe, []).append(run)
        kinds[kind] = []
        for recipe, runs in groups.items():
            stepper = "fused" if engine == "fused" and supports(recipe) else "torch"
            key = _cost_key(data, runs[0], stepper, len(runs), dev)
            first_of.setdefault(key, (runs, data, int(task.steps), dev))
            kinds[kind].append((key, len(runs) if stepper == "fused" else 1))
    probe_started = time.perf_counter()
    costs = {key: kept[key] for key in first_of if key in kept}
    unprobed = [key for key in first_of if key not in costs]
    for number, key in enumerate(unprobed):
        # an equal share of what is left of the budget (the kernels' first load and set-ups included)
        left = PROBE_BUDGET_SECONDS - (time.perf_counter() - probe_started)
        share = min(PROBE_SECONDS, max(MIN_PROBE_SECONDS, left / (len(unprobed) - number)))
        runs, data, horizon, dev = first_of[key]
        costs[key], full = probe(key, runs, data, horizon, dev, share)
        if full:  # a probe cut short by a task's tiny horizon is not kept for longer tasks
            kept[key] = costs[key]
    probe_s = time.perf_counter() - probe_started
    per_step = {kind: sum(costs[key] * times for key, times in groups) for kind, groups in kinds.items()}
    task_seconds, drawn = [], set()
    for task in tasks:
        kind = (task.data, tuple(task.specs), device if device is not None else getattr(task, "device", "auto"))
        draw = (task.data, task.data_seed)
        task_seconds.append(per_step[kind] * task.steps + (DRAW_SETUP_S if draw not in drawn else 0.0))
        drawn.add(draw)
    slowdown = _contention(load, count, cores)
    each = [seconds * slowdown for seconds in task_seconds]
    seconds = (schedule_seconds(sorted(each, reverse=True) if dearest_first else each, count)
               + (WORKER_START_S if parallel else 0.0))
    return DurationEstimate(seconds, task_seconds, count, "/".join(sorted({key[4] for key in first_of})), load,
                            probe_s, int(sum(len(t.specs) * t.steps for t in tasks)),
                            int(sum(len(t.specs) for t in tasks)))
