"""Benchmark: many draws of a dataset in one engine call against one call per draw, side by side.

Setting: ``rates run --data-seeds 0..255`` (full-batch SignGD on draws of ``gaussian:k=4,d=6,per_class=12``,
n = 48). Two ways to run the same 256 runs, in this one process, alternating, median of ``--repeats``:

* ``serial``: one :func:`rates.numeric.engine.simulate` call per draw, as ``rates run`` did before draws were
  batched (one configuration per kernel call, one lane, one thread);
* ``batched``: one :func:`rates.numeric.engine.simulate_draws` call for all draws (what ``rates run`` does now:
  the runs form one group, 64 per vector block, each lane on its own data, one thread per core).

Both sides do the same work after the data exist: stepping, checkpoint measures, the per-run records. The
data draws and their max margins (gamma and the reference directions: a separability LP per draw, then LPs
and cvxpy conic programs, ~0.1 s of CPU per draw, cached on disk by :mod:`rates.cache`) are prepared before
the clocks start, so the comparison is the engine's. That preparation is timed first, with empty caches (a
temporary cache folder), two ways: one draw after another in this process, and shared with a second process
(:func:`rates.numeric.engine.prepare_draws`, what ``rates run --data-seeds`` does when the draws would take long);
both must leave the same max margins bit for bit (``rates run`` shares them only when the load average says a
core is free; this script shares them whatever the load). Both sides' final gaps are compared (they must be equal: a
batched run is bit for bit the run alone).

Clocks: wall (what a user waits) and this process's CPU seconds (all threads). The machine's load average is
printed at the start and end: on a machine shared with other jobs, wall time measures the neighbours too,
and the batched call's two threads may not both get a core.

Usage::

    python3 benchmarks/data_draws.py [--draws 256] [--steps 20000] [--repeats 3] [--data gaussian:k=4,d=6,per_class=12]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import tempfile
import time

from rates.numeric import margins, measures
from rates.numeric.engine import RunSpec, prepare_draws, simulate, simulate_draws
from rates.numeric.fused.group import available_cores

ISSUE_DATA = "gaussian:k=4,d=6,per_class=12"
SPEC = RunSpec("signgd", "1/2")


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def children_cpu() -> float:
    """CPU seconds of this process's finished child processes (the preparation's worker)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def clocked(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def serial(datasets, steps: int) -> list[float]:
    return [float(simulate([SPEC], data, steps, device="cpu").runs[0].gap[-1]) for data in datasets]


def batched(datasets, steps: int) -> tuple[list[float], dict]:
    out = simulate_draws([SPEC], datasets, steps, device="cpu")
    return [float(run.gap[-1]) for run in out.runs], out.meta


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", default=ISSUE_DATA)
    args = parser.parse_args(argv)
    print(f"load average at start: {load()}; {available_cores()} core(s) for this process")
    datasets, solved, user_cache = None, [], os.environ.get("RATES_CACHE_DIR")
    for way, serial_seconds in (("one after another", 0.0), ("shared with a second process", math.inf)):
        with tempfile.TemporaryDirectory() as folder:
            os.environ["RATES_CACHE_DIR"] = folder  # empty, and read by the worker process too
            margins._CACHE.clear()
            measures._FACE_MEMORY.clear()
            workers_cpu = children_cpu()
            datasets, wall, cpu = clocked(lambda serial_seconds=serial_seconds: prepare_draws(
                args.data, list(range(args.draws)), ["max"], serial_seconds=serial_seconds,
                workers=available_cores()))
            workers_cpu = children_cpu() - workers_cpu
            solved.append({key: (result.gamma, result.W.tobytes(), result.dual.tobytes())
                           for key, result in margins._CACHE.items()})
        print(f"{args.draws} draws of {args.data!r} (n={datasets[0].n}, k={datasets[0].k}, d={datasets[0].d}) and "
              f"their max margins (max, Frobenius, spectral), empty caches, {way}: {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU here + {workers_cpu:.1f} s in the worker; load average now {load()}")
    print(f"the same max margins either way, bit for bit: {solved[0] == solved[1]}")
    if user_cache is None:
        os.environ.pop("RATES_CACHE_DIR")
    else:
        os.environ["RATES_CACHE_DIR"] = user_cache
    simulate_draws([SPEC], datasets[:2], 2, checkpoints=2, device="cpu")  # load the compiled kernels
    samples: dict[str, list[float]] = {}
    gaps = {}
    meta: dict = {}
    for _ in range(args.repeats):
        gaps["serial"], wall, cpu = clocked(lambda: serial(datasets, args.steps))
        samples.setdefault("serial-wall", []).append(wall)
        samples.setdefault("serial-cpu", []).append(cpu)
        (gaps["batched"], meta), wall, cpu = clocked(lambda: batched(datasets, args.steps))
        samples.setdefault("batched-wall", []).append(wall)
        samples.setdefault("batched-cpu", []).append(cpu)
        samples.setdefault("meta-wall", []).append(meta["wall_s"])
    result = {key: statistics.median(values) for key, values in samples.items()}
    runs_steps = args.draws * args.steps
    print(f"\nfull-batch SignGD a=1/2 eta0=1, {args.draws} draws x {args.steps} steps, 60 checkpoints, "
          f"median of {args.repeats} (min-max in brackets)")
    print("| | serial: one simulate call per draw | batched: one simulate_draws call | serial / batched |")
    print("|---|---|---|---|")
    for clock in ("wall", "cpu"):
        s, b = samples[f"serial-{clock}"], samples[f"batched-{clock}"]
        print(f"| {clock} seconds | {result[f'serial-{clock}']:.2f} [{min(s):.2f}-{max(s):.2f}] | "
              f"{result[f'batched-{clock}']:.2f} [{min(b):.2f}-{max(b):.2f}] | "
              f"{result[f'serial-{clock}'] / result[f'batched-{clock}']:.1f}x |")
    print(f"| config-steps per {'wall'} s | {runs_steps / result['serial-wall']:,.0f} | "
          f"{runs_steps / result['batched-wall']:,.0f} | |")
    print(f"batched call's meta: wall_s {meta['wall_s']:.2f} s (the stepping of every draw; this script's clock "
          f"around the whole call: {samples['batched-wall'][-1]:.2f} s), config_steps_per_s "
          f"{meta['config_steps_per_s']:,.0f} = {args.draws} x {args.steps} / wall_s, cpu_s {meta['cpu_s']:.2f}")
    equal = gaps["serial"] == gaps["batched"]
    print(f"final gaps equal on both sides, bit for bit: {equal} (largest difference "
          f"{max(abs(a - b) for a, b in zip(gaps['serial'], gaps['batched'])):.1e})")
    ratio = result["serial-wall"] / result["batched-wall"]
    print(f"target: batched >= 8x faster than serial by wall clock: {ratio:.1f}x")
    print(f"load average at end: {load()}")
    return result


if __name__ == "__main__":
    main()
