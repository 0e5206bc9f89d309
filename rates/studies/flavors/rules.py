"""The decision rules of ``rates report flavors``: pure functions from measured numbers to a claim verdict.

Setting
    Each FLAVORS claim of the study is decided by one rule here, applied to numbers the runs measured
    (per-seed curves, end values, events). Keeping the rule apart from the runs lets the test suite run every
    rule on a constructed trajectory where the claim is false (a floor instead of convergence, the other
    ordering, curves that cross just after the horizon) and check it says ``not reproduced``, and on the
    matching true case.

Algorithm
    Every rule returns one of the three verdicts of :mod:`rates.output.claims`, symmetrically:

    * a comparison decided by less than :data:`RESOLVE` (1 %, relative) is by a hair: that seed is undecided;
    * a value compared at the end must be *settled both ways*: the comparison must come out the same at the
      start of the last decade of steps, at the end, and at the end extrapolated one more decade (linear in
      log t), whichever way it goes; otherwise the seed is undecided;
    * over seeds (:func:`seed_vote`): ``reproduced`` when the claim holds in every judged seed, ``not
      reproduced`` when it fails in a majority of them, ``no verdict`` otherwise (with the counts);
    * limit claims (a residual or gap tends to 0; FLAVORS Thm 3.4, Cor. A.8) are judged for a floor against
      decay (:func:`floor_or_decay`): a decay resolved faster than ``FLAT_SLOPE`` per decade of log(1/L)
      reproduces, a level resolved flatter than that refutes at the run's horizon, and anything between is
      ``no verdict``.

Reference
    FLAVORS (seed 001): Thm 3.1, Thm 3.4, Prop. B.6, Lemma A.6, Cor. A.8, sec. 4.1-4.3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED

# A relative difference below 1 % decides nothing: seed noise at these sizes is larger (chosen before the runs).
RESOLVE = 0.01
# Floor against decay: a residual that falls slower than x10^-0.1 = x0.79 per decade of log(1/L) needs three more
# decades of log(1/L) to halve; the exponential loss underflows in float64 at log(1/L) ~ 745, so within any run
# such a residual is a floor. A decay resolved faster than that (95 % interval) reproduces a limit claim, a level
# resolved slower refutes it at the run's horizon.
FLAT_SLOPE = 0.1
# The fall must not be slowing: the later half of the last decade keeps at least 3/4 of the earlier half's slope (a
# power law keeps all of it; f + c x^s with the floor f carrying half the final value keeps 0.76 at s = -1, and less
# as the floor's share grows).
KEEP_SLOPE = 0.75
MIN_SEEDS = 3  # seeds a pooled (t-interval) rule needs
MIN_SPAN = 10.0  # a seed's late checkpoints must span this factor of the driving variable

HOLDS, FAILS, OPEN = "holds", "fails", "open"


@dataclass
class Judgement:
    """A rule's verdict, its reason (required unless reproduced) and the numbers it used."""

    verdict: str
    reason: str = ""
    values: dict = field(default_factory=dict)

    def pair(self) -> tuple[str, str]:
        return self.verdict, self.reason


def seed_vote(states: Sequence[str], what: str, min_seeds: int = 1) -> Judgement:
    """Verdict over per-seed states (HOLDS / FAILS / OPEN): reproduced when every judged seed holds, not
    reproduced when a majority fails, no verdict otherwise."""
    n = len(states)
    holds, fails = list(states).count(HOLDS), list(states).count(FAILS)
    counts = {"holds": holds, "fails": fails, "open": n - holds - fails, "seeds": n}
    tally = f"holds in {holds}, fails in {fails}, open (unsettled or by a hair) in {n - holds - fails} of {n} seeds"
    if n < min_seeds:
        return Judgement(NO_VERDICT, f"{what}: only {n} seed(s) could be judged, {min_seeds} decide", counts)
    if holds == n:
        return Judgement(REPRODUCED, "", counts)
    if fails > n / 2:
        return Judgement(NOT_REPRODUCED, f"{what}: {tally}", counts)
    return Judgement(NO_VERDICT, f"{what}: {tally}; a majority failing or every seed holding decides", counts)


def _relative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return (a - b) / np.maximum(np.abs(a), np.abs(b))


def last_decade_index(t: np.ndarray) -> int:
    """Index of the first checkpoint at or after t_end / 10."""
    return int(np.searchsorted(t, t[-1] / 10))


