"""The one simulation path of the seed studies: tasks -> runs (and, when asked, the iterates W_t).

Setting
    A study is a list of :class:`StudyTask`: one dataset (a ``--data`` spec and a data seed) and the run
    configurations advanced together on it. :func:`run_tasks` is the only function through which the
    studies simulate, so a task runner (``rates sweep``) can replace it in one place.

Algorithm
    Without iterates a task is one :func:`rates.engine.simulate` call (the engine's fastest path). With
    ``iterates=True`` the task also keeps ``W_t`` at every checkpoint (MINIBATCH measures cosine similarity
    of ``W_t`` to a max-margin solution or to the bias matrix ``M``, which the engine's records do not hold):
    the runs are stepped with the engine's own optimiser composition (:func:`rates.optim.compose.build`,
    the same code ``simulate`` runs for a recipe) and the records are computed from the kept ``W_t`` with
    the public margin and loss functions. Tasks run in parallel processes (one per core) unless ``parallel``
    is off; results do not depend on it (each run's randomness is its own seeded stream).

Guarantee
    ``run_tasks`` returns, per task key, the runs in the order of the task's specs, the iterates
    ``(R, T, k, d)`` when asked, and the wall time. Measures: :func:`relative_error` is
    ``(gamma - gamma(W_t)) / gamma`` in a norm, :func:`cosine` the Frobenius cosine of two matrices.

Reference
    MINIBATCH ``002_e8731d42f3942599.txt`` sec. 3 and 5 (relative error, cosine similarity); engine and
    records as in :mod:`rates.engine`.
"""

from __future__ import annotations

import dataclasses
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
    iterates: bool = False
    cost: float = 1.0


@dataclass
class TaskResult:
    key: str
    runs: list[Run]
    iterates: Optional[np.ndarray] = None  # (R, T, k, d): W_t at the checkpoints of runs[r].t
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
    if task.iterates:
        runs, iterates = _simulate_with_iterates(task, data, device)
    else:
        runs = simulate(list(task.specs), data, task.steps, checkpoints=task.checkpoints, device=device,
                        progress=progress).runs
        iterates = None
    for run in runs:
        run.config["data_seed"] = task.data_seed
        run.config["task"] = task.key
    return TaskResult(task.key, runs, iterates, time.perf_counter() - started,
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


# ------------------------------------------------------------------------------------------- iterates

def _simulate_with_iterates(task: StudyTask, data, device: str) -> tuple[list[Run], np.ndarray]:
    """Step every spec with the engine's optimiser composition and keep ``W_t`` at the checkpoints.

    A local helper until the engine records per-checkpoint cosines itself (issue #9 point 6): it uses the
    engine's spec resolution and :func:`rates.optim.compose.build`, so the iterates are those of
    :func:`rates.engine.simulate` for the same specs.
    """
    import torch

    from rates import engine
    from rates.margins import max_margin
    from rates.optim.compose import build

    dev = engine.resolve_device(device)
    resolved = [engine.resolve_spec(spec, data.n) for spec in task.specs]
    times = engine.checkpoint_times(int(task.steps), int(task.checkpoints))
    H = torch.as_tensor(np.asarray(data.H), dtype=engine.DTYPE, device=dev)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long, device=dev)
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(resolved):
        groups.setdefault(r.recipe, []).append(i)
    iterates = np.zeros((len(resolved), len(times), data.k, data.d))
    with torch.inference_mode(), engine.single_thread_on_cpu(dev):
        for recipe, members in groups.items():
            runs = [resolved[i] for i in members]
            optimizer = build(recipe, H, y, data.k, engine._hyper(runs, dev))
            W = torch.zeros((len(runs), data.k, data.d), dtype=engine.DTYPE, device=dev)
            state = optimizer.init(W)
            position = 0
            for t in range(int(task.steps)):
                W, state = optimizer.step(W, state, t)
                if position < len(times) and t + 1 == times[position]:
                    iterates[members, position] = W.detach().cpu().numpy()
                    position += 1
    gammas = {r.algorithm.norm: max_margin(data, r.algorithm.norm) for r in resolved}
    runs_out = []
    for i, r in enumerate(resolved):
        record = checkpoint_record(iterates[i], data, r.algorithm.norm)
        gamma = gammas[r.algorithm.norm]
        config = dataclasses.asdict(r.spec)
        config.update(a=str(r.a), algo=r.algorithm.name, norm=r.algorithm.norm, family=r.algorithm.family,
                      batch=r.recipe.batch, momentum=r.algorithm.momentum, vr=r.algorithm.vr,
                      source=r.recipe.source, data=data.name, steps=int(task.steps), device=str(dev),
                      dtype="float64")
        if not r.algorithm.adam:
            for key in ("adam_beta1", "adam_beta2", "adam_eps"):
                config.pop(key)
        runs_out.append(Run(config=config, gamma={"value": float(gamma.gamma), "norm": gamma.norm,
                                                  "solver": gamma.solver, "accuracy": float(gamma.accuracy)},
                            t=times.copy(), gap=float(gamma.gamma) - record["margin"], margin=record["margin"],
                            log_loss=record["log_loss"], norm=record["norm"], margins=record["margins"]))
    return runs_out, iterates


REPORTED_NORMS = ("max", "frobenius", "spectral")


def checkpoint_record(Ws: np.ndarray, data, norm: str) -> dict[str, Any]:
    """Margins (own norm and :data:`REPORTED_NORMS`), log loss and own norm of iterates ``Ws`` (T, k, d)."""
    import torch

    from rates.losses import log_loss
    from rates.margins import unnormalized_margins
    from rates.norms import parse_norm

    W = torch.as_tensor(Ws, dtype=torch.float64)
    H = torch.as_tensor(np.asarray(data.H), dtype=torch.float64)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long)
    raw = unnormalized_margins(W, H, y).numpy()
    values = {name: parse_norm(name).value(W).numpy() for name in dict.fromkeys((norm,) + REPORTED_NORMS)}
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"margin": raw / values[norm], "norm": values[norm], "log_loss": log_loss(W, H, y).numpy(),
                "margins": {name: raw / values[name] for name in REPORTED_NORMS}}


# ------------------------------------------------------------------------------------------- measures

def relative_error(run: Run, norm: str, gamma: float) -> np.ndarray:
    """``(gamma - gamma(W_t)) / gamma`` in ``norm`` at every checkpoint (MINIBATCH sec. 5 'relative error')."""
    return (gamma - np.asarray(run.margins[norm], dtype=float)) / gamma


def cosine(Ws: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Frobenius cosine ``<W_t, T> / (||W_t||_F ||T||_F)`` for iterates (..., k, d) and one target (k, d)."""
    Ws = np.asarray(Ws, dtype=float)
    target = np.asarray(target, dtype=float)
    dots = np.tensordot(Ws, target, axes=([-2, -1], [0, 1]))
    norms = np.linalg.norm(Ws.reshape(*Ws.shape[:-2], -1), axis=-1) * np.linalg.norm(target)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, dots / norms, np.nan)


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
