"""Mutation score of one target of ``[tool.rates.mutation]`` in pyproject.toml (docs/testing.md, "Mutation testing").

Usage (from the repository root, with the test extra installed)::

    python scripts/mutation.py --list
    python scripts/mutation.py TARGET [--max-children N] [--fresh] [--survivors] [--report-only] [NAME_GLOB ...]

A target names the files mutmut mutates, the test files that judge its mutants, optionally the functions to mutate
(mutmut name globs), environment variables and decorators to strip from the copy (the kernels run with
``NUMBA_DISABLE_JIT=1``, so a mutant is plain Python instead of a numba recompile; mutmut does not mutate decorated
functions, and without the JIT ``@njit`` is the identity, so the copy drops it).

mutmut reads its settings from the ``[tool.mutmut]`` table of the pyproject.toml in the directory it runs in, so
each target runs in its own copy of the tree under ``build/mutation/TARGET`` whose pyproject.toml carries that
target's table. mutmut's results stay there: a run goes on with the mutants not yet decided (``--survivors`` runs
the stored survivors again, e.g. after adding tests; ``--fresh`` starts over). At the end the script prints the
counts per status, the score ``killed / (killed + survived)`` (timeouts count as killed, mutants no test reaches
as survived) and every surviving mutant's name (``mutmut show NAME`` in the target's directory prints its diff).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("rates", "cli", "proofs", "tests")


def targets() -> dict[str, dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["rates"]["mutation"]


def module_glob(path: str) -> str:
    """mutmut's name prefix of the mutants of a file: ``rates/judge/tightness.py`` -> ``rates.judge.tightness.*``."""
    return path.removesuffix(".py").replace("/", ".") + ".*"


def mutmut_table(target: dict) -> str:
    def listing(values):
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"

    return ("[tool.mutmut]\n"
            'source_paths = ["rates/"]\n'
            'also_copy = ["cli/", "proofs/"]\n'
            f"only_mutate = {listing(target['mutate'])}\n"
            'pytest_add_cli_args = ["-n", "0", "-p", "no:cacheprovider"]\n'
            f"pytest_add_cli_args_test_selection = {listing(target['tests'])}\n")


def prepare(name: str, target: dict, fresh: bool) -> Path:
    """The target's copy of the tree, refreshed from the working tree, with its own [tool.mutmut] table."""
    work = ROOT / "build" / "mutation" / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for folder in COPIED:
        shutil.copytree(ROOT / folder, work / folder, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    for path in target["mutate"]:
        for name in target.get("strip_decorators", []):
            # mutmut leaves decorated functions alone; with NUMBA_DISABLE_JIT=1 @njit is the identity anyway
            copy = work / path
            copy.write_text(re.sub(rf"(?m)^@{name}\b.*\n", "", copy.read_text()))
    text = (ROOT / "pyproject.toml").read_text()
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[)", "", text)  # the tree-wide table, replaced
    (work / "pyproject.toml").write_text(text + "\n" + mutmut_table(target))
    return work


def stored(work: Path) -> dict[str, int | None]:
    """Every generated mutant's stored exit code (None: not run yet), from mutmut's meta files."""
    codes: dict[str, int | None] = {}
    for meta in (work / "mutants").rglob("*.meta"):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def statuses(work: Path, env: dict) -> dict[str, str]:
    mutmut = Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(mutmut), "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                         text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name:
            found[name] = status
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?")
    parser.add_argument("names", nargs="*", help="mutant name globs (default: the target's)")
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--fresh", action="store_true", help="forget the target's earlier results")
    parser.add_argument("--report-only", action="store_true", help="count the stored results, run nothing")
    parser.add_argument("--survivors", action="store_true",
                        help="run again the stored survivors (and mutants no test reached), e.g. after adding tests")
    args = parser.parse_intermixed_args(argv)
    table = targets()
    if args.list or not args.target:
        for name, target in table.items():
            print(f"{name}: {', '.join(target['mutate'])} <- {', '.join(target['tests'])}")
        return 0
    if args.target not in table:
        print(f"mutation.py: error: TARGET must be one of {', '.join(table)}, got {args.target!r}", file=sys.stderr)
        return 2
    target = table[args.target]
    globs = args.names or target.get("mutants") or [module_glob(p) for p in target["mutate"]]
    work = prepare(args.target, target, args.fresh)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update({key: str(value) for key, value in target.get("env", {}).items()})
    if not args.report_only:
        # mutmut runs every mutant it is given by name again; given the names still undecided (or the survivors),
        # an interrupted or repeated measurement goes on where it stopped
        codes = {name: code for name, code in stored(work).items()
                 if any(fnmatch.fnmatchcase(name, glob) for glob in globs)}
        if args.survivors:
            found = statuses(work, env)
            names = [name for name in codes if found.get(name) in ("survived", "no tests")]
        else:
            names = [name for name, code in codes.items() if code is None] if codes else globs
        if names:
            mutmut = Path(sys.executable).with_name("mutmut")
            subprocess.run([str(mutmut), "run", "--max-children", str(args.max_children), *names], cwd=work, env=env,
                           check=False)
    found = {name: status for name, status in statuses(work, env).items()
             if any(fnmatch.fnmatchcase(name, glob) for glob in globs)}
    counts = Counter(found.values())
    killed = counts["killed"] + counts["timeout"]
    judged = killed + counts["survived"] + counts["no tests"]
    print(f"\n{args.target}: {len(found)} mutants: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if judged:
        print(f"score: {killed}/{judged} killed = {100 * killed / judged:.1f}% (timeouts as killed, no tests as "
              "survived; not checked and skipped left out)")
    for name, status in sorted(found.items()):
        if status in ("survived", "no tests", "suspicious"):
            print(f"  {status}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