def ordering_states(t: np.ndarray, winner: np.ndarray, others: Sequence[np.ndarray]) -> list[str]:
    """Per seed (rows), whether ``winner`` ends above every curve of ``others``, settled both ways.

    The relative gap g = (winner - best other) / max(|.|) is read at the start of the last decade, at the end, and
    extrapolated one decade past the end (g_end + (g_end - g_start)); HOLDS when all three are above +RESOLVE,
    FAILS when all three are below -RESOLVE, OPEN otherwise (curves still crossing, or a gap by a hair)."""
    best_other = np.max(np.stack(others), axis=0)
    gap = _relative(winner, best_other)
    i = last_decade_index(t)
    states = []
    for r in range(gap.shape[0]):
        start, end = gap[r, i], gap[r, -1]
        ahead = end + (end - start)
        if not np.all(np.isfinite([start, end])):
            states.append(OPEN)
        elif min(start, end, ahead) > RESOLVE:
            states.append(HOLDS)
        elif max(start, end, ahead) < -RESOLVE:
            states.append(FAILS)
        else:
            states.append(OPEN)
    return states


def ordering_verdict(t: np.ndarray, winner: np.ndarray, others: Sequence[np.ndarray], what: str) -> Judgement:
    """An end-of-run ordering ("X ends with the largest margin"), settled both ways and decided over seeds."""
    states = ordering_states(t, winner, others)
    i = last_decade_index(t)
    gap = _relative(winner, np.max(np.stack(others), axis=0))
    judged = seed_vote(states, what)
    judged.values.update({"relative_gap_end": gap[:, -1].tolist(), "relative_gap_decade_start": gap[:, i].tolist(),
                          "states": states})
    return judged


def lasting_from(t: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Per row, the first checkpoint step from which ``flags`` holds at every later checkpoint (-1: not at the end).

    The step of 100 % train accuracy that FLAVORS sec. 4.2 reads margins from: a first separation can be transient
    (accuracy 1.0 at step 1, 0.99 from step 2 on, with negative margins), and a rise read from there is no rise
    after separation."""
    steps = np.full(flags.shape[0], -1)
    for r in range(flags.shape[0]):
        if not flags[r, -1]:
            continue
        failing = np.nonzero(~flags[r])[0]
        steps[r] = int(t[failing[-1] + 1]) if failing.size else int(t[0])
    return steps


def rise_states(t: np.ndarray, values: np.ndarray, t_start: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Per seed, whether ``values`` rises within one decade of steps after ``t_start`` (a step per seed; < 0: never
    reached): HOLDS when its largest value on [t_start, 10 t_start] exceeds the value at t_start by > RESOLVE,
    FAILS when it never exceeds it by more than RESOLVE / 10 and the window was watched for a full decade, OPEN
    otherwise. Returns the states (seeds that never reached t_start are left out) and the relative rises."""
    states, rises = [], []
    for r in range(values.shape[0]):
        if t_start[r] < 0:
            continue
        k = int(np.searchsorted(t, t_start[r]))
        if k >= t.size:
            continue
        window = (t >= t[k]) & (t <= 10 * max(t[k], 1.0))
        rise = float(np.nanmax(values[r, window]) / values[r, k] - 1) if values[r, k] > 0 else float("nan")
        rises.append(rise)
        watched = t[-1] >= 10 * max(t[k], 1.0)
        if rise > RESOLVE:
            states.append(HOLDS)
        elif watched and rise <= RESOLVE / 10:
            states.append(FAILS)
        else:
            states.append(OPEN)
    return states, np.array(rises)


def _t_half(values: np.ndarray) -> float:
    from scipy import stats

    n = values.size
    return float(stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n)) if n >= 2 else math.inf


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0]) if x.size >= 3 and np.ptp(np.log(x)) > 0 else float("nan")


