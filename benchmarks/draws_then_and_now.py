"""Benchmark: ``rates run --data-seeds 0..255`` as a user runs it, this checkout against an older one, side by side.

Setting: the command ``rates run --algo signgd --a 1/2 --data gaussian:k=4,d=6,per_class=12 --data-seeds
0..255 --steps 20000 --out FILE`` (256 draws, full-batch SignGD), run as a separate process from two source
trees: this checkout and ``--then`` (a checkout of an older commit, e.g. made with ``git worktree add
/tmp/then <commit>``; its own ``rates`` package is imported, with this interpreter and its libraries). Each
tree gets its own cache folder, filled by one untimed run first (compiled kernels, data draws and max
margins), so that the clocks measure what a user waits for on the second and later runs: start-up, loading
the draws, stepping and writing. Then the two commands alternate, ``--repeats`` times each; medians of the
wall clock and of the child's CPU time (all its threads) are printed with the load average at the start and
end, and the final gaps of the two outputs are compared draw by draw.

Usage::

    git worktree add /tmp/then 472fa56   # the tree to compare with
    python3 benchmarks/draws_then_and_now.py --then /tmp/then [--repeats 3] [--draws 0..255] [--steps 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def command(draws: str, steps: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "rates", "run", "--algo", "signgd", "--a", "1/2", "--data",
            "gaussian:k=4,d=6,per_class=12", "--data-seeds", draws, "--steps", str(steps), "--out", str(out)]


def timed(tree: Path, cache: Path, draws: str, steps: int, out: Path) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(tree), RATES_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command(draws, steps, out), cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def final_gaps(path: Path) -> list[float]:
    runs = json.loads(path.read_text())["runs"]
    return [float(run["checkpoints"]["gap"][-1]) for run in runs]


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--then", type=Path, required=True, help="a checkout of the older commit")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", default="0..255")
    parser.add_argument("--steps", type=int, default=20000)
    args = parser.parse_args(argv)
    trees = {"then": args.then.resolve(), "now": HERE}
    print(f"load average at start: {load()}; then = {trees['then']}, now = {trees['now']}")
    samples: dict[str, list[tuple[float, float]]] = {"then": [], "now": []}
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        outs = {name: base / f"{name}.json" for name in trees}
        for name, tree in trees.items():  # fill each tree's cache: compiled kernels, draws, max margins
            (base / name).mkdir()
            wall, cpu = timed(tree, base / name, args.draws, args.steps, outs[name])
            print(f"{name}: first run (filling its cache) {wall:.1f} s wall, {cpu:.1f} s CPU")
        for _ in range(args.repeats):
            for name, tree in trees.items():
                samples[name].append(timed(tree, base / name, args.draws, args.steps, outs[name]))
        gaps = {name: final_gaps(path) for name, path in outs.items()}
    median = {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
              for name, s in samples.items()}
    for name in trees:
        walls = [w for w, _ in samples[name]]
        print(f"{name}: median of {args.repeats}: {median[name][0]:.2f} s wall [{min(walls):.2f}-{max(walls):.2f}], "
              f"{median[name][1]:.2f} s CPU")
    print(f"then / now: {median['then'][0] / median['now'][0]:.1f}x by wall clock, "
          f"{median['then'][1] / median['now'][1]:.1f}x by CPU time")
    apart = max(abs(a - b) for a, b in zip(gaps["then"], gaps["now"]))
    print(f"final gaps of the {len(gaps['now'])} draws: largest difference between the two trees {apart:.1e}")
    print(f"load average at end: {load()}")
    return median


if __name__ == "__main__":
    main()
