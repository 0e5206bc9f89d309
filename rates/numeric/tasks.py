"""Engine tasks and the one function that runs them: in this process, or on a Dask cluster.

Setting
    An :class:`EngineTask` is one batched call of :func:`rates.numeric.engine.simulate`: a few :class:`RunSpec`
    that share a recipe, advanced together on one dataset (a ``--data`` spec and the seed of its draw)
    for ``steps`` steps. Tasks are independent, so they are the unit of distribution, of progress and of
    resumption (``rates sweep``) and the unit a study submits (``rates report``).

Algorithm
    :func:`run_tasks` runs a list of tasks with one of three executors:

    * ``"serial"`` -- one after another in this process (no Dask import; tests, quick studies);
    * ``"local"`` -- an embedded ``distributed.LocalCluster`` of worker *processes*, one thread each (the
      engine's step loop is single-threaded on CPU, so parallelism is across tasks);
    * ``"tcp://host:port"`` (or ``host:port``) -- a running Dask scheduler; its workers need the same
      ``rates`` installed and, for ``FILE.npz`` data, the same paths.

    Tasks are submitted in the given order with decreasing priority (list the dearest first), results
    come back to this process as they finish (``on_result``), and a worker that dies has its task rerun
    elsewhere by the scheduler.

Guarantee
    On CPU every run is bit-for-bit the same whichever executor ran it and whichever runs shared its
    batch (``rates.numeric.engine``, "Reproducibility"); only ``meta`` wall-clock fields differ between runs.
    Bad input raised inside a worker comes back as the same :class:`~rates.errors.InputError`.

Reference
    Dask distributed: https://distributed.dask.org (``LocalCluster``, ``Client.submit``, ``as_completed``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

from rates.errors import InputError, RatesError
from rates.numeric.engine import RunSpec
from rates.numeric.plugin_loading import chosen_families, replay
from rates.numeric.plugin_loading import loaded as loaded_plugins
from rates.numeric.trajectory import Trajectory
from rates.progress import progress_bar
from rates.progress import wanted as progress_wanted

EXECUTORS = ("serial", "local")


@dataclass(frozen=True)
class EngineTask:
    """One batched engine call: ``specs`` on ``parse_data(data, seed=data_seed)`` for ``steps`` steps.

    ``label`` only names the task in progress lines and errors. Every run of the resulting Trajectory
    records ``data_seed`` in its config (full-batch runs from ``W_0 = 0`` differ by seed only through it).
    """

    specs: tuple[RunSpec, ...]
    data: str
    data_seed: Optional[int]
    steps: int
    checkpoints: int = 60
    device: str = "auto"
    label: str = ""

    @property
    def key(self) -> str:
        """A stable digest of everything that determines the result (not the label)."""
        payload = {"specs": [spec.record() for spec in self.specs], "data": self.data, "data_seed": self.data_seed,
                   "steps": self.steps, "checkpoints": self.checkpoints, "device": self.device}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class _Failure:
    """A RatesError raised in a worker, carried back by value (InputError's two-argument constructor
    does not survive pickling as an exception)."""

    kind: str
    option: str
    message: str

    def reraise(self) -> None:
        if self.kind == "input":
            raise InputError(self.option, self.message)
        raise RatesError(self.message)


def execute_task(task: EngineTask, progress: bool = False) -> Trajectory:
    """Run one task in this process: the function the workers execute."""
    from rates.numeric.data import parse_data
    from rates.numeric.engine import simulate

    trajectory = simulate(list(task.specs), parse_data(task.data, seed=task.data_seed), task.steps,
                          checkpoints=task.checkpoints, device=task.device, progress=progress)
    for run in trajectory.runs:
        run.config = run.config.with_draw(task.data_seed)
    trajectory.meta["data"]["spec"] = task.data
    trajectory.meta["data"]["seed"] = task.data_seed
    trajectory.meta["worker"] = {"host": socket.gethostname(), "pid": os.getpid()}
    return trajectory


def _execute_remote(task: EngineTask, plugins: tuple = (), families: tuple = ()) -> Any:
    try:
        replay(plugins, families)  # on a worker: the driver's plug-ins first (optimisers, families), loaded once
        return execute_task(task)
    except InputError as err:
        return _Failure("input", err.option, err.message)
    except RatesError as err:
        return _Failure("rates", "", str(err))


def _unwrap(result: Any) -> Trajectory:
    if isinstance(result, _Failure):
        result.reraise()
    return result


def run_tasks(tasks: Sequence[EngineTask], executor: Any = "serial", *, workers: Optional[int] = None,
              progress: bool = False, on_result: Optional[Callable[[int, Trajectory], None]] = None,
              limit: Optional[int] = None,
              on_failure: Optional[Callable[[int, str], None]] = None,
              estimate: bool = True) -> list[Optional[Trajectory]]:
    """Run ``tasks``; return their Trajectories in task order (``None`` for tasks left out by ``limit``).

    ``executor``: ``"serial"`` (this process), ``"local"`` (an embedded Dask LocalCluster with ``workers``
    processes, default one per core, at most one per task), a Dask scheduler address, or a connected
    ``distributed.Client`` (kept open: callers that run several batches start their cluster once). ``on_result(i,
    trajectory)`` is called in this process as each task finishes (completion order), before the next
    result is taken, so a caller can save it at once; ``limit`` stops after that many tasks have finished
    (the remaining ones are cancelled). ``progress`` shows a bar over tasks with ETA on a terminal.
    ``on_failure(i, message)``, when given, receives a task's RatesError other than bad input (a solver that
    could not certify, say) and the other tasks go on; without it the error is raised.

    A stable entry point: studies (``rates report``) and ``rates sweep`` both call it.
    """
    tasks = list(tasks)
    results: list[Optional[Trajectory]] = [None] * len(tasks)
    wanted = len(tasks) if limit is None else max(0, min(int(limit), len(tasks)))
    if wanted == 0:
        return results
    if estimate:  # a caller that estimated already (rates sweep, before writing anything) says so
        check_budget(tasks[:wanted], workers, executor)

    def deliver(index: int, outcome: Any, advance: Callable[[], None]) -> None:
        try:
            trajectory = _unwrap(outcome)
        except InputError:
            raise
        except RatesError as err:
            if on_failure is None:
                raise
            on_failure(index, str(err))
            advance()
            return
        results[index] = trajectory
        if on_result is not None:
            on_result(index, trajectory)
        advance()

    with progress_bar(wanted, "tasks", progress_wanted(progress)) as advance:
        if isinstance(executor, str) and executor == "serial":
            for index in range(wanted):
                deliver(index, _execute_remote(tasks[index]), advance)
            return results
        with _dask_client(executor, workers, len(tasks)) as client:
            from distributed import as_completed

            futures = {}
            for index, task in enumerate(tasks):
                # a fresh key per submission: a cancelled task of an interrupted run may still be finishing
                future = client.submit(_execute_remote, task, loaded_plugins(), chosen_families(),
                                       key=f"rates-task-{task.key}-{uuid.uuid4().hex[:12]}",
                                       priority=len(tasks) - index, pure=False)
                futures[future] = index
            finished = 0
            completed = as_completed(list(futures))
            try:
                for future in completed:
                    deliver(futures[future], future.result(), advance)
                    finished += 1
                    if finished >= wanted:
                        break
            finally:
                client.cancel([f for f in futures if not f.done()])
    return results


def worker_processes(executor: Any, workers: Optional[int], n_tasks: int) -> int:
    """How many tasks :func:`run_tasks` runs at once: one for ``serial`` (in this process); for ``local``
    ``workers`` processes, default one per core, at most one per task; a remote scheduler's workers are not
    known before connecting, so one is assumed (the estimates then give a serial upper bound)."""
    if isinstance(executor, str) and executor == "local":
        return max(1, min(int(workers or os.cpu_count() or 1), n_tasks))
    return 1


def estimate_tasks(tasks: Sequence[EngineTask], workers: Optional[int] = None, measured: bool = True,
                   executor: Any = "local"):
    """Peak memory and wall time of ``tasks`` run by :func:`run_tasks` with ``executor`` and ``workers``
    (:class:`rates.budget.Estimate`).

    Memory, and without ``measured`` the time, come from :mod:`rates.budget`'s constants, per task, on one
    draw per data spec. Those constants were timed on the torch engine, which the fused kernels outrun by one
    to three orders of magnitude, and recipes differ among themselves by more than 10x per step, so with
    ``measured`` the time is :func:`rates.numeric.duration.estimate`'s: each distinct recipe (algorithm,
    batch size, polar method, data shape) probed once on this machine, its tasks timed by their own recipe's
    cost, scheduled in the given order on the processes :func:`run_tasks` will use (:func:`worker_processes`);
    the probes take about a second or two in all, whatever the list. A probe that cannot run in this process (a
    device that only the workers of a remote scheduler have) leaves the constants' time.
    """
    from rates import budget
    from rates.numeric.data import parse_data

    shapes: dict[str, tuple[int, int, int]] = {}
    rough, peak, runs = 0.0, 0, 0
    for task in tasks:
        if task.data not in shapes:
            data = parse_data(task.data, seed=task.data_seed)
            shapes[task.data] = (data.n, data.k, data.d)
        one = budget.estimate_linear_runs(len(task.specs), task.steps, task.checkpoints, *shapes[task.data])
        rough += one.seconds
        peak = max(peak, one.bytes)
        runs += len(task.specs)
    parallel = worker_processes(executor, workers, len(tasks))
    seconds = rough / parallel
    if measured:
        from rates.numeric import duration

        in_process = isinstance(executor, str) and executor == "serial"
        try:
            seconds = duration.estimate(tasks, parallel=not in_process, workers=parallel,
                                        dearest_first=False).seconds
        except RatesError:  # it cannot run here (a GPU only a remote cluster has): the constants' figure stays
            pass
    return budget.Estimate(peak, seconds, runs, max(task.steps for task in tasks))


def check_budget(tasks: Sequence[EngineTask], workers: Optional[int] = None, executor: Any = "local") -> None:
    """Refuse tasks that cannot fit in memory, announce those estimated over an hour (:mod:`rates.budget`),
    before the first step. Only a request the constants put over the hour pays the probes of
    :func:`estimate_tasks`, and the announcement gives the probed time."""
    from rates import budget

    draws = {task.data_seed for task in tasks}
    option = "data_seeds" if len(draws) > 1 else "seeds"
    budget.check(estimate_tasks(tasks, workers, measured=False, executor=executor), option=option,
                 advice="ask for fewer seeds, data draws or steps",
                 measure=lambda: estimate_tasks(tasks, workers, executor=executor).seconds)


class _dask_client:
    """A Dask client on an embedded LocalCluster (``"local"``) or on a running scheduler (an address)."""

    def __init__(self, executor: str, workers: Optional[int], n_tasks: int):
        self.executor, self.workers, self.n_tasks = executor, workers, n_tasks
        self.cluster = self.client = None

    def __enter__(self):
        import logging

        from distributed import Client, LocalCluster

        if not isinstance(self.executor, str):  # a caller's own Client: used, not closed
            return self.executor
        if self.executor == "local":
            count = worker_processes("local", self.workers, self.n_tasks)
            # processes, one thread each: the step loop holds the GIL; the scheduler's HTTP server (it starts
            # even without bokeh) on a random port, so that several sweeps on one machine never compete for 8787
            _quiet_resource_tracker()
            with _workers_ignore_sigint():
                self.cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                            dashboard_address=":0", silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(self.executor, timeout="15s")
            except (OSError, TimeoutError, ValueError) as err:
                raise InputError("scheduler", f"cannot connect to a Dask scheduler at {self.executor!r}: "
                                 f"{' '.join(str(err).split()) or type(err).__name__}") from None
        return self.client

    def __exit__(self, kind, error, trace):
        if self.cluster is not None and kind is not None and not issubclass(kind, Exception):
            # Ctrl-C (or another exit): a graceful close waits for every busy worker to finish its kernel
            # call (~10 s); its processes are stopped now instead, and the cluster closed without waiting
            _stop_processes(self.cluster)
            for closing in (self.client, self.cluster):
                with contextlib.suppress(Exception):
                    closing.close(timeout=1)
            return False
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


def _stop_processes(cluster) -> None:
    """Kill the worker processes of a LocalCluster (nannies and their workers) at once."""
    import psutil
    from distributed.core import Status

    pids = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        nanny.status = Status.closing  # as its close() begins: a nanny starts a dead worker again unless closing
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid is not None:
            pids.append(pid)
    killed = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            for child in process.children(recursive=True) + [process]:
                with contextlib.suppress(psutil.Error):
                    child.kill()
                    killed.append(child)
    psutil.wait_procs(killed, timeout=0.5)  # SIGKILL cannot be refused: gone in milliseconds


# multiprocessing's resource tracker, started with this process's -W options, unlinks the semaphores of worker
# processes that were killed (Ctrl-C above, or kill -9 of the sweep) and then warns "There appear to be N leaked
# semaphore objects to clean up at shutdown": the cleaning is right, the warning is noise to a user who stopped
# a sweep on purpose
_TRACKER_WARNING = "ignore::UserWarning:multiprocessing.resource_tracker"


def _quiet_resource_tracker() -> None:
    if _TRACKER_WARNING not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_WARNING)


@contextlib.contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (inherited through exec; Python then installs no
    KeyboardInterrupt handler). Ctrl-C in a terminal reaches the whole process group: only this process
    should react, save nothing half-done and close the cluster, which stops the workers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def executor_name(scheduler: Optional[str], parallel: bool = True) -> str:
    """Normalise a ``--scheduler`` value: ``None`` -> ``local`` (or ``serial`` when not ``parallel``)."""
    if scheduler is None:
        return "local" if parallel else "serial"
    text = str(scheduler).strip()
    if not text:
        raise InputError("scheduler", "expected local, serial or a Dask scheduler address such as tcp://host:8786")
    return text