def floor_or_decay(x: np.ndarray, y: np.ndarray, what: str, driver: str = "log(1/L)") -> Judgement:
    """Does ``y`` (a residual or gap, rows = seeds) tend to 0 as the driving variable ``x`` grows, or level off?

    Per seed, over the checkpoints with x >= e and y > 0 whose x spans at least MIN_SPAN: the slope s of log y
    against log x over the last decade of x (x >= x_end / 10), s_A over its earlier and s_B over its later half
    (split at x_end / sqrt 10).
    Over those seeds (at least MIN_SEEDS), with 95 % t-intervals:

    * decay (reproduced): mean s + half-width < -FLAT_SLOPE, every seed's s < -FLAT_SLOPE, and no resolved
      slowing (slowing: the 95 % interval of s_B - KEEP_SLOPE * s_A over seeds lies above 0);
    * floor (not reproduced): the last decade's or its later half's interval lies above -FLAT_SLOPE (it falls
      slower than x0.79 per decade of x, or rises);
    * no verdict otherwise (neither resolved, or the fall is slowing toward a possible floor)."""
    slopes, early, late, ends, spans = [], [], [], [], []
    lo, hi = math.inf, 0.0
    for r in range(y.shape[0]):
        with np.errstate(all="ignore"):
            keep = np.isfinite(x[r]) & np.isfinite(y[r]) & (x[r] >= math.e) & (y[r] > 0)
        xs, ys = x[r][keep], y[r][keep]
        if xs.size < 3:
            continue
        spans.append(float(xs.max() / xs.min()))
        if xs.max() / xs.min() < MIN_SPAN:
            continue
        end = xs.max()
        decade, half = xs >= end / 10, xs >= end / math.sqrt(10)
        first = decade & (xs <= end / math.sqrt(10))
        s, s_a, s_b = _slope(xs[decade], ys[decade]), _slope(xs[first], ys[first]), _slope(xs[half], ys[half])
        if not (math.isfinite(s) and math.isfinite(s_a) and math.isfinite(s_b)):
            continue
        slopes.append(s)
        early.append(s_a)
        late.append(s_b)
        ends.append(float(ys[-1]))
        lo, hi = min(lo, float(end / 10)), max(hi, float(end))
    slopes, early, late = np.array(slopes), np.array(early), np.array(late)
    n = slopes.size
    values: dict[str, Any] = {"slopes": slopes.tolist(), "early_slopes": early.tolist(), "late_slopes": late.tolist(),
                              "ends": ends, "n": n,
                              "window": [lo, hi]}
    if n < MIN_SEEDS:
        widest = max(spans) if spans else 0.0
        return Judgement(NO_VERDICT, f"{what}: {driver} spans x{MIN_SPAN:g} over the late checkpoints in only {n} "
                                     f"seed(s) (widest span x{widest:.3g}): {MIN_SEEDS} such seeds decide", values)
    mean, half = float(slopes.mean()), _t_half(slopes)
    mean_a, mean_b, half_b = float(early.mean()), float(late.mean()), _t_half(late)
    values.update({"mean_slope": mean, "half_width": half, "mean_early_slope": mean_a, "mean_late_slope": mean_b,
                   "late_half_width": half_b})
    fit = (f"slope of log against log {driver} over the last decade ({driver} in [{lo:.3g}, {hi:.3g}]) {mean:.3g} "
           f"+- {half:.2g} (x{10 ** mean:.2f} per decade), over its earlier half {mean_a:.3g}, its later half "
           f"{mean_b:.3g} +- {half_b:.2g} (95 %, {n} seeds)")
    excess = late - KEEP_SLOPE * early
    slowing = bool(excess.mean() - _t_half(excess) > 0)
    if mean + half < -FLAT_SLOPE and np.all(slopes < -FLAT_SLOPE) and not slowing:
        return Judgement(REPRODUCED, "", values)
    if mean - half > -FLAT_SLOPE or mean_b - half_b > -FLAT_SLOPE:
        return Judgement(NOT_REPRODUCED, f"{what} levels off: {fit}, resolved flatter than -{FLAT_SLOPE:g} (a fall "
                                         f"slower than x{10 ** -FLAT_SLOPE:.2f} per decade of {driver} is a floor "
                                         "within any float64 run); at the end "
                                         f"{min(ends):.3g}-{max(ends):.3g}", values)
    if mean + half < -FLAT_SLOPE and slowing:
        why = (f"the fall is slowing (later half {mean_b:.3g} against {mean_a:.3g} in the earlier half, under "
               f"{KEEP_SLOPE:g} of it): a floor may be approaching, a run to larger {driver} decides")
    elif mean + half < -FLAT_SLOPE:
        why = (f"falling faster than x{10 ** -FLAT_SLOPE:.2f} per decade in {int(np.sum(slopes < -FLAT_SLOPE))}/{n} "
               "seeds; every seed doing so decides")
    else:
        why = f"neither a decay faster nor a level flatter than -{FLAT_SLOPE:g} is resolved; "
        slow = int(np.sum(slopes >= -FLAT_SLOPE))
        if mean > -FLAT_SLOPE or not slow:
            # a narrower interval about this mean resolves a floor (mean above) or the decay (every seed below)
            why += "more seeds decide"
        else:
            # the mean is below -FLAT_SLOPE, so more seeds narrow the interval away from a floor, and the decay
            # needs every seed below: the seeds that fall slowly must fall faster on a longer run
            why += (f"more seeds alone do not decide: the mean is below -{FLAT_SLOPE:g} but {slow}/{n} seeds fall "
                    f"slower (the decay needs every seed below), so a run to larger {driver} decides")
    return Judgement(NO_VERDICT, f"{what}: {fit}; {why}", values)


