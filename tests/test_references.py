"""Papers cited as references: the three arXiv ids in the README and in ``predict --json``, and the
provenance of the Schatten-norm NSD rows (MINIBATCH's norm-general analysis; SIGNADAM treats entry-wise norms)."""

import json
import re
from pathlib import Path

import pytest

from cli.app import main
from rates.numeric.algorithms import resolve_algorithm
from rates.symbolic.papers import FLAVORS, MINIBATCH, REFERENCES, SIGNADAM, reference_for, references_note
from rates.symbolic.theorems import predict

ROOT = Path(__file__).resolve().parents[1]
# the ids as the issue states them (independent of rates.symbolic.papers)
ARXIV = {"FLAVORS": "2410.22069", "MINIBATCH": "2602.11557", "SIGNADAM": "2502.04664"}


def test_references_carry_the_issue_ids_and_first_authors():
    assert {name: ref.arxiv_id for name, ref in REFERENCES.items()} == ARXIV
    assert (FLAVORS.authors[0], MINIBATCH.authors[0], SIGNADAM.authors[0]) == ("Tsilivis", "Li", "Fan")
    assert SIGNADAM.title.startswith("Implicit Bias of SignGD and Adam")
    assert reference_for("MINIBATCH Thm 4.1") is MINIBATCH and reference_for("unknown Thm 1") is None
    assert "arXiv:2502.04664" in references_note(["SIGNADAM Thm 5.3"])
    assert "arXiv:2410.22069" not in references_note(["SIGNADAM Thm 5.3"])


def test_readme_lists_the_three_arxiv_ids():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for arxiv in ARXIV.values():
        assert f"arXiv:{arxiv}" in readme


@pytest.mark.parametrize("argv, short", [
    (["--algo", "signgd"], "SIGNADAM"),
    (["--algo", "signsgd", "--n", "8", "--batch", "4"], "MINIBATCH"),
    (["--algo", "spectral-gd"], "MINIBATCH"),
])
def test_predict_json_has_a_reference_beside_its_source(argv, short, capsys):
    with pytest.raises(SystemExit) as code:
        main(["predict", *argv, "--a", "1/2", "--json"])
    assert code.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["seed"] == short and data["source"]["theorem"]
    assert data["reference"]["arxiv"] == ARXIV[short] and data["reference"]["short_name"] == short


@pytest.mark.parametrize("algo, norm, short, theorem", [
    ("nsd", "spectral", "MINIBATCH", r"Thm 4\.1.*b = n, beta = 0"),
    ("nsd", "nuclear", "MINIBATCH", r"Thm 4\.1.*b = n, beta = 0"),
    ("nsd", "schatten:3", "MINIBATCH", r"Thm 4\.1.*b = n, beta = 0"),
    ("nsd", "schatten:2", "SIGNADAM", r"Thm 5\.3"),  # Schatten-2 is Frobenius, an entry-wise norm
    ("nsd", "lp:3", "SIGNADAM", r"Rem\. 5\.5"),
    ("cd", None, "SIGNADAM", r"Thm 5\.3"),
])
def test_schatten_rows_cite_minibatch_entrywise_rows_cite_signadam(algo, norm, short, theorem):
    prediction = predict(resolve_algorithm(algo, norm=norm), "1/2")
    assert prediction.source.seed == short and re.search(theorem, prediction.source.theorem)
    assert prediction.status == "given"  # the rate's structure is stated in words by the cited paper
    assert (str(prediction.rate.exponent), prediction.rate.log_power) == ("1/2", 1)  # the same NSD row either way


def test_table_and_report_notes_list_the_papers():
    from cli.table import predicted_rates_table

    notes = " ".join(predicted_rates_table().notes)
    # the linear-model rates come from MINIBATCH and SIGNADAM; FLAVORS (networks) is not cited there
    assert f"arXiv:{ARXIV['MINIBATCH']}" in notes and f"arXiv:{ARXIV['SIGNADAM']}" in notes
    assert f"arXiv:{ARXIV['FLAVORS']}" not in notes


def test_report_and_check_tables_end_with_the_references():
    from proofs.runner import results_table
    from rates.studies.verdict_table import verdict_table

    for table in (verdict_table([]), results_table([])):
        assert table.notes and all(f"arXiv:{arxiv}" in " ".join(table.notes) for arxiv in ARXIV.values())


def test_rate_table_cites_minibatch_for_the_schatten_nsd_rows():
    from cli.table import predicted_rates_table

    table = predicted_rates_table()
    source = table.columns.index("source")
    nsd_sources = {str(row[source]) for row in table.rows if row[0] == "nsd"}
    assert nsd_sources and all("SIGNADAM Thm 5.3" in s and "(entry-wise)" in s and "MINIBATCH Thm 4.1" in s
                               and "(Schatten)" in s for s in nsd_sources)
