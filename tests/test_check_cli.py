"""``rates check``: table/JSON output, exit codes (0 pass, 1 refuted, 2 bad input), saved instances."""

import json
import subprocess
import sys

import pytest

from cli.app import main
from rates.symbolic.papers import references_in


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_unknown_claim_name_is_one_line_exit_2_listing_known_names(capsys):
    code, out, err = _run(["check", "no-such-lemma"], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rates: error: NAME: unknown claim 'no-such-lemma'")
    assert "known: simplex-complement" in lines[0] and "per-sample-bias" in lines[0]


def test_save_dir_that_is_a_file_is_bad_input(capsys, tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    code, out, err = _run(["check", "schedule-assumption-3.3", "--save-dir", str(target)], capsys)
    assert code == 2 and out == "" and err.startswith("rates: error: --save-dir: must be a directory")
    assert target.read_text() == "x"


def test_json_output_for_scalar_claims_proven(capsys):
    code, out, _ = _run(["check", "simplex-complement", "proxy-below-loss", "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    names = [c["name"] for c in report["claims"]]
    assert names == ["simplex-complement", "proxy-below-loss"]
    for claim in report["claims"]:
        assert claim["verdict"] == "proven"
        methods = {m["method"]: m for m in claim["methods"]}
        assert methods["interval"]["verdict"] == "proven"
        assert methods["adversarial"]["trials"] >= 200
        assert references_in([claim["source"]]) and claim["status"] == "rebuilt"  # cites a paper


def test_refuted_claim_exits_1_and_saves_the_counterexample(capsys, monkeypatch, tmp_path):
    from proofs import registry
    from proofs.softmax import simplex_complement

    monkeypatch.setattr(registry, "all_claims", lambda: [simplex_complement(constant=1)])
    code, out, _ = _run(["check", "--save-dir", str(tmp_path)], capsys)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("| simplex-complement"))
    assert row.rstrip().endswith("| counterexample |")
    saved = json.loads((tmp_path / "simplex-complement[c=1].adversarial.json").read_text())
    s, c = saved["instance"]["s"], saved["instance"]["c"]
    assert sum(p * (1 - p) for p in s) > 1 - s[c]  # the saved instance really violates the weakened lemma
    interval = json.loads((tmp_path / "simplex-complement[c=1].interval.json").read_text())
    assert interval["verdict"] == "counterexample"


def test_thorough_searches_longer(capsys, monkeypatch):
    import numpy as np

    from proofs import registry
    from proofs.claims import Claim, SearchProblem

    # |sin x| / 2 <= 1 is true with sup ratio 1/2: the thorough search must try more and still not refute it
    toy = Claim("toy-bound", "test", "|sin x|/2 <= 1", r"|\sin x|/2 \le 1", "given", "x in R",
                search=SearchProblem(lambda rng: (rng.standard_normal(1), None), lambda x, _: abs(np.sin(x[0])) / 2,
                                     lambda x, _: {"x": float(x[0])}, starts=20, polish=2, max_evaluations=30))
    monkeypatch.setattr(registry, "all_claims", lambda: [toy])
    code, out, _ = _run(["check", "--json"], capsys)
    quick = json.loads(out)["claims"][0]
    code2, out2, _ = _run(["check", "--json", "--thorough"], capsys)
    thorough = json.loads(out2)["claims"][0]
    assert code == code2 == 0
    assert thorough["trials"] >= 200 > quick["trials"] >= 20
    assert abs(thorough["worst_ratio"] - 0.5) < 1e-6 and thorough["verdict"].startswith("no counterexample")


def test_a_crashing_method_is_an_error_verdict_and_exit_1(capsys, monkeypatch):
    from proofs import registry
    from proofs.claims import Claim, SearchProblem

    def broken(x, _context):
        raise RuntimeError("evaluator bug")

    toy = Claim("toy-broken", "test", "-", "-", "given", "-",
                search=SearchProblem(lambda rng: (rng.standard_normal(1), None), broken, lambda x, _: {}, starts=3))
    monkeypatch.setattr(registry, "all_claims", lambda: [toy])
    code, out, _ = _run(["check", "--json"], capsys)
    claim = json.loads(out)["claims"][0]
    assert code == 1 and claim["verdict"] == "error"
    assert "RuntimeError: evaluator bug" in claim["methods"][0]["detail"]


def test_list_in_process_and_table_from_a_subprocess(capsys):
    code, out, _ = _run(["check", "--list"], capsys)
    names = [line.split("\t")[0] for line in out.splitlines()]
    assert code == 0 and len(names) >= 15 and "minibatch-gradient-error" in names
    proc = subprocess.run([sys.executable, "-m", "rates", "check", "schedule-assumption-3.3"], capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0
    assert "| schedule-assumption-3.3 | MINIBATCH Lemma C.15" in proc.stdout and "| proven |" in proc.stdout


@pytest.mark.slow
def test_default_run_proves_every_claim_without_a_counterexample():
    proc = subprocess.run([sys.executable, "-m", "rates", "check"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "counterexample |" not in proc.stdout


def test_the_names_known_before_the_imports_are_the_registrys():
    """cli/check.py refuses unknown names from proofs.catalog, before the claim families' imports: its lists
    are the registry's claims, in report order, and the chains' families."""
    from proofs.catalog import CHAIN_FAMILIES, CLAIM_NAMES, SCHEDULE_CLAIM_NAMES
    from proofs.chains import CHAINS
    from proofs.registry import all_claims
    from proofs.schedule_hypotheses import NAME as SCHEDULE_CLAIMS

    assert CLAIM_NAMES == tuple(claim.name for claim in all_claims())
    assert CHAIN_FAMILIES == tuple(CHAINS)
    assert SCHEDULE_CLAIM_NAMES == (SCHEDULE_CLAIMS,)
