"""The claims table of the seed studies: verdict vocabulary, mapping of comparator labels, rendering."""

from __future__ import annotations

import json
import re

import pytest

from rates.output.claims import (
    NO_VERDICT,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimsTable,
    Protocol,
    claim_verdict_from_fit,
    combine,
    decide,
)
from rates.output.tables import latex_document


@pytest.mark.parametrize("label, expected", [("tight", REPRODUCED), ("loose", REPRODUCED),
                                             ("violated", NOT_REPRODUCED), ("inconclusive", NO_VERDICT),
                                             ("no-theorem", NO_VERDICT), ("not-applicable", NO_VERDICT),
                                             ("a-label-added-later", NO_VERDICT)])
def test_comparator_labels_map_to_claim_verdicts_with_their_reason(label, expected):
    """Upper-bound claims (docs/theory.md sec. 4): only 'violated' refutes; unknown labels never confirm."""
    verdict, reason = claim_verdict_from_fit(label, "gamma_eff(16) = -3.1")
    assert verdict == expected
    assert (reason == "") == (expected == REPRODUCED)
    if expected != REPRODUCED:
        assert label in reason and "gamma_eff(16) = -3.1" in reason


def test_a_claim_that_is_not_reproduced_needs_a_reason():
    with pytest.raises(ValueError, match="reason"):
        Claim("c", "s", "m", "k", NOT_REPRODUCED)
    with pytest.raises(ValueError, match="verdict"):
        Claim("c", "s", "m", "k", "partly")


def test_combine_refuted_beats_undecided_beats_reproduced():
    assert combine([(REPRODUCED, ""), (REPRODUCED, "")]) == (REPRODUCED, "")
    assert combine([(REPRODUCED, ""), (NO_VERDICT, "short")]) == (NO_VERDICT, "short")
    assert combine([(NO_VERDICT, "short"), (NOT_REPRODUCED, "fails at b=4")]) == (NOT_REPRODUCED, "fails at b=4")
    assert decide(None, "x", "needs 1e6 steps") == (NO_VERDICT, "needs 1e6 steps")
    assert decide(False, "x") == (NOT_REPRODUCED, "x")


def test_quick_mode_neither_refutes_nor_confirms_and_keeps_what_the_criterion_gave():
    table = ClaimsTable("t", "tab:t", short_run="quick mode (400 steps)")
    table.add(Claim("converges", "MINIBATCH Fig. 1", "err 0.3", "err < 0.05", NOT_REPRODUCED, "err 0.3"))
    table.add(Claim("bounded", "MINIBATCH Thm 4.1", "ok", "ok", REPRODUCED))
    assert [c.verdict for c in table.claims] == [NO_VERDICT, NO_VERDICT]
    assert table.counts() == {REPRODUCED: 0, NOT_REPRODUCED: 0, NO_VERDICT: 2}
    assert "quick mode (400 steps)" in table.claims[0].reason and "err 0.3" in table.claims[0].reason
    assert "gave reproduced" in table.claims[1].reason
    shown = [row[5].text for row in table.table().rows]
    assert shown == ["no verdict (smoke run)"] * 2


def test_claims_table_renders_every_claim_in_three_formats(tmp_path, compile_latex):
    table = ClaimsTable("Claims of a paper", "tab:claims")
    table.add(Claim("rate O(t^-1/2) holds", "SIGNADAM 003_x.txt Cor. 5.4", "slope -0.51 ± 0.01", "tight or loose",
                    REPRODUCED, values={"slope": -0.51}))
    table.add(Claim("gap_eff > 0 & 100% of x", "MINIBATCH 002_x.txt Thm 4.1", "-", "-", NO_VERDICT,
                    "not-applicable: gamma_eff = -3.1"))
    written = table.write(tmp_path)
    assert sorted(p.name for p in written) == ["claims.json", "claims.md", "claims.tex"]
    markdown = (tmp_path / "claims.md").read_text()
    assert "1 reproduced, 0 not reproduced, 1 no verdict of 2 claims." in markdown
    rows = json.loads((tmp_path / "claims.json").read_text())["rows"]
    assert [r["verdict"] for r in rows] == [REPRODUCED, NO_VERDICT]
    assert rows[0]["measured"] == {"slope": -0.51}
    latex = table.table().to_latex()
    compile_latex(latex_document(latex), "claims")
    # a paper's three tables: the claims with their verdicts, what was measured (criteria, reasons), the protocols
    assert latex.count(r"\begin{longtable}") == 3
    headers = re.findall(r"\\toprule\n(.*) \\\\\n\\midrule\n\\endfirsthead", latex)
    assert headers == ["\\# & claim & source & verdict", "\\# & measured & criterion & reason / what would decide it",
                       "\\# & protocol"]
    assert r"\ref{tab:claims-evidence}" in latex and r"\label{tab:claims-evidence}" in latex


def _protocol(window: str, figure: str = "Fig. 3") -> Protocol:
    return Protocol("max-norm margin", window, "eps curves within 1% of each other", "seed 0",
                    "eps changes the limit margin", figure)


def test_rows_of_one_figure_must_share_one_window():
    """Rows read from one figure at different horizons contradict each other (a curve pair that agrees on
    [100, 1e4] may differ by 0.12 at 1e5): the table refuses the second window."""
    table = ClaimsTable("t", "tab:t")
    table.add(Claim("Adam beats NGD", "SIGNADAM Fig. 3", "m", "c", REPRODUCED, protocol=_protocol("t = 1e5")))
    table.add(Claim("another figure", "SIGNADAM Fig. 4", "m", "c", REPRODUCED,
                    protocol=_protocol("t = 1e3", figure="Fig. 4")))
    table.add(Claim("same window", "SIGNADAM Fig. 3", "m", "c", REPRODUCED, protocol=_protocol("t = 1e5")))
    with pytest.raises(ValueError, match="share one window"):
        table.add(Claim("eps consistent", "SIGNADAM Fig. 3", "m", "c", REPRODUCED,
                        protocol=_protocol("[100, 1e4]")))


def test_checks_of_the_implementation_are_counted_apart(tmp_path):
    table = ClaimsTable("Claims", "tab:c")
    table.add(Claim("rate holds", "MINIBATCH Cor. 4.2", "m", "c", REPRODUCED, protocol=_protocol("t = 1e5")))
    table.add(Claim("rate fails", "MINIBATCH Cor. 4.5", "m", "c", NOT_REPRODUCED, "slope -0.1",
                    protocol=_protocol("t = 1e5")))
    table.add(Claim("homogeneity of the network", "FLAVORS Def. 2.1", "m", "c", REPRODUCED,
                    implementation_check=True))
    assert table.counts() == {REPRODUCED: 1, NOT_REPRODUCED: 1, NO_VERDICT: 0}
    assert table.check_counts() == {REPRODUCED: 1, NOT_REPRODUCED: 0, NO_VERDICT: 0}
    table.write(tmp_path)
    markdown = (tmp_path / "claims.md").read_text()
    assert "1 reproduced, 1 not reproduced, 0 no verdict of 2 claims." in markdown
    assert "1 of 1 passed" in markdown and "checks of the implementation" in markdown
    payload = json.loads((tmp_path / "claims.json").read_text())
    assert [r["claim"] for r in payload["rows"]] == ["rate holds", "rate fails"]
    assert [r["claim"] for r in payload["implementation_checks"]["rows"]] == ["homogeneity of the network"]
    assert payload["rows"][0]["protocol"]["window"] == "t = 1e5"
    assert payload["rows"][0]["protocol"]["rules_out"] == "eps changes the limit margin"
