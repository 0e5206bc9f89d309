"""Negative controls for every decision rule of ``rates report signadam``.

Each rule (a pure function of measured numbers in :mod:`rates.studies.signadam.rules`) is run on a constructed case
where its claim is false -- a gap slower than the bound, a loss that rises after the descent start, the other
ordering, curves that separate at the horizon, a growth in k beyond linear, a derivation that disagrees with
Rem. 6.5 -- and must say ``not reproduced``; the matching case where the claim holds must say ``reproduced``;
a case within the noise or by a hair must say ``no verdict``. Expectations come from the constructed laws.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_compare import checkpoints, synthetic_run

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED
from rates.studies.fitting import fit_group
from rates.studies.signadam.protocols import EPS_AGREE, ORDER_TOL
from rates.studies.signadam.rules import (
    best_rate_check,
    dimension_check,
    eps_agreement,
    k_growth,
    loss_monotone,
    ordering,
    rate_part,
)

# ------------------------------------------------------------------------------------- rate rows (comparator)


@pytest.mark.parametrize("algo, a, law", [
    ("signgd", "1/2", lambda t: 3 * np.log(t + 1) / np.sqrt(t)),  # Cor. 5.4 at a = 1/2: log t / t^(1/2)
    ("adam", "2/3", lambda t: 3 * np.log(t + 1) / np.cbrt(t)),  # Cor. 6.4 at a = 2/3: log t / t^(1/3)
])
def test_rate_rule_reproduces_the_bound_and_refutes_a_gap_slower_than_it(algo, a, law):
    holds = fit_group([synthetic_run(law, algo=algo, a=a, noise=0.01)]).verdict
    assert rate_part(algo, holds.label, holds.reason)[0] == REPRODUCED, holds.reason
    # the same run with a gap decaying like t^-0.1: slower than either bound by far more than the tolerance
    slow = fit_group([synthetic_run(lambda t: 2 * t ** -0.1, algo=algo, a=a, noise=0.01)]).verdict
    verdict, reason = rate_part(algo, slow.label, slow.reason)
    assert verdict == NOT_REPRODUCED and reason.startswith(f"{algo} violated")


def test_rate_rule_is_no_verdict_on_a_run_too_short_for_a_window():
    short = fit_group([synthetic_run(lambda t: 2 * t ** -0.1, t=checkpoints(300, 16), a="1/2")]).verdict
    assert rate_part("SignGD", short.label, short.reason)[0] == NO_VERDICT


# -------------------------------------------------------------------------------------------- loss monotone


def test_loss_monotone_refutes_a_rise_after_the_descent_start_and_not_before():
    t = checkpoints(1e6, 60).astype(float)
    falling = -np.sqrt(t)
    assert loss_monotone(t, falling, descent_start=100.0)[0] == REPRODUCED
    risen = falling.copy()
    late = np.searchsorted(t, 1e5)
    risen[late] = risen[late - 1] + 0.5  # a rise at t ~ 1e5, inside the last two decades
    verdict, reason, since = loss_monotone(t, risen, descent_start=1e3)
    assert verdict == NOT_REPRODUCED and since == pytest.approx(t[late]) and "after the descent start" in reason
    assert loss_monotone(t, risen, descent_start=1e7)[0] == NO_VERDICT  # before t_d the lemma says nothing
    assert loss_monotone(t, risen, descent_start=None)[0] == NO_VERDICT  # Adam: t_d unknown
    early = falling.copy()
    early[5] = early[4] + 0.5  # a rise at t < 1e4 = T/100 only: settled for two decades after it
    assert loss_monotone(t, early, descent_start=1.0)[0] == REPRODUCED


def test_loss_monotone_ignores_rounding_but_not_a_small_real_rise():
    t = checkpoints(1e6, 60).astype(float)
    log_loss = -np.sqrt(t)
    log_loss[-1] = log_loss[-2] + 1e-12  # float rounding of log L at a checkpoint
    assert loss_monotone(t, log_loss, descent_start=10.0)[0] == REPRODUCED
    log_loss[-1] = log_loss[-2] + 1e-6
    assert loss_monotone(t, log_loss, descent_start=10.0)[0] == NOT_REPRODUCED


# ----------------------------------------------------------------------------------- sec. 7 (1), (2) ordering


def _curves(t, levels):
    """Relative margins rising to ``level`` like ``level (1 - 1/sqrt(t))`` (one curve per draw)."""
    return [level * (1 - 1 / np.sqrt(t)) for level in levels]


def _ten(level: float) -> list[float]:
    """Ten draws' levels spread by +-0.01 about ``level``."""
    return [level + 0.002 * (i - 5) for i in range(10)]


