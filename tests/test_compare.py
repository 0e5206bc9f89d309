"""The comparator on synthetic trajectories whose laws are known in closed form.

Each expectation is independent of the code under test: the law that generated the data, the derivative
bounds of a log factor (``d log(t^{-r} log t) / d log t = -r + 1/log t``), or the statement of docs/theory.md
section 4 (one-sided verdicts).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rates.errors import InputError
from rates.judge.compare import (
    choose_window,
    classify,
    entry_index,
    fit_log_power,
    fit_slope,
    judge,
    parse_window,
    solver_floor,
)
from rates.numeric.run_config import config_from_json
from rates.numeric.trajectory import Run


def checkpoints(t_max: float = 1e6, count: int = 60) -> np.ndarray:
    return np.unique(np.round(np.logspace(0, math.log10(t_max), count)).astype(np.int64))


def synthetic_run(gap, t=None, seed: int = 0, noise: float = 0.0, gamma: float = 1.0, accuracy: float = 1e-12,
                  log_loss=None, margin=None, algo: str = "signgd", a: str = "3/4") -> Run:
    """A Run whose gap follows ``gap(t)`` times log-normal noise of relative size ``noise``."""
    t = checkpoints() if t is None else np.asarray(t)
    rng = np.random.default_rng(seed)
    values = np.asarray(gap(t.astype(float)), dtype=float) * np.exp(noise * rng.standard_normal(len(t)))
    loss = -np.sqrt(t.astype(float)) if log_loss is None else np.asarray(log_loss, dtype=float)
    marg = gamma - values if margin is None else np.asarray(margin, dtype=float)
    config = {"algo": algo, "norm": "max", "a": a, "eta0": 1.0, "steps": int(t[-1]), "seed": seed}
    gamma_record = {"value": gamma, "norm": "max", "solver": "closed form", "accuracy": accuracy}
    return Run(config=config_from_json(config), gamma=gamma_record,
               t=t, gap=values, margin=marg, log_loss=loss, norm=t.astype(float), margins={})


class PowerLog:
    """Closed-form bound ``t^{-r} (log t)^k`` (k = 0: a pure power)."""

    def __init__(self, r: float, k: int = 0):
        self.r, self.k = r, k

    def bound_shape(self, t):
        t = np.asarray(t, dtype=float)
        return t ** -self.r * np.log(t) ** self.k if self.k else t ** -self.r


def test_power_log_law_with_noise_is_tight_against_its_own_shape():
    run = synthetic_run(lambda t: 3 * t ** -0.4 * np.log(t + 1), noise=0.02)
    verdict = judge([run], PowerLog(0.4, 1), exponent=0.4, log_power=1)
    assert verdict.label == "tight"
    lo, hi = verdict.window.t0, verdict.window.t1
    assert hi == pytest.approx(1e6, rel=1e-6) and lo == pytest.approx(1e4, rel=0.2)  # last two decades
    # The local slope of t^-0.4 log t lies between its derivative at the window's ends: -0.4 + 1/log t.
    assert -0.4 + 1 / math.log(hi) <= verdict.predicted_local_slope <= -0.4 + 1 / math.log(lo)
    assert abs(verdict.fit.slope - verdict.predicted_local_slope) < 0.02
    assert 0 < verdict.fit.stderr < 0.02 and verdict.fit.ci_low < verdict.fit.slope < verdict.fit.ci_high
    assert verdict.log_power.slope == pytest.approx(1.0, abs=0.25)  # the law's log power


def test_log_factor_against_pure_power_bound_is_a_violation():
    # t^-0.4 log t is not O(t^-0.4): comparing with the bound's shape (not only -r) must say so.
    run = synthetic_run(lambda t: 3 * t ** -0.4 * np.log(t + 1), noise=0.02)
    assert judge([run], PowerLog(0.4)).label == "violated"


def test_slow_decay_against_quarter_bound_is_violated():
    run = synthetic_run(lambda t: 2 * t ** -0.1, noise=0.05)
    verdict = judge([run], PowerLog(0.25), exponent=0.25)
    assert verdict.label == "violated"
    assert verdict.fit.slope == pytest.approx(-0.1, abs=0.02)
    assert verdict.fit.ci_low > verdict.predicted_local_slope == pytest.approx(-0.25, abs=1e-12)


def test_fast_decay_is_loose_not_violated():
    run = synthetic_run(lambda t: t ** -0.7, noise=0.02)
    verdict = judge([run], PowerLog(0.3))
    assert verdict.label == "loose" and verdict.fit.slope == pytest.approx(-0.7, abs=0.02)


def test_gap_hitting_the_floor_early_is_inconclusive():
    # floor = 100 * 1e-12 * 1 = 1e-10; the gap 1e-9/t reaches it at t = 10, then is solver noise.
    def gap(t):
        return np.maximum(1e-9 / t, 1e-12 * (1 + np.abs(np.sin(t))))

    run = synthetic_run(gap)
    assert solver_floor(run) == pytest.approx(1e-10)
    verdict = judge([run], PowerLog(1.0))
    assert verdict.label == "inconclusive" and "floor" in verdict.reason


def test_floor_late_truncates_the_window_and_keeps_the_law():
    # floor = 100 * 1e-7 = 1e-5, reached by 1e-2 t^-1/2 at t = 1e6; afterwards the gap is noise at 1e-7.
    rng = np.random.default_rng(3)
    t = checkpoints(1e8, 80)
    values = np.maximum(1e-2 / np.sqrt(t), 1e-7 * rng.uniform(0.1, 1.0, len(t)))
    run = synthetic_run(lambda _: values, t=t, accuracy=1e-7)
    window = choose_window(run)
    assert window.floor_t == pytest.approx(1e6, rel=0.3)
    assert window.t1 < 1e6 <= window.floor_t * 1.3 and window.problem is None
    verdict = judge([run], PowerLog(0.5))
    assert verdict.label == "tight" and verdict.fit.slope == pytest.approx(-0.5, abs=1e-6)


def test_entry_waits_for_positive_margins_and_monotone_loss():
    t = checkpoints()
    loss = -np.sqrt(t.astype(float))
    loss[20] = loss[19] + 1.0  # the loss rises from checkpoint 19 to 20, then falls again
    margin = np.where(t < 50, -0.1, 0.5)
    run = synthetic_run(lambda t: t ** -0.5, t=t, log_loss=loss, margin=margin)
    entry = entry_index(run)
    assert entry == max(20, int(np.argmax(t >= 50)))
    never = synthetic_run(lambda t: t ** -0.5, margin=np.full(len(t), -1.0))
    assert entry_index(never) is None
    assert judge([never], PowerLog(0.5)).label == "inconclusive"


def test_late_entry_leaves_too_short_a_window():
    t = checkpoints(1e4)
    margin = np.where(t < 3000, -0.1, 0.5)
    verdict = judge([synthetic_run(lambda t: t ** -0.5, t=t, margin=margin)], PowerLog(0.5))
    assert verdict.label == "inconclusive" and "too short" in verdict.reason


def test_seeds_are_averaged_and_their_spread_enters_the_uncertainty():
    slopes = [-0.22, -0.25, -0.28]
    runs = [synthetic_run(lambda t, s=s, i=i: (1 + i) * t ** s, seed=i, noise=0.01) for i, s in enumerate(slopes)]
    window = choose_window(runs[0])
    pooled = fit_slope(runs, window)
    single = fit_slope(runs[:1], window)
    assert pooled.slope == pytest.approx(np.mean(slopes), abs=0.005)
    assert pooled.seeds == 3 and pooled.stderr > 3 * single.stderr  # seed-to-seed spread of 0.03
    assert pooled.ci_low < -0.25 < pooled.ci_high
    again = fit_slope(runs, window)
    assert (again.slope, again.stderr, again.ci_low) == (pooled.slope, pooled.stderr, pooled.ci_low)


def test_log_power_of_a_squared_log_law():
    run = synthetic_run(lambda t: t ** -0.5 * np.log(t + 1) ** 2, noise=0.005)
    fit = fit_log_power([run], choose_window(run), exponent=0.5)
    assert fit.slope == pytest.approx(2.0, abs=0.15)


def test_classify_rules_are_one_sided():
    run = synthetic_run(lambda t: t ** -0.25)
    fitted = fit_slope([run], choose_window(run))
    assert classify(fitted, -0.25, 0.05)[0] == "tight"
    assert classify(fitted, -0.1, 0.05)[0] == "loose"
    assert classify(fitted, -0.5, 0.05)[0] == "violated"


def test_noisy_slow_decay_without_excluding_interval_is_inconclusive():
    run = synthetic_run(lambda t: t ** -0.15, noise=0.6, t=checkpoints(1e6, 14))
    verdict = judge([run], PowerLog(0.25))
    assert verdict.label == "inconclusive"


def test_user_window_is_used_and_checked():
    run = synthetic_run(lambda t: t ** -0.5)
    verdict = judge([run], PowerLog(0.5), window=(100, 1e5))
    assert (verdict.window.t0, verdict.window.t1, verdict.window.source) == (100, 1e5, "user")
    assert verdict.label == "tight"
    with pytest.raises(InputError) as err:
        judge([run], PowerLog(0.5), window=(1e3, 1e8))
    assert err.value.option == "--window" and "outside" in err.value.message
    for bad in ("1e3", "a:b", "100:10", "0:10"):
        with pytest.raises(InputError):
            parse_window(bad)
    assert parse_window("1e3:1e5") == (1e3, 1e5)


def test_tolerance_out_of_range_is_refused():
    with pytest.raises(InputError) as err:
        judge([synthetic_run(lambda t: t ** -0.5)], PowerLog(0.5), tolerance=0)
    assert err.value.option == "--tolerance"


def test_short_run_is_inconclusive_even_when_the_law_matches():
    # 400 steps: every checkpoint is before t = 1e3, where the bound's unknown constants still move its
    # local slope by more than the tolerance (see rates.judge.compare.MIN_WINDOW_START).
    run = synthetic_run(lambda t: t ** -0.5, t=checkpoints(400, 40))
    verdict = judge([run], PowerLog(0.5))
    assert verdict.label == "inconclusive" and "too short" in verdict.reason


def test_plateau_then_drop_is_not_judged():
    # A gap that sits on a plateau and then drops (Adam-like transients) has an average slope near the
    # bound's, but no settled power law: neither 'tight' nor 'violated' may be claimed.
    def gap(t):
        return np.where(t < 2e5, 0.3 * t ** -0.03, 0.3 * 2e5 ** -0.03 * (t / 2e5) ** -0.6)

    verdict = judge([synthetic_run(gap, noise=0.01)], PowerLog(0.25))
    assert verdict.label == "inconclusive" and "not settled" in verdict.reason
    d1, d2 = verdict.settling.differences
    assert d1 == pytest.approx(0.22, abs=0.05) and d2 < -0.2  # slower, then faster than t^-1/4
    assert abs(verdict.fit.slope + 0.25) < 0.05  # the average slope alone would have said 'tight'


def test_bending_but_faster_everywhere_is_loose():
    def gap(t):
        return np.where(t < 1e5, t ** -0.5, 1e5 ** -0.5 * (t / 1e5) ** -0.9)

    verdict = judge([synthetic_run(gap)], PowerLog(0.3))
    assert verdict.label == "loose" and "both halves" in verdict.reason
    assert max(verdict.settling.differences) < -0.05


def test_plateau_after_separation_is_not_the_entry():
    # Full-batch NSD (SignGD, a = 3/4, gamma = 1): margins are barely positive and the loss creeps down
    # (monotone, but far slower than the descent lemma's (gamma/4) sum eta) until t = 3e4; from then on
    # log L falls by gamma * sum eta and the gap follows c t^-1/4. The entry is the plateau's end, so the
    # window holds the power law only and the verdict against t^-1/4 is tight with slope -1/4.
    t = checkpoints(1e6, 80)
    tf = t.astype(float)
    end = 3e4
    integral = (tf + 2) ** 0.25 / 0.25  # int (x+2)^-3/4 dx, the schedule's partial sums
    plateau_loss = -5.0 - 1e-6 * tf
    log_loss = np.where(tf < end, plateau_loss, -5.0 - 1e-6 * end - (integral - (end + 2) ** 0.25 / 0.25))
    gap = np.where(tf < end, 0.995, 0.995 * (tf / end) ** -0.25)
    run = synthetic_run(lambda _: gap, t=t, log_loss=log_loss, margin=np.full(len(t), 0.005))
    run.config = dataclasses.replace(run.config, family="nsd")
    expected_entry = float(t[np.argmax(tf >= end)])
    assert entry_index(run) is not None and float(t[entry_index(run)]) == expected_entry
    verdict = judge([run], PowerLog(0.25))
    assert verdict.window.t0 == expected_entry and verdict.window.entry_t == expected_entry
    assert verdict.label == "tight" and verdict.fit.slope == pytest.approx(-0.25, abs=1e-9)
    # Other families keep the plain rule (their constants differ): the entry is the first checkpoint.
    run.config = dataclasses.replace(run.config, family="adam")
    assert entry_index(run) == 0


@pytest.mark.parametrize("slopes, bound_r, label", [
    ((-0.5, -0.62, -0.74), 0.25, "loose"),      # every seed decays far faster than t^-1/4
    ((-0.05, -0.17, -0.29), 0.7, "violated"),   # every seed decays far slower than t^-0.7
])
def test_wide_seed_spread_still_decides_a_side(slopes, bound_r, label):
    # Seeds whose slopes differ by 0.24 give a bootstrap error above the tolerance 0.05, yet the 95%
    # interval (within [min, max] of the seeds' slopes) lies wholly on one side of the bound -- docs/theory.md
    # section 4 and the issue: 'violated' when the uncertainty excludes the bound.
    runs = [synthetic_run(lambda t, s=s: 0.5 * t ** s, seed=i) for i, s in enumerate(slopes)]
    verdict = judge(runs, PowerLog(bound_r))
    assert verdict.fit.stderr > 0.05
    assert verdict.fit.slope == pytest.approx(np.mean(slopes), abs=1e-6)
    assert min(slopes) - 1e-6 <= verdict.fit.ci_low and verdict.fit.ci_high <= max(slopes) + 1e-6
    assert verdict.label == label, verdict.reason


def test_seeds_whose_windows_barely_overlap_are_not_judged():
    # Seed 0 reaches its solver floor (100 x accuracy = 0.01/sqrt(1.5e4)) at t = 1.5e4, so its window ends
    # there; seed 1 separates only at t = 1e4. Each window alone is long enough, but their intersection
    # holds 2 checkpoints over 0.08 decades -- far below the 6 over one decade a verdict needs.
    t = checkpoints(1e6, 80)
    tf = t.astype(float)
    noise = 1e-7 * np.random.default_rng(5).uniform(0.1, 1, len(t))
    floored = synthetic_run(lambda _: np.where(tf < 1.5e4, 0.01 / np.sqrt(tf), noise), t=t,
                            accuracy=0.01 / math.sqrt(1.5e4) / 100)
    late = synthetic_run(lambda t: 0.5 / np.sqrt(t), t=t, seed=1, margin=np.where(tf < 1e4, -0.1, 0.5))
    windows = [choose_window(floored), choose_window(late)]
    assert all(w.problem is None and w.points >= 6 for w in windows)
    inside = (tf >= windows[1].t0) & (tf <= windows[0].t1)
    verdict = judge([floored, late], PowerLog(0.5))
    assert verdict.label == "inconclusive" and "overlap" in verdict.reason
    assert verdict.window.points == inside.sum() == 2


def test_early_user_window_carries_a_caveat():
    # A 'violated' over [10, 500] rests on checkpoints where the bound's unknown constants still move its
    # local slope by more than the tolerance (rates.judge.compare.MIN_WINDOW_START); the verdict must say so.
    run = synthetic_run(lambda t: 0.5 * t ** -0.1)
    early = judge([run], PowerLog(0.25), window=(10, 500))
    assert early.label == "violated" and early.fit.slope == pytest.approx(-0.1, abs=1e-9)
    assert any("before t = 1000" in note for note in early.notes)
    late = judge([run], PowerLog(0.25), window=(1e4, 1e6))
    assert not any("before t = 1000" in note for note in late.notes)


def test_each_seed_is_cut_at_its_own_solver_floor():
    # Seed 0's solver is loose (floor 100 * 1e-7 * 1 = 1e-5, never reached by its gap 0.5 t^-1/2 >= 5e-4);
    # seed 1's gap 1e-4 t^-1/2 lies below 1e-5 from t = 100 on but far above its own floor 1e-10. Both
    # follow t^-1/2 exactly, so the pooled slope is -1/2 and the verdict against t^-1/2 is tight.
    loose_solver = synthetic_run(lambda t: 0.5 * t ** -0.5, accuracy=1e-7)
    small_gap = synthetic_run(lambda t: 1e-4 * t ** -0.5, seed=1)
    verdict = judge([loose_solver, small_gap], PowerLog(0.5))
    assert verdict.label == "tight", verdict.reason
    assert verdict.fit.slope == pytest.approx(-0.5, abs=1e-9) and verdict.fit.seeds == 2
    assert verdict.window.points == choose_window(small_gap).points