def monotone_soft_margin_verdict(drop: np.ndarray, tolerance: np.ndarray) -> Judgement:
    """FLAVORS Thm 3.1 on a discrete run: the largest relative drop of the own soft margin below its running
    maximum after L < l(0) must stay within the O(eta) tolerance in every run; one run beyond it refutes."""
    if drop.size == 0:
        return Judgement(NO_VERDICT, "no run reached L < l(0); longer runs decide")
    beyond = int(np.sum(drop > tolerance))
    values = {"drops": drop.tolist(), "tolerances": tolerance.tolist()}
    if beyond:
        worst = int(np.argmax(drop - tolerance))
        return Judgement(NOT_REPRODUCED, f"the soft margin fell by more than the O(eta) tolerance in {beyond}/"
                                         f"{drop.size} runs (worst {drop[worst]:.3g} against {tolerance[worst]:.3g})",
                         values)
    return Judgement(REPRODUCED, "", values)


def loss_to_zero_states(log_loss_then: np.ndarray, log_loss_end: np.ndarray, norm_then: np.ndarray,
                        norm_end: np.ndarray) -> list[str]:
    """FLAVORS Lemma A.6 (L -> 0, ||theta|| -> infinity), per seed over the last decade: HOLDS when log(1/L) and
    ||theta|| both grow by > RESOLVE, FAILS when either grows by less than RESOLVE / 10 (stalled) or falls, OPEN
    otherwise."""
    states = []
    for a, b, c, d in zip(-log_loss_then, -log_loss_end, norm_then, norm_end):
        growth = min(b / a - 1 if a > 0 else math.inf, d / c - 1)
        states.append(HOLDS if growth > RESOLVE else FAILS if growth < RESOLVE / 10 else OPEN)
    return states


def margin_floor_verdict(own_margin: np.ndarray, soft_at_t0: np.ndarray, tolerance: np.ndarray) -> Judgement:
    """FLAVORS Prop. B.6 on a discrete run. With r the subgradient of ||theta~|| that eq. 73 picks (||r||_* = 1,
    <theta, r> = ||theta||) the divergence of eq. 71 equals (1 - alignment) / gamma(t)^{2/L} [derived], so the
    bound (1 - alignment) / gamma~(t0)^{2/L} holds at t exactly when the own geometric margin gamma(t) >=
    gamma~(t0). ``own_margin`` rows are seeds over the checkpoints after t0; per seed the smallest ratio
    gamma(t) / gamma~(t0) must be >= 1 - tolerance (the O(eta) tolerance of Thm 3.1); one seed below refutes."""
    ratios = np.array([float(np.nanmin(row) / s) for row, s in zip(own_margin, soft_at_t0)])
    values = {"smallest_ratio": ratios.tolist(), "tolerance": tolerance.tolist()}
    if ratios.size == 0:
        return Judgement(NO_VERDICT, "no run reached L < l(0); longer runs decide", values)
    below = ratios < 1 - tolerance
    if below.any():
        return Judgement(NOT_REPRODUCED, f"the own geometric margin fell below the soft margin at t0 (the bound's "
                                         f"constant) in {int(below.sum())}/{ratios.size} seeds: smallest "
                                         f"gamma(t)/gamma~(t0) {ratios.min():.4g}", values)
    return Judgement(REPRODUCED, "", values)


TAU_LINK = 0.5  # Kendall tau above which a margin would order test accuracies (75 % of pairs concordant)


