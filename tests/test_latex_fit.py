"""Every LaTeX table the tool writes is ``\\input`` into a standard ``article`` and fits: pdflatex reports no
overfull box and no float too large for the page, long tables break across pages, and the compiled pages
(read back with poppler's pdftotext) hold every row, the caption and every note inside the page."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from test_compare import synthetic_run

from cli.app import main
from rates.numeric.trajectory import Trajectory, save
from rates.output.tables import Table, latex_escape
from rates.schedule import Schedule
from rates.studies.fitting import load_fit_inputs
from rates.studies.verdict_table import verdict_table


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


def page_rotations(pdf: Path) -> list[int]:
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", "999", str(pdf)], capture_output=True, text=True,
                          check=True).stdout
    return [int(rot) for _, rot in re.findall(r"Page\s+(\d+) rot:\s+(\d+)", info)]


def assert_typeset_as_math(pdf: Path) -> None:
    """What a reader sees holds no plain-text notation: minus signs, not hyphens, before numbers; S_1, ~, ->,
    <=, >= and e-notation set as math (pdftotext reads math back as its symbols)."""
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    for literal in ("S_", "_{", "^{", "~", "->", "<=", ">=", "\\", "textgreater", "textasciitilde", "e+0", "e-0"):
        assert literal not in text, (literal, text[max(0, text.find(literal) - 80):text.find(literal) + 80])
    hyphen_minus = re.search(r"(?<![\w.])-\d", text)
    assert hyphen_minus is None, text[max(0, hyphen_minus.start() - 80):hyphen_minus.end() + 80]


def test_rates_table_inputs_into_an_article_on_one_portrait_page(tmp_path, compile_latex, capsys):
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
    # twenty rows (five families x four regimes of a), sources as lettered notes: one portrait page
    assert len(table["rows"]) == 20 and pages_written(pdf) == 1 and page_rotations(pdf) == [0]
    assert assert_on_page(words, "Some text after it.") == 1
    assert_on_page(words, "Table 1: Predicted margin-gap rates")
    for family in {row["family"] for row in table["rows"]}:
        assert any(w[1].startswith(family) for w in words), family
    rendered = rendered_pages(pdf, tmp_path)
    assert len(rendered) == 1
    assert_on_page(words, "Table 1: Predicted margin-gap rates", rendered)
    for note in table["notes"]:  # the notes, in full, on the page and inked: their plain first and last words
        assert_on_page(words, plain_phrase(note, last=False), rendered)
        assert_on_page(words, plain_phrase(note, last=True), rendered)
    blank = {page: image * 0 + 1 for page, image in rendered.items()}  # the same pages with nothing drawn
    with pytest.raises(AssertionError, match="no ink"):
        assert_on_page(words, "Table 1: Predicted margin-gap rates", blank)
    assert_typeset_as_math(pdf)


def plain_phrase(note: str, last: bool) -> str:
    """The first (or last) run of two or more consecutive plain words of ``note``: words that typeset as
    themselves, so pdftotext reads them back unchanged."""
    words = note.split()
    plain = [bool(re.fullmatch(r"[A-Za-z][a-z]*[,.;:]?|[a-z]+[,.;:]?", w)) and w not in ("sum", "eta", "gamma")
             for w in words]
    runs, start = [], None
    for i, ok in enumerate(plain + [False]):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            if i - start >= 2:
                runs.append(" ".join(words[start:i]))
            start = None
    assert runs, note
    return runs[-1] if last else runs[0]


def test_a_twenty_claim_table_is_one_page_and_its_evidence_follows(tmp_path, compile_latex):
    """claims.tex of a study with twenty claims: the claims with sources and verdicts on one portrait page,
    the long measurements, criteria and reasons in the evidence table after it."""
    from rates.output.claims import NOT_REPRODUCED, REPRODUCED, Claim, ClaimsTable

    _needs_poppler()
    table = ClaimsTable("SIGNADAM claims (3 data draws; full mode)", "tab:claims")
    measured = ("SignGD: slope -0.613 ± 0.054 over [1.06e+04, 2.5e+05], bound holds (95% CI [-0.689, -0.491] vs "
                "-0.294), stated rate not attained; NGD: slope -0.740 ± 0.029, loose; Adam eps=0: max-norm 0.6945")
    for i in range(20):
        verdict = REPRODUCED if i % 4 else NOT_REPRODUCED
        table.add(Claim(f"SignGD (and NGD, Rem. 5.5) margin gap O(t^(-3/10)) at a = {i + 1}/{i + 21}",
                        "SIGNADAM Cor. 5.4, Rem. 5.5", measured, "comparator verdict tight or loose (one-sided bound)",
                        verdict, "" if verdict == REPRODUCED else "decays faster than the stated rate: " + measured))
    fragment = tmp_path / "claims.tex"
    fragment.write_text(table.table().to_latex())
    pdf = compile_latex(input_document(fragment), name="claims20")
    words = words_on_pages(pdf)
    assert set(page_rotations(pdf)) == {0}
    texts = [w[1] for w in words]
    first, second = (next(i for i in range(len(texts)) if texts[i:i + 2] == ["Table", f"{n}:"]) for n in (1, 2))
    assert {w[0] for w in words[first:second]} == {1}  # Table 1, its rows and notes: page 1
    assert texts[first:second].count("reproduced") == 20  # each verdict once ('not reproduced' ends with it)
    assert "Table 1 (continued)" not in " ".join(texts)
    assert_typeset_as_math(pdf)


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


def test_numbers_arrows_and_indexed_symbols_are_math_and_the_rest_is_left_alone():
    """The finding cells and notes a fit table prints, as a paper sets them (a minus sign is not a hyphen)."""
    cases = {
        "holds: 95% CI [-0.689, -0.491] vs slowest term -0.294":
            r"holds: 95\% CI [$-0.689$, $-0.491$] vs slowest term $-0.294$",
        "C 1/S_1 ~ C S_2/S_1 (100% -> 71%)": r"C 1/$S_{1}$ $\sim$ C $S_{2}$/$S_{1}$ (100\% $\to$ 71\%)",
        "C S_3/2/S_1 -0.252": r"C $S_{3/2}$/$S_{1}$ $-0.252$",
        "C1/S1 + C2 S2/S1, C >= 0, t >= 1e3, 100x": r"$C_{1}$/$S_{1}$ + $C_{2}$ $S_{2}$/$S_{1}$, C $\ge$ 0, "
                                                    r"t $\ge$ $10^{3}$, $100\times$",
        "steps 2.5e+05, beta1 = 0.9, k +0.07": r"steps $2.5\cdot 10^{5}$, $\beta_{1}$ = 0.9, k $+0.07$",
        "M = sum_c (n_c/n) D_c, 1 - cos(W_t, M), W*_max": r"M = $\sum_{c}$ ($n_{c}$/n) $D_{c}$, 1 $-$ cos($W_{t}$, M), "
                                                        r"$W^{*}_{\mathrm{max}}$",
        # ranges, versions, dates, file names and paths stay text
        "--data-seeds 0..4, torch==2.13.0, 2026-11-26, ~/.cache, sections 3-4, a1-2.json":
            r"\texttt{-{}-data-seeds} 0..4, torch==2.13.0, 2026-11-26, \textasciitilde{}/.cache, "
            r"sections 3-4, a1-2.json",
    }
    for plain, latex in cases.items():
        assert latex_escape(plain) == latex, plain


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
        assert_on_page(words, plain_phrase(note, last=True))
    assert_typeset_as_math(pdf)
    assert pages_written(pdf) == 1  # one row: the results, their provenance and every note on one page


NORMS = {"signgd": "max", "ngd": "frobenius", "spectral-gd": "spectral"}


@pytest.fixture(scope="module")
def twenty_fits():
    """Twenty configurations (3 algorithms x 7 values of a, less one) of two data draws each, decaying at
    rates that make them loose, tight, violated or inconclusive: a study's table at its largest."""
    from rates.studies.fitting import fit_record_of

    slopes = {"3/10": -0.6, "2/5": -0.55, "1/2": -0.5, "3/5": -0.4, "3/4": -0.25, "4/5": -0.02, "1": -0.1}
    records = []
    for algo in NORMS:
        for a, slope in slopes.items():
            runs = []
            short = (algo, a) == ("ngd", "3/5")  # too short for an asymptotic window: inconclusive
            for seed in (0, 1):
                run = synthetic_run(lambda t, s=seed, r=slope: (1 + 0.1 * s) * t ** r, seed=seed, noise=0.01, algo=algo,
                                    a=a, t=np.unique(np.geomspace(1, 500, 30).astype(int)) if short else None)
                run.config = dataclasses.replace(run.config, norm=NORMS[algo], seed=None, data_seed=run.config.seed)
                runs.append(run)
            records.append(fit_record_of(runs))
    return records[:20]