def test_ordering_reproduces_a_settled_lead_and_refutes_the_other_ordering():
    t = checkpoints(1e5, 60).astype(float)
    ahead = {"SignGD": _curves(t, _ten(0.95)), "NGD": _curves(t, _ten(0.80))}
    behind = {"SignGD": _curves(t, _ten(0.85)), "NGD": _curves(t, _ten(0.97))}
    verdict, reason, measured = ordering(t, ahead, behind, "SignGD")
    assert verdict == REPRODUCED  # ten of ten draws hold: sign test p = 2 / 2^10
    assert "10 of 10 draws confirm" in measured and "p = 0.002 (<= 0.05)" in measured
    # the other ordering: NGD ahead in the max norm on every draw
    swapped = {"SignGD": ahead["NGD"], "NGD": ahead["SignGD"]}
    verdict, reason, _ = ordering(t, swapped, behind, "SignGD")
    assert verdict == NOT_REPRODUCED and "trails NGD" in reason and "0 of 10 draws confirm, 10 refute" in reason
    # ahead in the max norm but behind in the 2-norm quantity (the correlation rule's cosine): reversed too
    cos_swapped = {"SignGD": behind["NGD"], "NGD": behind["SignGD"]}
    assert ordering(t, ahead, cos_swapped, "SignGD")[0] == NOT_REPRODUCED
    # three draws that all hold are too few for the test (p = 2 / 2^3 = 0.25)
    three = {name: curves[:3] for name, curves in ahead.items()}
    verdict, reason, _ = ordering(t, three, {name: curves[:3] for name, curves in behind.items()}, "SignGD")
    assert verdict == NO_VERDICT and "too few" in reason and "p = 0.25" in reason


def test_ordering_is_no_verdict_for_a_tie_a_late_crossing_or_split_draws():
    t = checkpoints(1e5, 60).astype(float)
    behind = {"SignGD": _curves(t, [0.85] * 10), "NGD": _curves(t, [0.97] * 10)}
    tie = {"SignGD": _curves(t, [0.8 + ORDER_TOL / 2] * 10), "NGD": _curves(t, [0.8] * 10)}
    assert ordering(t, tie, behind, "SignGD")[0] == NO_VERDICT
    # a lead that appears only at t ~ 7e4, inside the window [T/2, T] = [5e4, 1e5]: not settled
    crossing = {"SignGD": [0.8 + 0.1 * np.tanh((t - 7e4) / 1e4)] * 10, "NGD": _curves(t, [0.8] * 10)}
    verdict, reason, _ = ordering(t, crossing, behind, "SignGD")
    assert verdict == NO_VERDICT and "unsettled" in reason and "no draw decides" in reason
    # a crossing before T/2 leaves a settled lead: the figure's horizon decides
    early = {"SignGD": [0.8 + 0.1 * np.tanh((t - 1e4) / 1e3)] * 10, "NGD": _curves(t, [0.8] * 10)}
    assert ordering(t, early, behind, "SignGD")[0] == REPRODUCED
    # 7 draws ahead, 3 behind: p = 2 (120 + 45 + 10 + 1) / 2^10 = 0.34, open; 9 ahead and 1 behind: p = 0.021
    split = {"SignGD": _curves(t, [0.95] * 7 + [0.70] * 3), "NGD": _curves(t, [0.80] * 10)}
    verdict, reason, _ = ordering(t, split, behind, "SignGD")
    assert verdict == NO_VERDICT and "the draws split" in reason and "p = 0.34" in reason
    most = {"SignGD": _curves(t, [0.95] * 9 + [0.70]), "NGD": _curves(t, [0.80] * 10)}
    assert ordering(t, most, behind, "SignGD")[0] == REPRODUCED


# --------------------------------------------------------------------------------------------- sec. 7 (3) eps


def test_eps_agreement_refutes_curves_that_separate_at_the_horizon():
    t = checkpoints(1e5, 60).astype(float)
    base = _curves(t, _ten(0.90))
    overlap = {"Adam eps=1e-08": [b + 1e-4 for b in base]}
    assert eps_agreement(t, base, overlap)[0] == REPRODUCED
    # the measured shape: equal to t ~ 3e4, then 0.118 apart at 1e5 (0.7789 vs 0.8966)
    apart = {"Adam eps=1e-08": [b - 0.118 * np.clip((t - 3e4) / 7e4, 0, 1) for b in base]}
    verdict, reason, numbers = eps_agreement(t, base, apart)
    assert verdict == NOT_REPRODUCED and "separate" in reason and "10 refute" in reason
    assert numbers["at_horizon"] == pytest.approx([0.118] * 10)
    # nine draws apart and one within a factor 2 of the tolerance (undecided): p = 2 / 2^9 on the nine
    one_close = {"Adam eps=1e-08": apart["Adam eps=1e-08"][:9] + [base[9] + 1.5 * EPS_AGREE]}
    verdict, reason, _ = eps_agreement(t, base, one_close)
    assert verdict == NOT_REPRODUCED and "0 of 10 draws confirm, 9 refute, 1 undecided" in reason


