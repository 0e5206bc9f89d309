"""Benchmark: the GEMM stepper's compiled loops on real data (scikit-learn's digits), side by side in one process.

Setting: full-batch steepest descent (docs/theory.md section 2) on ``sklearn:digits`` (10 classes, 64 integer pixels,
1797 samples: the GEMM stepper's size), one configuration, a = 1/2, eta0 = 1, from W = 0. Two comparisons:

* plain steepest descent for the norms other than the sign (NGD, coordinate descent, spectral descent): the compiled
  loop (:class:`rates.numeric.gemm.SteepestSteps`) against the torch program around the same two products (what
  ran before it; the loop switched off for that side), CPU ms per step, and the largest relative difference of the
  two iterates at the end;
* SignGD's exact signs on integer pixels: the compiled loop on digits against the same loop on a Gaussian set of the
  same shape (``gaussian:k=10,d=64,per_class=180``), where the rounding bound decides every sign. On digits sparse
  columns' entries fall 2^1000 and more below their row at most steps and are decided one by one
  (:mod:`rates.numeric.exact_sign`); the ratio is what that costs, and the count of returns to Python says where.

Each side is timed as the CPU time (``time.process_time``, one thread) of ``--steps`` steps after ``--skip`` steps
(compilation and the first steps outside the clock), alternating the sides ``--repeats`` times; the table gives the
median and the range.

Usage::

    python3 benchmarks/real_data_steps.py [--steps 2000] [--skip 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np


def _digits():
    from rates.numeric.data import parse_data

    data = parse_data("sklearn:digits")
    return np.asarray(data.H, dtype=np.float64), np.asarray(data.y), data.k


def _time_run(algo: str, H: np.ndarray, y: np.ndarray, k: int, skip: int, steps: int, compiled: bool = True):
    """(CPU ms per step, final W, returns to Python) of one run: ``skip`` steps untimed, then ``steps`` timed."""
    import rates.numeric.gemm as gemm
    from rates.numeric.engine import RunSpec, one_blas_thread, resolve_spec, run_group

    run = resolve_spec(RunSpec(algo, "1/2", 1.0), len(y))
    if algo == "signgd":
        stepper = gemm.SignSteps([run], H, y, k)
        settled = []
        original = stepper._settle
        stepper._settle = lambda t: (settled.append(t), original(t))
        with one_blas_thread():
            stepper.advance_to(skip)
            start = time.process_time()
            stepper.advance_to(skip + steps)
            spent = time.process_time() - start
        return spent / steps * 1e3, stepper.W.copy(), len(settled)
    original = gemm.compiled_steepest
    if not compiled:
        gemm.compiled_steepest = lambda recipe, runs: False
    try:
        times = np.array([skip, skip + steps])
        run_group([run], H, y, k, 3, np.array([3]))  # compile outside the clock
        start = time.process_time()
        W, _ = run_group([run], H, y, k, skip, times[:1])
        first = time.process_time() - start
        start = time.process_time()
        W, _ = run_group([run], H, y, k, skip + steps, times)
        spent = time.process_time() - start - first  # the difference of two runs: the timed steps alone
    finally:
        gemm.compiled_steepest = original
    return spent / steps * 1e3, np.asarray(W), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--skip", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import os

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}; {os.cpu_count()} logical "
          f"CPUs; load average at start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    H, y, k = _digits()
    rows = []
    for algo in ("ngd", "cd", "spectral-gd"):
        loop, program, difference = [], [], 0.0
        for _ in range(args.repeats):
            ms, W_loop, _ = _time_run(algo, H, y, k, args.skip, args.steps)
            loop.append(ms)
            ms, W_program, _ = _time_run(algo, H, y, k, args.skip, args.steps, compiled=False)
            program.append(ms)
            difference = max(difference, float(np.abs(W_loop - W_program).max() / np.abs(W_program).max()))
        rows.append((algo, "digits", "compiled loop", loop, "torch program", program, f"{difference:.1e}"))
    from rates.numeric.data import parse_data

    gauss = parse_data("gaussian:k=10,d=64,per_class=180")
    H_gauss, y_gauss = np.asarray(gauss.H, dtype=np.float64), np.asarray(gauss.y)
    digits_ms, gauss_ms, returns = [], [], 0
    for _ in range(args.repeats):
        ms, _, settled = _time_run("signgd", H, y, k, args.skip, args.steps)
        digits_ms.append(ms)
        returns = max(returns, settled)
        ms, _, _ = _time_run("signgd", H_gauss, y_gauss, k, args.skip, args.steps)
        gauss_ms.append(ms)
    rows.append(("signgd", "digits vs Gaussian 10x64x1800", "digits", digits_ms, "Gaussian", gauss_ms,
                 f"{returns} returns to Python"))
    print(f"CPU ms per step, median (min-max) of {args.repeats}, steps {args.skip}..{args.skip + args.steps}")
    print("| algo | data | A | A ms/step | B | B ms/step | B / A | note |")
    print("|---|---|---|---|---|---|---|---|")
    for algo, data, name_a, a, name_b, b, note in rows:
        def cell(values):
            return f"{np.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"

        print(f"| {algo} | {data} | {name_a} | {cell(a)} | {name_b} | {cell(b)} | "
              f"{np.median(b) / np.median(a):.2f}x | {note} |")
    print(f"load average at end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