def results_table_page(pdf: Path, words, rows: int) -> int:
    """The page of Table 1: its caption, every row and its last note all on it (a page number), none past it."""
    page = assert_on_page(words, "Table 1:")
    log = pdf.with_suffix(".log").read_text(encoding="latin-1")
    assert "Table 1 (continued)" not in " ".join(w[1] for w in words) and "continued on the next" not in log
    return page


def test_a_twenty_row_fits_table_is_one_compact_portrait_table_on_one_page(twenty_fits, tmp_path, compile_latex):
    """table.tex of a study with twenty rows: the results table (the columns a paper prints, sources as
    lettered notes) on one portrait page with its notes; the provenance of each row in a table after it."""
    _needs_poppler()
    labels = {rec.verdict.label for rec in twenty_fits}
    assert {"loose", "tight", "violated", "inconclusive"} <= labels, labels
    table = verdict_table(twenty_fits, caption="Default study: predicted vs fitted margin-gap rates",
                          seeds_note="Replicates: data draws 0, 1 (--data-seeds); steps 1e6, eta_0 = 1.")
    fragment = tmp_path / "table.tex"
    fragment.write_text(table.to_latex())
    pdf = compile_latex(input_document(fragment), name="fits20")  # no overfull box
    words = words_on_pages(pdf)
    assert set(page_rotations(pdf)) == {0}  # portrait
    texts = [w[1] for w in words]
    first, second = (next(i for i in range(len(texts)) if texts[i:i + 2] == ["Table", f"{n}:"]) for n in (1, 2))
    results = texts[first:second]
    # one row per configuration, each verdict once, all on the page of the caption
    labels = [rec.verdict.label for rec in twenty_fits]
    for label in ("loose", "tight", "inconclusive"):
        assert results.count(label) == labels.count(label), (label, " ".join(results))
    assert results.count("violated") == 2 * labels.count("violated")  # the verdict and its bound finding
    page = assert_on_page(words, "Table 1: Default study: predicted vs fitted margin-gap rates")
    assert {w[0] for w in words[first:second]} == {page}
    assert page == 1 and assert_on_page(words, "Some text of the paper before the table.") == 1
    for column in ("algorithm", "predicted", "fitted", "verdict"):
        assert column in results
    assert "window" not in results and "envelope" not in results  # provenance is in Table 2
    assert assert_on_page(words, "Table 2:") >= page
    assert_on_page(words, "Some text after it.")
    for note in table.notes:  # nothing is lost: every note of the Markdown table is printed
        assert_on_page(words, plain_phrase(note, last=True))
    assert_typeset_as_math(pdf)