def test_eps_agreement_is_no_verdict_by_a_hair_or_for_a_transient():
    t = checkpoints(1e5, 60).astype(float)
    base = _curves(t, [0.9] * 3)
    hair = {"Adam eps=1e-06": [b + 1.5 * EPS_AGREE for b in base]}  # within a factor 2 of the tolerance
    assert eps_agreement(t, base, hair)[0] == NO_VERDICT
    bump = np.where((t > 1e3) & (t < 1e4), 0.05, 0.0)  # apart for a decade, back together by the horizon
    transient = {"Adam eps=1e-06": [b + bump for b in base]}
    assert eps_agreement(t, base, transient)[0] == NO_VERDICT
    split = {"Adam eps=1e-06": [base[0], base[1] + 0.1, base[2]]}
    assert eps_agreement(t, base, split)[0] == NO_VERDICT


# ------------------------------------------------------------------------------------------- Rem. 6.5 in k


def test_k_growth_refutes_a_level_growing_faster_than_k_and_rules_out_linear_growth_when_flat():
    draws = (0.9, 1.0, 1.1)
    assert k_growth({k: [0.01 * f for f in draws] for k in (3, 5, 10)})[0] == REPRODUCED
    assert k_growth({k: [0.01 * (k / 3) ** 2 * f for f in draws] for k in (3, 5, 10)})[0] == NOT_REPRODUCED
    # flat on average but with draws spread over a factor 4: linear growth is not ruled out
    assert k_growth({k: [0.01 * f for f in (0.25, 1.0, 4.0)] for k in (3, 5, 10)})[0] == NO_VERDICT


# ------------------------------------------------------------------------------ checks of the implementation


def test_best_rate_check_refutes_a_derivation_that_disagrees_with_rem_6_5():
    assert best_rate_check({"signgd": ("1/2", "1/2"), "adam": ("2/3", "1/3")})[0] == REPRODUCED
    verdict, reason = best_rate_check({"signgd": ("1/2", "1/2"), "adam": ("1/2", "1/4")})
    assert verdict == NOT_REPRODUCED and "Adam: derived a = 1/2" in reason


def test_dimension_check_refutes_a_signgd_threshold_that_depends_on_d():
    nsd, adam = {"a", "alpha", "eta_0", "gamma"}, {"a", "alpha", "c_adam", "eta_0", "gamma"}
    assert dimension_check(nsd, adam, {"c_adam"})[0] == REPRODUCED
    assert dimension_check(adam, adam, {"c_adam"})[0] == NOT_REPRODUCED  # SignGD's t0 with c_adam
    assert dimension_check(nsd, nsd, {"c_adam"})[0] == NOT_REPRODUCED  # Adam's t0 without it


def test_k_growth_is_no_verdict_when_the_growth_is_still_moving_across_the_linear_one():
    draws = (0.9, 1.0, 1.1)
    flat = {k: [0.01 * f for f in draws] for k in (3, 5, 10)}
    steep = {k: [0.01 * (k / 3) ** 2 * f for f in draws] for k in (3, 5, 10)}
    assert k_growth(flat, earlier=flat, earlier_t=1e5)[0] == REPRODUCED
    verdict, reason, _ = k_growth(flat, earlier=steep, earlier_t=1e5)  # refuted a decade before, flat at the end
    assert verdict == NO_VERDICT and reason.startswith("not settled")
    assert k_growth(steep, earlier=flat, earlier_t=1e5)[0] == NO_VERDICT
    assert k_growth(steep, earlier=steep, earlier_t=1e5)[0] == NOT_REPRODUCED


# ------------------------------------------------------------------- rules broken on purpose (boundaries)


def test_loss_monotone_refutes_a_rise_in_the_decade_after_the_descent_start():
    """A rise at 2 t_d or at t_d itself is past the descent start: the lemma guarantees a decrease there."""
    t = checkpoints(1e6, 60).astype(float)
    falling = -np.sqrt(t)
    at = int(np.searchsorted(t, 2e4))
    risen = falling.copy()
    risen[at] = risen[at - 1] + 0.5
    verdict, _, since = loss_monotone(t, risen, descent_start=t[at] / 2)
    assert verdict == NOT_REPRODUCED and since == t[at]
    assert loss_monotone(t, risen, descent_start=t[at])[0] == NOT_REPRODUCED  # exactly at t_d
    assert loss_monotone(t, risen, descent_start=t[at] * 1.01)[0] == NO_VERDICT  # just before t_d


