"""The Thm 4.9 judge's decision rule (rates.judge.limit_direction) on series whose answer is known by hand.

Independent expectations: noise-free power laws ``g = c t^s``, whose least-squares slope is ``s`` and whose fitted
level at ``T`` is ``c T^s`` exactly (every bootstrap replicate of points on a line is that line), placed on either
side of each threshold of the rule (the tolerance, ``tol / 1000``, ``10 tol``, the plateau slope -0.05, the
rounding floor 1e-13, six checkpoints); the window start ``max(T / 100, 10 n, 1)`` written out; the seed interval
``mean +- t_{0.975, 1} sd / sqrt 2`` with Student's quantile 12.7062 from the table; ``cos(M, W*)``,
``1 - margin(M) / gamma`` and ``gamma - margin(M)`` computed by hand for 2 x 2 matrices. No engine run: each
test takes milliseconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rates.judge.limit_direction import (
    CONVERGES,
    DOES_NOT_CONVERGE,
    INCONCLUSIVE,
    DirectionVerdict,
    classify,
    fit_decay,
    judge_runs,
)
from rates.numeric.measures import BIAS_KEY
from rates.numeric.run_config import config_from_json
from rates.numeric.trajectory import Run

T = np.array([10.0, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000])
T12 = np.array([2.0, 5, *T])  # twelve checkpoints: the last five and the points from the sixth differ


def law(c: float, s: float, t=T) -> np.ndarray:
    return c * t**s


@pytest.mark.parametrize("c, s", [(0.5, -1.0), (3.0, -0.5), (2e-3, 0.0)])
def test_a_noise_free_power_law_is_fitted_exactly(c, s):
    fit = fit_decay([T], [law(c, s)], 10.0)
    assert fit.slope == pytest.approx(s, abs=1e-12)
    assert fit.level == pytest.approx(c * 1e4**s, rel=1e-10)  # the fitted 1 - cos at T = 1e4
    # points on a line resample to the same line: the intervals collapse onto the values
    assert fit.slope_low == pytest.approx(s, abs=1e-9) and fit.slope_high == pytest.approx(s, abs=1e-9)
    assert fit.level_low == pytest.approx(fit.level, rel=1e-9) and fit.level_high == pytest.approx(fit.level, rel=1e-9)
    assert fit.slope_stderr == pytest.approx(0, abs=1e-9)
    assert (fit.t_start, fit.t_end, fit.points, fit.seeds) == (10.0, 1e4, 10, 1)


def test_a_narrow_window_is_fitted_and_the_bootstrap_is_seeded():
    # log t spans 0.095 over [1000, 1100]: a small but non-zero spread still gives the exact slope
    t = np.linspace(1000, 1100, 10)
    assert fit_decay([t], [law(2.0, -0.7, t)], 1000.0).slope == pytest.approx(-0.7, abs=1e-9)
    # one point off the line (the first, ten times too high): replicates that draw it are steeper, those that
    # miss it (a third of them) are exact, so the interval runs from below -1 up to -1
    g = law(1.0, -1.0)
    g[0] *= 10
    fit = fit_decay([T], [g], 10.0)
    assert fit.slope_high == pytest.approx(-1.0, abs=1e-9) and fit.slope_low < -1.05
    # with a second, exact seed, a quarter of the replicates average two draws of this seed's replicates, whose own
    # 2.5% point is below -1.35: the two-seed interval reaches below -1.25 (pairing replicate i of each seed with
    # replicate i of the other; averaging over all replicates instead would stop near their mean, -1.15)
    assert fit.slope_low < -1.35
    two = fit_decay([T, T], [g, law(1.0, -1.0)], 10.0)
    assert two.slope_low < -1.25 and two.slope_high == pytest.approx(-1.0, abs=1e-9)
    # the same data give the same interval again (a seeded bootstrap), a different seed a different one
    again = fit_decay([T], [g], 10.0)
    assert (again.slope_low, again.level_low, again.slope_stderr) == (fit.slope_low, fit.level_low, fit.slope_stderr)
    assert fit_decay([T], [g], 10.0, seed=1).slope_stderr != fit.slope_stderr


def test_a_window_of_one_distinct_step_has_no_slope():
    from rates.judge.limit_direction import _ols

    # every bootstrap replicate that draws one checkpoint over and over has no spread in log t: no slope (nan)
    slope, intercept = _ols(np.full(4, 2.0), np.array([1.0, 2.0, 3.0, 4.0]))
    assert np.isnan(slope) and np.isnan(intercept)
    slope, intercept = _ols(np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]]), np.array([[1.0, 3.0, 5.0], [1.0, 2.0, 3.0]]))
    assert slope[0] == 2.0 and intercept[0] == 1.0 and np.isnan(slope[1])


def test_replicates_without_a_slope_are_left_out_of_the_intervals():
    # five checkpoints at one step and one at another: a third of the replicates ((5/6)^6) draw only the first
    # step and have no slope; the others all lie on the one line through the two steps, slope -1 exactly
    t = np.array([100.0] * 5 + [1000.0])
    fit = fit_decay([t], [law(1.0, -1.0, t)], 100.0)
    assert fit.slope == pytest.approx(-1.0, abs=1e-12)
    assert (fit.slope_low, fit.slope_high) == pytest.approx((-1.0, -1.0), abs=1e-9)
    assert fit.level_low == pytest.approx(1e-3, rel=1e-9) and fit.slope_stderr == pytest.approx(0, abs=1e-9)


def test_the_fit_window_starts_at_t_start_inclusive_and_needs_six_points_above_the_rounding_floor():
    # t_start = 500 keeps 500 .. 10000: five points, too few; t_start = 200 keeps exactly six
    assert fit_decay([T], [law(1.0, -1.0)], 500.0) is None
    six = fit_decay([T], [law(1.0, -1.0)], 200.0)
    assert six is not None and six.points == 6 and six.t_start == 200.0
    # a point at exactly the floor (1e-13) is rounding, one just above it is a measurement
    g = law(1.0, -1.0)
    g[4] = 1e-13
    assert fit_decay([T], [g], 200.0) is None
    g[4] = 1.0000001e-13
    assert fit_decay([T], [g], 200.0).points == 6


def test_two_seeds_average_their_slopes_and_levels_and_end_at_the_shorter_run():
    longer = np.append(T, 20000.0)
    fit = fit_decay([T, longer], [law(1.0, -1.0), law(2.0, -0.5, longer)], 10.0)
    assert fit.slope == pytest.approx(-0.75, abs=1e-12)  # (-1 - 0.5) / 2
    assert fit.t_end == 1e4  # the shorter seed's last checkpoint
    assert fit.level == pytest.approx(math.exp((math.log(1e-4) + math.log(2e-2)) / 2), rel=1e-10)
    assert (fit.points, fit.seeds) == (10, 2)
    # resampling seeds: each replicate averages two draws of {-1, -0.5}, so its slope is -1, -0.75 or -0.5, each
    # with probability 1/4, 1/2, 1/4; the 95% interval spans the extremes
    assert fit.slope_low == pytest.approx(-1.0, abs=1e-9) and fit.slope_high == pytest.approx(-0.5, abs=1e-9)
    assert fit.slope_stderr == pytest.approx(math.sqrt(0.25**2 / 2), rel=0.1)  # sd of the three-point law


def test_a_run_with_fewer_than_six_checkpoints_in_its_window_gets_no_verdict():
    label, reason, fit = classify([T], [law(1.0, -1.0)], 500.0)  # five checkpoints from t = 500
    assert label == INCONCLUSIVE and "too short: fewer than 6 checkpoints in the window from t = 500" in reason
    assert fit is None
    label, _, fit = classify([T], [law(1e-6, -1.0)], 200.0)  # six: judged
    assert label == CONVERGES and fit.points == 6
    # one seed too short is enough to withhold the verdict
    label, reason, _ = classify([T, T[:5]], [law(1e-6, -1.0), law(1e-6, -1.0, T[:5])], 10.0)
    assert label == INCONCLUSIVE and "too short" in reason


def test_rounding_level_over_every_seeds_tail_converges_without_a_fit():
    at_floor = law(1.0, -1.0, T12)
    at_floor[-5:] = 1e-13  # exactly the floor over the last five checkpoints
    label, reason, fit = classify([T12, T12], [at_floor, at_floor], 2.0)
    assert label == CONVERGES and fit is None and "float64 rounding" in reason
    # one seed above the floor in its tail: the rule fits the seeds instead (five points above the floor: too few)
    above = at_floor.copy()
    above[-1] = 2e-13
    label, reason, fit = classify([T12, T12], [at_floor, above], 2.0)
    assert label == CONVERGES and fit is not None and "still falling" in reason
    # a tail at the floor but for its first point is no rounding-level run: it is fitted (six points above the floor)
    early = at_floor.copy()
    early[-5] = 1e-12
    label, reason, fit = classify([T12], [early], 2.0)
    assert fit is not None and fit.points == 8 and "float64 rounding" not in reason
    # seven points at the floor and five above it (the first four and the last): too few to fit
    few = law(1.0, -1.0, T12)
    few[4:] = 1e-13
    few[-1] = 2e-13
    label, reason, fit = classify([T12], [few], 2.0)
    assert (
        fit is None
        and label == INCONCLUSIVE
        and "fewer than 6 checkpoints after t = 2 lie above the rounding floor 1e-13" in reason
    )


def test_below_the_tolerance_converges_when_still_falling_or_below_a_thousandth_of_it():
    tol = 1e-3
    # falling, level 1e-4 at T: converges
    label, reason, fit = classify([T], [law(1.0, -1.0)], 10.0, tol)
    assert label == CONVERGES and reason == (
        "1 - cos(W_T, M) = 0.0001 (95% CI [0.0001, 0.0001]) at T = 1e+04, slope -1.000 (95% CI [-1.000, -1.000]): "
        "below the tolerance 0.001 and still falling"
    )
    # flat at 9e-7 <= tol / 1000 = 1e-6: converges though not falling
    label, _, fit = classify([T], [law(9e-7, 0.0)], 10.0, tol)
    assert label == CONVERGES and fit.slope == 0
    # flat at 2e-6: below tol, above tol / 1000, not falling: not clearly below, not clearly away
    label, reason, _ = classify([T], [law(2e-6, 0.0)], 10.0, tol)
    assert label == INCONCLUSIVE and "not clearly below 0.001 nor clearly away from it" in reason
    # falling but at 2e-3 > tol at T: not yet
    label, reason, _ = classify([T], [law(20.0, -1.0)], 10.0, tol)
    assert label == INCONCLUSIVE and "still falling but not yet below the tolerance" in reason
    # the level exactly at the tolerance counts as below it (<=)
    label, _, fit = classify([T], [law(10.0, -1.0)], 10.0, tol)
    assert fit.level_high == pytest.approx(tol, rel=1e-12)
    assert label == (CONVERGES if fit.level_high <= tol else INCONCLUSIVE)


def test_does_not_converge_only_above_ten_times_the_tolerance_and_flatter_than_the_plateau_slope():
    tol = 1e-3
    assert classify([T], [law(0.2, 0.0)], 10.0, tol)[0] == DOES_NOT_CONVERGE
    label, reason, _ = classify([T], [law(0.011, 0.0)], 10.0, tol)  # 0.011 > 10 tol = 0.01
    assert label == DOES_NOT_CONVERGE and "stays above 10 x the tolerance 0.001" in reason
    assert "slower than t^-0.05" in reason
    # 0.009 < 0.01: not clearly away; its least-squares slope is 0 up to rounding (-1e-31 here), and the time to
    # reach the tolerance at such a slope is past float64's range, said so rather than overflowing
    label, reason, _ = classify([T], [law(0.009, 0.0)], 10.0, tol)
    assert label == INCONCLUSIVE and ("beyond t = 1e300" in reason or "nor clearly away" in reason), reason
    # slope -0.04 > -0.05: a plateau; slope -0.06: still falling, with the time it would take
    c = 0.2 / 1e4**-0.04
    assert classify([T], [law(c, -0.04)], 10.0, tol)[0] == DOES_NOT_CONVERGE
    c = 0.2 / 1e4**-0.06
    label, reason, fit = classify([T], [law(c, -0.06)], 10.0, tol)
    reach = 1e4 * (tol / 0.2) ** (1 / -0.06)  # g(t) = 0.2 (t / 1e4)^-0.06 meets 1e-3 there
    assert label == INCONCLUSIVE and f"near t = {reach:.3g})" in reason
    assert fit.level == pytest.approx(0.2, rel=1e-10)
    # rising away from M is not convergence either
    assert classify([T], [law(0.02, 0.1)], 10.0, tol)[0] == DOES_NOT_CONVERGE
    # rising, but between tol and 10 tol: neither clearly away nor falling
    label, reason, _ = classify([T], [law(0.005 / 1e4**0.1, 0.1)], 10.0, tol)
    assert label == INCONCLUSIVE and "nor clearly away" in reason and "still falling" not in reason
    # falling so slowly (t^-1e-6) that reaching tol lies past float64's range: said so, no overflow
    label, reason, _ = classify([T], [law(0.005 / 1e4**-1e-6, -1e-6)], 10.0, tol)
    assert label == INCONCLUSIVE and "still falling" in reason and "it would be beyond t = 1e300)" in reason


def test_the_tolerance_scales_every_threshold():
    # the same flat 0.05 series: refuted at tol 1e-3 (0.05 > 0.01), not clearly away at tol 1e-2 (0.05 < 0.1)
    assert classify([T], [law(0.05, 0.0)], 10.0, 1e-3)[0] == DOES_NOT_CONVERGE
    assert classify([T], [law(0.05, 0.0)], 10.0, 1e-2)[0] == INCONCLUSIVE
    # level 5e-3 at T, falling: above tol 1e-3, below tol 1e-2
    assert classify([T], [law(50.0, -1.0)], 10.0, 1e-3)[0] == INCONCLUSIVE
    assert classify([T], [law(50.0, -1.0)], 10.0, 1e-2)[0] == CONVERGES


# ----------------------------------------------------------------------------------------- judge_runs


M = np.array([[1.0, 0.0], [0.0, 1.0]])
W_STAR = np.array([[1.0, 1.0], [0.0, 1.0]])


def per_sample_run(
    g, t=T, cosine_max=None, margin_error=None, counts=(6, 3, 1), seed=0, unique=True, with_margins=True
) -> Run:
    """A per-sample run whose ``1 - cos(W_t, M)`` is ``g``, with max-norm references in closed form."""
    t = np.round(np.asarray(t, dtype=float))
    config = {"algo": "signsgd", "norm": "max", "a": "1/2", "eta0": 1.0, "steps": int(t[-1]), "seed": seed, "batch": 1}
    bias = {"matrix": M.tolist(), "class_counts": list(counts)}
    if with_margins:
        bias["margins"] = {"max": 0.6}
    max_ref = {"matrix": W_STAR.tolist(), "gamma": 0.8, "unique": unique, "note": "a face of solutions"}
    cosines = {
        BIAS_KEY: 1.0 - np.asarray(g, dtype=float),
        "max": np.full(len(t), 0.9) if cosine_max is None else np.asarray(cosine_max, dtype=float),
    }
    errors = {"max": np.full(len(t), 0.25) if margin_error is None else np.asarray(margin_error, dtype=float)}
    return Run(
        config=config_from_json(config),
        gamma={"value": 1.0, "norm": "max"},
        t=t.astype(np.int64),
        gap=np.linspace(0.5, 0.3, len(t)),
        margin=np.zeros(len(t)),
        log_loss=-np.log(t),
        norm=t,
        cosines=cosines,
        margin_errors=errors,
        references={BIAS_KEY: bias, "max": max_ref},
    )


def test_the_window_is_the_last_two_decades_and_no_earlier_than_ten_epochs():
    t = np.round(np.geomspace(10, 1e6, 41))
    # T / 100 = 1e4 > 10 n = 100: the fit starts at 1e4 (the points t >= 1e4 of a 41-point grid: 17)
    verdict = judge_runs([per_sample_run(law(1.0, -1.0, t), t=t, counts=(6, 3, 1))])
    assert verdict.decay.t_start == pytest.approx(1e4) and verdict.decay.points == int(np.sum(t >= 1e4 * (1 - 1e-12)))
    # 10 n = 1e5 > T / 100: ten epochs of n = 1e4 samples
    verdict = judge_runs([per_sample_run(law(1.0, -1.0, t), t=t, counts=(5000, 5000))])
    assert verdict.decay.t_start == pytest.approx(1e5)
    # the larger n of two seeds decides
    runs = [
        per_sample_run(law(1.0, -1.0, t), t=t, counts=(1, 1)),
        per_sample_run(law(1.0, -1.0, t), t=t, counts=(3000, 2000), seed=1),
    ]
    assert judge_runs(runs).decay.t_start == pytest.approx(5e4)
    # a run with no samples counted and T = 50 starts at t = 1, not at T / 100 = 0.5
    small = np.arange(1.0, 51.0)
    verdict = judge_runs([per_sample_run(law(1.0, -1.0, small), t=small, counts=(0,))])
    assert verdict.decay.t_start == 1.0 and verdict.decay.points == 50
    # a run that records no class counts counts as one sample: ten epochs are t = 10
    run = per_sample_run(law(1.0, -1.0, small), t=small)
    del run.references[BIAS_KEY]["class_counts"]
    assert judge_runs([run]).decay.t_start == 10.0
    # and the shorter of two runs sets T
    short = t[t <= 1e5]
    runs = [
        per_sample_run(law(1.0, -1.0, t), t=t, counts=(1, 1)),
        per_sample_run(law(1.0, -1.0, short), t=short, counts=(1, 1), seed=1),
    ]
    assert judge_runs(runs).decay.t_start == pytest.approx(1e3)


def test_a_users_window_replaces_the_automatic_one_at_both_ends():
    t = np.round(np.geomspace(10, 1e6, 41))
    g = law(1.0, -1.0, t)
    g[t > 1e5] = 0.5  # beyond the user's window the run would look refuted
    verdict = judge_runs([per_sample_run(g, t=t)], window=(1e3, 1e5))
    assert verdict.label == CONVERGES and verdict.decay.t_start == 1e3
    assert verdict.decay.t_end == 1e5 and verdict.decay.points == 17  # 1e3 .. 1e5, both ends in
    assert judge_runs([per_sample_run(g, t=t)]).label != CONVERGES


def test_the_users_tolerance_reaches_the_rule():
    # flat at 0.02: refuted at the default 1e-3 (0.02 > 10 tol), not clearly away at 0.05 (0.02 < 10 tol)
    verdict = judge_runs([per_sample_run(law(0.02, 0.0))])
    assert verdict.label == DOES_NOT_CONVERGE and verdict.reason.startswith("1 - cos(W_T, M) = 0.02 ")
    verdict = judge_runs([per_sample_run(law(0.02, 0.0))], tolerance=0.05)
    assert verdict.label == INCONCLUSIVE and verdict.tolerance == 0.05 and "0.05" in verdict.reason


@pytest.mark.parametrize("tolerance", [0.0, 1.0, -0.1, 2.0])
def test_a_tolerance_outside_the_open_unit_interval_is_refused(tolerance):
    with pytest.raises(ValueError, match=r"^tolerance must be in \(0, 1\)$"):
        judge_runs([per_sample_run(law(1.0, -1.0))], tolerance=tolerance)


def test_a_run_without_a_cosine_to_M_gets_no_verdict_with_the_reason():
    run = per_sample_run(law(1.0, -1.0))
    del run.cosines[BIAS_KEY]
    verdict = judge_runs([run, per_sample_run(law(1.0, -1.0), seed=1)], tolerance=0.01)
    assert verdict.label == INCONCLUSIVE and verdict.decay is None and verdict.tolerance == 0.01
    assert verdict.reason == (
        "no verdict, because the trajectory records no cosine to M (written before rates.numeric.measures "
        "existed, or the data are not orthogonal scale-skewed)"
    )
    run = per_sample_run(law(1.0, -1.0))
    del run.references[BIAS_KEY]
    assert "records no cosine to M" in judge_runs([run]).reason


def test_the_reported_numbers_are_the_seed_intervals_and_the_limits_of_thm_4_9():
    cos_values = ([0.9] * 9 + [0.9], [0.9] * 9 + [0.8])
    runs = [
        per_sample_run(law(1.0 + i, -1.0), cosine_max=cos_values[i], margin_error=[0.3] * 9 + [0.1 + 0.1 * i], seed=i)
        for i in range(2)
    ]
    verdict = judge_runs(runs)
    measured, limit = verdict.cosines["max"]
    # two seeds: mean 0.85, sd 0.1 / sqrt 2, half-width t_{0.975,1} sd / sqrt 2 = 12.7062 * 0.05
    assert measured.value == pytest.approx(0.85) and measured.low == pytest.approx(0.85 - 12.7062 * 0.05, rel=1e-5)
    assert measured.high == 1.0 and "95% t-interval over 2 seeds" in measured.method  # a cosine is at most 1
    assert limit == pytest.approx(2 / math.sqrt(6))  # cos(I, [[1, 1], [0, 1]]) = 2 / (sqrt 2 sqrt 3)
    error, error_limit = verdict.margin_errors["max"]
    assert error.value == pytest.approx(0.15) and error.high == pytest.approx(0.15 + 12.7062 * 0.05, rel=1e-5)
    assert error_limit == pytest.approx(1 - 0.6 / 0.8)  # 1 - margin(M) / gamma
    gap, gap_limit = verdict.gap
    assert gap.value == pytest.approx(0.3) and gap_limit == pytest.approx(1.0 - 0.6)  # gamma - margin(M)
    bias, bias_limit = verdict.cosines[BIAS_KEY]
    # 1 - cos(W_T, M) is 1e-4 and 2e-4: mean 0.99985, half-width 12.7062 * 0.00005 reaches past 1, capped there
    assert bias_limit == 1.0 and bias.value == pytest.approx(1 - 1.5e-4) and bias.high == 1.0
    assert bias.low == pytest.approx(1 - 1.5e-4 - 12.7062 * 5e-5, rel=1e-6) and verdict.tolerance == 1e-3
    assert verdict.notes == []  # W*_max unique: no caveat


def test_one_seed_reports_the_range_of_its_last_five_checkpoints():
    run = per_sample_run(law(1.0, -1.0, T12), t=T12, cosine_max=[0.1] * 5 + [0.05, 0.99, 0.6, 0.7, 0.95, 0.8, 0.65])
    measured, _ = judge_runs([run]).cosines["max"]
    assert (measured.value, measured.low, measured.high) == (0.65, 0.6, 0.95)
    assert "1 seed: range over the last 5 checkpoints" in measured.method


def test_a_possibly_non_unique_reference_is_noted_and_a_tested_one_says_so():
    notes = judge_runs([per_sample_run(law(1.0, -1.0), unique=None)]).notes
    assert notes == ["W*_max: a face of solutions"]
    run = per_sample_run(law(1.0, -1.0), unique=None)
    del run.references["max"]["note"]
    assert judge_runs([run]).notes == ["W*_max: possibly non-unique"]
    notes = judge_runs([per_sample_run(law(1.0, -1.0), unique=False)]).notes
    assert notes == ["W*_max: a face of solutions (not unique: tested)"]


def test_without_the_margins_of_M_no_margin_limit_and_no_gap_are_claimed():
    runs = [per_sample_run(law(1.0, -1.0)), per_sample_run(law(1.0, -1.0), seed=1, with_margins=False)]
    verdict = judge_runs(runs)
    assert verdict.margin_errors == {} and verdict.gap is None and "max" in verdict.cosines


def test_a_skipped_reference_is_noted_with_its_reason():
    run = per_sample_run(law(1.0, -1.0))
    run.references["spectral"] = {"skipped": "past its 30 s budget"}
    verdict = judge_runs([run])
    assert "W*_spectral: past its 30 s budget" in verdict.notes and "spectral" not in verdict.cosines


def test_the_outcome_words_follow_the_label():
    assert DirectionVerdict(CONVERGES, "", 1e-3).outcome == "reproduced"
    refuted = DirectionVerdict(DOES_NOT_CONVERGE, "", 1e-3)
    assert refuted.outcome == "refuted" and refuted.refuted
    undecided = DirectionVerdict(INCONCLUSIVE, "", 1e-3)
    assert undecided.outcome == "inconclusive" and not undecided.refuted
