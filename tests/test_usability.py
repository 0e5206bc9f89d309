"""Help texts, messages and estimates a new user reads: each says what the tool expects or will do."""

from __future__ import annotations

import re

import tomllib
from typer.testing import CliRunner

from cli.app import app
from cli.sweep import run_converters
from rates.sweep.grid import GRID_KEYS, REQUIRED_KEYS, expand, normalise_grid


def test_sweep_help_lists_every_grid_key_and_an_example_that_is_a_valid_grid():
    result = CliRunner().invoke(app, ["sweep", "--help"], terminal_width=100)
    assert result.exit_code == 0
    text = result.output
    for key in GRID_KEYS:
        assert re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text), key
    assert f"Required: {', '.join(REQUIRED_KEYS)}." in " ".join(text.split())
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "[grid]")
    example = "\n".join(lines[start:lines.index("Arguments:")])
    grid = tomllib.loads("\n".join(line.strip() for line in example.splitlines()))["grid"]
    converters, defaults = run_converters()
    configurations = expand(normalise_grid(grid, converters, defaults), check_device=False)
    assert len(configurations) == 3 * 2 * 2 * 2  # algo x a x seed x batch, as the example's lists say