def test_loss_monotone_reads_two_decades_back_from_the_end():
    t = np.array([1, 10, 100, 1000, 10000], float)
    rise_at_100 = np.array([0, -1, -0.5, -2, -3], float)  # the last rise ends at t = 100 = T / 100
    assert loss_monotone(t, rise_at_100, descent_start=1.0) == (REPRODUCED, "", 100.0)
    rise_at_1000 = np.array([0, -1, -2, -1.5, -3], float)
    assert loss_monotone(t, rise_at_1000, descent_start=1.0)[0] == NOT_REPRODUCED


def test_k_growth_decides_by_the_interval_not_the_point_estimate():
    """Growth x2 (k = 3 -> 10, linear x3.33) with the draws' spread: decided when the interval clears x3.33,
    open when it contains it; the interval by hand (pooled log variance, t with 4 degrees of freedom)."""
    tight = {3: [0.01 * f for f in (0.95, 1.0, 1.05)], 10: [0.02 * f for f in (0.95, 1.0, 1.05)]}
    verdict, _, measured = k_growth(tight)
    logs = np.log([0.95, 1.0, 1.05])
    half = 2.7764451051977987 * np.sqrt(logs.var(ddof=1) * (2 / 3))
    gm = np.exp(logs.mean())
    growth = 0.02 * gm / (0.01 * gm)
    assert verdict == REPRODUCED
    assert f"[x{growth * np.exp(-half):.2f}, x{growth * np.exp(half):.2f}]" in measured
    wide = {3: [0.01 * f for f in (0.3, 1.0, 3.0)], 10: [0.02 * f for f in (0.3, 1.0, 3.0)]}
    assert k_growth(wide)[0] == NO_VERDICT  # x2 with an interval reaching past x3.33
    assert k_growth({3: [0.01], 10: [0.05]})[0] == NO_VERDICT  # one draw per k: no interval
    steep = {3: [0.01 * f for f in (0.95, 1.0, 1.05)], 10: [0.05 * f for f in (0.95, 1.0, 1.05)]}
    assert k_growth(steep)[0] == NOT_REPRODUCED  # x5, interval above x3.33


def test_eps_agreement_at_its_factor_two_boundaries():
    t = checkpoints(1e5, 60).astype(float)
    base = _curves(t, [0.9] * 10)
    assert eps_agreement(t, base, {"e": [b + 0.4 * EPS_AGREE for b in base]})[0] == REPRODUCED
    assert eps_agreement(t, base, {"e": [b + 0.6 * EPS_AGREE for b in base]})[0] == NO_VERDICT
    assert eps_agreement(t, base, {"e": [b + 2.5 * EPS_AGREE for b in base]})[0] == NOT_REPRODUCED
    # apart on six draws of ten at the horizon, together on four: the draws split
    split = {"e": [b + 0.1 for b in base[:6]] + base[6:]}
    assert eps_agreement(t, base, split)[0] == NO_VERDICT
    assert eps_agreement(t[t < 50], [b[t < 50] for b in base], {"e": [b[t < 50] for b in base]})[0] == NO_VERDICT


def test_ordering_needs_every_draw_and_both_quantities():
    t = checkpoints(1e5, 60).astype(float)
    behind = {"SignGD": _curves(t, [0.85] * 6), "NGD": _curves(t, [0.97] * 6)}
    lead = 3 * ORDER_TOL
    ahead = {"SignGD": _curves(t, [0.8 + lead] * 6), "NGD": _curves(t, [0.8] * 6)}
    assert ordering(t, ahead, behind, "SignGD")[0] == REPRODUCED  # six of six: p = 2 / 2^6 = 0.031
    # one draw of six reversed: p = 2 (6 + 1) / 2^6 = 0.22, draws that disagree, not a refutation
    one = {"SignGD": _curves(t, [0.8 + lead] * 5 + [0.8 - lead]), "NGD": _curves(t, [0.8] * 6)}
    assert ordering(t, one, behind, "SignGD")[0] == NO_VERDICT
    # ahead by 3 tolerances in the max norm but tied in the other quantity: not settled
    tied = {"SignGD": _curves(t, [0.9] * 6), "NGD": _curves(t, [0.9] * 6)}
    assert ordering(t, ahead, tied, "SignGD")[0] == NO_VERDICT


def test_rate_part_sets_a_verdict_before_the_descent_start_aside_both_ways():
    assert rate_part("SignGD", "tight", "") == (REPRODUCED, "")
    assert rate_part("SignGD", "violated", "slower")[0] == NOT_REPRODUCED
    verdict, reason = rate_part("SignGD", "tight", "", undecided="the window lies before t_d")
    assert verdict == NO_VERDICT and reason == "SignGD tight, but the window lies before t_d"
    verdict, reason = rate_part("SignGD", "violated", "slower", undecided="the window lies before t_d")
    assert verdict == NO_VERDICT and reason == "SignGD violated, but the window lies before t_d"


