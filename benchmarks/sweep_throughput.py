"""Benchmark: grid throughput of ``rates.sweep.run_tasks`` on 2 local Dask workers against one process.

Setting: the task mix of the default study (full-batch SignGD, NGD, Spectral-GD and Adam on the
``default`` Gaussian preset, one task per (algorithm, data seed), ``--runs`` values of (a, eta0) on each
task's runs axis). The same task list is run twice in one process, alternating, best of ``--repeats``:

* ``serial``: ``run_tasks(tasks, "serial")`` -- one after another in this process;
* ``local``: ``run_tasks(tasks, client)`` on an embedded ``LocalCluster`` of ``--workers`` processes that
  was started (and warmed up by one tiny task per worker) before timing; its start-up is printed apart.

Wall-clock seconds (the point is parallelism, so CPU time of this process would say nothing). Both sides
must return bit-identical runs (checked). The per-config-step cost of the serial side is what the
README's cluster cost sketch scales up.

Usage::

    python3 benchmarks/sweep_throughput.py [--tasks 8] [--runs 8] [--steps 20000] [--workers 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import time

from rates.engine import RunSpec
from rates.sweep import EngineTask, run_tasks
from rates.tables import Table

ALGORITHMS = ("ngd", "adam", "spectral-gd", "signgd")
SCHEDULES = [(a, eta0) for eta0 in (1.0, 0.5) for a in ("3/10", "1/2", "2/3", "3/4", "4/5", "1")]


def make_tasks(count: int, runs: int, steps: int) -> list[EngineTask]:
    """``count`` tasks cycling through the study's algorithms and data seeds, ``runs`` schedules each."""
    tasks = []
    for i in range(count):
        algo, seed = ALGORITHMS[i % len(ALGORITHMS)], i // len(ALGORITHMS)
        specs = tuple(RunSpec(algo, a, eta0=eta0, seed=seed) for a, eta0 in
                      (SCHEDULES[j % len(SCHEDULES)] for j in range(runs)))
        tasks.append(EngineTask(specs=specs, data="default", data_seed=seed, steps=steps, device="cpu",
                                label=f"{algo} seed {seed}"))
    return tasks


def fingerprint(trajectories) -> str:
    return json.dumps([[run.to_json() for run in t.runs] for t in trajectories], sort_keys=True)


def measure(tasks: list[EngineTask], workers: int, repeats: int) -> dict:
    import logging

    from distributed import Client, LocalCluster

    started = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        run_tasks([EngineTask(specs=(RunSpec("signgd", "1/2"),), data="default", data_seed=0, steps=2,
                              device="cpu")] * workers, client)  # imports torch and rates on every worker
        startup = time.perf_counter() - started
        serial_best = local_best = float("inf")
        reference = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            serial = run_tasks(tasks, "serial")
            serial_best = min(serial_best, time.perf_counter() - t0)
            t0 = time.perf_counter()
            local = run_tasks(tasks, client)
            local_best = min(local_best, time.perf_counter() - t0)
            reference = reference or fingerprint(serial)
            if fingerprint(local) != reference or fingerprint(serial) != reference:
                raise SystemExit("the cluster's runs differ from the serial runs")
    finally:
        client.close()
        cluster.close()
    config_steps = sum(len(t.specs) for t in tasks) * tasks[0].steps
    return {"serial_s": serial_best, "local_s": local_best, "startup_s": startup, "config_steps": config_steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--runs", type=int, default=8, help="runs per task (the engine's batch)")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    tasks = make_tasks(args.tasks, args.runs, args.steps)
    result = measure(tasks, args.workers, args.repeats)
    table = Table(["executor", "wall s", "config-steps/s", "us per config-step"],
                  caption=f"{args.tasks} tasks x {args.runs} runs x {args.steps} steps (default study mix)")
    for name, key in (("serial (1 process)", "serial_s"), (f"local ({args.workers} Dask workers)", "local_s")):
        seconds = result[key]
        table.add(name, f"{seconds:.2f}", f"{result['config_steps'] / seconds:.0f}",
                  f"{1e6 * seconds / result['config_steps']:.2f}")
    print(table.to_markdown())
    print(f"throughput ratio local / serial: {result['serial_s'] / result['local_s']:.2f}x "
          f"(same run; cluster start-up and warm-up {result['startup_s']:.1f} s, not counted)")


if __name__ == "__main__":
    main()
