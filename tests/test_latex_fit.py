"""Every LaTeX table the tool writes is ``\\input`` into a standard ``article`` and fits: pdflatex reports no
overfull box and no float too large for the page, long tables break across pages, and the compiled pages
(read back with poppler's pdftotext) hold every row, the caption and every note inside the page."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from test_compare import synthetic_run

from cli.app import main
from rates.numeric.trajectory import Trajectory, save
from rates.output.tables import Table, latex_escape
from rates.studies.report import load_fit_inputs, verdict_table


def _needs_poppler() -> None:
    if shutil.which("pdftotext") is None:
        if os.environ.get("CI"):
            pytest.fail("pdftotext is not installed on CI; scripts/setup.sh --test installs poppler-utils")
        pytest.skip("pdftotext (poppler-utils) not installed")


def input_document(fragment: Path) -> str:
    """What a user writes: an article with the packages the fragment's first line names, and ``\\input``."""
    first = fragment.read_text(encoding="utf-8").splitlines()[0]
    packages = re.search(r"\\usepackage\{([^}]*)\}", first)
    assert first.startswith("%") and packages, f"the first line names no packages: {first!r}"
    return "\n".join([r"\documentclass{article}", rf"\usepackage{{{packages.group(1)}}}", r"\begin{document}",
                      "Some text of the paper before the table.", "", rf"\input{{{fragment.name}}}", "",
                      "Some text after it.", r"\end{document}", ""])


def pages_written(pdf: Path) -> int:
    log = pdf.with_suffix(".log").read_text(encoding="latin-1")
    return int(re.search(r"Output written on .*?\((\d+) pages?", log.replace("\n", "")).group(1))


def words_on_pages(pdf: Path) -> list[tuple[int, str, tuple[float, float, float, float], tuple[float, float]]]:
    """(page, word, box, page size) of every word pdftotext finds: what is typeset, where."""
    xhtml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", "999", str(pdf)], capture_output=True, text=True,
                          check=True).stdout
    turned = {int(n) for n, rot in re.findall(r"Page\s+(\d+) rot:\s+(\d+)", info) if int(rot) % 180}
    root = ElementTree.fromstring(xhtml)
    out = []
    for number, page in enumerate(root.iter("{http://www.w3.org/1999/xhtml}page"), start=1):
        size = (float(page.get("width")), float(page.get("height")))
        if number in turned:  # a landscape page: words are reported as the page is shown, turned
            size = size[::-1]
        for word in page.iter("{http://www.w3.org/1999/xhtml}word"):
            box = tuple(float(word.get(k)) for k in ("xMin", "yMin", "xMax", "yMax"))
            out.append((number, word.text or "", box, size))
    return out


def assert_on_page(words, phrase: str, rendered: dict | None = None) -> int:
    """``phrase`` is typeset as consecutive words, all inside the page; returns its page. With ``rendered``
    (:func:`rendered_pages`), each word's box must also hold ink in the page rendered to PNG."""
    wanted = phrase.split()
    texts = [w[1] for w in words]
    for i in range(len(texts) - len(wanted) + 1):
        if texts[i:i + len(wanted)] == wanted:
            for page, text, (x0, y0, x1, y1), (width, height) in words[i:i + len(wanted)]:
                assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height, f"{text!r} lies off page {page}"
                if rendered is not None:
                    image, dpi = rendered[page], RENDER_DPI
                    region = image[int(y0 * dpi / 72):math.ceil(y1 * dpi / 72) + 1,
                                   int(x0 * dpi / 72):math.ceil(x1 * dpi / 72) + 1, :3]
                    assert region.size and region.min() < 0.8, f"{text!r} has no ink on rendered page {page}"
            return words[i][0]
    raise AssertionError(f"{phrase!r} is not on any page")


RENDER_DPI = 100


def rendered_pages(pdf: Path, folder: Path) -> dict:
    """Every page of ``pdf`` rendered to PNG by poppler's pdftoppm (as shown: landscape pages turned), read
    back as RGB(A) arrays in [0, 1], by page number."""
    from matplotlib.image import imread

    subprocess.run(["pdftoppm", "-r", str(RENDER_DPI), "-png", str(pdf), str(folder / "page")], check=True)
    return {int(re.search(r"-(\d+)\.png$", png.name).group(1)): imread(png) for png in folder.glob("page-*.png")}


def test_rates_table_inputs_into_an_article_across_pages(tmp_path, compile_latex, capsys):
    _needs_poppler()
    fragment = tmp_path / "rates.tex"
    with pytest.raises(SystemExit) as exc:
        main(["table", "--format", "latex", "--out", str(fragment)])
    assert exc.value.code == 0
    text = fragment.read_text()
    assert r"\documentclass" not in text and r"\begin{longtable}" in text and r"\begin{table}" not in text
    pdf = compile_latex(input_document(fragment), name="paper")  # no overfull box, no float too large
    with pytest.raises(SystemExit):
        main(["table", "--format", "json"])
    table = json.loads(capsys.readouterr().out)
    words = words_on_pages(pdf)
    pages = pages_written(pdf)
    # four regimes of a per rate family, with wrapped sources, do not fit one page: the table breaks, header
    # repeated (pages are landscape: ten columns of unbreakable words need more than a portrait line)
    assert len(table["rows"]) % 4 == 0 and len(table["rows"]) >= 16 and 2 <= pages <= 4
    assert assert_on_page(words, "Some text after it.") == pages
    start = assert_on_page(words, "Table 1: Predicted margin-gap rates")  # a landscape table starts a page
    assert start == assert_on_page(words, "Some text of the paper before the table.") + 1
    assert assert_on_page(words, "Table 1 (continued)") == start + 1
    for family in {row["family"] for row in table["rows"]}:
        assert any(w[1] == family for w in words), family
    rendered = rendered_pages(pdf, tmp_path)
    assert len(rendered) == pages
    assert_on_page(words, "Table 1: Predicted margin-gap rates", rendered)
    for note in table["notes"]:  # the notes, in full, on the page and inked: first and last words in order
        first, last = " ".join(note.split()[:4]), " ".join(note.split()[-3:])
        assert (assert_on_page(words, latex_free(first), rendered)
                <= assert_on_page(words, latex_free(last), rendered))
    blank = {page: image * 0 + 1 for page, image in rendered.items()}  # the same pages with nothing drawn
    with pytest.raises(AssertionError, match="no ink"):
        assert_on_page(words, "Table 1: Predicted margin-gap rates", blank)


