"""``rates table``: LaTeX compiles, Markdown and JSON carry the same rows, output files are atomic."""

import json
import re

import pytest
import sympy as sp

from cli.app import main
from rates.output.tables import latex_document, latex_escape


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(["table", *argv])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.fixture(scope="module")
def renderings():
    from cli.table import predicted_rates_table

    table = predicted_rates_table()
    return {fmt: table.render(fmt) for fmt in ("latex", "markdown", "json")}


def test_latex_compiles_with_booktabs(renderings, compile_latex):
    tex = renderings["latex"]
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    compile_latex(latex_document(tex), name="rates_table")


def test_markdown_json_and_latex_agree(renderings):
    rows = json.loads(renderings["json"])["rows"]
    md_rows = [line for line in renderings["markdown"].splitlines() if line.startswith("| ") and "---" not in line][1:]
    latex = renderings["latex"]  # body rows: after the longtable's header and footers
    tex_rows = [line for line in latex[latex.index(r"\endlastfoot"):].splitlines() if line.endswith(r"\\")]
    assert len(rows) == len(md_rows) == len(tex_rows) == 20  # 5 families x 4 regimes
    marks = {}
    for i, (row, md, tex) in enumerate(zip(rows, md_rows, tex_rows)):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", md)[1:-1]]
        assert cells[0] == row["family"]
        if i and rows[i - 1]["family"] == row["family"]:  # a paper names each family once, its source a note
            assert tex.split(" & ")[:2] == ["", ""]
        else:
            family, mark = re.fullmatch(r"(\S+)\\,\\textsuperscript\{\(([a-z])\)\}", tex.split(" & ")[0]).groups()
            assert family == row["family"] and marks.setdefault(row["source"], mark) == mark
        assert cells[2] == row["regime"] and cells[3] == row["rate"]["text"]
        assert cells[4] == row["r"] == row["rate"]["exponent"] and int(cells[5]) == row["k"] == row["rate"]["log_power"]
        assert tex.split(" & ")[5] == latex_escape(str(row["k"]))
        assert tex.split(" & ")[6] == f"${sp.latex(sp.Rational(row['best a']))}$"
    assert len(set(marks.values())) == len(marks) == len({row["source"] for row in rows}) == 5
    for source, mark in marks.items():  # each source printed once, after its letter
        assert rf"\textsuperscript{{({mark})}}\,{latex_escape(source)}" in latex.replace(r"\hspace{0pt}", "")
    adam = [row for row in rows if row["family"] == "adam"]
    assert [(r["regime"], r["rate"]["text"]) for r in adam][1] == ("a = 2/3", "log t / t^(1/3)")


def test_cli_writes_file_and_prints(capsys, tmp_path):
    code, out, _ = run(capsys, "--format", "markdown")
    assert code == 0 and "| nsd |" in out
    target = tmp_path / "rates.tex"
    code, out, _ = run(capsys, "--format", "latex", "--out", str(target))
    assert code == 0 and out == "" and r"\begin{longtable}" in target.read_text()


def test_bad_format_exits_2_and_writes_nothing(capsys, tmp_path):
    target = tmp_path / "never.txt"
    code, out, err = run(capsys, "--format", "html", "--out", str(target))
    assert code == 2 and "--format" in err and len(err.strip().splitlines()) == 1
    assert not target.exists() and list(tmp_path.iterdir()) == []
