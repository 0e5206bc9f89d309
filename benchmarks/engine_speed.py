"""Benchmark: the fused engine against today's torch engine and the plain PyTorch loop.

Setting: full-batch SignGD (docs/theory.md section 2, ``eta_t = eta0 (t+2)^-a``) on the ``default`` preset
(n = 30, k = 3, d = 5) and on a Gaussian mixture with k = 4,
d = 6, n = 48 (``gaussian:k=4,d=6,per_class=12``); ``--data`` picks others. Per dataset, three
implementations, timed side by side in one process, alternating, median of ``--repeats``:

* the plain PyTorch float64 autograd loop a user would write (``F.cross_entropy``, ``backward``,
  ``sign(grad)``), one configuration at a time, one torch thread (more threads only add barrier waits
  on products this small);
* today's engine, ``rates.numeric.engine.run_group(engine="torch")`` (the batched torch program of rates.numeric.optim);
* the fused engine, ``run_group(engine="fused")`` (rates.numeric.fused: numba kernels, one thread per core).

Rates are configuration-steps per second. Clocks: CPU seconds of this process (``time.process_time``)
for everything single-threaded; the fused engine at R > 1 runs one thread per core, so it is reported
both per CPU second (per-core throughput) and per wall second (what a user waits); on a machine shared
with other jobs wall time mostly measures the neighbours, CPU time is the fair comparison. The line
"256 configurations in one run against the plain loop run 256 times" is printed per
dataset by both clocks, with the machine's load average at the start and end of the run.

How far the two engines' final iterates are apart, per run: the relative W difference and the relative
difference of the max-norm margins. The engines take the same signs; their step sizes ``eta_t`` can differ in
the last bit (the torch engine's come from ``torch.pow``, the fused engine's from libm's ``pow``; first at
t = 2 for a = 1/4, where 4^(-1/4) rounds to either neighbour of 1/sqrt(2)), so the iterates differ at
rounding level from the third step on. Measured by stepping both engines one step at a time and comparing
every step (SignGD, 10^5 steps on the Gaussian shape at a = 1/4, eta0 = 1; 2*10^4 on ``default`` at a = 1/4,
eta0 = 2): no entry of any step moved in different directions; W agreed to 1.6e-17 relative or better at
every comparison point (1.0e-18 at 10^5 steps on the Gaussian shape), and the max-norm margins to all 16
printed digits (Gaussian 1.482901688540113 at 10^5; ``default`` 0.2427032801513893 at 2*10^4, in its
transient: 0.0022 at 10^4, 0.145 at 1.6*10^4, 0.222 at 1.9*10^4). Against :func:`rates.numeric.reference.exact_sign_run`
(float64 iterates, the signs of a 40-digit gradient), compared at every 500th step to 2*10^4 steps on both
sets: the fused engine's iterates are equal bit for bit, the torch engine's within 2.9e-17 (``default``) and
6.1e-17 (Gaussian) relative, its step sizes' rounding. (Before each class row of the gradient had its own
scale, this paragraph reported a rounding-level gradient entry changing sign after step 20,001 on the
Gaussian shape and margins 0.282 vs 0.599 on ``default`` at 2*10^4 steps; with those engines the fused one
left the exact-sign trajectory on ``default`` at t = 1872. Neither difference occurs now.)

Also printed: the plain loop's gap error against the engine at two step counts (its ``1 - S_y`` rounds to
0, so its gradient and then its iterates go wrong); the first compile time of the kernels (in a child
process with an empty numba cache) and the start-up of ``rates run`` with a warm cache; the fraction of
the machine's fp64 peak the engine reaches, peak measured by a NumPy GEMM in the same run.

Usage::

    python3 benchmarks/engine_speed.py [--steps 20000] [--repeats 3] [--sizes 1,256] [--data default]
    python3 benchmarks/engine_speed.py --long 100000000      # one long SignGD run, timed
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group, simulate, single_thread_on_cpu
from rates.numeric.fused.group import available_cores
from rates.numeric.margins import margin_of, max_margin

ROOT = Path(__file__).resolve().parents[1]


def plain_torch_signgd(H: np.ndarray, y: np.ndarray, k: int, a: float, eta0: float, steps: int,
                       device: str = "cpu") -> np.ndarray:
    """SignGD as a user writes it: autograd through ``F.cross_entropy``, then ``W -= eta_t sign(grad)``."""
    Ht, yt = torch.tensor(H, device=device), torch.tensor(y, device=device)
    W = torch.zeros(k, H.shape[1], dtype=torch.float64, requires_grad=True, device=device)
    for t in range(steps):
        loss = F.cross_entropy(Ht @ W.T, yt)
        (grad,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W -= eta0 * (t + 2.0) ** (-a) * torch.sign(grad)
    return W.detach().cpu().numpy()


def configurations(count: int) -> list[RunSpec]:
    """``count`` SignGD configurations spread over a and eta0 (they repeat after 40: R runs are R runs)."""
    exponents = ["1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "1"]
    etas = [1.0, 0.5, 0.25, 0.125, 2.0]
    pairs = [(a, e) for e in etas for a in exponents]
    return [RunSpec("signgd", pairs[i % len(pairs)][0], eta0=pairs[i % len(pairs)][1]) for i in range(count)]


def timed(call, clock):
    start = clock()
    out = call()
    return out, clock() - start


def gemm_gflops(size: int = 1500, repeats: int = 3) -> tuple[float, float]:
    """fp64 GEMM rate (GFLOP/s): all cores by wall clock, and one core by CPU clock (best of repeats)."""
    from threadpoolctl import threadpool_limits

    A, B = np.random.default_rng(0).standard_normal((2, size, size))
    flops = 2.0 * size**3
    wall = min(timed(lambda: A @ B, time.perf_counter)[1] for _ in range(repeats))
    with threadpool_limits(1):
        one = min(timed(lambda: A @ B, time.process_time)[1] for _ in range(repeats))
    return flops / wall / 1e9, flops / one / 1e9


def child_seconds(command: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compile_and_start_times() -> dict:
    """First compile (empty numba cache, child process) and ``rates run`` start-up with the warm cache."""
    probe = ("import numpy as np; from rates.numeric.data import parse_data; "
             "from rates.numeric.engine import RunSpec, resolve_spec; "
             "from rates.numeric.fused.group import FusedGroup; d = parse_data('default'); "
             "FusedGroup([resolve_spec(RunSpec('signgd', '1/2'), d.n)], d.H, d.y, d.k).advance_to(1)")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        cold = child_seconds([sys.executable, "-c", probe], dict(env, NUMBA_CACHE_DIR=cache))
        warm = child_seconds([sys.executable, "-c", probe], dict(env, NUMBA_CACHE_DIR=cache))
        imports = child_seconds([sys.executable, "-c", probe.split("; d =")[0]], dict(env, NUMBA_CACHE_DIR=cache))
    with tempfile.TemporaryDirectory() as out:
        cli = [str(Path(sys.executable).parent / "rates"), "run", "--algo", "signgd", "--a", "1/2", "--steps", "1",
               "--out", str(Path(out) / "t.json")]
        child_seconds(cli, env)  # fills the project's own cache if it was cold
        start = child_seconds(cli, env)
    return {"cold": cold, "warm": warm, "imports": imports, "rates_run": start}


def gap_errors(data, step_counts: list[int]) -> list[tuple[int, float, float]]:
    """(t, plain-loop gap, engine gap) for SignGD a = 1/2, eta0 = 1, both from W = 0."""
    gamma = max_margin(data, "max").gamma
    rows = []
    for steps in step_counts:
        with single_thread_on_cpu(torch.device("cpu")):
            W_plain = plain_torch_signgd(np.asarray(data.H), np.asarray(data.y), data.k, 0.5, 1.0, steps)
        run = simulate([RunSpec("signgd", "1/2")], data, steps, checkpoints=2, device="cpu").runs[0]
        rows.append((steps, gamma - margin_of(W_plain, data, "max"), float(run.gap[-1])))
    return rows


def measure(data, steps_of: dict, plain_steps: int, sizes: list[int], repeats: int) -> dict:
    """Median rates over ``repeats`` rounds; ``steps_of[R]`` engine steps for R configurations."""
    H = torch.as_tensor(np.asarray(data.H), dtype=torch.float64)
    y = torch.as_tensor(np.asarray(data.y), dtype=torch.long)
    samples: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    # load the compiled kernels (from numba's disk cache) before any timing
    run_group([resolve_spec(configurations(1)[0], data.n)], H, y, data.k, 2, checkpoint_times(2, 2), engine="fused")

    for _ in range(repeats):
        with single_thread_on_cpu(torch.device("cpu")):
            _, seconds = timed(lambda: plain_torch_signgd(np.asarray(data.H), np.asarray(data.y), data.k, 0.5, 1.0,
                                                          plain_steps), time.process_time)
        add("plain", plain_steps / seconds)
        for R in sizes:
            steps = steps_of[R]
            times = checkpoint_times(steps, 60)
            runs = [resolve_spec(spec, data.n) for spec in configurations(R)]
            (W_torch, _), seconds = timed(
                lambda runs=runs, steps=steps, times=times: run_group(runs, H, y, data.k, steps, times, engine="torch"),
                                          time.process_time)
            add(f"torch:{R}", R * steps / seconds)
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            W_fused, _ = run_group(runs, H, y, data.k, steps, times, engine="fused")
            add(f"fused:{R}", R * steps / (time.process_time() - cpu_start))
            add(f"fused-wall:{R}", R * steps / (time.perf_counter() - wall_start))
            differences = ((W_fused - W_torch).abs().amax(dim=(1, 2)) / W_torch.abs().amax(dim=(1, 2))).numpy()
            add(f"diff:{R}", float(np.median(differences)))
            add(f"apart:{R}", float(np.mean(differences > 1e-12)))
            margins = [(margin_of(a.numpy(), data, "max"), margin_of(b.numpy(), data, "max"))
                       for a, b in zip(W_fused, W_torch)]
            add(f"margin-diff:{R}", max(abs(a - b) / abs(b) for a, b in margins))
    return {key: statistics.median(values) for key, values in samples.items()} | {
        f"spread:{key}": (min(values), max(values)) for key, values in samples.items()}


def flops_per_step(data) -> float:
    """Multiply-adds of one SignGD step counted as 2 flops each: logits W h_i and the gradient sum."""
    return 2.0 * 2.0 * data.k * data.d * data.n


def long_run(steps: int) -> None:
    data = parse_data("default")
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    run = simulate([RunSpec("signgd", "1/2")], data, steps, checkpoints=60, device="cpu").runs[0]
    wall, cpu = time.perf_counter() - wall_start, time.process_time() - cpu_start
    print(f"SignGD a=1/2 eta0=1 on 'default' (n={data.n}, k={data.k}, d={data.d}), {steps:.3g} steps, fused engine: "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU ({steps / wall:.3g} steps/s wall); final gap {run.gap[-1]:.6g} "
          f"at t={int(run.t[-1])}, log L = {run.log_loss[-1]:.6g}")


ISSUE_DATA = "gaussian:k=4,d=6,per_class=12"


def print_table(data, result: dict, args, sizes: list[int]) -> None:
    print(f"\nfull-batch SignGD, data {data.name!r} (n={data.n}, k={data.k}, d={data.d}); "
          f"engine {args.steps} steps at R = 1, {args.many_steps} at R > 1, 60 checkpoints; "
          f"plain loop {args.plain_steps} steps; median of {args.repeats}; "
          f"{available_cores()} core(s); torch {torch.__version__}, numpy {np.__version__}")
    plain = result["plain"]
    lo, hi = result["spread:plain"]
    print(f"plain PyTorch autograd loop: {plain:,.0f} steps/CPU-s (min-max {lo:,.0f}-{hi:,.0f})")
    print("| R | torch engine (config-steps/CPU-s) | fused (per CPU-s) | fused (per wall-s) | fused / torch engine "
          "| fused / plain loop (CPU) | fused / plain loop (wall) | rel. W diff fused vs torch (median) "
          "| share of runs > 1e-12 apart | rel. max-norm margin diff (largest) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for R in sizes:
        torch_rate, fused, wall = result[f"torch:{R}"], result[f"fused:{R}"], result[f"fused-wall:{R}"]
        print(f"| {R} | {torch_rate:,.0f} | {fused:,.0f} | {wall:,.0f} | {fused / torch_rate:.1f}x | "
              f"{fused / plain:.0f}x | {wall / plain:.0f}x | {result[f'diff:{R}']:.1e} | "
              f"{result[f'apart:{R}']:.1%} | {result[f'margin-diff:{R}']:.1e} |")
    for R in sizes:
        spreads = ", ".join(f"{name} {result[f'spread:{name}:{R}'][0]:,.0f}-{result[f'spread:{name}:{R}'][1]:,.0f}"
                            for name in ("torch", "fused", "fused-wall"))
        print(f"  R={R} min-max over repeats: {spreads}")
    many = max(sizes)
    if many > 1:
        wall_lo, wall_hi = result[f"spread:fused-wall:{many}"]
        print(f"{many} configurations in one run against the plain loop run {many} times: "
              f"{result[f'fused-wall:{many}'] / plain:.0f}x by wall clock (min-max over repeats "
              f"{wall_lo / plain:.0f}-{wall_hi / plain:.0f}x), {result[f'fused:{many}'] / plain:.0f}x by CPU clock "
              f"(target 250x by wall clock with {available_cores()} cores)")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100000, help="engine steps per timing at R = 1")
    parser.add_argument("--many-steps", type=int, default=20000, help="engine steps per timing at R > 1")
    parser.add_argument("--plain-steps", type=int, default=5000, help="plain-loop steps per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1,256", help="comma-separated numbers of configurations R")
    parser.add_argument("--data", default=f"default;{ISSUE_DATA}",
                        help="semicolon-separated --data values (default: the preset and the Gaussian "
                             "k = 4, d = 6, n = 48 shape)")
    parser.add_argument("--gap-steps", default="3000,100000", help="step counts of the plain loop's gap check")
    parser.add_argument("--skip-compile", action="store_true", help="do not time the cold compile (~1 min)")
    parser.add_argument("--long", type=int, default=0, help="only time one SignGD run of this many steps")
    args = parser.parse_args(argv)
    if args.long:
        long_run(args.long)
        return {}
    datasets = [parse_data(spec) for spec in args.data.split(";") if spec.strip()]
    sizes = [int(R) for R in args.sizes.split(",")]
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.skip_compile:
        start = compile_and_start_times()
        print(f"first compile (empty numba cache, child process): {start['cold'][0]:.1f} s wall, "
              f"{start['cold'][1]:.1f} s CPU; the same with the warm cache: {start['warm'][0]:.2f} s wall, "
              f"{start['warm'][1]:.2f} s CPU, of which imports {start['imports'][0]:.2f} s wall, "
              f"{start['imports'][1]:.2f} s CPU")
        print(f"`rates run --steps 1` with the warm cache: {start['rates_run'][0]:.2f} s wall, "
              f"{start['rates_run'][1]:.2f} s CPU")
    gemm_all, gemm_one = gemm_gflops()
    steps_of = {R: args.steps if R == 1 else args.many_steps for R in sizes}
    results = {}
    for data in datasets:
        results[data.name] = result = measure(data, steps_of, args.plain_steps, sizes, args.repeats)
        print_table(data, result, args, sizes)
        best = max(result[f"fused-wall:{R}"] for R in sizes)
        per_cpu = max(result[f"fused:{R}"] for R in sizes)
        print(f"fp64 peak by NumPy GEMM (1500^2, this run): {gemm_all:.1f} GFLOP/s on all cores (wall), "
              f"{gemm_one:.1f} GFLOP/s on one core (CPU); engine at {flops_per_step(data):.0f} flop/step: "
              f"{per_cpu * flops_per_step(data) / 1e9:.2f} GFLOP/s per CPU-s = "
              f"{per_cpu * flops_per_step(data) / 1e9 / gemm_one:.1%} of one core's GEMM rate; "
              f"{best * flops_per_step(data) / 1e9 / gemm_all:.1%} of the all-core GEMM rate (wall)")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    counts = [int(s) for s in args.gap_steps.split(",") if s]
    if counts:
        data = datasets[0]
        print(f"\nplain loop vs engine on {data.name!r}, SignGD a=1/2 eta0=1 (gap = gamma - max-norm margin):")
        for t, plain_gap, engine_gap in gap_errors(data, counts):
            print(f"  t={t}: plain loop gap {plain_gap:.6g}, engine gap {engine_gap:.6g}, "
                  f"error {plain_gap - engine_gap:.3g} ({abs(plain_gap - engine_gap) / engine_gap:.1%})")
    return results


if __name__ == "__main__":
    main()
