"""``rates homogeneous`` and ``rates report flavors --quick``: output, files, and one-line bad-input errors."""

import json

import pytest

from cli.app import main
from rates.output.tables import latex_document
from rates.studies import StudyOptions, get_study


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.mark.parametrize("args,option", [
    (["--algo", "gd", "--data", "digits:3,12"], "--data"),
    (["--algo", "gd", "--data", "digits:4,4"], "--data"),
    (["--algo", "gd", "--width", "0"], "--width"),
    (["--algo", "gd", "--width", "-3"], "--width"),
    (["--algo", "gd", "--teacher-width", "1", "--dim", "5"], "--teacher-width"),
    (["--algo", "newton"], "--algo"),
    (["--algo", "adam", "--eps", "-1"], "--eps"),
])
def test_bad_input_exits_2_with_one_line_and_no_file(args, option, capsys, tmp_path):
    out_file = tmp_path / "run.json"
    code, out, err = run_cli(["homogeneous", *args, "--steps", "5", "--seeds", "0,1", "--out", str(out_file)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rates: error: {option}:")
    assert out == "" and not out_file.exists()


@pytest.mark.parametrize("seeds", ["5x", "0..x", "-1", "1,1"])
def test_seeds_take_the_list_syntax_of_rates_run(seeds, capsys, tmp_path):
    code, out, err = run_cli(["homogeneous", "--algo", "gd", "--steps", "5", "--seeds", seeds,
                              "--out", str(tmp_path / "run.json")], capsys)
    assert code == 2 and err.startswith("rates: error: --seeds: expected") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run.json").exists()


def test_a_small_run_prints_the_table_and_writes_the_history(capsys, tmp_path):
    out_file = tmp_path / "run.json"
    code, out, err = run_cli(["homogeneous", "--algo", "sd", "--data", "digits:3,6", "--n-train", "20",
                              "--width", "6", "--steps", "60", "--seeds", "3,7", "--loss", "logistic",
                              "--out", str(out_file)], capsys)
    assert code == 0, err
    assert "gamma_1" in out and "FLAVORS eq. 13" in out and "arXiv:2410.22069" in out
    record = json.loads(out_file.read_text())
    assert record["schema"] == "rates.homogeneous/1" and record["degree"] == 2 and record["geometry"] == "linf"
    assert len(record["metrics"]["gamma_1"]) == 2 and record["t"][-1] == 60
    assert record["command"]["seeds"] == [3, 7]  # --seeds is a list, as in rates run (3,7 is two seeds)
    assert record["homogeneity_error"] < 1e-12


def test_quick_flavors_study_writes_figures_and_a_compiling_claims_table(tmp_path, compile_latex):
    written = get_study("flavors")(tmp_path, StudyOptions(seeds=2, quick=True, progress=False))
    names = {p.name for p in written}
    assert {"fig1_teacher_student.png", "fig1_init_scales.pdf", "fig2_digits_adam.png", "fig2_adam_phases.png",
            "fig6_digits_2_7.png", "fig3_digits_spectral.png", "thm34_kkt_residual.png", "table.md", "claims.tex",
            "claims.json", "histories.json"} <= names
    assert all(p.stat().st_size > 0 for p in written)
    claims = json.loads((tmp_path / "claims.json").read_text())
    # Thm 3.1 x4, Fig. 1 (i) x3, (ii), (iii) / Fig. 5, Thm 3.4 x4, Prop. B.6, Lemma A.6, Cor. A.8, sec. 4.2 x9
    # (Fig. 2), Fig. 6 x3, sec. 4.3 x3 (Rem. 3.2, an existence statement, is a note); the identities of the code,
    # (A2) and App. C x2, apart
    assert len(claims["rows"]) == 31
    assert any("Rem. 3.2" in note for note in claims["notes"])
    checks = claims["implementation_checks"]["rows"]
    assert [row["source"] for row in checks] == ["FLAVORS (A2) [given]", "FLAVORS App. C.1 [given]",
                                                 "FLAVORS section 4.3, App. C.2 [given]"]
    # every row carries the protocol declared before the run
    assert all(row["protocol"]["quantity"] and row["protocol"]["rules_out"] for row in claims["rows"] + checks)
    # a smoke run (2 seeds x 30-400 steps at width 8) neither refutes nor confirms anything
    assert all(row["verdict"] == "no verdict (smoke run)" for row in claims["rows"] + checks)
    shampoo = [row for row in claims["rows"] if row["claim"].startswith("Shampoo")]
    assert len(shampoo) == 2  # two orderings; the App. C.2 identity is a check of the implementation
    assert any("tolerance" in note for note in claims["notes"])
    compile_latex(latex_document((tmp_path / "claims.tex").read_text()))


@pytest.mark.slow
def test_full_flavors_study_reproduces_the_margin_orderings(tmp_path):
    """Minutes on a 2-core CPU (18 min under load): the end-of-run orderings of FLAVORS Fig. 1, 2, 3 and 6 over 5
    seeds, settled both ways; Adam's second phase stays refuted (gamma_1 rises through a decade below L = 1e-7)."""
    get_study("flavors")(tmp_path, StudyOptions(progress=False))
    rows = {row["claim"]: row["verdict"] for row in json.loads((tmp_path / "claims.json").read_text())["rows"]}
    for claim in ("SD ends with the largest gamma_1", "GD ends with the largest gamma_2",
                  "SD reaches a larger gamma_1 than GD (digits 3 vs 6)",
                  "GD reaches a larger gamma_2 than SD (digits 3 vs 6)",
                  "spectral descent ends with the largest spectral margin",
                  "Adam (eps=1e-8) raises gamma_1 after separation like SD"):
        assert rows[claim] == "reproduced", (claim, rows[claim])
    for eps in ("1e-08", "1e-06"):
        claim = f"Adam (eps={eps}) second phase: gamma_1 falls, gamma_2 rises once L < 1e-7"
        assert rows[claim] == "not reproduced", (claim, rows[claim])


def test_app_c_identities_against_independent_computations():
    """FLAVORS App. C: Adam at beta1 = beta2 = eps = 0 is -sign(g) (torch.sign); Shampoo without accumulation
    is -U V^T (an SVD); Shampoo with accumulation is not (it must stay far from the polar factor)."""
    from rates.studies.flavors.measures import adam_sign_difference, identity_gradients, shampoo_polar_difference
    from rates.studies.flavors.protocols import IDENTITY_TOLERANCE

    grads = identity_gradients(3)
    assert adam_sign_difference(grads) <= IDENTITY_TOLERANCE
    assert shampoo_polar_difference(grads) <= IDENTITY_TOLERANCE
    assert shampoo_polar_difference(grads, "shampoo", steps=2) > 1e-2


def _adam_history(gamma_1, gamma_2, log_loss, t):
    from types import SimpleNamespace

    import numpy as np

    rows = np.atleast_2d
    return SimpleNamespace(t=np.asarray(t, float), diverged=np.zeros(rows(gamma_1).shape[0], bool),
                           metrics={"gamma_1": rows(gamma_1), "gamma_2": rows(gamma_2), "log_loss": rows(log_loss)})


def test_adam_second_phase_is_judged_from_where_the_loss_falls_below_1e_7_not_from_the_early_peak():
    """FLAVORS sec. 4.2. gamma_1 = 30 at t = 100 (the first-phase peak), 10 when L first falls below 1e-7 at
    t = 3000, and then: rising to 14 (the fall has not begun), falling to 8 (the claim), or flat at 10 (it fails).
    A rule reading the fall from the early peak would call all three 'holds' (14 < 30)."""
    import numpy as np

    from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, ClaimsTable
    from rates.studies.flavors.rows import _adam_phase_two_row

    t = np.array([1, 100, 1000, 3000, 5000, 10000, 20000], float)
    log_loss = np.log([1.0, 1e-2, 1e-5, 1e-8, 1e-9, 1e-10, 1e-11])
    gamma_2 = [0.01, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10]

    def row(late_gamma_1):
        table = ClaimsTable("t", "t")
        history = _adam_history([[1, 30, 12, 10, *late_gamma_1]] * 3, [gamma_2] * 3, [log_loss] * 3, t)
        _adam_phase_two_row(table, history, 1e-8)
        return table.claims[0]

    rising = row([12, 13, 14])
    assert rising.verdict == NO_VERDICT and "t > 200000" in rising.reason and "3/3 seeds" in rising.reason
    assert "peak to 0.33" in rising.reason, rising.reason  # 10 of the peak 30
    assert row([9, 8.5, 8]).verdict == REPRODUCED
    flat = row([10, 10, 10])
    assert flat.verdict == NOT_REPRODUCED


def test_larger_eps_is_judged_where_both_losses_are_below_1e_7_not_by_the_first_phase_peak():
    """FLAVORS sec. 4.2, "larger eps increase gamma_1 even further". Both eps share the first-phase peak 30 at
    t = 100 (eps is negligible next to large gradients); from L < 1e-7 on (t >= 3000) the larger eps is higher
    (the claim), lower, or equal. A peak-over-the-run rule sees 30 vs 30 in every case."""
    from types import SimpleNamespace

    import numpy as np

    from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, ClaimsTable
    from rates.studies.flavors.rows import _eps_row

    t = np.array([1, 100, 1000, 3000, 5000, 10000, 20000], float)
    log_loss = np.log([1.0, 1e-2, 1e-5, 1e-8, 1e-9, 1e-10, 1e-11])

    def history(late, seeds=3, loss=log_loss):
        metrics = {"gamma_1": np.array([[1, 30, 12, *late]] * seeds, float),
                   "log_loss": np.array([loss] * seeds), "train_acc": np.ones((seeds, t.size))}
        return SimpleNamespace(t=t, metrics=metrics, diverged=np.zeros(seeds, bool),
                               t_separated=np.full(seeds, 100), final=lambda name: metrics[name][:, -1])

    def row(small_late, large_late, loss=log_loss):
        table = ClaimsTable("t", "t")
        _eps_row(table, {1e-8: history(small_late, loss=loss), 1e-6: history(large_late, loss=loss)})
        return table.claims[0]

    assert row([10, 11, 12, 13], [13, 14, 15, 16]).verdict == REPRODUCED
    assert row([13, 14, 15, 16], [10, 11, 12, 13]).verdict == NOT_REPRODUCED
    assert row([10, 11, 12, 13], [10, 11, 12, 13]).verdict == NOT_REPRODUCED
    never = row([10, 11, 12, 13], [13, 14, 15, 16], loss=np.log([1.0, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-6]))
    assert never.verdict == NO_VERDICT and "never fell below 1e-7" in never.reason
