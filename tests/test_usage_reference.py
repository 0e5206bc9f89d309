"""docs/usage.md lists every option of every command, as the commands declare it now.

Two checks that do not lean on each other: the generated reference in docs/usage.md equals what
:mod:`cli.usage_reference` makes from the app today (a changed option fails until the doc is regenerated), and
every option spelling that ``rates COMMAND --help`` prints is found in docs/usage.md (read from the help screen,
not from the generator, so a generator that skipped an option fails too).
"""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from cli import usage_reference
from cli.app import app

USAGE = Path(__file__).resolve().parents[1] / "docs" / "usage.md"


def test_the_option_reference_in_usage_md_is_current():
    document = USAGE.read_text(encoding="utf-8")
    assert usage_reference.BEGIN in document and usage_reference.END in document
    assert usage_reference.replaced(document, usage_reference.reference()) == document, (
        "docs/usage.md is out of date: run python -m cli.usage_reference --write docs/usage.md")


def _help_options(*argv: str) -> set[str]:
    result = CliRunner().invoke(app, [*argv, "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    options = result.output.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    # each option's line starts with its spellings: "  -s, --seeds <str>  help ..."
    spellings = re.findall(r"^ {2}(-[^ ]+(?:, -[^ ]+)*)", options, flags=re.MULTILINE)
    return {name.strip() for line in spellings for name in line.split(",")} - {"--help"}


def _first_cells(section: str) -> str:
    """The option column of a reference table: an option merely named in another's help text does not count."""
    return "\n".join(line.split(" | ", 1)[0] for line in section.splitlines() if line.startswith("| `"))


def test_every_option_that_help_prints_is_in_usage_md():
    document = USAGE.read_text(encoding="utf-8")
    reference = document.split(usage_reference.BEGIN, 1)[1]
    commands = list(usage_reference.commands())
    assert {"predict", "run", "fit", "table", "check", "report", "sweep"} <= set(commands)
    missing = []
    for command in commands:
        section = reference.split(f"### `rates {command}`", 1)[1].split("\n### ", 1)[0]
        for option in _help_options(command) - _help_options():  # --plugin is listed once, for all commands
            if f"`{option}`" not in _first_cells(section):
                missing.append(f"rates {command} {option}")
    for option in _help_options():
        if f"`{option}`" not in _first_cells(reference.split("### `rates predict`", 1)[0]):
            missing.append(f"rates {option}")
    assert not missing, missing


def test_the_check_mode_fails_on_a_stale_reference(tmp_path):
    stale = tmp_path / "usage.md"
    text = USAGE.read_text(encoding="utf-8")
    stale.write_text(text.replace("| `--algo` |", "| `--algorithm` |", 1), encoding="utf-8")
    assert usage_reference.main(["--check", str(stale)]) == 1
    assert usage_reference.main(["--write", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text