# ------------------------------------------------------- what each rule says, word for word, at its boundaries


def test_loss_monotone_output_and_its_rounding_threshold():
    t = [1.0, 10.0, 100.0, 1000.0, 10000.0]
    assert loss_monotone(t, [5.0, 4.0, 3.0, 2.0, 1.0], descent_start=None) == (REPRODUCED, "", 1.0)
    at_tol = [5.0, 4.0, 3.0, 0.0, 1e-9]  # a rise of exactly LOSS_RISE_TOL is rounding
    assert loss_monotone(t, at_tol, descent_start=1.0)[0] == REPRODUCED
    risen = [5.0, 4.0, 3.0, 0.0, 0.5]
    assert loss_monotone(t, risen, descent_start=1.0) == (
        NOT_REPRODUCED, "the loss rose at t = 1e+04, after the descent start t_d = 1", 10000.0)
    assert loss_monotone(t, risen, descent_start=2e4) == (
        NO_VERDICT, "the loss rose at t = 1e+04, within the last two decades, before the descent start t_d = 2e+04; "
                    "the descent lemma claims nothing there", 10000.0)
    assert loss_monotone(t, risen, descent_start=None)[1] == (
        "the loss rose at t = 1e+04, within the last two decades, and the descent start is unknown; the descent "
        "lemma claims nothing there")


def test_eps_agreement_output_and_its_window():
    t = np.array([10.0, 50.0, 100.0, 1000.0, 1e4])
    base = [np.full(5, 0.9)]
    spike = [np.array([0.9, 0.9, 0.9 + 0.6 * EPS_AGREE, 0.9, 0.9])]  # apart only at t = EPS_FROM = 100
    verdict, reason, numbers = eps_agreement(t, base, {"e": spike})
    assert verdict == NO_VERDICT and numbers == {"largest": [pytest.approx(0.6 * EPS_AGREE)], "at_horizon": [0.0]}
    assert reason == ("differences within a factor 2 of 0.01 or draws that disagree: draw 0: largest 0.006, at "
                      "t = 10000 0")
    apart = [np.full(5, 0.8)]
    verdict, reason, _ = eps_agreement(t, base, {"e": apart})
    assert verdict == NOT_REPRODUCED
    assert reason == "the eps > 0 curves separate from eps = 0 by t = 10000: draw 0: largest 0.1, at t = 10000 0.1"
    assert eps_agreement(t[:2], [b[:2] for b in base], {"e": [b[:2] for b in base]}) == (
        NO_VERDICT, "the runs end at t = 50 before t = 100", {})


def test_implementation_checks_name_every_disagreement():
    verdict, reason = best_rate_check({"signgd": ("1/3", "1/3"), "adam": ("1/2", "1/4")})
    assert verdict == NOT_REPRODUCED
    assert reason == ("SignGD: derived a = 1/3, exponent 1/3, stated a = 1/2, exponent 1/2; Adam: derived a = 1/2, "
                      "exponent 1/4, stated a = 2/3, exponent 1/3")
    verdict, reason = dimension_check({"c_adam", "gamma"}, {"gamma"}, {"c_adam", "d"})
    assert verdict == NOT_REPRODUCED
    assert reason == ("SignGD's t0 involves ['c_adam'], which depend on d; Adam's t0 involves no d-dependent constant "
                      "(symbols ['gamma'])")


