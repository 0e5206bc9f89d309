"""MINIBATCH's decision rules: pure functions from measurements to verdict parts ``(verdict, reason)``, each with the
numbers that decide it (tests/test_minibatch_negative_controls.py holds their negative controls)."""

from __future__ import annotations

import math

import numpy as np

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, claim_verdict_from_fit
from rates.studies.minibatch.measures import Fig1Config
from rates.studies.minibatch.protocols import (
    CONVERGED,
    DISPLAY,
    LEVEL,
    MONOTONE_SLACK,
    PLATEAU_SLOPE,
    SLOWER,
    STALLED,
    TREND_Z,
)


def rate_part(record, crossed: float | None) -> tuple[str, str]:
    """A rate claim for one algorithm: the comparator's verdict on the gap to the target margin, except that
    * the claim is the O(.) bound, so finding (i) *bound holds* decides it even where the comparator's label stays
      ``inconclusive`` because (iii), whether the stated rate is attained, is open (e.g. a gap still steepening
      but faster than the bound's slowest term on both halves of the window);
    * a gap that has not started to decay in a run ending before the theorem's t0 is a plateau, not a refutation;
    * a margin that passes the target (``crossed``, the record fitted on the stretch before it) meets the bound
      trivially from there; when that stretch is too short for a window the rate is open (no verdict).
    Every ``no verdict`` says where the run ended and where the theorem's guarantee starts."""
    from rates.judge.compare import HOLDS

    t_end = float(np.asarray(record.runs[0].t)[-1])
    v = record.verdict
    phase = v.context.get("phase", {})
    t0 = phase.get("t0")
    horizon = f"the run ends at t = {t_end:.3g}, the theorem's guarantee starts at t0 ({phase.get('text', 'unknown')})"
    if crossed is not None:
        horizon = (f"the margin passes the theorem's target for good at t = {crossed:.3g} (the bounded gap is <= 0 "
                   f"from there, below the bound for every constant, which does not test the rate), so the rate is "
                   f"fitted on the checkpoints before it, to t = {t_end:.3g}; the theorem's guarantee starts at t0 "
                   f"({phase.get('text', 'unknown')})")
    if v.label == "violated" and v.fit is not None and v.fit.slope > -PLATEAU_SLOPE and (t0 is None or t0 > t_end):
        return NO_VERDICT, (f"plateau before t0: the gap has not started to decay (slope {v.fit.slope:+.3f}, within "
                            f"{PLATEAU_SLOPE:g} of 0) and {horizon}; a run past the plateau decides "
                            f"(comparator: {v.label}: {v.reason})")
    bound = v.assessment.bound if getattr(v, "assessment", None) is not None else None
    confirms = (v.label == "inconclusive" and bound is not None and bound.outcome == HOLDS) or \
        claim_verdict_from_fit(v.label, v.reason)[0] == REPRODUCED
    from rates.studies.horizon import undecided_past_onset

    if confirms:
        undecided = undecided_past_onset(record)
        if undecided:  # a slower gap would not have refuted here, so a faster one does not confirm
            return NO_VERDICT, f"{v.label} (bound holds), but {undecided}"
        return REPRODUCED, ""
    verdict, reason = claim_verdict_from_fit(v.label, v.reason)
    if verdict == NOT_REPRODUCED:
        undecided = undecided_past_onset(record)
        if undecided:
            return NO_VERDICT, f"{v.label}, but {undecided}"
    if verdict == NO_VERDICT:
        if crossed is not None:
            reason += (f"; {horizon}; a run whose margin reaches the target later (a smaller eta_0) leaves a "
                       "longer positive stretch and decides")
        else:
            reason += (f"; {horizon}; a run to t = {10 * t_end:.3g} on which the gap's slope settles, or more "
                       "reshuffling seeds where the uncertainty is the obstacle, decides")
    return verdict, reason


