"""The verdict logic's decision points, each pinned by a case that changes what a user sees when it is broken.

Every branch of the three findings (bound holds, dominant term, stated rate attained), of the verdict word built
from them, of the older envelope rule and of the phase rule (entry, floor, frozen gap, window length) has a case
here. Synthetic gaps follow closed forms (two-regime power laws ``(t/b)^s``, ``1/S_1`` at a = 1 with
brute-force partial sums), so each expected slope is known without the code under test; the findings'
thresholds are the rules of docs/theory.md section 4 as stated in :mod:`rates.judge.compare`'s docstring, and
where a rule compares with a threshold the case sits on the boundary (dyadic numbers, exact in float64).

docs/testing.md maps this file to the mutation run over :mod:`rates.judge.compare`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from test_compare import PowerLog, checkpoints, synthetic_run
from test_findings import brute_sums, run_of, signgd

from rates.judge.compare import (
    ATTAINED,
    HOLDS,
    LOG_POWER_TOLERANCE,
    MAX_TERM_MISFIT,
    NOT_ATTAINED,
    UNDECIDED,
    VIOLATED,
    Assessment,
    Envelope,
    Finding,
    Settling,
    SlopeFit,
    StatedRate,
    Window,
    bound_finding,
    choose_window,
    classify,
    common_window,
    entry_index,
    judge,
    settling,
    stated_rate_finding,
    window_mask,
)
from rates.schedule import Schedule

WINDOW = Window(1e4, 1e6, 20, "auto", 1.0, 1e-10, None)


def fit(slope: float, stderr: float, ci_low: float, ci_high: float) -> SlopeFit:
    return SlopeFit(slope, stderr, ci_low, ci_high, 1, 20, WINDOW)


def two_regimes(break_t: float, early: float, late: float, scale: float = 0.01):
    """``scale (t/b)^early`` before ``b``, ``scale (t/b)^late`` after: log-log slopes exactly early, late."""
    return lambda t: np.where(t < break_t, scale * (t / break_t) ** early, scale * (t / break_t) ** late)


def loglog_slope(t, values) -> float:
    return float(np.polyfit(np.log(t), np.log(values), 1)[0])


# --------------------------------------------------------------------------------------- (i) bound holds


def test_bending_gap_whose_later_half_is_slower_than_the_bound_does_not_hold():
    # t^-0.8 until 1e5, then t^-0.2, against a t^-0.3 bound: the whole window's slope (about -0.49) is well
    # under the bound, but the later half decays at -0.2, slower than -0.3 + 0.05. A bound that the data are
    # leaving cannot be said to hold; only both halves together can say so.
    verdict = judge([synthetic_run(two_regimes(1e5, -0.8, -0.2))], PowerLog(0.3), exponent=0.3)
    early, late = verdict.settling.data
    assert early == pytest.approx(-0.8, abs=1e-9) and late == pytest.approx(-0.2, abs=1e-9)  # split at 1e5
    assert verdict.fit.ci_high <= -0.3 + 0.05  # the whole-window interval alone would pass
    assert verdict.assessment.bound.outcome == UNDECIDED, verdict.assessment.bound.text
    assert "has not settled" in verdict.assessment.bound.text and verdict.label == "inconclusive"


def test_bending_gap_slow_on_average_but_fast_later_is_not_called_holding_either():
    # t^-0.02 until 1e5, then t^-0.5: the later half is fast, the whole window's 95% limit is not
    verdict = judge([synthetic_run(two_regimes(1e5, -0.02, -0.5))], PowerLog(0.3), exponent=0.3)
    assert verdict.settling.data[1] == pytest.approx(-0.5, abs=1e-9)
    assert verdict.fit.ci_high > -0.3 + 0.05
    assert verdict.assessment.bound.outcome == UNDECIDED and verdict.label == "inconclusive"


def test_bending_gap_faster_than_the_bound_on_the_window_and_its_later_half_holds():
    verdict = judge([synthetic_run(two_regimes(1e5, -0.05, -0.6))], PowerLog(0.3), exponent=0.3)
    assert verdict.settling.unsettled(0.05)
    assert verdict.fit.ci_high <= -0.25 and verdict.settling.data[1] == pytest.approx(-0.6, abs=1e-9)
    assert verdict.assessment.bound.outcome == HOLDS and "on both halves" in verdict.assessment.bound.text
    # the stated t^-0.3 is neither attained nor beaten on both halves (-0.05 is slower): open
    assert verdict.assessment.stated_rate.outcome == UNDECIDED and verdict.label == "inconclusive"


def test_bound_finding_thresholds_on_their_boundaries():
    envelope = Envelope(-0.25, -0.5, (-0.25, -0.5))
    tolerance = 0.125  # -0.25 + 0.125 = -0.125 exactly
    assert bound_finding(fit(-0.25, 0.0625, -0.375, -0.125), envelope, tolerance).outcome == HOLDS
    assert bound_finding(fit(-0.25, 0.0625, -0.375, -0.12), envelope, tolerance).outcome == UNDECIDED
    # violated: slower by more than the tolerance AND the interval excludes the slowest term
    assert bound_finding(fit(-0.1, 0.01, -0.2, 0.0), envelope, tolerance).outcome == VIOLATED
    assert bound_finding(fit(-0.125, 0.01, -0.2, 0.0), envelope, tolerance).outcome == UNDECIDED  # by exactly tol
    assert bound_finding(fit(-0.1, 0.2, -0.25, 0.1), envelope, tolerance).outcome == UNDECIDED  # ci_low = slowest
    missing = bound_finding(fit(-0.5, float("nan"), float("nan"), float("nan")), envelope, tolerance)
    assert missing.outcome == UNDECIDED and "no uncertainty" in missing.text


def test_bound_finding_while_bending_needs_both_the_window_and_the_later_half():
    envelope = Envelope(-0.25, -0.5, (-0.25, -0.5))
    bending = Settling((-0.75, -0.125), (-0.25, -0.25), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.25))
    assert bending.unsettled(0.125)
    # later half -0.125 <= -0.25 + 0.125 (boundary): holds; a hair slower: open
    assert bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, bending).outcome == HOLDS
    slower = Settling((-0.75, -0.12), (-0.25, -0.25), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.25))
    assert bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, slower).outcome == UNDECIDED
    # the later half is judged against the envelope's slowest slope on that half, not the window's
    later_bound = Settling((-0.75, -0.125), (-0.25, -0.5), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.5))
    assert bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, later_bound).outcome == UNDECIDED
    no_envelope = Settling((-0.75, -0.125), (-0.25, -0.5), 1e5, 0.0)  # without members: the window's slowest
    assert bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, no_envelope).outcome == HOLDS
    # a bend within two standard errors of noise is no bend: the plain rule applies
    noisy = Settling((-0.75, -0.125), (-0.25, -0.25), 1e5, 0.25)
    assert not noisy.unsettled(0.125)
    assert bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, noisy).outcome == HOLDS


# ------------------------------------------------------------------------------------ (iii) stated rate


def test_log_power_far_below_the_stated_one_is_not_attained():
    # Two seeds: t^-1/2 log t and t^-0.592 log t. Their mean slope is within the tolerance of log t / sqrt t's
    # local slope, but their mean log power (fitted here with np.polyfit, per seed) is more than 1/2 below the
    # stated k = 1 while its interval still reaches k - 1/2: the log power is not the stated one, and not
    # separated from it either. Attained would need |k_fit - k| <= 1/2.
    runs = [synthetic_run(lambda t, e=e: 0.1 * t ** (-0.5 - e) * np.log(t + 1), seed=i)
            for i, e in enumerate((0.0, 0.092))]
    verdict = judge(runs, PowerLog(0.5, 1), exponent=0.5, log_power=1)
    t = np.asarray(runs[0].t, dtype=float)[window_mask(runs[0], verdict.window)]
    powers = [np.polyfit(np.log(np.log(t)), np.log(np.asarray(r.gap)[window_mask(r, verdict.window)] * t ** 0.5), 1)[0]
              for r in runs]
    assert np.mean(powers) < 1 - LOG_POWER_TOLERANCE
    assert verdict.log_power.slope == pytest.approx(np.mean(powers), abs=1e-9)
    assert verdict.log_power.ci_high >= 1 - LOG_POWER_TOLERANCE and verdict.log_power.stderr <= LOG_POWER_TOLERANCE
    assert abs(verdict.fit.slope - verdict.predicted_local_slope) <= 0.05 and verdict.fit.stderr <= 0.05
    assert verdict.assessment.stated_rate.outcome == UNDECIDED, verdict.assessment.stated_rate.text
    assert verdict.label == "inconclusive"


def stated(k: int | None = 1, reference_k: float | None = None) -> StatedRate:
    """A stated rate whose term has local slope -0.5 (exponent 1/2, log power k)."""
    return StatedRate(0.5 if k is not None else None, k, -0.5, -0.5, reference_k if reference_k is not None else k)


@pytest.mark.parametrize("k_fit, outcome, faster", [
    ((1.0, 0.25, 0.5, 1.5), ATTAINED, False),
    ((1.5, 0.25, 1.0, 2.0), ATTAINED, False),  # |k - 1| = 1/2: the boundary is attained
    ((0.25, 0.375, -0.5, 0.75), UNDECIDED, False),  # 3/4 below, interval reaches 1/2: open (not attained with abs)
    ((1.75, 0.375, 1.5, 2.5), UNDECIDED, False),  # 3/4 above, interval reaches 3/2: open
    ((1.0, 0.625, 0.0, 2.0), UNDECIDED, False),  # k error above 1/2
    ((-1.0, 0.25, -1.5, 0.25), NOT_ATTAINED, True),  # interval wholly below k - 1/2: a log factor faster
    ((3.0, 0.25, 2.0, 3.5), NOT_ATTAINED, False),  # wholly above k + 1/2: slower
])
def test_log_power_bands(k_fit, outcome, faster):
    found = stated_rate_finding(fit(-0.5, 0.01, -0.52, -0.48), fit(*k_fit), stated(1), 0.05)
    assert (found.outcome, found.faster) == (outcome, faster), found.text


def test_log_power_is_judged_against_the_term_s_own_log_power():
    # the term's fitted log power over the window (here -1.04, 1/S_1 at a = 1) is the reference, not the integer
    found = stated_rate_finding(fit(-0.5, 0.01, -0.52, -0.48), fit(-0.6, 0.1, -0.8, -0.4), stated(-1, -1.04), 0.05)
    assert found.outcome == ATTAINED and "vs -1.04" in found.text
    far = stated_rate_finding(fit(-0.5, 0.01, -0.52, -0.48), fit(-0.5, 0.01, -0.52, -0.48), stated(-1, -1.04), 0.05)
    assert far.outcome == NOT_ATTAINED and not far.faster  # -0.5 > -1.04 + 1/2: slower by a log factor


@pytest.mark.parametrize("slope_fit, outcome, faster", [
    ((-0.5, 0.05, -0.6, -0.4), ATTAINED, False),  # error = tolerance: precise
    ((-0.45, 0.01, -0.47, -0.43), ATTAINED, False),  # |slope - target| = tolerance
    ((-0.5, 0.0625, -0.6, -0.4), UNDECIDED, False),  # error above the tolerance
    ((-0.44, 0.01, -0.46, -0.42), UNDECIDED, False),  # off by more than the tolerance, interval not outside
    ((-0.7, 0.01, -0.72, -0.5625), NOT_ATTAINED, True),  # interval below target - tol
    ((-0.7, 0.01, -0.72, -0.55), UNDECIDED, False),  # ci_high = target - tol: not strictly below
    ((-0.3, 0.01, -0.4375, -0.28), NOT_ATTAINED, False),  # interval above target + tol
    ((-0.3, 0.01, -0.45, -0.28), UNDECIDED, False),  # ci_low = target + tol
])
def test_slope_bands_of_the_stated_rate(slope_fit, outcome, faster):
    found = stated_rate_finding(fit(*slope_fit), None, stated(None), 0.05)
    assert (found.outcome, found.faster) == (outcome, faster), found.text


def test_stated_rate_without_a_fitted_log_power():
    found = stated_rate_finding(fit(-0.5, 0.01, -0.52, -0.48), None, stated(1), 0.05)
    assert found.outcome == ATTAINED and "log power not fitted" in found.text
    unknown = stated_rate_finding(fit(-0.5, 0.01, -0.52, -0.48), fit(1.0, float("nan"), 0.5, 1.5), stated(1), 0.05)
    assert unknown.outcome == UNDECIDED  # a log power without an uncertainty decides nothing


def test_stated_rate_while_bending():
    both_faster = Settling((-0.75, -0.5625), (-0.5, -0.5), 1e5)
    found = stated_rate_finding(fit(-0.65, 0.01, -0.66, -0.64), None, stated(None), 0.05, both_faster)
    assert found.outcome == NOT_ATTAINED and found.faster and "both halves" in found.text
    # one half at target - tolerance exactly: not faster on both halves
    one_close = Settling((-0.75, -0.55), (-0.5, -0.5), 1e5)
    found = stated_rate_finding(fit(-0.65, 0.01, -0.66, -0.64), None, stated(None), 0.05, one_close)
    assert found.outcome == UNDECIDED and "has not settled" in found.text
    # the first half at target and the second far faster: the larger slope decides
    first_slow = Settling((-0.5, -1.0), (-0.5, -0.5), 1e5)
    assert stated_rate_finding(fit(-0.7, 0.01, -0.71, -0.69), None, stated(None), 0.05, first_slow).outcome == UNDECIDED


def test_a_stated_log_power_of_minus_one_is_judged_at_a_equal_one():
    # SIGNADAM Cor. 5.4 at a = 1: O(1/log t), exponent 0 and log power -1. A gap 2/S_1 (S_1 ~ log t) attains it;
    # 4/S_1^2 decays a log factor faster (slope and log power both twice as steep); 1/sqrt(S_1) half as steep.
    t = checkpoints(1e6, 60)
    s1 = brute_sums(1.0, 1, t)
    window = (t >= 1e4) & (t <= 1e6)
    log_log = np.log(np.log(t[window]))
    expected_k = np.polyfit(log_log, np.log(1 / s1[window]), 1)[0]  # the term's own log power over the window
    assert -1.1 < expected_k < -1.0
    prediction = signgd("1")
    assert (float(prediction.rate.exponent), prediction.rate.log_power) == (0.0, -1)  # as SIGNADAM states
    one = judge([run_of(2.0 / s1, t, a="1")], prediction, exponent=0)
    assert one.label == "tight", one.reason
    assert one.log_power.slope == pytest.approx(expected_k, abs=1e-6)
    assert one.fit.slope == pytest.approx(loglog_slope(t[window], 1 / s1[window]), abs=1e-9)
    squared = judge([run_of(4.0 / s1 ** 2, t, a="1")], prediction, exponent=0)
    assert squared.log_power.slope == pytest.approx(2 * expected_k, abs=1e-6)
    assert squared.assessment.stated_rate.outcome == NOT_ATTAINED and squared.label == "loose"
    root = judge([run_of(1.0 / np.sqrt(s1), t, a="1")], prediction, exponent=0)
    assert root.log_power.slope == pytest.approx(expected_k / 2, abs=1e-6)
    assert abs(root.fit.slope - one.fit.slope) <= 0.05  # the slope alone cannot tell them apart
    found = root.assessment.stated_rate
    assert found.outcome == NOT_ATTAINED and not found.faster and "log power" in found.text
    assert root.label == "inconclusive"  # bound holds, the stated rate is missed on the slow side: open
    assert "(log t)^-1" in one.assessment.stated_rate.text


class InverseLog:
    """``1/log t``: a bound without separate terms, so the stated rate is read from its exponent and log power."""

    def bound_shape(self, t):
        return 1.0 / np.log(np.asarray(t, dtype=float))


def test_a_pure_one_over_log_t_is_attained_and_its_square_is_not():
    t = checkpoints(1e6, 60)
    window = (t >= 1e4) & (t <= 1e6)
    one = judge([synthetic_run(lambda t: 0.5 / np.log(t + 1), t=t)], InverseLog(), exponent=0, log_power=-1)
    assert one.label == "tight", one.reason
    assert one.log_power.slope == pytest.approx(-1.0, abs=0.01)  # log(1/log(t+1)) on log log t
    assert one.fit.slope == pytest.approx(loglog_slope(t[window], 1 / np.log(t[window])), abs=0.005)
    squared = judge([synthetic_run(lambda t: 0.5 / np.log(t + 1) ** 2, t=t)], InverseLog(), exponent=0, log_power=-1)
    assert squared.log_power.slope == pytest.approx(-2.0, abs=0.02)
    assert squared.assessment.stated_rate.outcome == NOT_ATTAINED and squared.label == "loose"


# ---------------------------------------------------------------------------------------- (ii) dominant


def test_one_badly_fitting_seed_means_no_term_follows_the_gap():
    # seed 0 is 2/S_1 exactly; seed 1 wobbles by a factor exp(+-0.6) around it, which no non-negative sum of
    # the bound's smooth terms follows. The finding speaks for every seed: the worst misfit decides.
    t = checkpoints(1e6, 60)
    s1 = brute_sums(0.3, 1, t)
    smooth = 2.0 / s1
    wobbly = smooth * np.exp(0.6 * np.sin(3 * np.log(t)))
    alone = [judge([run_of(gap, t, seed=i)], signgd("3/10"), exponent=0.3).assessment.dominant
             for i, gap in enumerate((smooth, wobbly))]
    assert alone[0].outcome == "C 1/S_1" and alone[1].outcome == "none"
    both = judge([run_of(smooth, t), run_of(wobbly, t, seed=1)], signgd("3/10"), exponent=0.3)
    misfit = float(both.assessment.dominant.short.split("misfit ")[1].split("%")[0]) / 100
    assert both.assessment.dominant.outcome == "none" and misfit > MAX_TERM_MISFIT
    assert f"{alone[1].short}" == both.assessment.dominant.short  # the wobbly seed's misfit, not the smooth one's


def test_a_gap_faster_than_every_term_follows_none():
    t = checkpoints(1e6, 60)
    verdict = judge([run_of(0.5 * (t + 2.0) ** -0.95, t)], signgd("3/10"), exponent=0.3)
    dominant = verdict.assessment.dominant
    assert dominant.outcome == "none" and "faster than every term" in dominant.text
    assert verdict.fit.ci_high < min(verdict.envelope.members) - 0.05


# ----------------------------------------------------------------------------- settling, bending bounds


class Bending:
    """A bound that itself bends: slope ``early`` until 1e5, ``late`` after (continuous), one unknown constant."""

    def __init__(self, early: float = -0.2, late: float = -0.6):
        self.early, self.late = early, late

    def bound_shape(self, t):
        return two_regimes(1e5, self.early, self.late, 1.0)(np.asarray(t, dtype=float))


def test_settling_measures_a_bending_bound_on_each_half():
    run = synthetic_run(lambda t: 0.01 * Bending().bound_shape(t))
    window = choose_window(run)
    assert (window.t0, window.t1) == (pytest.approx(1e4, rel=0.2), 1e6)
    t = np.asarray(run.t, dtype=float)[window_mask(run, window)]
    split = math.sqrt(window.t0 * window.t1)
    lower, upper = t <= split, t >= split
    shape = Bending().bound_shape(t)
    found = settling([run], window, t, shape)
    assert found.split_t == pytest.approx(split)
    expected = (loglog_slope(t[lower], shape[lower]), loglog_slope(t[upper], shape[upper]))
    assert found.bound == pytest.approx(expected, abs=1e-12)
    assert found.data == pytest.approx(expected, abs=1e-12)  # the gap is the bound: same halves
    assert found.bound[0] > found.bound[1] + 0.2  # the halves really differ (a check that the case bends)
    assert found.bend == pytest.approx(0.0, abs=1e-12) and not found.unsettled(0.05)


def test_gap_that_bends_with_its_bending_bound_is_tight():
    bound = Bending(-0.3, -0.45)  # a kink of 0.15 (more would widen the one-line fit's bootstrap interval)
    verdict = judge([synthetic_run(lambda t: 0.01 * bound.bound_shape(t))], bound)
    assert verdict.label == "tight", verdict.reason
    assert verdict.settling.bend == pytest.approx(0.0, abs=1e-12)


def test_straight_gap_against_a_bending_bound_is_not_settled():
    # t^-0.375 has the bending bound's average slope over the window but not its bend: each half differs by 0.075
    verdict = judge([synthetic_run(lambda t: 0.01 * t ** -0.375)], Bending(-0.3, -0.45))
    assert abs(verdict.fit.slope - verdict.predicted_local_slope) < 0.05  # the average alone would say tight
    d1, d2 = verdict.settling.differences
    assert verdict.settling.data == pytest.approx((-0.375, -0.375), abs=1e-9)
    assert d1 == pytest.approx(-0.375 - verdict.settling.bound[0], abs=1e-12) and d1 < -0.05 and d2 > 0.05
    assert verdict.label == "inconclusive" and "not settled" in verdict.reason


def test_settling_needs_three_checkpoints_per_half():
    run = synthetic_run(lambda t: 0.01 * t ** -0.5, t=checkpoints(1e6, 60))
    window = choose_window(run)
    t = np.asarray(run.t, dtype=float)[window_mask(run, window)]
    assert settling([run], window, t, t ** -0.5) is not None
    thin = Window(window.t0, window.t1, window.points, "user", window.entry_t, window.floor, None)
    few = t[[0, 1, -2, -1]]
    assert settling([run], thin, few, few ** -0.5, min_points=3) is None


# ------------------------------------------------------------------------------------------ the verdict


@pytest.mark.parametrize("bound, rate, label", [
    (VIOLATED, ATTAINED, "violated"),
    (VIOLATED, UNDECIDED, "violated"),
    (HOLDS, ATTAINED, "tight"),
    (HOLDS, (NOT_ATTAINED, True), "loose"),
    (HOLDS, (NOT_ATTAINED, False), "inconclusive"),  # slower than stated yet within the bound: open
    (HOLDS, UNDECIDED, "inconclusive"),
    (UNDECIDED, ATTAINED, "inconclusive"),
    (UNDECIDED, (NOT_ATTAINED, True), "inconclusive"),
])
def test_verdict_word_from_the_findings(bound, rate, label):
    outcome, faster = rate if isinstance(rate, tuple) else (rate, False)
    assessment = Assessment(Finding(bound, "b"), Finding("x", "d"), Finding(outcome, "r", faster=faster))
    word, reason = assessment.label()
    assert word == label
    if label == "inconclusive":
        assert ("whether the stated rate is attained is open" in reason) == (bound == HOLDS)


@pytest.mark.parametrize("slope, ci, settled, fastest, label", [
    (-0.25, (-0.3, -0.2), None, None, "tight"),
    (-0.3, (-0.35, -0.25), None, None, "tight"),  # fitted = predicted - tolerance (boundary)
    (-0.31, (-0.35, -0.28), None, None, "loose"),
    (-0.19, (-0.26, -0.12), None, None, "inconclusive"),  # slower, but the interval reaches -0.25
    (-0.15, (-0.2, -0.1), None, None, "violated"),
    (-0.6, (-0.8, -0.31), "imprecise", None, "loose"),  # wide interval wholly faster
    (-0.25, (-0.5, 0.0), "imprecise", None, "inconclusive"),
    (-0.4, (-0.45, -0.35), None, -0.5, "tight"),  # inside the envelope [-0.5, -0.25]
    (-0.6, (-0.65, -0.56), None, -0.5, "loose"),
    (-0.5, (-0.55, -0.45), "bends faster", None, "loose"),
    (-0.25, (-0.3, -0.2), "bends", None, "inconclusive"),
])
def test_classify_branches(slope, ci, settled, fastest, label):
    stderr = 0.2 if settled == "imprecise" else 0.02
    halves = {"bends faster": Settling((-0.4, -0.6), (-0.25, -0.25), 1e5),
              "bends": Settling((-0.1, -0.4), (-0.25, -0.25), 1e5)}.get(settled)
    assert classify(fit(slope, stderr, *ci), -0.25, 0.05, halves, fastest)[0] == label
    assert classify(fit(slope, float("inf"), *ci), -0.25, 0.05)[0] == "inconclusive"


# --------------------------------------------------------------------------------------- the phase rule


def nsd_run(t, log_loss, gap, a: str, batch=None, gamma: float = 1.0):
    run = synthetic_run(lambda _: gap, t=t, log_loss=log_loss, margin=np.full(len(t), 0.005), a=a)
    run.config = dataclasses.replace(run.config, family="nsd", batch=batch)
    return run


def test_descent_lemma_entry_is_checked_at_a_equal_one():
    # SignGD at a = 1, gamma = 1, eta0 = 1: past t_1 the loss falls by at least (1/4) sum eta_s >= (1/4) log of
    # the ratio of (t + 2). Until 3e4 it creeps (1e-6 per step, far less); then it falls by the full
    # sum eta_s ~ log((t+2)/(3e4+2)), four times the guarantee. The entry is the plateau's end.
    t = checkpoints(1e6, 80)
    tf = t.astype(float)
    end = 3e4
    log_loss = np.where(tf < end, -5.0 - 1e-6 * tf, -5.0 - 1e-6 * end - np.log((tf + 2) / (end + 2)))
    gap = np.where(tf < end, 0.995, 0.995 * (tf / end) ** -0.25)
    run = nsd_run(t, log_loss, gap, "1")
    expected = int(np.argmax(tf >= end))
    assert entry_index(run) == expected
    # the same loss at 1/8 of the guaranteed rate after the plateau never enters (the last checkpoint, with no
    # interval after it to check, is the only candidate left: no window)
    last = len(t) - 1
    slow = -5.0 - 1e-6 * end - np.log((tf + 2) / (end + 2)) / 32
    slow_run = nsd_run(t, np.where(tf < end, -5.0 - 1e-6 * tf, slow), gap, "1")
    assert entry_index(slow_run) == last
    assert judge([slow_run], PowerLog(0.25)).label == "inconclusive"
    # just above the guarantee (1/3 instead of 1/4 per unit of log (t+2)) enters at the first checkpoint
    steady = -5.0 - np.log(tf + 2) / 3
    assert entry_index(nsd_run(t, steady, gap, "1")) == 0
    below = -5.0 - np.log(tf + 2) / 5
    assert entry_index(nsd_run(t, below, gap, "1")) == last


def test_descent_lemma_applies_to_full_batch_nsd_with_a_up_to_one_only():
    t = checkpoints(1e6, 80)
    tf = t.astype(float)
    creeping = -5.0 - 1e-9 * tf  # monotone, far slower than any descent-lemma guarantee
    gap = 0.5 * tf ** -0.25
    last = len(t) - 1  # the last checkpoint has no interval after it: the only candidate left
    assert entry_index(nsd_run(t, creeping, gap, "1")) == last
    assert entry_index(nsd_run(t, creeping, gap, "3/4")) == last
    assert entry_index(nsd_run(t, creeping, gap, "1", batch=4)) == 0  # mini-batch: other constants
    general = nsd_run(t, creeping, gap, "1")  # the integral bound is the polynomial family's: monotone suffices
    general.config = dataclasses.replace(general.config, a=None, schedule=Schedule.parse("eta0/((t+2)*log(t+2))"))
    assert entry_index(general) == 0


def test_run_too_short_names_a_length_that_gives_a_window():
    run = synthetic_run(lambda t: t ** -0.5, t=checkpoints(5000, 40))
    verdict = judge([run], PowerLog(0.5))
    assert verdict.label == "inconclusive" and "run too short" in verdict.reason
    needed = int(verdict.reason.split("a run of ")[1].split(" steps")[0])
    longer = synthetic_run(lambda t: t ** -0.5, t=checkpoints(needed, 40))
    assert choose_window(longer).problem is None
    assert judge([longer], PowerLog(0.5)).label == "tight"


def test_seeds_whose_windows_do_not_overlap():
    early = Window(1e3, 1e4, 10, "auto", 1.0, 0.0, None)
    late = Window(2e4, 1e6, 10, "auto", 1.0, 0.0, None)
    assert common_window([early, late]).problem == "the seeds' windows do not overlap"
    assert common_window([early, early]).problem is None


def test_frozen_gap_is_decided_by_its_log_range():
    t = checkpoints()
    frozen = judge([synthetic_run(lambda t: 0.5 * (1 + 1e-9 * np.log(t)), t=t)], PowerLog(0.25))
    assert frozen.label == "inconclusive" and frozen.reason.startswith("pre-asymptotic")
    moving = judge([synthetic_run(lambda t: 0.5 * (1 + 1e-4 * np.log(t)), t=t)], PowerLog(0.25))
    assert not moving.reason.startswith("pre-asymptotic") and moving.label == "violated"


def test_descent_lemma_guarantee_scales_with_gamma_and_eta0():
    # gamma = 1/2, eta0 = 4, a = 1: the guarantee is (gamma/4) eta0 = 1/2 per unit of log(t + 2)
    t = checkpoints(1e6, 60)
    tf = t.astype(float)
    gap = 0.5 * tf ** -0.25
    last = len(t) - 1

    def run_at(rate):
        run = nsd_run(t, -5.0 - rate * np.log(tf + 2), gap, "1")
        run.config = dataclasses.replace(run.config, eta0=4.0)
        run.gamma["value"] = 0.5
        return run

    assert entry_index(run_at(0.55)) == 0
    assert entry_index(run_at(0.45)) == last


def test_descent_lemma_counts_steps_from_t_plus_two():
    # eta_s = (s + 2)^-1: from t = 1 to 2 the guarantee is (1/4) log(4/3) = 0.0719. A first interval that falls
    # by 0.9 of it (0.0647, more than (1/4) log(5/4) = 0.0558 of a schedule shifted by one) is short; every later
    # interval falls by twice its guarantee.
    t = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048], dtype=np.int64)
    tf = t.astype(float)
    drops = 2 * 0.25 * np.diff(np.log(tf + 2))
    drops[0] = 0.9 * 0.25 * math.log(4 / 3)
    log_loss = -5.0 - np.concatenate([[0.0], np.cumsum(drops)])
    assert entry_index(nsd_run(t, log_loss, 0.5 * tf ** -0.25, "1")) == 1


def test_descent_lemma_slack_is_relative_to_the_loss():
    # log L near -1e8 carries rounding of ~1e-8; the check allows 1e-10 |log L| = 0.01, so a fall 0.005 short of
    # the guarantee is admitted there, and 0.02 short is not
    t = np.array([1000, 2000, 4000, 8000, 16000], dtype=np.int64)
    tf = t.astype(float)
    guarantee = 0.25 * np.diff(np.log(tf + 2))
    for short, entry in ((0.005, 0), (0.02, len(t) - 1)):
        log_loss = -1e8 - np.concatenate([[0.0], np.cumsum(guarantee - short)])
        assert entry_index(nsd_run(t, log_loss, 0.5 * tf ** -0.25, "1")) == entry, short


def test_unsettled_is_beyond_two_standard_errors():
    assert Settling((-0.5, -0.2), (-0.3, -0.3), 1e5, 0.05).unsettled(0.15)  # 0.3 - 2 * 0.05 = 0.2 > 0.15
    assert not Settling((-0.5, -0.2), (-0.3, -0.3), 1e5, 0.075).unsettled(0.15)  # 0.3 - 0.15 = 0.15, not above
    assert Settling((-0.2, -0.5), (-0.3, -0.3), 1e5, 0.05).unsettled(0.15)  # either direction of the bend


def textbook_slope_stderr(x, y) -> float:
    slope, intercept = np.polyfit(x, y, 1)
    residuals = y - (slope * x + intercept)
    return math.sqrt(float(np.sum(residuals ** 2)) / (len(x) - 2) / float(np.sum((x - x.mean()) ** 2)))


def test_settling_of_several_seeds_averages_slopes_and_pools_their_errors():
    runs = [synthetic_run(lambda t, s=s: 0.01 * t ** s, seed=i, noise=0.05) for i, s in enumerate((-0.3, -0.5, -0.4))]
    window = choose_window(runs[0])
    t_all = np.asarray(runs[0].t, dtype=float)
    t = t_all[window_mask(runs[0], window)]
    members = [t ** -0.2, t ** -0.6]
    found = settling(runs, window, t, t ** -0.4, members=members)
    split = math.sqrt(window.t0 * window.t1)
    halves, errors = [], []
    for lower in (True, False):
        slopes, ses = [], []
        for run in runs:
            mask = window_mask(run, window) & ((t_all <= split) if lower else (t_all >= split))
            x, y = np.log(t_all[mask]), np.log(np.asarray(run.gap)[mask])
            slopes.append(np.polyfit(x, y, 1)[0])
            ses.append(textbook_slope_stderr(x, y))
        halves.append(np.mean(slopes))
        errors.append(np.sum(np.square(ses)) / len(runs) ** 2)  # variance of a mean of independent slopes
    assert found.data == pytest.approx(tuple(halves), abs=1e-12)
    assert found.bend_stderr == pytest.approx(math.sqrt(sum(errors)), rel=1e-9)
    assert found.fastest == pytest.approx((-0.6, -0.6), abs=1e-12)  # the envelope's ends on each half
    assert found.slowest == pytest.approx((-0.2, -0.2), abs=1e-12)
    plain = settling(runs, window, t, t ** -0.4)
    assert plain.fastest is None and plain.slowest is None


def test_settling_works_with_exactly_three_checkpoints_per_half():
    t = np.array([10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000], dtype=np.int64)
    run = synthetic_run(lambda t: 0.01 * t ** -0.5, t=t)
    window = Window(1e4, 1e6, 7, "user", 1.0, 1e-10, None)
    tf = t.astype(float)
    found = settling([run], window, tf, tf ** -0.5)  # halves t <= 1e5 and t >= 1e5: three checkpoints each
    assert found is not None and found.data == pytest.approx((-0.5, -0.5), abs=1e-12)
    assert settling([run], window, tf[2:], tf[2:] ** -0.5) is None  # two at or below the split


# boundaries of the envelope rule with dyadic numbers: slowest -1/4, fastest -1/2, tolerance 1/8 (exact sums)
@pytest.mark.parametrize("slope, stderr, ci, settled, label", [
    (-0.25, 0.125, (-0.5, 0.0), None, "tight"),  # error = tolerance is precise
    (-0.875, 0.25, (-1.0, -0.625), None, "inconclusive"),  # imprecise, ci_high = fastest - tol: not faster
    (-0.875, 0.25, (-1.0, -0.75), None, "loose"),  # imprecise, interval below fastest - tol
    (-0.375, 0.03125, (-0.4, -0.35), None, "tight"),  # inside the envelope (reason checked below)
    (-0.125, 0.03125, (-0.2, -0.1), None, "tight"),  # slope = slowest + tol: still tight
    (-0.625, 0.03125, (-0.7, -0.6), None, "tight"),  # slope = fastest - tol: still tight
    (-0.6875, 0.03125, (-0.75, -0.65), None, "loose"),
    (-0.0625, 0.03125, (-0.25, 0.0), None, "inconclusive"),  # ci_low = slowest: not excluded
    (-0.0625, 0.03125, (-0.2, 0.0), None, "violated"),
    (-0.125, 0.25, (-0.2, 0.0), None, "inconclusive"),  # imprecise, slope - slowest = tol: not slower
    (-0.1, 0.25, (-0.2, 0.0), None, "violated"),  # imprecise but slower with the interval excluding
    (-0.75, 0.03125, (-0.8, -0.7), (-1.0, -0.75), "loose"),  # bending, faster than fastest - tol on both halves
    (-0.75, 0.03125, (-0.8, -0.7), (-0.875, -0.625), "inconclusive"),  # a half at fastest - tol exactly
])
def test_classify_on_its_boundaries(slope, stderr, ci, settled, label):
    halves = None if settled is None else Settling(settled, (-0.25, -0.25), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.25))
    if settled is not None:
        assert halves.unsettled(0.125)  # the rows test the bending branch
    got, reason = classify(fit(slope, stderr, *ci), -0.25, 0.125, halves, -0.5)
    assert got == label, reason
    if slope == -0.375:
        assert "fitted -0.375" in reason and "[-0.500, -0.250]" in reason


def test_classify_reasons_carry_their_numbers():
    _, reason = classify(fit(-0.25, 0.01, -0.27, -0.23), -0.25, 0.05)
    assert reason == "fitted slope within 0.05 of the bound's slope -0.250 (difference +0.000)"
    _, reason = classify(fit(-0.5, 0.01, -0.52, -0.48), -0.25, 0.05)
    assert "by 0.250 > 0.05" in reason and "(no ratio of the constants attains it)" in reason
    _, reason = classify(fit(-0.1, 0.01, -0.12, -0.08), -0.25, 0.05)
    assert "slower than the bound's slope -0.250 by 0.150 > 0.05" in reason and "[-0.120, -0.080]" in reason
    _, reason = classify(fit(-0.19, 0.01, -0.26, -0.12), -0.25, 0.05)
    assert reason.startswith("slower than the bound's slope -0.250 by 0.060 but")


def test_bound_finding_texts_and_cells_carry_their_numbers():
    envelope = Envelope(-0.25, -0.5, (-0.25, -0.5))
    cell = "95% CI [-0.375, -0.125] vs slowest term -0.250"
    holds = bound_finding(fit(-0.25, 0.0625, -0.375, -0.125), envelope, 0.125)
    assert holds.cell() == f"{HOLDS}: {cell}" and "upper 95% limit -0.125 <= -0.250 + 0.125" in holds.text
    violated = bound_finding(fit(-0.1, 0.01, -0.2, 0.0), envelope, 0.125)
    assert violated.cell() == f"{VIOLATED}: 95% CI [-0.200, +0.000] vs slowest term -0.250"
    assert violated.text.startswith("slower than the slowest term by 0.150 > 0.125")
    open_ = bound_finding(fit(-0.125, 0.01, -0.2, 0.0), envelope, 0.125)
    assert open_.cell().startswith(f"{UNDECIDED}: 95% CI") and "reaches above -0.250 + 0.125" in open_.text
    missing = bound_finding(fit(-0.5, float("nan"), float("nan"), float("nan")), envelope, 0.125)
    assert missing.cell().startswith(f"{UNDECIDED}: 95% CI")
    bending = Settling((-0.75, -0.125), (-0.25, -0.25), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.25))
    held = bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, bending)
    assert held.cell().startswith(f"{HOLDS}: 95% CI") and "still bending: -0.750 then -0.125" in held.text
    # while bending, the window's upper limit at slowest + tolerance exactly still holds
    assert bound_finding(fit(-0.25, 0.01, -0.3, -0.125), envelope, 0.125, bending).outcome == HOLDS
    later = Settling((-0.75, -0.12), (-0.25, -0.25), 1e5, 0.0, (-0.5, -0.5), (-0.25, -0.25))
    unsettled = bound_finding(fit(-0.5, 0.01, -0.52, -0.48), envelope, 0.125, later)
    assert unsettled.cell().startswith(f"{UNDECIDED}: 95% CI") and "run longer" in unsettled.text


def test_settling_counts_the_split_checkpoint_in_both_halves():
    # window [1e4, 1e6], split at 1e5 exactly: 1e4, 5e4, 1e5 below and 1e5, 2e5, 1e6 above -- three each only
    # because the checkpoint on the split belongs to both halves
    t = np.array([10_000, 50_000, 100_000, 200_000, 1_000_000], dtype=np.int64)
    tf = t.astype(float)
    run = synthetic_run(lambda t: two_regimes(1e5, -0.25, -0.75)(t), t=t)
    window = Window(1e4, 1e6, 5, "user", 1.0, 1e-10, None)
    found = settling([run], window, tf, tf ** -0.5)
    assert found is not None and found.split_t == 1e5
    assert found.data == pytest.approx((-0.25, -0.75), abs=1e-12)  # each half's own law, the split point in both


def test_descent_lemma_on_a_two_checkpoint_run():
    t = np.array([1000, 2000], dtype=np.int64)
    tf = t.astype(float)
    guarantee = 0.25 * math.log(2002 / 1002)
    short = nsd_run(t, np.array([-5.0, -5.0 - 0.5 * guarantee]), 0.5 * tf ** -0.25, "1")
    assert entry_index(short) == 1  # the one interval falls short: only the last checkpoint is left
    enough = nsd_run(t, np.array([-5.0, -5.0 - 2 * guarantee]), 0.5 * tf ** -0.25, "1")
    assert entry_index(enough) == 0
