"""Benchmark: the engine across data sizes, from the papers' sets to MNIST scale, against a JAX loop, a plain torch
loop and the GEMM limit of the machine.

Setting: full-batch SignGD, ``W <- W - eta_t sign(grad L(W))``, ``eta_t = eta0 (t+2)^-a``, from ``W = 0``, float64,
on Gaussian class clouds of k classes, d features and n samples: the ``default`` preset's shape (k = 3, d = 5,
n = 30), k = 10, d = 100, n = 1000, and k = 10, d = 784 with n = 2000 and n = 10,000 (MNIST's feature count); for
one configuration and for 64 (distinct (a, eta0) pairs) advanced together on the same data.

Programs, timed one after another in this process:

* the engine: :func:`rates.numeric.engine.run_group` with ``engine="auto"``, what ``rates run`` does: the fused
  kernels on the small set, the stacked GEMMs of :mod:`rates.numeric.gemm` on the others (the stepper used is
  printed), one checkpoint at the last step;
* the JAX peer of ``benchmarks/jax_peer.py`` (``jit`` + ``vmap`` over the configurations + ``fori_loop`` over
  the steps, log-domain weights), optional: skipped with a line when JAX does not import. XLA runs its own
  thread pool;
* the plain torch loop of ``benchmarks/engine_speed.py`` (autograd through ``F.cross_entropy``, then
  ``sign``), one configuration at a time on one thread, so its rate per configuration does not depend on how
  many there are: it is timed on one configuration and its rate printed for both rows.

The limit: a step of one configuration is two products of k x d x n multiply-adds, ``2 k d n`` flops each
(the logits and the weighted sum of the samples). The GEMM limit of a row is the configuration-steps per CPU
second at which a NumPy (OpenBLAS, one thread) GEMM of exactly these two shapes -- the R configurations stacked,
(R k) x d times d x n and (R k) x n times n x d -- would run if a step were nothing else; measured in this run.

Clocks: CPU seconds of this process (``time.process_time``, every thread), the primary measure on a shared
machine, and wall seconds. Rates are of the steps alone: each is the difference of two calls, ``s`` and
``s + steps`` steps, with ``steps`` set for ``--seconds`` of CPU time. Reported apart: the first call of each
program for each shape and R (the engine: numba's kernels loaded from the on-disk cache, or compiled when it is
cold, and the imports of a first use; JAX: trace and XLA compile), and the engine's CPU seconds per call besides
its steps (set-up and its one checkpoint measurement, at the last step). The load average is printed at the start
and the end.

Usage (jax optional: ``pip install jax jaxlib``)::

    python3 benchmarks/size_scaling.py [--quick] [--seconds 1.5] [--repeats 1] [--sizes 1,64] [--shapes 10x784x2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable, Optional

import numpy as np

from rates.numeric.engine import RunSpec, group_stepper, resolve_spec, run_group

SHAPES = ((3, 5, 30), (10, 100, 1000), (10, 784, 2000), (10, 784, 10000))  # (k, d, n)
EXPONENTS = [0.25, 1 / 3, 0.4, 0.5, 0.6, 2 / 3, 0.75, 1.0]
EXACT = {0.25: "1/4", 1 / 3: "1/3", 0.4: "2/5", 0.5: "1/2", 0.6: "3/5", 2 / 3: "2/3", 0.75: "3/4", 1.0: "1"}
ETAS = [1.0, 0.5, 0.25, 0.125, 2.0, 1.5, 0.75, 0.1]


def clouds(k: int, d: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian class clouds (centres N(0, 4 I), unit spread): the speed of a step does not depend on the draw."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    return 2.0 * rng.standard_normal((k, d))[y] + rng.standard_normal((n, d)), y


def pairs_of(count: int) -> list[tuple[float, float]]:
    """``count`` distinct (eta0, a) pairs (64 at most)."""
    return [(e, a) for e in ETAS for a in EXPONENTS][:count]


def clocked(call: Callable[[], object]) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def rate_of(program: Callable[[int], object], R: int, seconds: float, repeats: int,
            first_steps: int) -> tuple[float, float, float]:
    """Median configuration-steps per CPU second and per wall second of ``program``'s steps, and its CPU seconds per
    call besides the steps (set-up, the engine's checkpoint measurement). Each timing is a pair of calls,
    ``s`` and ``s + steps`` steps, whose difference is ``steps`` steps alone; ``steps`` is set from a first call of
    ``first_steps`` (also the warm-up) so that it takes about ``seconds`` of CPU."""
    _, cpu, _ = clocked(lambda: program(first_steps))
    steps = max(first_steps, 8, int(seconds * first_steps / max(cpu, 1e-9)))
    short = max(2, steps // 4)
    cpu_rates, wall_rates, per_call = [], [], []
    for _ in range(repeats):
        _, cpu_short, wall_short = clocked(lambda: program(short))
        _, cpu_long, wall_long = clocked(lambda: program(short + steps))
        cpu_rates.append(R * steps / max(cpu_long - cpu_short, 1e-9))
        wall_rates.append(R * steps / max(wall_long - wall_short, 1e-9))
        per_call.append(cpu_short - short * R / cpu_rates[-1])
    return statistics.median(cpu_rates), statistics.median(wall_rates), statistics.median(per_call)


def gemm_limit(k: int, d: int, n: int, R: int, seconds: float = 0.5) -> tuple[float, float]:
    """(configuration-steps per CPU second if a step were its two GEMMs alone, GFLOP/s of those GEMMs): NumPy,
    one BLAS thread, the shapes the stacked step multiplies."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)
    W, X = rng.standard_normal((R * k, d)), rng.standard_normal((n, d))
    Xt, C = np.ascontiguousarray(X.T), rng.standard_normal((R * k, n))
    with threadpool_limits(limits=1, user_api="blas"):
        def both() -> None:
            np.matmul(W, Xt)
            np.matmul(C, X)

        both()
        reps, cpu = 1, 0.0
        while cpu < seconds:
            _, cpu, _ = clocked(lambda reps=reps: [both() for _ in range(reps)])
            reps *= 2
        reps //= 2
    per_step = cpu / reps
    return R / per_step, 4.0 * k * d * n * R / per_step / 1e9


def engine_program(H: np.ndarray, y: np.ndarray, k: int, pairs) -> Callable[[int], np.ndarray]:
    runs = [resolve_spec(RunSpec("signgd", EXACT[a], eta0=eta0), len(y)) for eta0, a in pairs]
    # one checkpoint, at the end, whatever the step count: the two calls of a timing then differ by their steps only
    return lambda steps: run_group(runs, H, y, k, steps, np.array([steps]))[0]


def torch_program(H: np.ndarray, y: np.ndarray, k: int) -> Callable[[int], np.ndarray]:
    import torch
    from engine_speed import plain_torch_signgd

    def program(steps: int) -> np.ndarray:
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return plain_torch_signgd(H, y, k, 0.5, 1.0, steps)
        finally:
            torch.set_num_threads(previous)

    return program


def jax_peer() -> Optional[Callable]:
    """The JAX program factory (``benchmarks/jax_peer.py``), or None when JAX does not import."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    from jax_peer import jax_program

    run = jax_program(jax, jnp, lax)

    def program_for(H: np.ndarray, y: np.ndarray, k: int, pairs) -> Callable[[int], np.ndarray]:
        Hj, Yj = jnp.asarray(H), jnp.asarray(np.eye(k)[y])
        eta0s = jnp.asarray([e for e, _ in pairs], dtype=jnp.float64)
        a_s = jnp.asarray([a for _, a in pairs], dtype=jnp.float64)
        return lambda steps: np.asarray(run(Hj, Yj, eta0s, a_s, steps).block_until_ready())

    return program_for


def main(argv: Optional[list[str]] = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 0.8 s of CPU per timing, one repeat")
    parser.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per timing")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--sizes", default="1,64", help="configuration counts R")
    parser.add_argument("--shapes", default=",".join(f"{k}x{d}x{n}" for k, d, n in SHAPES),
                        help="k x d x n of each data set, comma-separated (default: the four above)")
    args = parser.parse_args(argv)
    shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.shapes.split(",")]
    seconds = 0.8 if args.quick else args.seconds
    sizes = [int(s) for s in args.sizes.split(",")]
    jax_for = jax_peer()
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; python "
          f"{sys.version.split()[0]}" + ("" if jax_for else "; jax not installed: the JAX column is skipped"))
    head = (f"{'k x d x n':>16} {'R':>3} {'stepper':>7} | {'engine cpu':>10} {'wall':>8} | {'JAX cpu':>9} "
            f"{'wall':>8} | {'torch cpu':>9} | {'limit':>9} {'GF/s':>5} | {'eng/JAX':>7} {'limit/eng':>9} | "
            f"first call eng, JAX; eng per call (cpu s)")
    print("configuration-steps per second (CPU: process time, all threads; wall: elapsed)\n" + head + "\n"
          + "-" * len(head))
    rows = []
    for k, d, n in shapes:
        H, y = clouds(k, d, n)
        first = max(2, int(2e6 / (k * d * n)))  # a first run of a few ms
        torch_cpu = None
        for R in sizes:
            pairs = pairs_of(R)
            stepper = group_stepper("auto", "cpu", resolve_spec(RunSpec("signgd", "1/2"), n).recipe, k, d, n)
            engine = engine_program(H, y, k, pairs)
            _, engine_compile, _ = clocked(lambda engine=engine: engine(1))
            engine_cpu, engine_wall, engine_call = rate_of(engine, R, seconds, args.repeats, first)
            jax_cpu = jax_wall = jax_compile = None
            if jax_for is not None:
                peer = jax_for(H, y, k, pairs)
                _, jax_compile, _ = clocked(lambda peer=peer: peer(1))
                jax_cpu, jax_wall, _ = rate_of(peer, R, seconds, args.repeats, first)
            if torch_cpu is None:
                torch_cpu, _, _ = rate_of(torch_program(H, y, k), 1, seconds, args.repeats, max(1, first // 4))
            limit, gflops = gemm_limit(k, d, n, R)
            row = dict(k=k, d=d, n=n, R=R, stepper=stepper, engine_cpu=engine_cpu, engine_wall=engine_wall,
                       jax_cpu=jax_cpu, jax_wall=jax_wall, torch_cpu=torch_cpu, limit=limit, gemm_gflops=gflops,
                       engine_compile=engine_compile, engine_per_call=engine_call, jax_compile=jax_compile)
            rows.append(row)

            def num(value: Optional[float], width: int) -> str:
                return f"{value:>{width},.0f}" if value is not None else f"{'-':>{width}}"

            ratio = f"{engine_cpu / jax_cpu:>6.2f}x" if jax_cpu else f"{'-':>7}"
            print(f"{f'{k} x {d} x {n}':>16} {R:>3} {stepper:>7} | {num(engine_cpu, 10)} {num(engine_wall, 8)} | "
                  f"{num(jax_cpu, 9)} {num(jax_wall, 8)} | {num(torch_cpu, 9)} | {num(limit, 9)} {gflops:>5.1f} | "
                  f"{ratio} {limit / engine_cpu:>8.2f}x | {engine_compile:.2f}, "
                  + (f"{jax_compile:.2f}" if jax_compile is not None else "-") + f"; {engine_call:.3f}", flush=True)
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("targets: engine >= JAX per CPU second at every size; limit/engine <= 1.5 at the largest")
    return rows


if __name__ == "__main__":
    main()
