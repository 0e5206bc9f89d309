"""Negative controls for every decision rule of ``rates report signadam``.

Each rule (a pure function of measured numbers in :mod:`rates.studies.signadam`) is run on a constructed case
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
from rates.studies.report import fit_group
from rates.studies.signadam import (
    EPS_AGREE,
    ORDER_TOL,
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


def test_ordering_reproduces_a_settled_lead_and_refutes_the_other_ordering():
    t = checkpoints(1e5, 60).astype(float)
    ahead = {"SignGD": _curves(t, [0.95, 0.94, 0.96]), "NGD": _curves(t, [0.80, 0.79, 0.81])}
    behind = {"SignGD": _curves(t, [0.85, 0.84, 0.86]), "NGD": _curves(t, [0.97, 0.96, 0.98])}
    assert ordering(t, ahead, behind, "SignGD")[0] == REPRODUCED
    # the other ordering: NGD ahead in the max norm on every draw
    swapped = {"SignGD": ahead["NGD"], "NGD": ahead["SignGD"]}
    verdict, reason, _ = ordering(t, swapped, behind, "SignGD")
    assert verdict == NOT_REPRODUCED and "trails NGD on every draw" in reason
    # ahead in the max norm but behind in the 2-norm quantity (the correlation rule's cosine): reversed too
    cos_swapped = {"SignGD": behind["NGD"], "NGD": behind["SignGD"]}
    assert ordering(t, ahead, cos_swapped, "SignGD")[0] == NOT_REPRODUCED


def test_ordering_is_no_verdict_for_a_tie_a_late_crossing_or_split_draws():
    t = checkpoints(1e5, 60).astype(float)
    behind = {"SignGD": _curves(t, [0.85] * 3), "NGD": _curves(t, [0.97] * 3)}
    tie = {"SignGD": _curves(t, [0.8 + ORDER_TOL / 2] * 3), "NGD": _curves(t, [0.8] * 3)}
    assert ordering(t, tie, behind, "SignGD")[0] == NO_VERDICT
    # a lead that appears only at t ~ 7e4, inside the window [T/2, T] = [5e4, 1e5]: not settled
    crossing = {"SignGD": [0.8 + 0.1 * np.tanh((t - 7e4) / 1e4)] * 3, "NGD": _curves(t, [0.8] * 3)}
    verdict, reason, _ = ordering(t, crossing, behind, "SignGD")
    assert verdict == NO_VERDICT and "unsettled" in reason
    # a crossing before T/2 leaves a settled lead: the figure's horizon decides
    early = {"SignGD": [0.8 + 0.1 * np.tanh((t - 1e4) / 1e3)] * 3, "NGD": _curves(t, [0.8] * 3)}
    assert ordering(t, early, behind, "SignGD")[0] == REPRODUCED
    split = {"SignGD": _curves(t, [0.95, 0.70, 0.95]), "NGD": _curves(t, [0.80] * 3)}
    assert ordering(t, split, behind, "SignGD")[0] == NO_VERDICT


# --------------------------------------------------------------------------------------------- sec. 7 (3) eps


def test_eps_agreement_refutes_curves_that_separate_at_the_horizon():
    t = checkpoints(1e5, 60).astype(float)
    base = _curves(t, [0.90, 0.89, 0.91])
    overlap = {"Adam eps=1e-08": [b + 1e-4 for b in base]}
    assert eps_agreement(t, base, overlap)[0] == REPRODUCED
    # the measured shape: equal to t ~ 3e4, then 0.118 apart at 1e5 (0.7789 vs 0.8966)
    apart = {"Adam eps=1e-08": [b - 0.118 * np.clip((t - 3e4) / 7e4, 0, 1) for b in base]}
    verdict, reason, numbers = eps_agreement(t, base, apart)
    assert verdict == NOT_REPRODUCED and "separate" in reason
    assert numbers["at_horizon"] == pytest.approx([0.118] * 3)


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


# ------------------------------------------------------------------------- sec. 7 (1), each algorithm's own margins


def test_own_margins_reading_refutes_a_max_norm_margin_below_its_own_two_norm_margin():
    from rates.studies.signadam import own_ordering

    t = np.geomspace(1, 1e5, 40)
    # Adam eps = 1e-8 on the study's three draws (relative max-norm / 2-norm margins at t = 1e5)
    rel_max = {"Adam": _curves(t, [0.779, 0.853, 0.855])}
    rel_two = {"Adam": _curves(t, [0.873, 0.881, 0.956])}
    verdict, reason, _ = own_ordering(t, rel_max, rel_two, "Adam")
    assert verdict == NOT_REPRODUCED and "every draw" in reason
    # the same numbers the other way round hold; one draw swapped leaves it open
    assert own_ordering(t, rel_two, rel_max, "Adam")[0] == REPRODUCED
    mixed = {"Adam": _curves(t, [0.9, 0.853, 0.855])}
    assert own_ordering(t, mixed, rel_two, "Adam")[0] == NO_VERDICT
    # a lead within the tolerance is a tie, not a holding order
    tie = {"Adam": _curves(t, [0.8735, 0.8815, 0.9565])}
    assert own_ordering(t, tie, rel_two, "Adam")[0] == NO_VERDICT


def test_rem_6_5_needs_a_tight_bound_to_read_the_constant_from_the_gap_level():
    from rates.studies.signadam import constant_reading

    verdict, reason = constant_reading(REPRODUCED, "", {3: "loose", 5: "tight", 10: "loose"})
    assert verdict == NO_VERDICT and "c_adam" in reason and "k = 3: loose" in reason
    assert constant_reading(REPRODUCED, "", {3: "tight", 5: "tight", 10: "tight"})[0] == REPRODUCED
    # a gap growing like k shows a growing constant whatever the fit
    assert constant_reading(NOT_REPRODUCED, "grows", {3: "loose"}) == (NOT_REPRODUCED, "grows")
