"""Benchmark: the fused engine against the JAX program a skilled user would write, side by side, per CPU second.

Setting: full-batch SignGD, ``W <- W - eta_t sign(grad L(W))``, ``eta_t = eta0 (t+2)^-a``, from ``W = 0``, float64,
on the ``default`` preset (n = 30, k = 3, d = 5) and on ``gaussian:k=4,d=6,per_class=12`` (n = 48); for one
configuration and for 256 configurations (40 distinct (a, eta0) pairs, repeated), advanced together.

The peer (JAX, optional: this script says so and stops when JAX does not import): ``jax_enable_x64``; one
``jit``-compiled function, ``vmap`` over the configurations' (eta0, a), ``lax.fori_loop`` over the steps; the
gradient in the log domain, as one must for SignGD at large margins (a plain softmax gradient underflows to 0
and the iterates stop): log-probabilities by ``logsumexp``, the wrong-class weights ``exp(log p - max log p)``
(the largest is 1; the sign does not see the scale), the label's weight minus their sum (not ``p_y - 1``,
which rounds to 0), ``G = coefficients^T H``. Its compile time is excluded (a warm-up call first).

The engine: :func:`rates.numeric.engine.run_group` with the fused stepper (numba kernels; one thread per core at
R > 1, 64 configurations per vector block), two checkpoints.

Clocks: CPU seconds of this process (``time.process_time``: all threads of both programs; XLA runs its own
thread pool), and wall seconds. The ratio that the comparison is judged on is per CPU second (the machine is
shared); the load average is printed at the start and end. Before timing, both programs' iterates are
compared after ``--check-steps`` steps: bit for bit, or the largest relative difference.

Usage (in an environment with jax, jaxlib and rates; never in CI)::

    python3 benchmarks/jax_peer.py [--steps 200000] [--many-steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group
from rates.numeric.fused.group import available_cores

DATASETS = ("default", "gaussian:k=4,d=6,per_class=12")


def configurations(count: int) -> list[tuple[float, float]]:
    """``count`` (eta0, a) pairs spread over a and eta0 (repeating after 40), as benchmarks/engine_speed.py."""
    exponents = [0.25, 1 / 3, 0.4, 0.5, 0.6, 2 / 3, 0.75, 1.0]
    etas = [1.0, 0.5, 0.25, 0.125, 2.0]
    pairs = [(e, a) for e in etas for a in exponents]
    return [pairs[i % len(pairs)] for i in range(count)]


EXACT = {0.25: "1/4", 1 / 3: "1/3", 0.4: "2/5", 0.5: "1/2", 0.6: "3/5", 2 / 3: "2/3", 0.75: "3/4", 1.0: "1"}


def engine_signgd(data, pairs, steps: int) -> np.ndarray:
    runs = [resolve_spec(RunSpec("signgd", EXACT[a], eta0=eta0), data.n) for eta0, a in pairs]
    W, _ = run_group(runs, np.asarray(data.H, dtype=np.float64), np.asarray(data.y), data.k, steps,
                     checkpoint_times(steps, 2), engine="fused")
    return W


def jax_program(jax, jnp, lax):
    """The peer: ``run(H, Y, eta0s, a_s, steps)`` -> W (R, k, d), jit-compiled, vmapped over (eta0, a)."""

    def direction(W, H, Y):
        z = H @ W.T  # (n, k) logits
        log_p = z - jax.nn.logsumexp(z, axis=1, keepdims=True)
        log_wrong = jnp.where(Y, -jnp.inf, log_p)
        weights = jnp.exp(log_wrong - jnp.max(log_wrong))  # the largest wrong-class weight is 1
        coefficients = weights - Y * weights.sum(axis=1, keepdims=True)
        return jnp.sign(coefficients.T @ H)  # sign of the gradient (any positive scale)

    def one(H, Y, eta0, a, steps):
        k, d = Y.shape[1], H.shape[1]

        def body(t, W):
            return W - eta0 * (t + 2.0) ** (-a) * direction(W, H, Y)

        return lax.fori_loop(0, steps, body, jnp.zeros((k, d), dtype=jnp.float64))

    return jax.jit(jax.vmap(one, in_axes=(None, None, 0, 0, None)))


def clocked(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200000, help="steps per timing for one configuration")
    parser.add_argument("--many-steps", type=int, default=20000, help="steps per timing for 256 configurations")
    parser.add_argument("--sizes", default="1,256")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-steps", default="2000,20000", help="step counts of the trajectory comparison")
    args = parser.parse_args(argv)
    try:
        import jax
    except ImportError:
        print("jax is not installed here: the JAX peer benchmark is skipped (pip install jax jaxlib to run it)")
        return {}
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    run_jax = jax_program(jax, jnp, lax)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {available_cores()} core(s); "
          f"jax {jax.__version__} on {jax.devices()[0].platform}, python {sys.version.split()[0]}")
    results = {}
    for spec in DATASETS:
        data = parse_data(spec)
        H, Y = jnp.asarray(np.asarray(data.H, dtype=np.float64)), jnp.asarray(np.eye(data.k)[np.asarray(data.y)])

        def peer(pairs, steps, H=H, Y=Y):
            eta0s = jnp.asarray([e for e, _ in pairs], dtype=jnp.float64)
            a_s = jnp.asarray([a for _, a in pairs], dtype=jnp.float64)
            return np.asarray(run_jax(H, Y, eta0s, a_s, steps).block_until_ready())

        print(f"\ndata {data.name!r} (n={data.n}, k={data.k}, d={data.d})")
        for steps in [int(s) for s in args.check_steps.split(",") if s]:
            pairs = configurations(40)
            W_engine, W_peer = engine_signgd(data, pairs, steps), peer(pairs, steps)
            apart = np.abs(W_engine - W_peer).max(axis=(1, 2)) / np.abs(W_engine).max(axis=(1, 2))
            differ = ", ".join(f"(a={EXACT[a]}, eta0={eta0:g}): {value:.1e}"
                               for (eta0, a), value in zip(pairs, apart) if value > 0)
            print(f"  trajectories after {steps} steps, 40 (a, eta0) pairs: {int((apart == 0).sum())} of 40 bit for "
                  f"bit equal" + (f"; relative W difference of the others {differ}" if differ else ""))
        for R in sizes:
            steps = args.steps if R == 1 else args.many_steps
            pairs = configurations(R)
            engine_signgd(data, pairs, 2)
            peer(pairs, 2)  # compile (and load the kernels) before the clocks
            samples: dict[str, list[float]] = {}
            for _ in range(args.repeats):
                _, wall, cpu = clocked(lambda data=data, pairs=pairs, steps=steps: engine_signgd(data, pairs, steps))
                samples.setdefault("engine-cpu", []).append(R * steps / cpu)
                samples.setdefault("engine-wall", []).append(R * steps / wall)
                _, wall, cpu = clocked(lambda pairs=pairs, steps=steps: peer(pairs, steps))
                samples.setdefault("jax-cpu", []).append(R * steps / cpu)
                samples.setdefault("jax-wall", []).append(R * steps / wall)
            median = {key: statistics.median(values) for key, values in samples.items()}
            results[(data.name, R)] = median
            print(f"  R={R}, {steps} steps, median of {args.repeats}: config-steps per CPU s engine "
                  f"{median['engine-cpu']:,.0f}, JAX {median['jax-cpu']:,.0f} -> engine/JAX "
                  f"{median['engine-cpu'] / median['jax-cpu']:.2f}x per CPU s (min-max "
                  f"{min(samples['engine-cpu']) / max(samples['jax-cpu']):.2f}-"
                  f"{max(samples['engine-cpu']) / min(samples['jax-cpu']):.2f}x); per wall s engine "
                  f"{median['engine-wall']:,.0f}, JAX {median['jax-wall']:,.0f} -> "
                  f"{median['engine-wall'] / median['jax-wall']:.2f}x")
    print("\ntargets: engine/JAX per CPU second >= 2x at R = 1 and >= 5x at R = 256")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return results


if __name__ == "__main__":
    main()