def test_k_growth_output_word_for_word():
    """Geometric means of (0.9, 1.0, 1.1) x 0.01: 0.01 x 0.99^(1/3) = 0.00997; the growth's 95 % interval is
    exp(+-t_4 sqrt(s^2 (1/3 + 1/3))) with s^2 the draws' log variance 0.0101: x0.80-x1.26."""
    draws = (0.9, 1.0, 1.1)
    flat = {k: [0.01 * f for f in draws] for k in (3, 5, 10)}
    assert k_growth(flat) == (REPRODUCED, "", "k=3: 0.00997 [0.009, 0.011] (x1.00); k=5: 0.00997 [0.009, 0.011] "
                                              "(x1.00); k=10: 0.00997 [0.009, 0.011] (x1.00); growth k=3 -> 10: x1.00, "
                                              "95% interval [x0.80, x1.26]")
    middle_up = {3: flat[3], 5: [0.02 * f for f in draws], 10: flat[10]}  # the middle k does not decide
    steep = {3: flat[3], 5: flat[5], 10: [0.05 * f for f in draws]}
    verdict, reason, measured = k_growth(middle_up, earlier=steep, earlier_t=1e5)
    assert verdict == NO_VERDICT
    assert reason == ("not settled: the growth decides 'reproduced' at the end but 'not reproduced' a decade earlier "
                      "(growth k=3 -> 10: x5.00, 95% interval [x3.98, x6.28])")
    assert measured.endswith("growth k=3 -> 10: x1.00, 95% interval [x0.80, x1.26]; a decade earlier (t = 100000): "
                             "growth k=3 -> 10: x5.00, 95% interval [x3.98, x6.28]")
    verdict, reason, _ = k_growth(steep)
    assert reason == ("the gap at k = 10 is x5.00 the gap at k = 3, interval [x3.98, x6.28] at or above the linear "
                      "growth x3.33: a constant growing with k")
    assert k_growth({3: [0.01, 0.011], 10: [0.02, 0.021]})[0] == REPRODUCED  # two draws per k give an interval
    assert k_growth({3: [0.01], 10: [0.02, 0.021]})[1] == (
        "one draw per k gives no seed-noise interval for the growth x2.05 (linear: x3.33); more draws per k decide")
    # log spread (-ln 4, 0, ln 4): variance 1.92, half-width t_4 sqrt(1.92 x 2/3) = 3.14, exp(+-3.14) = x0.04-x23.17
    wide = k_growth({k: [0.01 * f for f in (0.25, 1.0, 4.0)] for k in (3, 5, 10)})
    assert wide[1] == ("the linear growth x3.33 lies inside the interval [x0.04, x23.17] of the measured growth x1.00: "
                       "within the seeds' noise; more draws per k decide")


def test_rate_part_keeps_the_comparators_reason():
    assert rate_part("SignGD", "violated", "the gap decays slower") == (
        NOT_REPRODUCED, "SignGD violated: the gap decays slower")


# ----------------------------------------------- ordering and eps agreement at exact (dyadic) thresholds

T_LATE = np.array([100.0, 300.0, 400.0, 500.0, 600.0, 1000.0])  # the window [T/2, T] is {500, 600, 1000}


def _order(lead_a, lead_b, tol=0.25):
    """One draw: SignGD's lead over NGD in the 'ahead' quantity and in the 'behind' one, per checkpoint."""
    ahead = {"SignGD": [0.5 + np.asarray(lead_a, float)], "NGD": [np.full(6, 0.5)]}
    behind = {"SignGD": [np.full(6, 0.5)], "NGD": [0.5 + np.asarray(lead_b, float)]}
    return ordering(T_LATE, ahead, behind, "SignGD", tol=tol)


def test_ordering_reads_every_checkpoint_of_the_last_half_and_a_lead_of_exactly_tol_is_a_tie():
    assert _order([0.5] * 6, [0.5] * 6)[0] == REPRODUCED
    assert _order([0.5, 0.5, 0.5, 0.25, 0.5, 0.5], [0.5] * 6)[0] == NO_VERDICT  # 0.25 = tol at t = T/2
    assert _order([0.5] * 6, [0.5, 0.5, 0.5, 0.25, 0.5, 0.5])[0] == NO_VERDICT
    assert _order([0.5, 0.5, -1.0, 0.5, 0.5, 0.5], [0.5] * 6)[0] == REPRODUCED  # t = 400 < T/2: outside
    assert _order([-0.5] * 6, [0.5] * 6)[0] == NOT_REPRODUCED
    assert _order([-0.5, -0.5, -0.5, -0.5, -0.25, -0.5], [0.5] * 6)[0] == NO_VERDICT  # trails by exactly tol
    assert _order([0.5] * 6, [-0.5, -0.5, -0.5, -0.5, -0.25, -0.5])[0] == NO_VERDICT