def test_a_two_row_fits_table_takes_one_page(tmp_path, compile_latex):
    """``rates table --fits A B --format latex``: two configurations, results, provenance and notes on one page."""
    _needs_poppler()
    paths = []
    for algo, slope in (("signgd", -0.25), ("ngd", -0.6)):
        run = synthetic_run(lambda t, r=slope: t ** r, noise=0.01, algo=algo, a="3/4")
        run.config = dataclasses.replace(run.config, norm=NORMS[algo])
        paths.append(save(Trajectory([run]), tmp_path / f"{algo}.json"))
    fragment = tmp_path / "fits.tex"
    with pytest.raises(SystemExit) as exc:
        main(["table", "--fits", *map(str, paths), "--format", "latex", "--out", str(fragment)])
    assert exc.value.code == 0
    pdf = compile_latex(input_document(fragment), name="fits2")
    assert pages_written(pdf) == 1 and page_rotations(pdf) == [0]
    words = words_on_pages(pdf)
    assert assert_on_page(words, "Table 1:") == assert_on_page(words, "Table 2:") == 1
    assert assert_on_page(words, "Some text after it.") == 1
    assert_typeset_as_math(pdf)


def test_a_table_too_wide_for_a_portrait_line_is_split_into_column_parts(tmp_path, compile_latex):
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


