"""Benchmark (GPU): the torch engine on cuda, eager against replayed CUDA graphs.

Setting: full-batch SignGD and Adam (eps = 0) on the ``default`` preset and on the Gaussian shape
(k = 4, d = 6, n = 48), R configurations spread over a and eta0, float64. Two steppers of the same torch
program (:mod:`rates.numeric.optim`), timed side by side in one process, alternating, median of ``--repeats``:

* ``torch``: the eager step loop (one Python call per step, a few dozen kernel launches each);
* ``graph``: :mod:`rates.numeric.graphed`, the same steps recorded as CUDA graphs of 64 steps and replayed.

Rates are configuration-steps per wall second (GPU work is not CPU time of this process), measured with
``torch.cuda.synchronize`` around each run; the recording of the graphs is inside the timed run. Also
printed: the largest relative difference of the final iterates between the two steppers.

Usage (on a machine with a GPU; the device tool of this workplace)::

    python3 benchmarks/gpu_engine.py [--steps 4000] [--sizes 1,256,4096,65536] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from rates.numeric import graphed
from rates.numeric.data import parse_data
from rates.numeric.engine import DTYPE, RunSpec, checkpoint_times, resolve_spec, run_group


def configurations(algo: str, count: int) -> list[RunSpec]:
    """``count`` configurations of one algorithm over a and eta0 (as benchmarks/engine_speed.py)."""
    exponents = ["1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "1"]
    etas = [1.0, 0.5, 0.25, 0.125, 2.0]
    pairs = [(a, e) for e in etas for a in exponents]
    return [RunSpec(algo, pairs[i % len(pairs)][0], eta0=pairs[i % len(pairs)][1]) for i in range(count)]


def timed_run(runs, H, y, k, steps, engine) -> tuple[torch.Tensor, float]:
    times = checkpoint_times(steps, 20)
    torch.cuda.synchronize()
    start = time.perf_counter()
    W, _ = run_group(runs, H, y, k, steps, times, engine=engine)
    torch.cuda.synchronize()
    return W, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--sizes", default="1,256,4096,65536")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algos", default="signgd,adam")
    parser.add_argument("--segments", default="64", help="steps per recorded graph, comma-separated")
    parser.add_argument("--data", default="default;gaussian:k=4,d=6,per_class=12", help="';'-separated datasets")
    args = parser.parse_args(argv)
    default_segment = graphed.SEGMENT_STEPS
    if not torch.cuda.is_available():
        sys.exit("benchmarks/gpu_engine.py: no cuda device here")
    print(f"{torch.cuda.get_device_name(0)}; torch {torch.__version__}; {args.steps} steps, 20 checkpoints, "
          f"median of {args.repeats}; rates in config-steps per wall second")
    segments = [int(s) for s in args.segments.split(",")]
    names = ["torch"] + [f"graph:{s}" for s in segments]
    print("| data | algorithm | R | eager torch | " + " | ".join(f"graph ({s} steps)" for s in segments)
          + " | best graph / eager | peak MiB eager / graph | max rel. W diff |")
    print("|---|---|---|---|" + "---|" * len(segments) + "---|---|---|")
    for spec in args.data.split(";"):
        data = parse_data(spec)
        H = torch.as_tensor(np.asarray(data.H), dtype=DTYPE, device="cuda")
        y = torch.as_tensor(np.asarray(data.y), dtype=torch.long, device="cuda")
        for algo in args.algos.split(","):
            for R in (int(s) for s in args.sizes.split(",")):
                runs = [resolve_spec(s, data.n) for s in configurations(algo, R)]
                rates: dict[str, list[float]] = {name: [] for name in names}
                finals, peaks = {}, {}
                for _ in range(args.repeats):
                    for name in names:
                        graphed.SEGMENT_STEPS = int(name.split(":")[1]) if ":" in name else graphed.SEGMENT_STEPS
                        torch.cuda.reset_peak_memory_stats()
                        finals[name], seconds = timed_run(runs, H, y, data.k, args.steps, name.split(":")[0])
                        peaks[name] = torch.cuda.max_memory_allocated() / 2**20
                        rates[name].append(R * args.steps / seconds)
                graphed.SEGMENT_STEPS = default_segment
                median = {name: statistics.median(values) for name, values in rates.items()}
                eager = median["torch"]
                best = max(median[name] for name in names[1:])
                diff = max(((finals[name] - finals["torch"]).abs().amax(dim=(1, 2))
                            / finals["torch"].abs().amax(dim=(1, 2))).max().item() for name in names[1:])
                cells = " | ".join(f"{median[name]:,.0f}" for name in names[1:])
                print(f"| {data.name} (n={data.n}, k={data.k}, d={data.d}) | {algo} | {R} | {eager:,.0f} | {cells} | "
                      f"{best / eager:.1f}x | {peaks['torch']:.0f} / {max(peaks[n] for n in names[1:]):.0f} | "
                      f"{diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