def margin_accuracy_verdict(margins: dict[str, np.ndarray], test_acc: np.ndarray) -> Judgement:
    """FLAVORS sec. 4.1 (iii), Fig. 1 right, Fig. 5: a larger final margin does not come with a higher test accuracy
    (generalisation is not "solely and causally" linked to the margin). Over the runs (one point each), Kendall's
    tau between each final margin and the final test accuracy with its normal-approximation 95 % interval:
    reproduced when every interval's upper end is below TAU_LINK, not reproduced when some interval's lower end is
    above it (that margin orders test accuracy), no verdict otherwise."""
    from scipy import stats

    n = test_acc.size
    taus, parts = {}, []
    if n < 8:
        return Judgement(NO_VERDICT, f"only {n} runs; 8 decide", {})
    se = math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
    for name, m in margins.items():
        tau = float(stats.kendalltau(m, test_acc).statistic)
        taus[name] = tau
        parts.append(f"{name} tau {tau:.3g} [{tau - 1.96 * se:.3g}, {tau + 1.96 * se:.3g}]")
    values = {"tau": taus, "runs": n, "half_width": 1.96 * se}
    text = "; ".join(parts) + f" over {n} runs"
    if all(t + 1.96 * se < TAU_LINK for t in taus.values()):
        return Judgement(REPRODUCED, "", values)
    if any(t - 1.96 * se > TAU_LINK for t in taus.values()):
        return Judgement(NOT_REPRODUCED, f"a final margin orders the test accuracies: {text}", values)
    return Judgement(NO_VERDICT, f"{text}: an interval straddles tau = {TAU_LINK:g}; more runs decide", values)


def phase_two_onset(t: np.ndarray, gamma_1: np.ndarray, start: int) -> Optional[tuple[float, float]]:
    """Adam's second phase in one seed from checkpoint ``start`` (first L < 1e-7): the step of gamma_1's peak on
    [start, end] and the relative fall from it to the end per decade of steps, or None when gamma_1 ends within
    RESOLVE of that peak (no second phase)."""
    window = gamma_1[start:]
    k = int(np.nanargmax(window))
    peak, end = window[k], window[-1]
    if not end < peak * (1 - RESOLVE) or t[start + k] <= 0:
        return None
    decades = math.log10(t[-1] / t[start + k])
    return float(t[start + k]), float((end / peak - 1) / decades)


def eps_second_phase_verdict(small: Sequence[Optional[tuple[float, float]]],
                             large: Sequence[Optional[tuple[float, float]]]) -> Judgement:
    """FLAVORS sec. 4.2: a larger eps starts the second phase "slower, but more aggressively": per seed, the larger
    eps's gamma_1 peak comes later (by more than RESOLVE) and its fall per decade is steeper (by more than RESOLVE
    relative). Seeds where either run has no second phase are left out (the claim compares second phases); a seed
    fails when its larger eps starts earlier or falls more gently."""
    states = []
    for a, b in zip(small, large):
        if a is None or b is None:
            continue
        later = b[0] > a[0] * (1 + RESOLVE)
        earlier = b[0] < a[0] * (1 - RESOLVE)
        steeper = b[1] < a[1] * (1 + RESOLVE)  # falls are negative: steeper is more negative
        gentler = b[1] > a[1] * (1 - RESOLVE)
        states.append(HOLDS if later and steeper else FAILS if earlier or gentler else OPEN)
    with_phase = len(states)
    if with_phase == 0:
        return Judgement(NO_VERDICT, "neither eps run has a second phase in any seed (gamma_1 never ends 1 % below "
                                     "its peak after L < 1e-7), so there is nothing to compare: a run in which both "
                                     "show it decides", {"seeds_with_both_phases": 0})
    judged = seed_vote(states, "larger eps starts later and falls faster")
    judged.values["seeds_with_both_phases"] = with_phase
    return judged


def _verdict(mean_holds: bool, seeds_hold: int, seeds_valid: int) -> tuple[str, str]:
    """Claim verdict over seeds: reproduced when the seed means and every valid seed agree; 'no verdict'
    when only the means (or no seed at all) can be judged."""
    if seeds_valid == 0:
        return NO_VERDICT, "no seed separated in every compared run; more steps or other rates decide it"
    if mean_holds and seeds_hold == seeds_valid:
        return REPRODUCED, ""
    if mean_holds:
        return NO_VERDICT, (f"holds for the seed means but only in {seeds_hold}/{seeds_valid} seeds; "
                            "more seeds decide it")
    return NOT_REPRODUCED, f"fails for the seed means (holds in {seeds_hold}/{seeds_valid} seeds)"