def converges_part(c: Fig1Config, what: str) -> tuple[str, str]:
    """A config in a "converges" claim: reproduced when converged, refuted only when stalled above
    CONVERGED, otherwise undecided (still falling: a longer run decides)."""
    if c.converged():
        return REPRODUCED, ""
    if c.stalled():
        return NOT_REPRODUCED, f"{what}: relative error {c.state()} has stalled above {CONVERGED:g}"
    if c.stall_within_noise():
        return NO_VERDICT, (f"{what}: relative error {c.state()} above {CONVERGED:g}; whether it has stalled "
                            f"(>= x{STALLED:g} per decade) is within the run's noise ({TREND_Z:g} standard errors "
                            f"of the trend: x{c.trend_band()[0]:.3g}-x{c.trend_band()[1]:.3g}); a longer run decides")
    return NO_VERDICT, (f"{what}: relative error {c.state()} is above {CONVERGED:g} but still falling (stalled means "
                        f">= x{STALLED:g} per decade); {steps_to_converge(c)}")


def improves_part(plain: Fig1Config, momentum: Fig1Config, what: str) -> tuple[str, str]:
    """beta = 0.5 against beta = 0 at one b: better when its final error is lower and its cosine higher; refuted only
    when it is no better and has stalled (its error no longer falling, beyond the trend's noise)."""
    if momentum.final_rel() < plain.final_rel() and momentum.final_cos() > plain.final_cos():
        return REPRODUCED, ""
    if momentum.stalled():
        return NOT_REPRODUCED, f"{what}: beta = 0.5 ({momentum.state()}) no better than beta = 0 ({plain.state()})"
    return NO_VERDICT, f"{what}: beta = 0.5 ({momentum.state()}) not yet better than beta = 0, still changing"


def discrepancy_part(momentum_rows: list[Fig1Config], what: str) -> tuple[str, str]:
    """"Discrepancies remain" for one algorithm: some b < n has stalled at or above CONVERGED (reproduced); every
    b < n converges (refuted); otherwise open."""
    if any(c.final_rel() >= CONVERGED and c.stalled() for c in momentum_rows):
        return REPRODUCED, ""
    if all(c.converged() for c in momentum_rows):
        return NOT_REPRODUCED, f"{what}: beta = 0.5 converges at every b < n (no discrepancy remains)"
    return NO_VERDICT, (f"{what}: beta = 0.5 neither converged nor stalled at every b ("
                        + ", ".join(f"b={c.batch}: {c.state()}" for c in momentum_rows) + "); a longer run decides")


def slower_part(fast: Fig1Config, slow: Fig1Config, what: str, level: float = LEVEL) -> tuple[str, str]:
    """Claim "``slow`` converges more slowly than ``fast``", by the times from which their errors stay below ``level``
    (:meth:`Fig1Config.time_below`): reproduced when ``slow`` gets there SLOWER times later or more (or not by the end
    of a run SLOWER times longer than ``fast``'s time), refuted when SLOWER times earlier or more; in between, or
    when ``fast`` never gets there, open."""
    t_fast, t_slow = fast.time_below(level), slow.time_below(level)
    end = float(slow.t[-1])
    fast_text = "-" if t_fast is None else f"{t_fast:.3g}"
    slow_text = f"not by {end:.3g}" if t_slow is None else f"{t_slow:.3g}"
    shown = f"{what}: error below {level:g} from t = {fast_text} vs {slow_text}"
    if t_fast is None:
        return NO_VERDICT, f"{shown}: the faster configuration never stays below {level:g}; a longer run decides"
    if t_slow is None:
        if end >= SLOWER * t_fast:
            return REPRODUCED, ""
        return NO_VERDICT, f"{shown}: the run ends before it could be {SLOWER:g} times later; a longer run decides"
    ratio = t_slow / t_fast
    if ratio >= SLOWER:
        return REPRODUCED, ""
    if ratio <= 1 / SLOWER:
        return NOT_REPRODUCED, f"{shown} (x{ratio:.2g}): it gets there {1 / ratio:.2g} times earlier, not later"
    return NO_VERDICT, (f"{shown} (x{ratio:.2g}): within a factor {SLOWER:g}, which the checkpoints and seeds do not "
                        "resolve")


def steps_to_converge(c: Fig1Config) -> str:
    """What would decide an error still falling above CONVERGED: the horizon at which its last decade's factor,
    kept up, would bring it below CONVERGED (a run that long either gets there or shows the fall stalling)."""
    factor, final = c.trend(), c.final_rel()
    if not 0 < factor < 1 or final <= CONVERGED:
        return "a longer run decides"
    decades = math.log(CONVERGED / final) / math.log(factor)
    return (f"at x{factor:.2g}/decade it reaches {CONVERGED:g} after {decades:.2g} more decade(s), at t ~ "
            f"{float(c.t[-1]) * 10 ** decades:.2g}: a run that long decides")