def test_ordering_output_word_for_word():
    verdict, reason, measured = _order([0, 0, 0, 0.75, 1.0, 0.5], [0, 0, 0, 2.0, 1.5, 1.25])
    assert (verdict, reason) == (REPRODUCED, "")
    assert measured == ("SignGD vs NGD: draw 0: leads by +0.5000 / +1.2500 at t = 1000 (least over [500, 1000]: "
                        "+0.5000 / +1.2500): holds")
    t = T_LATE
    draw = "leads by -0.5000 / +0.0000 at t = 1000 (least over [500, 1000]: -0.5000 / +0.0000): reversed"
    one = {"SignGD": [np.full(6, 0.0)], "NGD": [np.full(6, 0.5)]}
    same_one = {"SignGD": [np.full(6, 0.5)], "NGD": [np.full(6, 0.5)]}
    assert ordering(t, one, same_one, "SignGD", tol=0.25)[:2] == (NOT_REPRODUCED, f"SignGD trails NGD: draw 0: {draw}")
    six = {"SignGD": [np.full(6, 0.0)] * 6, "NGD": [np.full(6, 0.5)] * 6}
    same = {"SignGD": [np.full(6, 0.5)] * 6, "NGD": [np.full(6, 0.5)] * 6}
    verdict, reason, measured = ordering(t, six, same, "SignGD", tol=0.25)
    assert verdict == NOT_REPRODUCED
    draws = "; ".join(f"draw {i}: {draw}" for i in range(6))
    test = "two-sided sign test on the 6 deciding draws: p = 0.031 (<= 0.05)"
    assert reason == ("SignGD trails NGD; not reproduced for most draws (the claim read as a statement about the "
                      "typical draw, since the figure shows one: P(a draw confirms) > 1/2): " + test
                      + "; 0 of 6 draws confirm, 6 refute, 0 undecided; " + draws)
    assert measured == f"SignGD vs NGD: 0 of 6 draws confirm, 6 refute, 0 undecided ({test}); {draws}"
    split = {"SignGD": [np.full(6, 0.0), np.full(6, 1.0)], "NGD": [np.full(6, 0.5)] * 2}
    verdict, reason, measured = ordering(t, split, {"SignGD": [np.full(6, 0.0)] * 2, "NGD": [np.full(6, 0.5)] * 2},
                                         "SignGD", tol=0.25)
    assert verdict == NO_VERDICT
    assert reason == ("SignGD vs NGD: reversed, holds over the draws (a lead within 0.25, an order that changes "
                      "inside the window or draws that disagree); the draws split (the claim read as a statement "
                      "about the typical draw, since the figure shows one: P(a draw confirms) > 1/2): two-sided sign "
                      "test on the 2 deciding draws: p = 1 (> 0.05); an even split: more draws at this split never "
                      "decide; 1 of 2 draws confirm, 1 refute, 0 undecided; draw 0: leads by -0.5000 / +0.5000 at "
                      "t = 1000 (least over [500, 1000]: -0.5000 / +0.5000): reversed; draw 1: leads by +0.5000 / "
                      "+0.5000 at t = 1000 (least over [500, 1000]: +0.5000 / +0.5000): holds")
    _, reason, measured = _order([0.5] * 6, [0.5, 0.5, 0.5, 0.25, 0.5, 0.5])
    assert reason.endswith("(least over [500, 1000]: +0.5000 / +0.2500): unsettled")
    assert measured == ("SignGD vs NGD: draw 0: leads by +0.5000 / +0.5000 at t = 1000 (least over [500, 1000]: "
                        "+0.5000 / +0.2500): unsettled")


def test_eps_agreement_at_its_exact_thresholds():
    t = np.array([10.0, 100.0, 1000.0])
    base = [np.zeros(3)] * 6  # six draws: six agreeing give p = 2 / 2^6 = 0.031
    verdict, reason, numbers = eps_agreement(t, base, {"e": [np.full(3, 0.25)] * 6}, tol=0.5)
    assert verdict == REPRODUCED and "6 of 6 draws confirm" in reason  # exactly tol / 2 agrees
    assert numbers == {"largest": [0.25] * 6, "at_horizon": [0.25] * 6}
    verdict, reason, _ = eps_agreement(t, base, {"e": [np.full(3, 1.0)] * 6}, tol=0.5)  # exactly 2 tol: not apart
    assert verdict == NO_VERDICT
    assert reason == ("differences within a factor 2 of 0.5 or draws that disagree; no draw decides; longer runs "
                      "decide; 0 of 6 draws confirm, 0 refute, 6 undecided; "
                      + "; ".join(f"draw {i}: largest 1, at t = 1000 1" for i in range(6)))
    assert eps_agreement(t, base, {"e": [np.full(3, 1.5)] * 6}, tol=0.5)[0] == NOT_REPRODUCED
    assert eps_agreement(np.array([10.0, 20.0, 50.0]), base, {"e": base}) == (
        NO_VERDICT, "the runs end at t = 50 before t = 100", {})
# ------------------------------------------------------------------------- sec. 7 (1), each algorithm's own margins


def test_own_margins_reading_refutes_a_max_norm_margin_below_its_own_two_norm_margin():
    from rates.studies.signadam.rules import own_ordering

    t = np.geomspace(1, 1e5, 40)
    # Adam eps = 1e-8 on the study's ten draws (relative max-norm / 2-norm margins at t = 1e5)
    rel_max = {"Adam": _curves(t, [0.7789, 0.8527, 0.855, 0.7773, 0.8608, 0.8025, 0.8397, 0.7587, 0.7102, 0.7923])}
    rel_two = {"Adam": _curves(t, [0.8725, 0.8807, 0.9557, 0.9374, 0.927, 0.8731, 0.9433, 0.9401, 0.9468, 0.9767])}
    verdict, reason, _ = own_ordering(t, rel_max, rel_two, "Adam")
    assert verdict == NOT_REPRODUCED and "10 refute" in reason
    # the same numbers the other way round hold; three draws swapped leave it open (7 to 3: p = 0.34)
    assert own_ordering(t, rel_two, rel_max, "Adam")[0] == REPRODUCED
    mixed = {"Adam": _curves(t, [0.99] * 3 + [0.8527, 0.855, 0.7773, 0.8608, 0.8025, 0.8397, 0.7587])}
    assert own_ordering(t, mixed, rel_two, "Adam")[0] == NO_VERDICT
    # a lead within the tolerance is a tie, not a holding order
    tie = {"Adam": [c + 0.0005 for c in rel_two["Adam"]]}
    assert own_ordering(t, tie, rel_two, "Adam")[0] == NO_VERDICT


