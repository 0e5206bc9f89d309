"""ruff, with the project's configuration (pyproject.toml), over the whole tree.

The whole tree is clean now: the one-off `ruff check --fix .` and the hand fixes of long lines, loop variables in
closures and unused loop variables were made after the parallel branches merged (docs/design.md, "Checked habits"),
so CLEAN is ``(".",)`` and every new finding anywhere fails this test.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLEAN = (".",)


def _ruff() -> list[str]:
    local = Path(sys.executable).with_name("ruff")
    if local.exists():
        return [str(local)]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return [found]


def test_ruff_finds_nothing_in_the_clean_files():
    result = subprocess.run([*_ruff(), "check", "--no-cache", *CLEAN], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_ruff_configuration_catches_a_planted_finding(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx = 1 \n")  # an unused import (F401) and trailing whitespace (W291)
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1 and "F401" in result.stdout and "W291" in result.stdout
