"""Benchmark: config-steps per second of the batched engine vs a per-configuration NumPy loop.

Setting: full-batch SignGD (docs/theory.md section 2) with log-domain weights (section 7) on the ``default``
Gaussian preset, R configurations that differ in the schedule (a, eta0). The NumPy baseline is the same
algorithm written the straightforward way: one configuration at a time, one step at a time. The engine
(``rates.numeric.engine.run_group``, the loop ``simulate`` uses, checkpoints included) advances all R together.
Both are timed side by side in one process, alternating, best of ``--repeats``, in CPU seconds of this
process (``time.process_time``: both sides are single-threaded, and on a shared machine wall time
mostly measures the neighbours); on cuda the engine is timed in wall seconds instead, since the GPU's work
is not CPU time of this process; both must end at the same W (sanity check, relative difference printed).

Usage::

    python3 benchmarks/engine_vs_numpy.py [--steps 10000] [--repeats 3] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_device, resolve_spec, run_group
from rates.output.tables import Table


def numpy_signgd(H: np.ndarray, y: np.ndarray, k: int, a: float, eta0: float, steps: int) -> np.ndarray:
    """SignGD from W = 0 with the gradient's per-sample weights 1 - S_y kept in the log domain."""
    n, d = H.shape
    onehot = np.zeros((k, n))
    onehot[y, np.arange(n)] = 1.0
    mask = np.where(onehot > 0, -np.inf, 0.0)
    W = np.zeros((k, d))
    for t in range(steps):
        logits = W @ H.T
        masked = logits + mask
        top = masked.max(axis=0)
        expd = np.exp(masked - top)
        total = expd.sum(axis=0)
        u = logits[y, np.arange(n)] - top - np.log(total)
        log_w = -(np.maximum(u, 0.0) + np.log1p(np.exp(-np.abs(u))))
        weights = np.exp(log_w - log_w.max())
        coeff = (expd / total - onehot) * weights
        W = W - eta0 * (t + 2.0) ** (-a) * np.sign(coeff @ H)
    return W


def configurations(count: int) -> list[tuple[str, float]]:
    """``count`` (a, eta0) pairs spread over the regimes of a (eta0 moderate, as in the studies).

    There are 40 distinct pairs; beyond 40 they repeat, so that R configurations are always R runs (the
    rates printed are R * steps / seconds).
    """
    exponents = ["1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "1"]
    etas = [1.0, 0.5, 0.25, 0.125, 2.0]
    pairs = [(a, e) for e in etas for a in exponents]
    return [pairs[i % len(pairs)] for i in range(count)]


def engine_clock_for(device: torch.device):
    """CPU seconds on the CPU; wall seconds on cuda, where kernels run off the CPU (a blocking sync may
    sleep rather than spin), so process_time would leave the GPU's time out and flatter the engine."""
    return time.perf_counter if device.type == "cuda" else time.process_time


def measure(R: int, steps: int, repeats: int, device: torch.device, data, checkpoints: int = 60) -> dict:
    pairs = configurations(R)
    runs = [resolve_spec(RunSpec("signgd", a, eta0=e), data.n) for a, e in pairs]
    H = torch.as_tensor(np.asarray(data.H), dtype=torch.float64, device=device)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long, device=device)
    times = checkpoint_times(steps, checkpoints)
    engine_best = numpy_best = float("inf")
    engine_clock = engine_clock_for(device)
    for _ in range(repeats):
        start = engine_clock()
        W_engine, _ = run_group(runs, H, y, data.k, steps, times)
        if device.type == "cuda":
            torch.cuda.synchronize()
        engine_best = min(engine_best, engine_clock() - start)
        with threadpool_limits(1):  # one BLAS thread, as the engine has: CPU time then compares like with like
            start = time.process_time()
            W_numpy = np.stack([numpy_signgd(data.H, data.y, data.k, float(r.schedule.a), r.spec.eta0, steps)
                                for r in runs])
            numpy_best = min(numpy_best, time.process_time() - start)
    W_engine = W_engine.cpu().numpy()
    difference = float(np.abs(W_engine - W_numpy).max() / np.abs(W_numpy).max())
    return {"R": R, "engine": R * steps / engine_best, "numpy": R * steps / numpy_best,
            "ratio": numpy_best / engine_best, "difference": difference}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--sizes", default="1,32", help="comma-separated numbers of configurations R")
    parser.add_argument("--checkpoints", type=int, default=60,
                        help="engine checkpoints (measurements the NumPy loop does not make); 2 = first and last")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    data = parse_data("default")
    results = [measure(int(R), args.steps, args.repeats, device, data, args.checkpoints) for R in args.sizes.split(",")]
    table = Table(columns=["R", "engine config-steps/s", "NumPy config-steps/s", "ratio", "max rel. |W diff|"],
                  caption=f"full-batch SignGD, data 'default' (n={data.n}, k={data.k}, d={data.d}), "
                          f"{args.steps} steps, best of {args.repeats}, engine on {device} "
                          f"with {args.checkpoints} checkpoints, "
                          + ("engine in wall seconds (cuda), NumPy in CPU seconds of this process"
                             if device.type == "cuda" else "CPU seconds of this process"),
                  notes=[f"torch {torch.__version__}, numpy {np.__version__}; measured side by side in one process"])
    for r in results:
        table.add(str(r["R"]), f"{r['engine']:.0f}", f"{r['numpy']:.0f}", f"{r['ratio']:.1f}x",
                  f"{r['difference']:.1e}")
    print(table.to_markdown())
    return results


if __name__ == "__main__":
    main()