def test_rem_6_5_needs_a_tight_bound_to_read_the_constant_from_the_gap_level():
    from rates.studies.signadam.rules import constant_reading

    verdict, reason = constant_reading(REPRODUCED, "", {3: "loose", 5: "tight", 10: "loose"})
    assert verdict == NO_VERDICT and "c_adam" in reason and "k = 3: loose" in reason
    assert constant_reading(REPRODUCED, "", {3: "tight", 5: "tight", 10: "tight"})[0] == REPRODUCED
    # a gap growing like k shows a growing constant whatever the fit
    assert constant_reading(NOT_REPRODUCED, "grows", {3: "loose"}) == (NOT_REPRODUCED, "grows")


def test_own_margins_reading_reads_the_last_half_and_a_lead_of_exactly_tol_is_a_tie():
    """Window [T/2, T] = {500, 600, 1000} of T_LATE: a lead of -1 at t = 400 (< T/2) is outside it, a tie at t = 500
    (= T/2) inside; a lead or a trail of exactly tol (0.75 - 0.5 = 0.25, exact in binary) is a tie."""
    from rates.studies.signadam.rules import own_ordering

    other = {"Adam": [np.full(6, 0.5)]}

    def reading(lead, tol=0.25):
        return own_ordering(T_LATE, {"Adam": [0.5 + np.asarray(lead, float)]}, other, "Adam", tol=tol)[0]

    assert reading([-1.0, -1.0, -1.0, 0.5, 0.5, 0.5]) == REPRODUCED
    assert reading([0.5, 0.5, 0.5, 0.0, 0.5, 0.5]) == NO_VERDICT
    assert reading([0.25] * 6) == NO_VERDICT
    assert reading([-0.25] * 6) == NO_VERDICT
    assert reading([-0.5] * 6) == NOT_REPRODUCED


def test_own_margins_reading_output_word_for_word():
    from rates.studies.signadam.rules import own_ordering

    favoured = np.array([0.9, 0.8, 0.7, 0.2, 0.15, 0.1])
    other = np.array([0.45, 0.5, 0.55, 0.6, 0.65, 0.7])  # leads -0.4, -0.5, -0.6 over [500, 1000]
    draw = "0.1000 vs 0.7000 at t = 1000 (least lead over [500, 1000]: -0.6000): reversed"
    assert own_ordering(T_LATE, {"Adam": [favoured]}, {"Adam": [other]}, "Adam", tol=0.25) == (
        NOT_REPRODUCED, f"Adam's own margin is smaller in the norm it favours: draw 0: {draw}", f"Adam: draw 0: {draw}")
    flipped = "0.7000 vs 0.1000 at t = 1000 (least lead over [500, 1000]: +0.4000): holds"
    verdict, reason, measured = own_ordering(T_LATE, {"Adam": [favoured, other]}, {"Adam": [other, favoured]}, "Adam",
                                             tol=0.25)
    draws = f"draw 0: {draw}; draw 1: {flipped}"
    assert verdict == NO_VERDICT
    assert reason == ("Adam: reversed, holds over the draws; the draws split (the claim read as a statement about the "
                      "typical draw, since the figure shows one: P(a draw confirms) > 1/2): two-sided sign test on the "
                      "2 deciding draws: p = 1 (> 0.05); an even split: more draws at this split never decide; 1 of 2 "
                      f"draws confirm, 1 refute, 0 undecided; {draws}")
    assert measured == ("Adam: 1 of 2 draws confirm, 1 refute, 0 undecided (two-sided sign test on the 2 deciding "
                        f"draws: p = 1 (> 0.05)); {draws}")


def test_rem_6_5_constant_reading_output_word_for_word():
    from rates.studies.signadam.rules import constant_reading

    assert constant_reading(REPRODUCED, "", {3: "loose", 5: "tight", 10: "inconclusive"}) == (
        NO_VERDICT, "the gap's level does not grow like k, but the bound is not tight on these runs (k = 3: loose, "
                    "k = 10: inconclusive), so the level is not the bound's constant, and Thm 6.3's constant (c_adam) "
                    "cannot be rebuilt from the paper to compute it; tight fits at every k, or c_adam, would decide")