def ordered_part(lower: Fig1Config, higher: Fig1Config, what: str) -> tuple[str, str]:
    """Claim "the limit gap does not grow from ``lower`` to ``higher``" for one pair of configs.

    A config still converging (below CONVERGED, falling by FALLING or more per decade) has limit gap 0; a
    stalled one keeps its level. Refuted only when ``higher`` has stalled above ``lower`` with disjoint
    error ranges over the last decade; a larger error that is still falling is undecided."""
    if higher.final_rel() <= lower.final_rel() or (higher.converging() and lower.converging()):
        return REPRODUCED, ""
    if higher.stalled() and higher.last_decade_range()[0] > lower.last_decade_range()[1]:
        return NOT_REPRODUCED, f"{what}: {higher.state()} stalled above {lower.state()}"
    return NO_VERDICT, (f"{what}: {higher.state()} above {lower.state()} but still falling or within the "
                        "other's range over the last decade; a longer run or more seeds decide")


def monotone_loss_part(t, log_loss, log10_descent_start: float | None, what: str) -> tuple[str, str]:
    """"The loss eventually decreases monotonically" (MINIBATCH Lemmas D.1, D.2, E.2) on one run's checkpoints.

    Refuted by a rise of log L between two checkpoints past the descent start t_d (the lemma's own start, with the
    curvature of the steps taken); reproduced when there is none and t_d lies a decade or more before the end (the
    monotone phase is observed over at least a decade); otherwise open (t_d unknown, within the last decade or past
    the end), naming any rise seen before t_d."""
    t, loss = np.asarray(t, float), np.asarray(log_loss, float)
    step = np.diff(loss)
    rising = np.flatnonzero(step > MONOTONE_SLACK * (1.0 + np.abs(loss[:-1])))
    log_end = math.log10(t[-1] + 2)
    if log10_descent_start is not None:
        past = [i for i in rising if math.log10(t[i] + 2) >= log10_descent_start]
        if past:
            i = past[0]
            return NOT_REPRODUCED, (f"{what}: log L rises by {step[i]:.3g} from t = {t[i]:.3g} to {t[i + 1]:.3g}, past "
                                    f"the descent start t_d ~ 10^{log10_descent_start:.3g} ({len(past)} rise(s))")
    seen = (f"; log L rises at {len(rising)} checkpoint(s), the last from t = {t[rising[-1]]:.3g}" if rising.size
            else "; no rise at any checkpoint")
    if log10_descent_start is None:
        return NO_VERDICT, f"{what}: the descent start t_d is unknown{seen}"
    if log10_descent_start > log_end - 1:
        return NO_VERDICT, (f"{what}: the descent start t_d ~ 10^{log10_descent_start:.3g} is not a decade before the "
                            f"run's end (t = {t[-1]:.3g}){seen}; a run a decade past t_d decides")
    return REPRODUCED, ""


def monotone_loss_verdict(parts: dict[str, list[tuple[str, str]]]) -> tuple[str, str]:
    """One eventually-monotone claim over the runs of each algorithm (:func:`monotone_loss_part` per run): refuted by
    any run rising past its descent start; reproduced when none does and every algorithm has at least one run
    observed a decade or more past its descent start; otherwise open (runs ending before that test nothing)."""
    refuted = [r for runs in parts.values() for v, r in runs if v == NOT_REPRODUCED]
    if refuted:
        return NOT_REPRODUCED, "; ".join(refuted)
    untested = [algo for algo, runs in parts.items() if not any(v == REPRODUCED for v, _ in runs)]
    if untested:
        return NO_VERDICT, (f"no run of {', '.join(DISPLAY.get(a, a) for a in untested)} reaches a decade past its "
                            "descent start: " + "; ".join(r for a in untested for v, r in parts[a] if r))
    return REPRODUCED, ""


def recovers_full_batch(gamma_eff_minus_gamma_at_n, powers_plain, powers_momentum, rates_equal: bool) -> bool:
    """Cor. 4.5 at b = n recovers Cor. 4.2: the same limit margin (gamma_eff(beta, n) - gamma identically 0), the same
    power sums in the bound and the same predicted rate at every a."""
    return gamma_eff_minus_gamma_at_n == 0 and list(powers_plain) == list(powers_momentum) and bool(rates_equal)
