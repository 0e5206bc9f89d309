"""Benchmark: grid throughput of ``rates.sweep.run_tasks`` on 2 local Dask workers against one process.

Setting: the task mix of the default study (full-batch SignGD, NGD, Spectral-GD and Adam on the
``default`` Gaussian preset, one task per (algorithm, data seed), ``--runs`` values of (a, eta0) on each
task's runs axis). The same task list is run twice in one process, alternating, best of ``--repeats``:

* ``serial``: ``run_tasks(tasks, "serial")`` -- one after another in this process;
* ``local``: ``run_tasks(tasks, client)`` on an embedded ``LocalCluster`` of ``--workers`` processes that
  was started (and warmed up by one tiny task per worker) before timing; its start-up is printed apart.

Wall-clock seconds give the throughput ratio (the point is parallelism); CPU seconds (this process for
``serial``, the workers' ``time.process_time`` for ``local``) give the cost per config-step that load from
other jobs on the machine does not inflate, which the README's cluster cost sketch scales up. Both sides
must return bit-identical runs (checked).

Usage::

    python3 benchmarks/sweep_throughput.py [--tasks 8] [--runs 8] [--steps 20000] [--workers 2] [--repeats 2]
                                           [--algos ngd,adam,spectral-gd,signgd]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rates.numeric.engine import RunSpec
from rates.numeric.tasks import EngineTask, execute_task, run_tasks
from rates.output.tables import Table

ALGORITHMS = ("ngd", "adam", "spectral-gd", "signgd")
SCHEDULES = [(a, eta0) for eta0 in (1.0, 0.5) for a in ("3/10", "1/2", "2/3", "3/4", "4/5", "1")]


def make_tasks(count: int, runs: int, steps: int, algos: tuple[str, ...] = ALGORITHMS) -> list[EngineTask]:
    """``count`` tasks cycling through ``algos`` and data seeds, ``runs`` schedules each."""
    tasks = []
    for i in range(count):
        algo, seed = algos[i % len(algos)], i // len(algos)
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
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        # one tiny task per algorithm on every worker and here: imports (torch, the margin solvers of each
        # norm) and first-call costs are paid before timing, on both sides
        warm = [EngineTask(specs=(RunSpec(algo, "1/2"),), data="default", data_seed=0, steps=2, device="cpu")
                for algo in dict.fromkeys(task.specs[0].algo for task in tasks)]
        for address in client.scheduler_info()["workers"]:
            client.gather([client.submit(execute_task, task, workers=[address], pure=False) for task in warm])
        run_tasks(warm, "serial")
        startup = time.perf_counter() - started
        serial_best = local_best = serial_cpu = local_cpu = float("inf")
        reference = None
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            serial = run_tasks(tasks, "serial")
            serial_best = min(serial_best, time.perf_counter() - t0)
            serial_cpu = min(serial_cpu, time.process_time() - c0)
            before = client.run(time.process_time)
            t0 = time.perf_counter()
            local = run_tasks(tasks, client)
            local_best = min(local_best, time.perf_counter() - t0)
            after = client.run(time.process_time)
            local_cpu = min(local_cpu, sum(after[w] - before[w] for w in after if w in before))
            reference = reference or fingerprint(serial)
            if fingerprint(local) != reference or fingerprint(serial) != reference:
                raise SystemExit("the cluster's runs differ from the serial runs")
    finally:
        client.close()
        cluster.close()
    config_steps = sum(len(t.specs) for t in tasks) * tasks[0].steps
    return {"serial_s": serial_best, "local_s": local_best, "serial_cpu_s": serial_cpu, "local_cpu_s": local_cpu,
            "startup_s": startup, "config_steps": config_steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--runs", type=int, default=8, help="runs per task (the engine's batch)")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--algos", default=",".join(ALGORITHMS), help="comma-separated, cycled over the tasks")
    args = parser.parse_args()
    algos = tuple(name.strip() for name in args.algos.split(",") if name.strip())
    tasks = make_tasks(args.tasks, args.runs, args.steps, algos)
    result = measure(tasks, args.workers, args.repeats)
    table = Table(["executor", "wall s", "config-steps/s", "wall us per config-step", "CPU us per config-step"],
                  caption=f"{args.tasks} tasks x {args.runs} runs x {args.steps} steps ({', '.join(algos)})")
    for name, side in (("serial (1 process)", "serial"), (f"local ({args.workers} Dask workers)", "local")):
        seconds, cpu = result[f"{side}_s"], result[f"{side}_cpu_s"]
        table.add(name, f"{seconds:.2f}", f"{result['config_steps'] / seconds:.0f}",
                  f"{1e6 * seconds / result['config_steps']:.2f}", f"{1e6 * cpu / result['config_steps']:.2f}")
    print(table.to_markdown())
    print(f"throughput ratio local / serial: {result['serial_s'] / result['local_s']:.2f}x "
          f"(same run; cluster start-up and warm-up {result['startup_s']:.1f} s, not counted; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
