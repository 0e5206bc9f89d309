"""Shared fixtures."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def compile_latex(tmp_path):
    """Compile a full LaTeX document with pdflatex; fail with the log's error lines if it does not compile, or
    if any box is overfull (a table wider than the text).

    On CI pdflatex is required (scripts/setup.sh --test installs it); elsewhere a missing pdflatex skips.
    """

    def _compile(document: str, name: str = "doc") -> Path:
        if shutil.which("pdflatex") is None:
            if os.environ.get("CI"):
                pytest.fail("pdflatex is not installed on CI; scripts/setup.sh --test should have installed it")
            pytest.skip("pdflatex not installed")
        tex = tmp_path / f"{name}.tex"
        tex.write_text(document, encoding="utf-8")
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        errors = [line for line in proc.stdout.splitlines() if line.startswith("!")]
        assert proc.returncode == 0, f"pdflatex failed: {errors or proc.stdout[-2000:]}"
        # A table that runs into the margin is as wrong as one that does not compile (issue 12).
        log = (tmp_path / f"{name}.log").read_text(encoding="latin-1")
        overfull = [line for line in log.splitlines() if line.startswith("Overfull \\hbox")]
        assert not overfull, f"{len(overfull)} overfull boxes, e.g. {overfull[0]}"
        too_large = [line for line in log.splitlines() if "Float too large" in line]
        assert not too_large, too_large[0]  # a float taller than the page loses its rows, caption and notes
        pdf = tmp_path / f"{name}.pdf"
        assert pdf.exists() and pdf.stat().st_size > 0
        return pdf

    return _compile


@pytest.fixture(autouse=True)
def own_rates_cache(tmp_path_factory, monkeypatch):
    """Each test starts with an empty on-disk cache of its own (rates.cache; subprocesses inherit it through
    the environment): no test reads the user's cache or an entry that another test left, whatever the order,
    so a test that patches a solver or a theorem sees the patched code run."""
    folder = tmp_path_factory.mktemp("rates-cache")
    monkeypatch.setenv("RATES_CACHE_DIR", str(folder))
    return folder
