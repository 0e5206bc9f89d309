"""Benchmark: the engine across data sizes, from the papers' sets to MNIST scale, against a JAX loop, a plain torch
loop and the GEMM limit of the machine.

Setting: full-batch SignGD, ``W <- W - eta_t sign(grad L(W))``, ``eta_t = eta0 (t+2)^-a``, from ``W = 0``, float64,
on Gaussian class clouds of k classes, d features and n samples: the ``default`` preset's shape (k = 3, d = 5,
n = 30), the mid sizes where real small data sets live -- k = 10, d = 32, n = 500; scikit-learn's digits shape,
k = 10, d = 64, n = 1797; k = 10, d = 64, n = 2000 -- k = 10, d = 100, n = 1000, and k = 10, d = 784 with n = 2000 and
n = 10,000 (MNIST's feature count); for
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

On cuda (``--device cuda``, float64): the data on the device; the engine as ``rates run --device cuda`` runs it,
``engine="auto"`` (the CUDA-graph stepper where :func:`rates.numeric.graphed.worth_recording` says so, the eager
torch program otherwise; the stepper is printed), and ``engine="gemm"`` (the stacked products as torch ``mm``
calls, eager); the JAX peer on JAX's GPU device; the plain torch loop on the device; the limit from torch ``mm``
of the same stacked shapes. Rates are per wall second there (GPU work is not CPU time of this process; each
timed call ends by copying its result to the host, which waits for the device).

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
        [--device cpu|cuda] [--out table.md]

``--out`` writes the Markdown table (with the machine, load and versions above it) to that file as well. Each
program of each row is timed in its own ``try``: a failure prints one line and leaves a dash in the table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import traceback
from typing import Callable, Optional

import numpy as np

from rates.numeric.engine import RunSpec, group_stepper, resolve_spec, run_group

SHAPES = ((3, 5, 30), (10, 32, 500), (10, 64, 1797), (10, 64, 2000), (10, 100, 1000), (10, 784, 2000),
          (10, 784, 10000))  # (k, d, n)
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
            first_steps: int, by_wall: bool = False) -> tuple[float, float, float]:
    """Median configuration-steps per CPU second and per wall second of ``program``'s steps, and its seconds per
    call besides the steps (set-up, the engine's checkpoint measurement; CPU, or wall with ``by_wall``). Each
    timing is a pair of calls, ``s`` and ``s + steps`` steps, whose difference is ``steps`` steps alone; ``steps``
    is set from a first call of ``first_steps`` (also the warm-up) so that it takes about ``seconds`` of CPU.
    ``by_wall`` (a GPU: its steps are not CPU time, and a call has a fixed cost -- launches, recording graphs,
    the copy back -- that the first call's time mostly is): ``steps`` grows (2-16 fold, by the last call's time)
    until a call of ``steps`` takes ``seconds`` of wall time. A pair whose difference is not positive (noise
    larger than the steps) is dropped; none left raises."""
    def spent(steps: int) -> float:
        _, cpu, wall = clocked(lambda: program(steps))
        return wall if by_wall else cpu

    took = spent(first_steps)
    steps = max(first_steps, 8, int(seconds * first_steps / max(took, 1e-9)))
    if by_wall:
        while steps < 1 << 24:
            took = spent(steps)
            if took >= seconds:
                break
            steps = int(steps * min(16.0, max(2.0, 1.5 * seconds / max(took, 1e-9))))
    short = max(2, steps // 4)
    cpu_rates, wall_rates, per_call = [], [], []
    for _ in range(repeats):
        _, cpu_short, wall_short = clocked(lambda: program(short))
        _, cpu_long, wall_long = clocked(lambda: program(short + steps))
        if cpu_long <= cpu_short or wall_long <= wall_short:
            continue
        cpu_rates.append(R * steps / (cpu_long - cpu_short))
        wall_rates.append(R * steps / (wall_long - wall_short))
        per_call.append(wall_short - short * R / wall_rates[-1] if by_wall else cpu_short - short * R / cpu_rates[-1])
    if not cpu_rates:
        raise RuntimeError(f"{repeats} timings of {steps} steps, none longer than {short} steps (noise)")
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


def device_gemm_limit(k: int, d: int, n: int, R: int, device: str, seconds: float = 0.3) -> tuple[float, float]:
    """:func:`gemm_limit` on a torch device, per wall second: torch ``mm`` of the stacked shapes, float64, the
    device synchronised around each timing."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(1)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(device)

    W, Xt, C, X = normal(R * k, d), normal(d, n), normal(R * k, n), normal(n, d)

    def both() -> None:
        torch.mm(W, Xt)
        torch.mm(C, X)

    def synchronize() -> None:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()

    both()
    synchronize()
    reps, wall = 1, 0.0
    while wall < seconds:
        start = time.perf_counter()
        for _ in range(reps):
            both()
        synchronize()
        wall = time.perf_counter() - start
        reps *= 2
    per_step = wall / (reps // 2)
    return R / per_step, 4.0 * k * d * n * R / per_step / 1e9


def engine_program(H: np.ndarray, y: np.ndarray, k: int, pairs, device: str = "cpu",
                   engine: str = "auto") -> Callable[[int], np.ndarray]:
    """``rates run``'s engine on ``pairs``; on cuda the data is moved to the device once and each call's result
    copied back (which waits for the device)."""
    runs = [resolve_spec(RunSpec("signgd", EXACT[a], eta0=eta0), len(y)) for eta0, a in pairs]
    if device == "cpu":
        # one checkpoint, at the end, whatever the step count: the two calls of a timing differ by their steps only
        return lambda steps: run_group(runs, H, y, k, steps, np.array([steps]))[0]
    import torch

    Hd = torch.as_tensor(H, dtype=torch.float64, device=device)
    yd = torch.as_tensor(y, dtype=torch.long, device=device)
    return lambda steps: run_group(runs, Hd, yd, k, steps, np.array([steps]), None, engine)[0].cpu().numpy()


def device_stepper(engine: str, device: str, k: int, d: int, n: int, R: int) -> str:
    """The stepper ``run_group`` takes for ``engine`` on ``device``: :func:`group_stepper`, and on cuda whether
    the graph stepper records graphs for this group (:func:`rates.numeric.graphed.worth_recording`) or runs the
    torch program eagerly."""
    recipe = resolve_spec(RunSpec("signgd", "1/2"), n).recipe
    stepper = group_stepper(engine, device, recipe, k, d, n)
    if stepper == "graph":
        from rates.numeric.graphed import graphable, worth_recording

        return "graph" if graphable(recipe) and worth_recording(R, k, n) else "eager"
    return stepper


def torch_program(H: np.ndarray, y: np.ndarray, k: int, device: str = "cpu") -> Callable[[int], np.ndarray]:
    import torch
    from engine_speed import plain_torch_signgd

    def program(steps: int) -> np.ndarray:
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return plain_torch_signgd(H, y, k, 0.5, 1.0, steps, device)
        finally:
            torch.set_num_threads(previous)

    return program


def jax_peer(device: str = "cpu") -> Optional[Callable]:
    """The JAX program factory (``benchmarks/jax_peer.py``) on JAX's device of that kind (``cpu``, or its GPU for
    ``cuda``), or None when JAX does not import."""
    if device != "cpu":
        # JAX otherwise takes 75 % of the GPU's memory at its first array, which the torch programs then lack
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    from jax_peer import jax_program

    run = jax_program(jax, jnp, lax)
    target = jax.devices("cpu" if device == "cpu" else "gpu")[0]

    def program_for(H: np.ndarray, y: np.ndarray, k: int, pairs) -> Callable[[int], np.ndarray]:
        Hj, Yj = jax.device_put(H, target), jax.device_put(np.eye(k)[y], target)
        eta0s = jax.device_put(np.array([e for e, _ in pairs], dtype=np.float64), target)
        a_s = jax.device_put(np.array([a for _, a in pairs], dtype=np.float64), target)
        return lambda steps: np.asarray(run(Hj, Yj, eta0s, a_s, steps).block_until_ready())

    return program_for


def attempt(what: str, call: Callable[[], object]) -> object:
    """``call()``, or None after one line naming ``what`` and the error (the rest of the table goes on)."""
    try:
        return call()
    except Exception as error:  # a benchmark section: report and continue
        print(f"  [{what}: {type(error).__name__}: {error}]", flush=True)
        traceback.print_exc(limit=2, file=sys.stdout)
        return None


def environment(device: str) -> str:
    """One line: the machine, the versions, the device."""
    import numba
    import torch

    parts = [f"{platform.machine()} {platform.processor() or ''}".strip(), f"{os.cpu_count()} logical CPUs",
             f"python {sys.version.split()[0]}", f"numpy {np.__version__}", f"numba {numba.__version__}",
             f"torch {torch.__version__}"]
    try:
        import jax

        parts.append(f"jax {jax.__version__} ({', '.join(sorted({d.platform for d in jax.devices()}))})")
    except Exception:
        parts.append("jax not available")
    if device != "cpu":
        parts.append(f"{torch.cuda.get_device_name(0)}")
    return "; ".join(parts)


def num(value: Optional[float], width: int = 0) -> str:
    return f"{value:>{width},.0f}" if value is not None else f"{'-':>{width}}"


def ratio(top: Optional[float], bottom: Optional[float], width: int = 0) -> str:
    return f"{top / bottom:>{width - 1}.2f}x" if top and bottom else f"{'-':>{width}}"


def markdown(rows: list[dict], device: str) -> str:
    """The table of docs/benchmarks.md: rates with their wall rates in brackets (CPU), or per wall second (cuda)."""
    def both(row: dict, name: str) -> str:
        return f"{num(row[name + '_cpu'])} ({num(row[name + '_wall'])})"

    def multiply(value: Optional[float]) -> str:
        return "-" if value is None else f"{value:.2f}×"

    lines = []
    if device == "cpu":
        lines.append("| k × d × n | R | stepper | engine | JAX | torch loop | GEMM limit (GFLOP/s) | engine / JAX | "
                     "limit / engine |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            lines.append(
                f"| {row['k']} × {row['d']} × {row['n']:,} | {row['R']} | {row['stepper']} | {both(row, 'engine')} | "
                f"{both(row, 'jax')} | {num(row['torch_cpu'])} | {num(row['limit'])} ({row['gemm_gflops'] or 0:.1f}) | "
                f"{multiply(quotient(row['engine_cpu'], row['jax_cpu']))} | "
                f"{multiply(quotient(row['limit'], row['engine_cpu']))} |")
    else:
        lines.append("| k × d × n | R | engine auto (stepper) | engine gemm | JAX | torch loop | GEMM limit (GFLOP/s) "
                     "| best engine / JAX | limit / best engine |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            best = max((v for v in (row["engine_wall"], row["gemm_wall"]) if v), default=None)
            lines.append(
                f"| {row['k']} × {row['d']} × {row['n']:,} | {row['R']} | {num(row['engine_wall'])} "
                f"({row['stepper']}) | {num(row['gemm_wall'])} | {num(row['jax_wall'])} | {num(row['torch_wall'])} | "
                f"{num(row['limit'])} ({row['gemm_gflops'] or 0:,.0f}) | {multiply(quotient(best, row['jax_wall']))} | "
                f"{multiply(quotient(row['limit'], best))} |")
    return "\n".join(lines)


def quotient(top: Optional[float], bottom: Optional[float]) -> Optional[float]:
    return top / bottom if top and bottom else None


def measure_row(H: np.ndarray, y: np.ndarray, k: int, R: int, first: int, device: str, seconds: float,
                repeats: int, jax_for: Optional[Callable],
                torch_rates: Optional[tuple]) -> tuple[dict, Optional[tuple]]:
    """One row of the table: every program on one data set and R configurations, each in its own ``attempt``.
    The torch loop's rates do not depend on R: measured once per data set (``torch_rates``, returned)."""
    n, d = H.shape
    on_device = device != "cpu"
    pairs = pairs_of(R)
    row = dict(k=k, d=d, n=n, R=R, stepper="-", engine_cpu=None, engine_wall=None, gemm_cpu=None,
               gemm_wall=None, jax_cpu=None, jax_wall=None, torch_cpu=None, torch_wall=None, limit=None,
               gemm_gflops=None, engine_compile=None, engine_per_call=None, jax_compile=None)
    row["stepper"] = attempt("stepper", lambda: device_stepper("auto", device, k, d, n, R)) or "-"

    def timed(program: Callable[[int], object]) -> tuple[tuple[float, float, float], float]:
        _, compile_cpu, compile_wall = clocked(lambda: program(1))
        rates = rate_of(program, R, seconds, repeats, first, by_wall=on_device)
        return rates, compile_wall if on_device else compile_cpu

    found = attempt("engine", lambda: timed(engine_program(H, y, k, pairs, device)))
    if found:
        (row["engine_cpu"], row["engine_wall"], row["engine_per_call"]), row["engine_compile"] = found
    if on_device and row["stepper"] != "gemm":
        found = attempt("engine gemm", lambda: timed(engine_program(H, y, k, pairs, device, "gemm")))
        if found:
            (row["gemm_cpu"], row["gemm_wall"], _), _ = found
    if jax_for is not None:
        found = attempt("JAX", lambda: timed(jax_for(H, y, k, pairs)))
        if found:
            (row["jax_cpu"], row["jax_wall"], _), row["jax_compile"] = found
    if torch_rates is None:
        torch_rates = attempt("torch loop", lambda: rate_of(torch_program(H, y, k, device), 1, seconds, repeats,
                                                            max(1, first // 4), by_wall=on_device))
    if torch_rates:
        row["torch_cpu"], row["torch_wall"], _ = torch_rates
    limit = attempt("limit", lambda: device_gemm_limit(k, d, n, R, device) if on_device else gemm_limit(k, d, n, R))
    if limit:
        row["limit"], row["gemm_gflops"] = limit
    return row, torch_rates


def print_row(row: dict, on_device: bool) -> None:
    rate = "engine_wall" if on_device else "engine_cpu"
    peer = "jax_wall" if on_device else "jax_cpu"
    k, d, n, R = row["k"], row["d"], row["n"], row["R"]
    print(f"{f'{k} x {d} x {n}':>16} {R:>3} {row['stepper']:>7} | {num(row[rate], 10)} "
          f"{num(row['engine_wall'], 8)} | {num(row['gemm_wall'] if on_device else None, 9)} | "
          f"{num(row[peer], 9)} {num(row['jax_wall'], 8)} | "
          f"{num(row['torch_wall'] if on_device else row['torch_cpu'], 9)} | {num(row['limit'], 9)} "
          f"{row['gemm_gflops'] or 0:>6.1f} | {ratio(row[rate], row[peer], 7)} {ratio(row['limit'], row[rate], 9)}"
          f" | {row['engine_compile'] or 0:.2f}, " + (f"{row['jax_compile']:.2f}" if row["jax_compile"]
                                                      is not None else "-")
          + f"; {row['engine_per_call'] or 0:.3f}", flush=True)


def write_table(path: str, rows: list[dict], device: str, about: str, started: float, unit: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
        out.write(f"{when}; {about}; {time.time() - started:.0f} s wall; configuration-steps {unit}\n\n"
                  f"{markdown(rows, device)}\n")


def main(argv: Optional[list[str]] = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 0.8 s of CPU per timing, one repeat")
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds per timing (default 1.5 of CPU; 0.5 of wall on cuda)")
    parser.add_argument("--repeats", type=int, default=None, help="timings per program (default 1; 3 on cuda)")
    parser.add_argument("--sizes", default="1,64", help="configuration counts R")
    parser.add_argument("--shapes", default=",".join(f"{k}x{d}x{n}" for k, d, n in SHAPES),
                        help="k x d x n of each data set, comma-separated (default: the four above)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", default=None, help="also write the Markdown table to this file")
    args = parser.parse_args(argv)
    shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.shapes.split(",")]
    on_device = args.device != "cpu"
    seconds = args.seconds if args.seconds is not None else (0.8 if args.quick else 0.5 if on_device else 1.5)
    sizes = [int(s) for s in args.sizes.split(",")]
    args.repeats = args.repeats or (3 if on_device else 1)
    if on_device:
        import torch

        if not torch.cuda.is_available():
            sys.exit("benchmarks/size_scaling.py: --device cuda, but torch sees no cuda device here")
    started = time.time()
    jax_for = attempt("JAX peer", lambda: jax_peer(args.device))
    about = attempt("environment", lambda: environment(args.device)) or "environment unknown"
    load_start = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {about}; device {args.device}; load average at "
          f"start: {load_start}" + ("" if jax_for else "; jax not installed: the JAX column is skipped"))
    unit = "per wall second" if on_device else "per CPU second (process time, all threads; wall: elapsed)"
    head = (f"{'k x d x n':>16} {'R':>3} {'stepper':>7} | {'engine':>10} {'wall':>8} | {'gemm':>9} | {'JAX':>9} "
            f"{'wall':>8} | {'torch':>9} | {'limit':>9} {'GF/s':>6} | {'eng/JAX':>7} {'limit/eng':>9} | "
            f"first call eng, JAX; eng per call (s)")
    print(f"configuration-steps {unit}\n" + head + "\n" + "-" * len(head))
    rows = []
    for k, d, n in shapes:
        H, y = clouds(k, d, n)
        first = max(2, int(2e6 / (k * d * n)))  # a first run of a few ms
        torch_rates = None
        for R in sizes:
            row, torch_rates = measure_row(H, y, k, R, first, args.device, seconds, args.repeats, jax_for,
                                           torch_rates)
            rows.append(row)
            print_row(row, on_device)
            if args.out:  # after every row, so that a crash later keeps the rows measured
                write_table(args.out, rows, args.device, f"{about}; device {args.device}; load average {load_start} "
                            f"at the start", started, unit)
    load_end = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at end: {load_end}; {time.time() - started:.0f} s wall")
    print("targets: engine >= JAX per CPU second at every size; limit/engine <= 1.5 at the largest")
    table = markdown(rows, args.device)
    print(table)
    if args.out:
        write_table(args.out, rows, args.device, f"{about}; device {args.device}; load average {load_start} at the "
                    f"start, {load_end} at the end", started, unit)
    return rows


if __name__ == "__main__":
    main()
