"""Rewrite citations that point outside the repository into citations of its own docs/ and of the papers.

Why: the code was written against a theory file, a design file and three paper texts that lived beside the
repository, not in it. The project now carries its own docs/theory.md and docs/design.md (same section
numbers and names), and cites the papers by short name (FLAVORS, MINIBATCH, SIGNADAM, resolved to authors,
year, title and arXiv id by rates/symbolic/papers.py). This script makes every tracked text file follow suit:

* the theory and design file names -> ``docs/theory.md`` / ``docs/design.md`` (sections unchanged);
* a paper's text-file name -> the paper's short name (``SIGNADAM ``<file>`` Thm 5.3`` -> ``SIGNADAM Thm 5.3``);
  a file name in parentheses after other text -> the arXiv id;
* the folder of the paper texts -> the References section of the README;
* ``--flag`` names given to library errors under rates/ and proofs/ -> parameter names (``InputError("--a"``
  -> ``InputError("a"``); the CLI maps them back to flags (rates/errors.py).

It is idempotent (a second run changes nothing) and prints the files it changed.

    python scripts/rewrite_citations.py          # rewrite in place
    python scripts/rewrite_citations.py --check  # exit 1 if anything would change
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()

PAPERS = {  # text-file stem -> (short name, arXiv id)
    "001_76d30ba647d4c3d1": ("FLAVORS", "2410.22069"),
    "002_e8731d42f3942599": ("MINIBATCH", "2602.11557"),
    "003_35ca27fd72435096": ("SIGNADAM", "2502.04664"),
}
THEORY = "THEORY" + ".md"
DESIGN = "DESIGN" + ".md"
SEEDS_DIR = "shared/" + "seeds"

TEXT_SUFFIXES = {".py", ".md", ".json", ".toml", ".txt", ".sh", ".cfg", ".ini", ".yml", ".yaml", ""}


def _paper_rules() -> list[tuple[re.Pattern, str]]:
    rules = []
    for stem, (name, arxiv) in PAPERS.items():
        file = re.escape(stem) + r"(?:\.txt)?"
        quoted = r"(?:``|`)?" + file + r"(?:``|`)?"
        rules += [
            # "SIGNADAM ``file``", "SIGNADAM (``file``)", "FLAVORS, seed ``file``", "FLAVORS = seed ``file``"
            (re.compile(rf"\b{name}(?:,? seed| = seed|,)?[ ]*(?:\({quoted}\)|{quoted})"), name),
            # the same across a line break: keep the break and the indentation
            (re.compile(rf"\b{name}\n([ \t]*)(?:\({quoted}\)|{quoted})[ ]?"), name + r"\n\1"),
            # "``file`` (SIGNADAM)" / "file (SIGNADAM)"
            (re.compile(rf"{quoted} \({name}\)"), name),
            # "(file)" after other text: the arXiv id
            (re.compile(rf"\({quoted}\)"), f"(arXiv:{arxiv})"),
            # any other mention: the short name
            (re.compile(quoted), name),
        ]
    return rules


RULES: list[tuple[re.Pattern, str]] = _paper_rules() + [
    (re.compile(r"(?<![\w/.])(?:\.\./)?" + re.escape(SEEDS_DIR) + r"/?"), "the References section of README.md"),
    (re.compile(r"(?<![\w/])" + re.escape(THEORY)), "docs/theory.md"),
    (re.compile(r"(?<![\w/])" + re.escape(DESIGN)), "docs/design.md"),
]

# Library errors name parameters, not flags (only under rates/ and proofs/; the CLI keeps its flags).
OPTION_RULES: list[tuple[re.Pattern, object]] = [
    (re.compile(r'((?:InputError|NotSeparableError)\(\s*)"--([A-Za-z0-9][A-Za-z0-9-]*)"'),
     lambda m: f'{m.group(1)}"{m.group(2).replace("-", "_")}"'),
    (re.compile(r'(\boption(?:: str)? ?= ?)"--([A-Za-z0-9][A-Za-z0-9-]*)"'),
     lambda m: f'{m.group(1)}"{m.group(2).replace("-", "_")}"'),
    (re.compile(r'(^OPTION = )"--([A-Za-z0-9][A-Za-z0-9-]*)"', re.M),
     lambda m: f'{m.group(1)}"{m.group(2).replace("-", "_")}"'),
    # any other flag-shaped string literal passed to a validator: ``_check_unit_interval(x, "--adam-beta1")``
    (re.compile(r'([(,]\s*)"--([A-Za-z][A-Za-z0-9-]*)"(?=\s*[),])'),
     lambda m: f'{m.group(1)}"{m.group(2).replace("-", "_")}"'),
]
OPTION_DIRS = ("rates/", "proofs/")


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def rewrite_text(text: str, relative: str) -> str:
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    # rates/errors.py is where parameters meet flags, so its examples keep both spellings
    if relative.startswith(OPTION_DIRS) and relative.endswith(".py") and relative != "rates/errors.py":
        for pattern, replacement in OPTION_RULES:
            text = pattern.sub(replacement, text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    changed = []
    for path in tracked_files():
        if path.resolve() == SELF or path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(ROOT).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_text(text, relative)
        if new != text:
            changed.append(relative)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for relative in changed:
        print(relative)
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
