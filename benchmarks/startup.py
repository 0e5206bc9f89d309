"""Benchmark (issues #11, #12): start-up of ``rates --help``, ``rates predict`` and ``rates run --steps 1``.

Each command runs in a fresh child process, as a user starts it (``python -m rates ...`` with the checkout as
working directory); wall seconds and CPU seconds (user + system of the child, from ``getrusage``) are
printed, median and minimum over ``--repeats``. On a machine shared with other jobs wall time mostly
measures the neighbours; CPU time is the fair comparison.

* warm: the numba cache of the kernels and the rates cache (:mod:`rates.cache`: certified max margins,
  ``predict`` answers) already filled by a first call, as on every use after the first;
* first use (``--cold``): empty numba cache (``NUMBA_CACHE_DIR``) and empty rates cache, so the kernels are
  compiled, the max margins solved and the rate derived by sympy: the one-off cost, reported separately;
* ``--against REV``: the same commands in a copy of revision REV (``git archive``), alternated with this
  checkout in one run, so the two columns are measured side by side under the same load;
* floor: the imports the default ``rates run`` (full batch, fused kernels on the CPU) cannot avoid (python
  itself, typer/click/numpy, numba with the scipy.linalg that numba's BLAS check imports when the kernels
  load), each alone in a child process; on top come loading the kernels from numba's cache and the run.
  torch and sympy, which that path no longer imports (a mini-batch run imports torch for its batches, a
  ``--device auto`` run where a GPU device file exists imports it to ask for cuda), are timed for comparison.

Usage::

    python3 benchmarks/startup.py [--repeats 5] [--against 4ff862f] [--cold]
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

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "rates --help": ["--help"],
    "rates predict --algo signgd --a 1/2": ["predict", "--algo", "signgd", "--a", "1/2"],
    "rates run --algo signgd --a 1/2 --steps 1": ["run", "--algo", "signgd", "--a", "1/2", "--steps", "1",
                                                   "--no-progress", "--out", "{out}"],
}
FLOOR = {
    "python (no imports)": "pass",
    "import typer, click, numpy": "import typer, click, numpy",
    "import numba, scipy.linalg (numba's BLAS check)": "import numba, scipy.linalg",
    "the floor: all of the above": "import typer, click, numpy, numba, scipy.linalg",
    "(not imported by the default run) import torch": "import torch",
    "(not imported by the default run) import sympy": "import sympy",
}


def child_seconds(command: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one child process, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} (in {cwd}) failed: {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rates_command(argv: list[str], out: Path) -> list[str]:
    return [sys.executable, "-m", "rates", *[part.format(out=out) for part in argv]]


def summary(samples: list[tuple[float, float]]) -> str:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    return (f"{statistics.median(walls):.2f} s wall (min {min(walls):.2f}), "
            f"{statistics.median(cpus):.2f} s CPU (min {min(cpus):.2f})")


def extract(revision: str, into: Path) -> Path:
    """A copy of ``revision``'s tracked files (no git metadata, no caches)."""
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def first_use(tree: Path, scratch: Path) -> dict[str, tuple[float, float]]:
    """Each command once with empty numba and rates caches (compile, solve, derive)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(scratch / "numba"), RATES_CACHE_DIR=str(scratch / "rates"))
    return {name: child_seconds(rates_command(argv, scratch / "t.json"), tree, env)
            for name, argv in COMMANDS.items() if name != "rates --help"}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", default=None, help="a git revision to time side by side (e.g. the one before)")
    parser.add_argument("--cold", action="store_true", help="also time the first use (kernel compile: ~20-60 s)")
    parser.add_argument("--no-floor", action="store_true", help="skip the import floor")
    args = parser.parse_args(argv)
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="rates-startup-") as scratch_name:
        scratch = Path(scratch_name)
        trees = {"this checkout": ROOT}
        if args.against:
            (scratch / "against").mkdir()
            trees[args.against] = extract(args.against, scratch / "against")
        envs = {}
        for label, tree in trees.items():
            cache = scratch / f"cache-{len(envs)}"
            envs[label] = dict(os.environ, RATES_CACHE_DIR=str(cache))
            for argv_ in COMMANDS.values():  # warm-up: fills the numba cache of a fresh copy and the rates cache
                child_seconds(rates_command(argv_, scratch / "warmup.json"), tree, envs[label])
        samples = {(label, name): [] for label in trees for name in COMMANDS}
        for _ in range(args.repeats):  # alternated, so both trees see the same load
            for label, tree in trees.items():
                for name, argv_ in COMMANDS.items():
                    samples[label, name].append(child_seconds(rates_command(argv_, scratch / "t.json"), tree,
                                                              envs[label]))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"start-up, warm caches; median (min) of {args.repeats}; {os.cpu_count()} core(s), load average "
              f"{load:.2f} at the end; python {sys.version.split()[0]}")
        header = " | ".join(trees)
        print(f"| command | {header} |")
        print("|---|" + "---|" * len(trees))
        for name in COMMANDS:
            cells = " | ".join(summary(samples[label, name]) for label in trees)
            print(f"| `{name}` | {cells} |")
        results["warm"] = samples
        if args.cold:
            print("\nfirst use (empty numba cache: kernels compiled; empty rates cache: max margins solved, rate "
                  "derived):")
            for label, tree in trees.items():
                cold_dir = scratch / f"cold-{label.replace(' ', '-')}"
                cold_dir.mkdir()
                cold = first_use(tree, cold_dir)
                for name, (wall, cpu) in cold.items():
                    print(f"  {label}: `{name}`: {wall:.2f} s wall, {cpu:.2f} s CPU")
                results[f"cold:{label}"] = cold
        if not args.no_floor:
            print("\nimport floor (each alone in a fresh python):")
            for name, code in FLOOR.items():
                floor = [child_seconds([sys.executable, "-c", code], ROOT, dict(os.environ))
                         for _ in range(args.repeats)]
                print(f"  {name}: {summary(floor)}")
                results[f"floor:{name}"] = floor
    return results


if __name__ == "__main__":
    main()