def latex_free(plain: str) -> str:
    """How pdftotext reads back plain notation once typeset (``eta^p`` becomes the Greek letter, ...)."""
    return plain.replace("eta_s", "ηs").replace("gamma_eff", "γeff")


def test_a_long_table_breaks_across_pages_and_a_float_would_not(tmp_path, compile_latex):
    _needs_poppler()
    table = Table(["configuration", "slope", "verdict"], caption="Sixty fits", label="tab:long",
                  notes=["Note one: the window is chosen by the observable entry.", "Note two: seeds pooled."])
    for i in range(60):
        table.add(f"signgd a = {i}/100 with data seed {i}", f"{-0.25 - i / 1000:+.3f}", "tight")
    (tmp_path / "sixty.tex").write_text(table.to_latex())
    pdf = compile_latex(input_document(tmp_path / "sixty.tex"), name="long")
    words = words_on_pages(pdf)
    assert pages_written(pdf) == 2
    assert assert_on_page(words, "signgd a = 0/100") == 1 and assert_on_page(words, "signgd a = 59/100") == 2
    assert assert_on_page(words, "Note two: seeds pooled.") == 2
    # the same rows in a float, as tables used to be written, lose the page's end: the check catches it
    rows = "\n".join(f"row {i} & x \\\\" for i in range(60))
    as_float = "\\begin{table}[ht]\\begin{tabular}{ll}\n" + rows + "\n\\end{tabular}\\caption{c}\\end{table}"
    with pytest.raises(AssertionError, match="Float too large"):
        compile_latex("\\documentclass{article}\\begin{document}\n" + as_float + "\n\\end{document}", name="float")


def test_plain_notation_is_typeset_as_a_paper_would():
    note = "pass --data-seeds 0..4; bound C3 S_{3/2}/S1, S_p = sum eta^p, gamma_eff > 0, rate t^(-1/2) of W_t"
    tex = latex_escape(note)
    assert r"\texttt{-{}-data-seeds}" in tex  # two hyphens, not an en dash
    assert "$S_{3/2}$" in tex and r"$\eta^{p}$" in tex and r"$\gamma_{\mathrm{eff}}$" in tex
    assert "$t^{-1/2}$" in tex and "$W_{t}$" in tex and "$S_{p}$" in tex
    # file names and words with underscores stay text
    assert latex_escape("signgd_a0.3_s1.json and data_seed") == r"signgd\_a0.3\_s1.json and data\_seed"


def test_verdict_table_notes_compile_readable(tmp_path, compile_latex):
    """The report's table (``table.tex``): notes with S_{3/2}, eta^p and options come out as typeset text."""
    _needs_poppler()
    paths = []
    for seed in (0, 1):
        run = synthetic_run(lambda t, s=seed: (1 + s) * t ** -0.25, seed=seed, noise=0.01)
        paths.append(save(Trajectory([run]), tmp_path / f"signgd_{seed}.json"))
    table = verdict_table(load_fit_inputs(paths), seeds_note="seeds pooled across --data-seeds 0..1")
    (tmp_path / "table.tex").write_text(table.to_latex())
    pdf = compile_latex(input_document(tmp_path / "table.tex"), name="verdicts")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    for literal in ("S_{", "eta^", "\u2013data-seeds", "textbackslash"):
        assert literal not in text, literal
    assert "--data-seeds" in text
    words = words_on_pages(pdf)
    for note in table.notes:
        assert_on_page(words, " ".join(note.split()[-2:]).replace("--", "--"))


def test_a_table_too_wide_for_landscape_is_split_into_column_parts(tmp_path, compile_latex):
    _needs_poppler()
    columns = ["configuration"] + [f"measurement{i:02d}" for i in range(16)]
    table = Table(columns, caption="Sixteen measurements", notes=["Every part is keyed by its first column."])
    for row in range(5):
        table.add(f"run{row}", *[f"{row * i:+.4e}" for i in range(16)])
    (tmp_path / "wide.tex").write_text(table.to_latex())
    pdf = compile_latex(input_document(tmp_path / "wide.tex"), name="widedoc")  # no overfull box
    words = words_on_pages(pdf)
    parts = [w for w in words if w[1] == "(part"]
    assert len(parts) >= 2  # the caption says which part of how many
    text = " ".join(w[1] for w in words)
    assert all(name in text for name in columns[1:]) and text.count("run4") == len(parts)
    assert assert_on_page(words, "Every part is keyed by its first column.") == pages_written(pdf)