def test_a_schedule_row_keeps_one_results_table_and_notes_stand_apart_from_the_rates(tmp_path, compile_latex):
    """``rates table --fits`` with a polynomial and a general-schedule row: one results table (no column parts),
    the schedule named in its key column and defined as a formula in a note, each source's letter set as
    ``\\,\\textsuperscript{(a)}`` apart from the rate's math (``t^{-1/4}`` followed by a bare ``a`` reads as
    ``t^{-1/4 a}``), the row's notes naming its schedule (never ``a = None``); pdflatex compiles it."""
    _needs_poppler()
    polynomial = synthetic_run(lambda t: t ** -0.25, noise=0.01, algo="signgd", a="3/4")
    scheduled = synthetic_run(lambda t: t ** -0.05, noise=0.01, algo="signgd", a="3/4")
    scheduled.config = dataclasses.replace(scheduled.config, a=None,
                                           schedule=Schedule.parse("eta0/((t+2)*log(t+2))"))
    paths = [save(Trajectory([run]), tmp_path / f"{name}.json")
             for name, run in (("polynomial", polynomial), ("scheduled", scheduled))]
    fragment = tmp_path / "fits.tex"
    with pytest.raises(SystemExit) as exc:
        main(["table", "--fits", *map(str, paths), "--format", "latex", "--out", str(fragment)])
    assert exc.value.code in (0, 1)  # the verdicts are not the point here; a violated row exits 1
    latex = fragment.read_text()
    assert "(part " not in latex and latex.count(r"\begin{longtable}") == 2  # results and provenance, unsplit
    rows = [line for line in latex.split(r"\endlastfoot")[1].split(r"\end{longtable}")[0].splitlines()
            if line.endswith(r"\\")]
    assert [row.split(" & ")[1] for row in rows] == [r"$\frac{3}{4}$", "schedule 1"]
    assert rows[0].split(" & ")[2] == r"$t^{-1/4}$\,\textsuperscript{(a)}"  # a = 3/4: SIGNADAM Cor. 5.4
    assert rows[1].split(" & ")[2] == r"$1/\log\log t$\,\textsuperscript{(b)}"
    assert "a or schedule & predicted rate" in latex
    assert (r"\emph{schedule 1}: $\eta_t = \frac{\eta_{0}}{\left(t + 2\right) \log{\left(t + 2 \right)}}$"
            in latex)
    assert r"source: \textsuperscript{(a)}\,SIGNADAM Thm 5.3" in latex.replace(r"\hspace{0pt}", "")
    assert "a = None" not in latex and re.search(r"[0-9}]\$\\textsuperscript", latex) is None
    markdown = load_fit_inputs(paths)
    notes = " ".join(str(getattr(n, "text", n)) for n in verdict_table(markdown).notes)
    assert "a = None" not in notes
    pdf = compile_latex(input_document(fragment), name="fits_schedule")  # no overfull box
    words = words_on_pages(pdf)
    assert_on_page(words, "schedule 1")
    assert_typeset_as_math(pdf)


def test_a_schedule_rows_notes_name_its_schedule(tmp_path):
    """A row that gets a note (here an inconclusive verdict: 30 checkpoints up to t = 500) is named by its
    schedule in the notes of every verdict table (``rates sweep``, ``report``, ``table --fits``), never
    ``a = None``; a polynomial row keeps ``a = 3/4``."""
    short = np.unique(np.geomspace(1, 500, 30).astype(int))
    polynomial = synthetic_run(lambda t: t ** -0.25, t=short, algo="signgd", a="3/4")
    scheduled = synthetic_run(lambda t: t ** -0.05, t=short, algo="signgd", a="3/4")
    scheduled.config = dataclasses.replace(scheduled.config, a=None,
                                           schedule=Schedule.parse("eta0/((t+2)*log(t+2))"))
    paths = [save(Trajectory([run]), tmp_path / f"{name}.json")
             for name, run in (("polynomial", polynomial), ("scheduled", scheduled))]
    records = load_fit_inputs(paths)
    assert [rec.verdict.label for rec in records] == ["inconclusive", "inconclusive"]
    notes = [str(getattr(note, "text", note)) for note in verdict_table(records).notes]
    assert any(note.startswith("signgd a = 3/4, inconclusive: run too short") for note in notes), notes
    assert any(note.startswith("signgd schedule eta0/((t + 2)*log(t + 2)), inconclusive: run too short")
               for note in notes), notes
    assert not any("a = None" in note for note in notes)
