"""Every theorem number ``rates predict`` and ``rates fit`` print cites the paper that proves it for that
configuration: SIGNADAM (Fan, Schmidt, Thrampoulidis) treats entry-wise norms only (its section 2), so full-batch
steepest descent in the spectral, nuclear and other Schatten norms (Frobenius = Schatten-2 = entry-wise l_2 aside)
is MINIBATCH Thm 4.1 at b = n, beta = 0 -- in the source line, the theorem line and every hypothesis line alike."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from test_compare import synthetic_run

from cli.app import main
from rates.numeric.trajectory import Trajectory, save


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def cited_papers(line: str) -> set[str]:
    return set(re.findall(r"\b(SIGNADAM|MINIBATCH)\b", line))


# (options, the paper that proves the rate for it): entry-wise norms -> SIGNADAM Thm 5.3 (Rem. 5.5 for any
# entry-wise norm); Schatten-p, p != 2 -> MINIBATCH Thm 4.1 at b = n; mini-batch -> MINIBATCH; Adam -> SIGNADAM 6.3
CASES = [
    (["--algo", "signgd"], "SIGNADAM"),
    (["--algo", "ngd"], "SIGNADAM"),
    (["--algo", "cd"], "SIGNADAM"),
    (["--algo", "nsd", "--norm", "lp:3"], "SIGNADAM"),
    (["--algo", "nsd", "--norm", "frobenius"], "SIGNADAM"),
    (["--algo", "spectral-gd"], "MINIBATCH"),
    (["--algo", "nsd", "--norm", "spectral"], "MINIBATCH"),
    (["--algo", "nsd", "--norm", "nuclear"], "MINIBATCH"),
    (["--algo", "nsd", "--norm", "schatten:3"], "MINIBATCH"),
    (["--algo", "adam"], "SIGNADAM"),
    (["--algo", "spectral-sgd", "--n", "8", "--batch", "4"], "MINIBATCH"),
    (["--algo", "muon", "--n", "8", "--batch", "4"], "MINIBATCH"),
]


@pytest.mark.parametrize("options,paper", CASES, ids=[" ".join(c[0][1:]) for c in CASES])
@pytest.mark.parametrize("schedule", [["--a", "1/2"], ["--schedule", "eta0/((t+2)*log(t+2))"]], ids=["a", "schedule"])
def test_predict_cites_one_paper_in_its_source_theorem_and_hypotheses(capsys, options, paper, schedule):
    code, out, err = cli(capsys, "predict", *options, *schedule, "--gamma", "0.5", "--B", "2", "--k", "3")
    assert code == 0, err
    cited = [line for line in out.splitlines() if line.startswith(("source", "theorem", "hypothesis"))]
    assert len(cited) >= 3 and [line for line in cited if line.startswith("hypothesis")]
    for line in cited:  # a general schedule's own hypotheses are MINIBATCH's Assumptions 3.3/3.4, whatever the family
        assert cited_papers(line) == ({"MINIBATCH"} if "[MINIBATCH Ass. 3." in line else {paper}), line
    code, out, err = cli(capsys, "predict", *options, *schedule, "--json")
    gate = json.loads(out)["gate"]
    assert {h["source"].split()[0] for h in gate["hypotheses"] if "Ass. 3." not in h["source"]} == {paper}
    assert paper in gate["reason"] and cited_papers(gate["reason"]) == {paper}


def test_spectral_gd_names_minibatch_thm_4_1_at_full_batch(capsys):
    code, out, _ = cli(capsys, "predict", "--algo", "spectral-gd", "--a", "1/2", "--gamma", "0.5", "--B", "2",
                       "--n", "30", "--k", "3")
    assert code == 0
    lines = dict(line.split(None, 1) for line in out.splitlines() if line.startswith(("source", "theorem")))
    assert lines["source"] == "MINIBATCH Thm 4.1/D.4, Cor. 4.2/D.5 at b = n, beta = 0 [given]"
    assert lines["theorem"].endswith("[MINIBATCH Thm 4.1/D.4, Cor. 4.2/D.5 at b = n, beta = 0]")
    assert "hypothesis  holds   b = n: full batch (b = n)   [MINIBATCH Thm 4.1 at b = n, beta = 0 [given]]" in out
    assert "SIGNADAM" not in out


@pytest.mark.parametrize("algo,norm,paper", [("spectral-gd", "spectral", "MINIBATCH"), ("signgd", "max", "SIGNADAM")])
def test_fit_cites_the_paper_of_the_runs_norm(tmp_path, capsys, algo, norm, paper):
    run = synthetic_run(lambda t: t ** -0.25, noise=0.01, algo=algo, a="3/4")
    run.config = dataclasses.replace(run.config, norm=norm)
    path = save(Trajectory([run]), tmp_path / "run.json")
    code, out, err = cli(capsys, "fit", "--from", str(path))
    assert code in (0, 1), err
    cited = [line for line in out.splitlines() if line.strip().startswith(("theorem", "predicted rate", "(iii)"))]
    assert [line.split(":")[0].strip() for line in cited] == ["theorem", "predicted rate", "(iii) stated"]
    for line in cited:
        assert cited_papers(line) == {paper}, line


def test_per_sample_source_names_its_paper_once(capsys):
    code, out, _ = cli(capsys, "predict", "--algo", "signsgd", "--batch", "1", "--a", "1/2")
    assert code == 0 and "MINIBATCH MINIBATCH" not in out
    assert "source      MINIBATCH Thm 4.9/H.2/H.3, Def. 4.8, Lemma H.1 [given in words;" in out
    assert "[MINIBATCH Thm 4.9/H.2/H.3, Def. 4.8, Lemma H.1; given in words;" in out
