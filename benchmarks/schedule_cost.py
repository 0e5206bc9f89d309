"""Benchmark: what a schedule outside the polynomial family costs the fused engine per configuration-step.

Setting: the fused CPU kernels (:mod:`rates.numeric.fused`) compute ``eta_t = eta0 (t+2)^-a`` for the polynomial
family and read ``eta0 f(t)`` from a table of float64 values (:meth:`rates.schedule.Schedule.unit_values`,
filled ``TABLE_STEPS`` steps at a time per distinct schedule) for any other. The target: at most 1.2x the
polynomial family's cost per configuration-step.

Measured: full-batch SignGD (the cheapest step, so the schedule's share is largest) and Adam on the ``default``
preset (n = 30, k = 3, d = 5), one thread, R = 1 and R = 64 configurations sharing one schedule; per
configuration, the polynomial schedule ``a = 1/2`` and each expression of ``--schedules`` advanced ``--steps``
steps from a warm kernel, side by side in this one process, alternating, median of ``--repeats``; CPU seconds
of this process (``time.process_time``: on a shared machine wall time measures the neighbours). The table's
filling is inside the timed call. Printed: ns per configuration-step of each, and the ratio
non-polynomial / polynomial.

Usage::

    python3 benchmarks/schedule_cost.py [--steps 50000] [--repeats 3] [--sizes 1,64]

Measured 26 Nov 2026 on the 2-core AMD EPYC development machine, ``--steps 20000 --repeats 3``, load average
7.5 (other jobs: single numbers move by ~10%); CPU ns per configuration-step (ratio to a = 1/2):

    algo     R  a = 1/2  eta0/((t+2)*log(t+2))  Min(warm-up, 1/sqrt)  Piecewise(warm-up, log/sqrt)
    signgd   1    611.1          588.5 (0.96)          580.4 (0.95)           585.4 (0.96)
    signgd  64    226.4          234.3 (1.04)          239.2 (1.06)           276.9 (1.22)
    adam     1    934.5          957.1 (1.02)         1000.9 (1.07)           931.7 (1.00)
    adam    64    568.5          564.6 (0.99)          557.6 (0.98)           571.1 (1.00)

The one ratio above 1.2 was the machine's noise: SignGD at R = 64 alone, ``--repeats 5``, right after, gave
237.9 (a = 1/2), 230.1 (0.97), 236.8 (1.00) and 232.2 ns (0.98). A table read replaces a ``pow``; the table's
filling (a few ns per configuration-step at R = 1, a 64th of that at R = 64) is the only extra work. With every
run of a group polynomial the kernel gets no table, and numba compiles that case without the table's branch:
the polynomial family's arithmetic is unchanged (the same bits), and its speed against the kernels before
schedules, six alternating pairs of processes under load 9, was SignGD R = 1 median 613 against 598 ns and
Adam R = 1 896 against 885 ns (single pairs varied by up to 30%).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_SCHEDULES = ("eta0/((t+2)*log(t+2))", "Min(eta0*(t+1)/100, eta0/sqrt(t+2))",
                     "Piecewise((eta0*(t+1)/100, t < 99), (eta0*log(t+2)/sqrt(t+2), True))")


def cost_per_config_step(runs, H, y, k: int, steps: int) -> float:
    """CPU seconds per configuration-step of one fused group advanced ``steps`` steps (after a warm-up)."""
    from rates.numeric.fused.group import FusedGroup

    group = FusedGroup(runs, H, y, k, threads=1)
    group.advance_to(64)  # the kernel's load from the numba cache, the first table
    started = time.process_time()
    group.advance_to(64 + steps)
    return (time.process_time() - started) / (steps * len(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1,64")
    parser.add_argument("--algos", default="signgd,adam")
    parser.add_argument("--schedules", default=";".join(DEFAULT_SCHEDULES), help="expressions separated by ';'")
    args = parser.parse_args()

    import numpy as np

    from rates.numeric.data import parse_data
    from rates.numeric.engine import RunSpec, resolve_spec
    from rates.schedule import Schedule

    data = parse_data("default")
    H, y = np.ascontiguousarray(data.H, dtype=np.float64), np.ascontiguousarray(data.y, dtype=np.int64)
    texts = [text.strip() for text in args.schedules.split(";") if text.strip()]
    print(f"fused engine, one thread, default preset (n={data.n}, k={data.k}, d={data.d}), {args.steps} steps, "
          f"median of {args.repeats}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'algo':<7} {'R':>3}  {'schedule':<80} {'ns/config-step':>14}  {'ratio':>6}")
    worst = 0.0
    for algo in args.algos.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            schedules = [Schedule.polynomial("1/2")] + [Schedule.parse(text) for text in texts]
            groups = [[resolve_spec(RunSpec(algo, schedule=s, eta0=1.0), data.n)] * size for s in schedules]
            timings: list[list[float]] = [[] for _ in groups]
            for _ in range(args.repeats):  # alternating, so that a change of the machine's load hits all alike
                for i, runs in enumerate(groups):
                    timings[i].append(cost_per_config_step(runs, H, y, data.k, args.steps))
            medians = [statistics.median(t) for t in timings]
            for schedule, cost in zip(schedules, medians):
                ratio = cost / medians[0]
                if not schedule.is_polynomial:
                    worst = max(worst, ratio)
                print(f"{algo:<7} {size:>3}  {schedule.label():<80} {cost * 1e9:>14.1f}  {ratio:>6.3f}")
    print(f"largest ratio non-polynomial / polynomial: {worst:.3f} (target <= 1.2)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
