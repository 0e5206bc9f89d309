"""Every console example of the README prints what the README shows (scripts/doc_examples.py): a changed
number, line or exit code fails here instead of going stale in the README."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("doc_examples", ROOT / "scripts" / "doc_examples.py")
doc_examples = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("doc_examples", doc_examples)  # dataclasses look their module up there
_spec.loader.exec_module(doc_examples)


def test_the_readme_examples_print_what_the_readme_shows(monkeypatch, tmp_path):
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "cache"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(doc_examples.examples(readme)) >= 8  # predict, run, fit (twice), table, check, schedule, plug-in
    failures = doc_examples.check(readme)
    assert not failures, "\n\n".join(failures)


def test_the_matcher_tells_a_changed_number_apart():
    shown = "  fitted slope   : -0.291 ± 0.002 (95% CI [-0.295, -0.287]; t in [1.15e+03, 2e+04] ...)"
    assert doc_examples._matches(shown, shown.replace("...)", "(1.24 decades, auto))"))
    assert not doc_examples._matches(shown, shown.replace("-0.291", "-0.292").replace("...)", "x)"))
    assert not doc_examples._matches("| a | 1892 | proven |", "| a | 1893 | proven |")
    assert doc_examples._matches("x (...); y", "x (1; 2); y") and not doc_examples._matches("x (...); y", "x (1; 2; y)")


def test_a_whole_output_must_match_line_for_line():
    example = doc_examples.Example(0, "rates x", "", ("a", "b"))
    assert doc_examples.differences(example, "a\nb\n") == []
    assert doc_examples.differences(example, "a\nb\nc\n") != []
    excerpt = doc_examples.Example(0, "rates x", "excerpt", ("b", "a"))
    assert doc_examples.differences(excerpt, "a\nb\n") == ["a"]  # in order


def test_the_main_job_table_keeps_the_chosen_columns_of_table_md():
    table_md = "**t**\n\n| algorithm | a | x | predicted rate | fitted slope ± s.e. | window t | bound holds " \
               "| dominant term | stated rate | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n" \
               "| signgd | 1/2 | drop | r | -0.507 ± 0.001 | [3e+03, 2.5e+05] | holds | C | no | loose |\n"
    made = doc_examples.main_job_table(table_md).splitlines()
    assert made[0] == doc_examples.MAIN_JOB_BEGIN and made[-1] == doc_examples.MAIN_JOB_END
    assert made[3] == "| signgd | 1/2 | r | -0.507 ± 0.001 | [3e+03, 2.5e+05] | holds | C | no | loose |"


@pytest.mark.slow
def test_the_main_job_table_in_usage_md_is_what_the_main_job_prints(tmp_path):
    """Reruns the main job (about a minute of CPU) and compares docs/usage.md's table with its table.md."""
    import os
    import subprocess

    env = dict(os.environ, RATES_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "cli.app", "report", "default", "--out", str(tmp_path / "report")],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    usage = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    fresh = doc_examples.main_job_table((tmp_path / "report" / "table.md").read_text(encoding="utf-8"))
    assert fresh in usage, "run python scripts/doc_examples.py --main-job REPORT_DIR docs/usage.md\n" + fresh
