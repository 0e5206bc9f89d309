"""Run the console examples of a Markdown file and compare what they print with what the file shows.

A console example is a ```` ```console ```` block: lines starting with ``$ rates ...`` are commands, the lines
after one (up to the next command) are what it prints. A command whose comment says ``excerpt`` shows a
selection: each shown line must match an output line, in order, where ``...`` stands for any text; otherwise
the shown lines must be the whole output. ``exit code N`` in the comment is the exit code expected (else 0).
Commands run in order in one temporary directory, so ``run --out x.json`` feeds a later
``fit --from x.json``; paths into the repository (``examples/...``) are read from the repository root.

The main job's results table in docs/usage.md is made from its ``table.md`` the same way (``--main-job
REPORT_DIR docs/usage.md`` writes it; the slow test reruns the main job and compares).

``python scripts/doc_examples.py README.md`` checks every example and prints, for each that differs, the
command's fresh output; tests/test_doc_examples.py runs the same check, so a changed number fails a test
instead of going stale in the README.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Example:
    """One ``$ rates ...`` line of a console block and the lines shown under it."""

    block: int
    command: str
    comment: str
    shown: tuple[str, ...]

    @property
    def excerpt(self) -> bool:
        return "excerpt" in self.comment

    @property
    def exit_code(self) -> int:
        found = re.search(r"exit code (\d+)", self.comment)
        return int(found.group(1)) if found else 0


def examples(markdown: str) -> list[Example]:
    """Every ``$ rates`` command of every console block of ``markdown``, in order."""
    found: list[Example] = []
    blocks = re.findall(r"^```console\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    for number, block in enumerate(blocks):
        current: tuple[str, str] | None = None
        shown: list[str] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                if current is not None:
                    found.append(Example(number, current[0], current[1], tuple(shown)))
                command, _, comment = line[2:].partition("#")
                current, shown = (command.strip(), comment.strip()), []
            elif current is not None:
                shown.append(line)
        if current is not None:
            found.append(Example(number, current[0], current[1], tuple(shown)))
    return [example for example in found if example.command.startswith("rates ")]


def _matches(shown: str, actual: str) -> bool:
    """Whether output line ``actual`` bears out ``shown``, in which each ``...`` stands for any text."""
    shown, actual = shown.rstrip(), actual.rstrip()
    if "..." not in shown:
        return shown == actual
    pieces = shown.split("...")
    head, tail = pieces[0].rstrip(), pieces[-1].lstrip()
    if not actual.startswith(head) or not actual.endswith(tail) or len(head) + len(tail) > len(actual):
        return False
    position, end = len(head), len(actual) - len(tail)
    for piece in (piece.strip() for piece in pieces[1:-1]):
        found = actual.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def differences(example: Example, output: str) -> list[str]:
    """The shown lines the output does not bear out (empty when the example is right)."""
    actual = output.rstrip("\n").splitlines()
    if not example.excerpt:
        if [line.rstrip() for line in example.shown] == [line.rstrip() for line in actual]:
            return []
        return [line for line in example.shown if line.rstrip() not in {a.rstrip() for a in actual}] or [
            "(the lines are right but their number or order differs)"]
    missing, position = [], 0
    for line in example.shown:
        for index in range(position, len(actual)):
            if _matches(line, actual[index]):
                position = index + 1
                break
        else:
            missing.append(line)
    return missing


def run(example: Example, cwd: Path, timeout: float = 600) -> tuple[int, str]:
    """Run ``example`` in ``cwd`` as ``python -m cli.app ...``; its exit code and standard output."""
    argv = shlex.split(example.command)[1:]
    argv = [str(ROOT / arg) if arg.startswith("examples/") else arg for arg in argv]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               COLUMNS="400")
    done = subprocess.run([sys.executable, "-m", "cli.app", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout


def check(markdown: str) -> list[str]:
    """A report line for each example of ``markdown`` that is wrong. The examples run in order in one temporary
    directory, so a later block may read what an earlier one wrote (``fit --from signgd.json``)."""
    report = []
    with tempfile.TemporaryDirectory(prefix="rates-doc-example-") as directory:
        for example in examples(markdown):
            code, output = run(example, Path(directory))
            wrong = differences(example, output)
            if code != example.exit_code:
                wrong.insert(0, f"(exit code {code}, the example says {example.exit_code})")
            if wrong:
                report.append(f"$ {example.command}\n  not in the output:\n    " + "\n    ".join(wrong)
                              + "\n  output:\n    " + "\n    ".join(output.splitlines()))
    return report


MAIN_JOB_BEGIN = ("<!-- main job table: generated by `python scripts/doc_examples.py --main-job REPORT_DIR "
                  "docs/usage.md` from the main job's table.md; do not edit -->")
MAIN_JOB_END = "<!-- end of the main job table -->"
MAIN_JOB_COLUMNS = ("algorithm", "a", "predicted rate", "fitted slope ± s.e.", "window t", "bound holds",
                    "dominant term", "stated rate", "verdict")


def main_job_table(table_md: str) -> str:
    """The columns :data:`MAIN_JOB_COLUMNS` of the main job's ``table.md`` (its first Markdown table), between
    :data:`MAIN_JOB_BEGIN` and :data:`MAIN_JOB_END`."""
    rows = [line for line in table_md.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0].strip("|").split(" | ")]
    keep = [header.index(column) for column in MAIN_JOB_COLUMNS]
    lines = [MAIN_JOB_BEGIN, "| " + " | ".join(MAIN_JOB_COLUMNS) + " |", "|" + "---|" * len(keep)]
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        lines.append("| " + " | ".join(cells[index] for index in keep) + " |")
    return "\n".join(lines + [MAIN_JOB_END])


def with_main_job_table(document: str, table_md: str) -> str:
    """``document`` with its main job table replaced by the one made from ``table_md``."""
    head, rest = document.split(MAIN_JOB_BEGIN, 1)
    return head + main_job_table(table_md) + rest.split(MAIN_JOB_END, 1)[1]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--main-job"]:  # --main-job REPORT_DIR DOC: write the main job's table into DOC
        table_md = (Path(argv[1]) / "table.md").read_text(encoding="utf-8")
        path = Path(argv[2])
        path.write_text(with_main_job_table(path.read_text(encoding="utf-8"), table_md), encoding="utf-8")
        return 0
    failures = []
    for name in argv or ["README.md"]:
        failures += [f"{name}: {line}" for line in check(Path(name).read_text(encoding="utf-8"))]
    print("\n\n".join(failures) if failures else "every example matches its output")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
