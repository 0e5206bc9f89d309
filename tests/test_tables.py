"""The shared table renderer: three formats from one set of cells, and LaTeX that pdflatex accepts."""

import json

from rates.output.tables import Cell, Table, latex_document


def _table():
    t = Table(["algo", "rate", "note"], caption="Rates & more", notes=["source: SIGNADAM Thm 5.3"])
    t.add("signgd", Cell("log t / t^(1/2)", r"$\log t / t^{1/2}$", value={"exponent": "1/2"}), "50% of_it")
    t.add("adam", Cell("t^(-1/3)", r"$t^{-1/3}$"), "a|b")
    return t


def test_markdown_and_json_agree():
    t = _table()
    md = t.to_markdown()
    assert "| signgd | log t / t^(1/2) | 50% of_it |" in md
    assert r"a\|b" in md
    data = json.loads(t.to_json())
    assert data["rows"][0]["rate"] == {"exponent": "1/2"}
    assert data["rows"][1]["rate"] == "t^(-1/3)"


def test_latex_escapes_and_compiles(compile_latex):
    tex = _table().to_latex()
    assert r"50\% of\_\hspace{0pt}it" in tex  # a line may break after the underscore
    assert r"\toprule" in tex and r"$\log t / t^{1/2}$" in tex
    compile_latex(latex_document(tex))
