"""Negative controls of every MINIBATCH decision rule: each rule, run on numbers built so that its claim is false,
must say 'not reproduced' (and, on the matching numbers where the claim holds, 'reproduced'); a decision within the
run's own noise is 'no verdict'. Trajectories are built in closed form (no simulation except where a rule reads a
real run's configuration)."""

from __future__ import annotations

import numpy as np
import pytest

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, ClaimsTable
from rates.studies.minibatch.measures import Fig1Config
from rates.studies.minibatch.protocols import ALGORITHMS, BETAS, CONVERGED, FULL, PROTOCOLS, STALLED
from rates.studies.minibatch.rows import fig1_claims
from rates.studies.minibatch.rules import (
    converges_part,
    discrepancy_part,
    improves_part,
    monotone_loss_part,
    monotone_loss_verdict,
    ordered_part,
    rate_part,
    recovers_full_batch,
    slower_part,
)

NORMS = ("max", "frobenius", "spectral")
T = np.unique(np.round(np.geomspace(1, 200_000, 60)))


def config(error, algo="signsgd", batch=64, beta=0.0, vr=False, t=T, seeds=1):
    """A Fig. 1 configuration whose own-norm relative error is ``error(t, seed)`` (cosine 1 - error)."""
    rel = np.array([[error(x, s) for x in t] for s in range(seeds)])
    return Fig1Config(algo, batch, beta, vr, t, {n: rel for n in NORMS}, {n: 1 - rel for n in NORMS})


def converging(t, _s=0):
    return 0.5 * t ** -0.5


def floor(level):
    return lambda t, _s=0: level


# ------------------------------------------------------------------ "converges" (full batch, beta = 0.99, VR)

def test_converges_rule_refutes_a_floor_and_confirms_convergence():
    assert converges_part(config(converging), "x") == (REPRODUCED, "")
    verdict, reason = converges_part(config(floor(0.2)), "x")
    assert verdict == NOT_REPRODUCED and "stalled" in reason


def test_a_stall_decided_by_a_hair_is_no_verdict():
    """Error falling x0.92 per decade (log-log slope log10(0.92) = -0.036): a smooth curve is stalled (x0.92 >= x0.9);
    the same trend with a +-10% checkpoint-to-checkpoint jitter is within the trend's noise of the x0.9 cutoff,
    so it decides nothing -- the case of two draws that cleared the cutoff by 0.018 and 0.005."""
    slope = np.log10(0.92)

    def smooth(t, _s=0):
        return 0.3 * (t / 1e5) ** slope

    rng = np.random.default_rng(3)
    jitter = dict(zip(T, 1 + 0.1 * rng.choice([-1.0, 1.0], size=T.size)))

    def noisy(t, _s=0):
        return smooth(t) * jitter[t]

    clean = config(smooth)
    assert clean.trend() == pytest.approx(0.92, abs=0.01) and clean.trend_se() < 1e-6
    assert converges_part(clean, "x")[0] == NOT_REPRODUCED
    rough = config(noisy)
    low, high = rough.trend_band()
    assert low < STALLED <= high
    verdict, reason = converges_part(rough, "x")
    assert verdict == NO_VERDICT and "within the run's noise" in reason


# ------------------------------------------------------------------------ the beta = 0.5 rows, in halves

def test_improves_rule_refutes_momentum_no_better_and_stalled():
    plain, better = config(floor(0.3)), config(floor(0.2), beta=0.5)
    assert improves_part(plain, better, "x") == (REPRODUCED, "")
    worse = config(floor(0.4), beta=0.5)
    assert improves_part(plain, worse, "x")[0] == NOT_REPRODUCED
    still_falling = config(lambda t, _s=0: 0.4 * (t / 2e5) ** -0.3, beta=0.5)
    assert improves_part(plain, still_falling, "x")[0] == NO_VERDICT


def test_discrepancy_rule_refutes_convergence_at_every_batch():
    stalled_one = [config(converging, batch=1, beta=0.5), config(floor(0.2), batch=4, beta=0.5)]
    assert discrepancy_part(stalled_one, "x") == (REPRODUCED, "")
    all_converge = [config(converging, batch=b, beta=0.5) for b in (1, 4, 16)]
    assert discrepancy_part(all_converge, "x")[0] == NOT_REPRODUCED


def _fig1_grid(error_of, seeds):
    cfgs = {}
    for algo in ALGORITHMS:
        for b in FULL.batches:
            for beta in BETAS:
                for vr in ((False, True) if b < 64 else (False,)):
                    def error(t, s, a=algo, b=b, be=beta, v=vr):
                        return error_of(a, b, be, v, s, t)

                    cfgs[(algo, b, beta, vr)] = config(error, algo, b, beta, vr, seeds=seeds)
    return cfgs


def _rows(cfgs, seeds):
    table = ClaimsTable("t", "t")
    fig1_claims(table, cfgs, FULL, 64, 200_000, seeds)
    return {c.claim.split(":")[0]: c for c in table.claims}


def test_two_draws_refuting_opposite_halves_of_the_beta_05_claim_do_not_agree():
    """Draw 0: beta = 0.5 no better than beta = 0 at b = 4 (stalled above it), discrepancies remain. Draw 1: beta = 0.5
    converges at every b < n (better than beta = 0, but no discrepancy remains). One claim row would count both
    as 'not reproduced'; each half is now its own row, and on each the draws split: no verdict."""
    def error(algo, b, beta, vr, seed, t):
        if b == 64 or vr or beta > 0.5:
            return converging(t)
        if beta == 0.0:
            return 0.3
        return (0.4 if b == 4 else 0.2) if seed == 0 else converging(t)

    rows = _rows(_fig1_grid(error, 2), [0, 1])
    improves = rows["Moderate momentum (beta = 0.5) improves on beta = 0"]
    remains = rows["Moderate momentum (beta = 0.5)"]
    for row in (improves, remains):
        assert row.verdict == NO_VERDICT and "the draws split" in row.reason and "never decide" in row.reason
    assert "seed 0 not reproduced" in improves.reason and "seed 1 reproduced" in improves.reason
    assert "seed 0 reproduced" in remains.reason and "seed 1 not reproduced" in remains.reason


def test_minibatch_fails_rule_refutes_a_small_batch_that_converges():
    def error(converges_at_4):
        return lambda algo, b, beta, vr, seed, t: (converging(t) if b == 64 or (b == 4 and converges_at_4)
                                                   else 0.3)

    fails = "Mini-batch (b < n), no momentum"
    assert _rows(_fig1_grid(error(False), 1), [0])[fails].verdict == REPRODUCED
    assert _rows(_fig1_grid(error(True), 1), [0])[fails].verdict == NOT_REPRODUCED


# ---------------------------------------------------------------------------------------- orderings

def test_ordering_rule_refutes_the_other_ordering():
    low, high = config(floor(0.2), batch=4), config(floor(0.4), batch=16)
    assert ordered_part(low, high, "x")[0] == NOT_REPRODUCED  # larger b stalled above the smaller b
    assert ordered_part(high, low, "x") == (REPRODUCED, "")
    falling = config(lambda t, _s=0: 0.4 * (t / 2e5) ** -0.3, batch=16)
    assert ordered_part(low, falling, "x")[0] == NO_VERDICT


def test_trade_off_row_refutes_a_gap_growing_with_the_batch_at_fixed_momentum():
    def error(grows):
        def of(algo, b, beta, vr, seed, t):
            if beta in (0.5, 0.9) and not vr:
                return 0.1 + (0.05 * np.log2(b) if grows else 0.3 / (1 + b))
            return converging(t)
        return of

    row = "With momentum, a larger batch also reduces the gap (batch-momentum trade-off)"
    assert _rows(_fig1_grid(error(False), 1), [0])[row].verdict == REPRODUCED
    assert _rows(_fig1_grid(error(True), 1), [0])[row].verdict == NOT_REPRODUCED


# ------------------------------------------------------------------------------ slower (momentum, VR)

def test_slower_rule_refutes_the_other_ordering_and_leaves_a_small_factor_open():
    def reaches(t_level):  # error crosses 0.1 at t_level, falling x0.32 per decade
        return lambda t, _s=0: 0.1 * (t / t_level) ** -0.5

    fast, slow = config(reaches(100.0)), config(reaches(1000.0), beta=0.99)
    assert slower_part(fast, slow, "x") == (REPRODUCED, "")
    verdict, reason = slower_part(slow, fast, "x")
    assert verdict == NOT_REPRODUCED and "earlier" in reason
    close = config(reaches(150.0), beta=0.99)
    assert slower_part(fast, close, "x")[0] == NO_VERDICT
    never = config(floor(0.2), beta=0.99)  # not below 0.1 by 2e5, > 2 x 100: slower
    assert slower_part(fast, never, "x") == (REPRODUCED, "")
    assert slower_part(config(floor(0.2)), slow, "x")[0] == NO_VERDICT


def test_momentum_slows_row_refutes_momentum_that_converges_faster():
    def error(momentum_faster):
        def of(algo, b, beta, vr, seed, t):
            if b == 64 and not vr and beta in (0.0, 0.99):
                t_level = 100.0 if (beta == 0.99) == momentum_faster else 3000.0
                return 0.1 * (t / t_level) ** -0.5
            return converging(t)
        return of

    row = "Momentum slows convergence (factors scaling with 1/(1 - beta))"
    assert _rows(_fig1_grid(error(False), 1), [0])[row].verdict == REPRODUCED
    assert _rows(_fig1_grid(error(True), 1), [0])[row].verdict == NOT_REPRODUCED


# ------------------------------------------------------------------------------------- monotone loss

def test_monotone_loss_rule_refutes_a_rise_past_the_descent_start_only():
    t = np.unique(np.round(np.geomspace(1, 1e6, 60)))
    falling = -np.log1p(t)
    assert monotone_loss_part(t, falling, 2.0, "x") == (REPRODUCED, "")
    risen = falling.copy()
    risen[-10] += 1.0  # a rise at t ~ 1e5, past t_d = 100
    verdict, reason = monotone_loss_part(t, risen, 2.0, "x")
    assert verdict == NOT_REPRODUCED and "past the descent start" in reason
    # the same rise before t_d = 10^5.5 says nothing, and a descent start within the last decade tests nothing
    assert monotone_loss_part(t, risen, 5.5, "x")[0] == NO_VERDICT
    assert monotone_loss_part(t, falling, 5.5, "x")[0] == NO_VERDICT
    assert monotone_loss_part(t, falling, None, "x")[0] == NO_VERDICT
    # the row: one refuting run refutes; an algorithm without any tested run leaves it open
    assert monotone_loss_verdict({"a": [(REPRODUCED, "")], "b": [(NOT_REPRODUCED, "r")]})[0] == NOT_REPRODUCED
    assert monotone_loss_verdict({"a": [(REPRODUCED, "")], "b": [(NO_VERDICT, "n")]})[0] == NO_VERDICT
    assert monotone_loss_verdict({"a": [(REPRODUCED, ""), (NO_VERDICT, "n")]}) == (REPRODUCED, "")


# -------------------------------------------------------------------------------------- derived rows

def test_derived_rows_refute_a_dimension_dependent_bound_and_another_limit_at_b_equal_n():
    import sympy as sp

    from rates.studies.minibatch.measures import bound_symbols
    from rates.studies.minibatch.protocols import DIMENSION_SYMBOLS
    from rates.symbolic.theorems import momentum, variance_reduction
    from rates.symbolic.theorems.base import B, PowerSumTerm, beta, gamma, n

    real = bound_symbols({"Thm 4.3": momentum.template(), "Thm 4.6": variance_reduction.template()})
    assert not any(x in DIMENSION_SYMBOLS for found in real.values() for x in found)
    assert {"gamma", "B", "n", "b", "beta"} <= set(real["Thm 4.3"])
    d = sp.Symbol("d", positive=True)
    template = momentum.template()
    dimensional = type(template)(**{**template.__dict__, "numerator": (PowerSumTerm(sp.Integer(2), d * B, "fake"),)})
    assert "d" in bound_symbols({"fake": dimensional})["fake"]
    # at b = n the momentum gamma_eff is gamma itself (closed form: c(n, n) = 0)
    assert sp.simplify(momentum.gamma_eff_momentum(gamma, B, n, n, beta) - gamma) == 0
    assert momentum.gamma_eff_momentum(0.9, 10.0, 64, 64, 0.5) == pytest.approx(0.9)
    assert recovers_full_batch(0, [2], [2], True)
    assert not recovers_full_batch(sp.Symbol("x"), [2], [2], True)
    assert not recovers_full_batch(0, [2], [1], True) and not recovers_full_batch(0, [2], [2], False)


# ---------------------------------------------------------------------------------------------- rates

def _synthetic(run, t, margin):
    """The real run's configuration and constants with a margin built in closed form (loss falling throughout)."""
    from dataclasses import replace

    margin = np.asarray(margin, float)
    return replace(run, t=t, margin=margin, gap=float(run.gamma["value"]) - margin,
                   log_loss=-np.log1p(t) - 1.0, norm=np.sqrt(t) + 1.0, margins={}, margin_errors={}, cosines={},
                   weights=None)


def test_rate_rule_refutes_a_gap_slower_than_the_bound_past_the_descent_start():
    """Thm 4.1 at b = n, SignSGD, a = 1/2 (descent start t_d ~ 10^3.3 on the preset): a gap 0.5 gamma t^(-0.2) is
    slower than the bound log t / t^(1/2) (local slope about -0.4) by 0.2 over the window 1e4-1e6, past t_d:
    not reproduced; 0.5 gamma log t / t^(1/2) reproduces it."""
    from rates.numeric.engine import simulate
    from rates.studies.minibatch.measures import judge_rate_runs
    from rates.studies.minibatch.runs import _spec
    from rates.studies.runner import dataset

    run = simulate([_spec("signsgd", "1/2", 0, 64, 0.0, False)], dataset(FULL.data, 0), 50, checkpoints=4).runs[0]
    gamma = float(run.gamma["value"])
    t = np.unique(np.round(np.geomspace(1, 1e6, 60)))
    slow = _synthetic(run, t, gamma - 0.5 * gamma * (t + 2) ** -0.2)
    record, crossed = judge_rate_runs([slow])
    assert crossed is None and record.verdict.label == "violated"
    assert rate_part(record, crossed)[0] == NOT_REPRODUCED
    bound_rate = _synthetic(run, t, gamma - 0.5 * gamma * np.log(t + 2) / np.sqrt(t + 2))
    record, crossed = judge_rate_runs([bound_rate])
    assert record.verdict.label in ("tight", "loose") and rate_part(record, crossed) == (REPRODUCED, "")


def test_a_margin_passing_gamma_eff_early_leaves_the_rate_open_instead_of_confirming_it():
    """Thm 4.3 (b = 32, beta = 0.999): a margin gamma_eff + 0.05 gamma - 0.5 gamma t^(-0.3) passes gamma_eff at
    t = 10^(1/0.3) ~ 2.2e3 and stays above: its bounded gap is <= 0 from there, which used to reproduce the row
    outright. The rate is now fitted on the checkpoints before the crossing; 1e3-2.2e3 is no window: no verdict.
    Crossing at 3e5 leaves two decades before it, and the fit decides."""
    from rates.numeric.engine import simulate
    from rates.studies.minibatch.measures import fitted_target, judge_rate_runs
    from rates.studies.minibatch.runs import _spec
    from rates.studies.runner import dataset

    run = simulate([_spec("signsgd", "1/2", 0, 32, 0.999, False, 0.02)], dataset(FULL.data, 0), 50,
                   checkpoints=4).runs[0]
    gamma = float(run.gamma["value"])
    target = fitted_target(judge_rate_runs([run])[0])[0]
    t = np.unique(np.round(np.geomspace(1, 1e6, 60)))
    early = _synthetic(run, t, target + 0.05 * gamma - 0.5 * gamma * (t + 2) ** -0.3)
    record, crossed = judge_rate_runs([early])
    assert 1.5e3 <= crossed <= 3e3 and float(record.runs[0].t[-1]) < crossed
    verdict, reason = rate_part(record, crossed)
    assert verdict == NO_VERDICT and "passes the theorem's target for good" in reason
    late = _synthetic(run, t, target + 0.5 * gamma * 3e5 ** -0.3 - 0.5 * gamma * (t + 2) ** -0.3)
    record, crossed = judge_rate_runs([late])
    assert 2e5 <= crossed <= 4e5 and record.verdict.fit is not None
    assert record.verdict.window.t1 < crossed
    # the fit before the crossing confirms the bound; on the study's data that window lies before the descent
    # start t_d, where a slower gap would not refute, so the row stays open; with t_d reached it reproduces
    verdict, reason = rate_part(record, crossed)
    assert verdict == NO_VERDICT and "before the descent start" in reason
    from rates.studies import horizon

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(horizon, "undecided_past_onset", lambda record: None)
        assert rate_part(record, crossed)[0] == REPRODUCED


def test_every_row_of_the_full_study_has_a_protocol_and_figure_rows_share_one_window():
    from rates.output.claims import Protocol

    assert all(isinstance(p, Protocol) and p.quantity and p.window and p.rule and p.rules_out
               for p in PROTOCOLS.values())
    windows = {}
    for p in PROTOCOLS.values():
        if p.figure:
            windows.setdefault(p.figure, set()).add(p.window)
    assert all(len(w) == 1 for w in windows.values()), windows
    assert CONVERGED == 0.05


# ------------------------------------------------------------------------------ per-sample (Thm 4.9, App. J)

def _persample(cos_m=0.9999, cos_w=0.85, rel=0.2, log_loss_end=-6.0, spectral_differs=False, cos_m_twins=None):
    """Per-sample measures of the four datasets x three algorithms on seed 0, built in closed form."""
    from rates.studies.minibatch.runs import persample_datasets

    t = np.unique(np.round(np.geomspace(1, 1e5, 40)))
    ps = {}
    for name in persample_datasets(0):
        for algo in ALGORITHMS:
            cm = cos_m if cos_m_twins is None or name not in cos_m_twins else cos_m_twins[name]
            series = np.linspace(0.0, 1.0, t.size) + (1e-6 if spectral_differs and algo == "spectral-sgd" else 0.0)
            ps[(name, algo, 0)] = {
                "t": t, "rel": {n: np.full(t.size, rel) for n in NORMS}, "cos_M": np.full(t.size, cm),
                "cos_W": {n: np.full(t.size, cos_w) for n in NORMS}, "series": series,
                "log_loss": np.linspace(0.0, log_loss_end, t.size)}
    return ps


def _persample_rows(ps):
    from rates.studies.minibatch.rows import persample_claims

    table = ClaimsTable("t", "t")
    persample_claims(table, ps, [0], 100_000)
    return {c.claim: c for c in table.claims}


def test_per_sample_rules_refute_their_false_cases():
    """Thm 4.9 / App. J: the direction to M (cosine 0.99 < 0.999 refutes), the cosine to W* stagnating (0.999 > 0.99
    refutes), the error staying high (0.01 < 0.05 refutes), scale independence (cosines to M of 0.999 on both twins:
    the bound cos(2 acos 0.999) = 0.996 < 0.999 refutes), count dependence (cosines to M of 0.5 leave the directions
    free to agree: refutes), the loss going to 0 (log L = -1 at the end refutes), Lemma H.1 (1e-6 apart refutes)."""
    good = _persample_rows(_persample())
    assert all(c.verdict == REPRODUCED for c in good.values()), {k: c.reason for k, c in good.items()}
    cases = {
        "Per-sample (b = 1) iterates converge in direction to M/||M|| (bias matrix)": _persample(cos_m=0.99),
        "Cosine to the max-margin solution stagnates well below 1 (imbalanced data)": _persample(cos_w=0.999),
        "Per-sample relative margin error stays high in the max, l2 and spectral norms": _persample(rel=0.01),
        "The limit direction does not depend on the sample scales": _persample(
            cos_m_twins={"orthogonal-random": 0.999, "scale-twin": 0.999}),
        "The limit direction depends on the class frequencies": _persample(
            cos_m_twins={"orthogonal-random": 0.5, "counts-twin": 0.5}),
        "Per-sample training loss converges to zero": _persample(log_loss_end=-1.0),
        "Spectral-SGD with b = 1 equals N-SGD (rank-one gradients)": _persample(spectral_differs=True),
    }
    for claim, ps in cases.items():
        rows = _persample_rows(ps)
        assert rows[claim].verdict == NOT_REPRODUCED, (claim, rows[claim].verdict, rows[claim].reason)
    lemma_h1 = _persample_rows(_persample())["Spectral-SGD with b = 1 equals N-SGD (rank-one gradients)"]
    assert lemma_h1.implementation_check


# ------------------------------------------------------------------- rules broken on purpose (boundaries)

def test_monotone_loss_rule_refutes_a_rise_in_the_decade_after_the_descent_start():
    """t_d = 10^2 (log10(t + 2) = 2 at t = 98): a rise from t = 98 itself or from t = 300 is past t_d; one from
    t = 97 is before it."""
    t = np.array([1, 10, 50, 97, 98, 300, 1000, 1e4, 1e5], float)
    falling = -np.log1p(t)

    def rise_from(i):
        risen = falling.copy()
        risen[i + 1] = risen[i] + 0.5
        return risen

    for i in (4, 5):
        verdict, reason = monotone_loss_part(t, rise_from(i), 2.0, "x")
        assert verdict == NOT_REPRODUCED and f"from t = {t[i]:.3g}" in reason
    verdict, reason = monotone_loss_part(t, rise_from(3), 2.0, "x")
    assert verdict == REPRODUCED  # before t_d, and t_d is three decades before the end
    # t_d exactly a decade before the end (log10(t_end + 2) - 1) is observed over a decade: decides
    end = np.array([1, 10, 98, 998], float)
    assert monotone_loss_part(end, -np.log1p(end), 2.0, "x") == (REPRODUCED, "")
    assert monotone_loss_part(end, -np.log1p(end), 2.01, "x")[0] == NO_VERDICT


def test_slower_rule_needs_a_run_long_enough_to_show_the_factor():
    """The fast configuration stays below 0.1 from t = 100; the slow one never does. A run to 150 cannot show
    'twice as late' (no verdict); a run to 200 can (reproduced)."""
    def stepped(t, _s=0):
        return 0.2 if t < 100 else 0.05

    for end, expected in ((150.0, NO_VERDICT), (199.0, NO_VERDICT), (200.0, REPRODUCED)):
        t = np.array([1.0, 10.0, 50.0, 100.0, end])
        fast, slow = config(stepped, t=t), config(floor(0.2), beta=0.99, t=t)
        assert fast.time_below() == 100.0 and slow.time_below() is None
        assert slower_part(fast, slow, "x")[0] == expected, end


def test_slower_rule_at_its_factor_two_boundaries():
    t = np.array([1.0, 10.0, 50.0, 100.0, 150.0, 200.0, 400.0, 1e4])

    def below_from(t_level):
        return lambda x, _s=0: 0.2 if x < t_level else 0.05

    fast = config(below_from(100.0), t=t)
    assert slower_part(fast, config(below_from(200.0), t=t), "x")[0] == REPRODUCED  # exactly x2
    assert slower_part(fast, config(below_from(150.0), t=t), "x")[0] == NO_VERDICT  # x1.5
    assert slower_part(config(below_from(200.0), t=t), fast, "x")[0] == NOT_REPRODUCED  # x0.5 exactly
    assert slower_part(config(below_from(150.0), t=t), fast, "x")[0] == NO_VERDICT  # x0.67


def test_time_below_is_from_the_last_crossing():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    dips = config(lambda x, _s=0: {1.0: 0.2, 10.0: 0.05, 100.0: 0.2, 1000.0: 0.05}[x], t=t)
    assert dips.time_below() == 1000.0
    assert config(floor(0.05), t=t).time_below() == 1.0
    assert config(floor(0.1), t=t).time_below() is None  # at the level is not below it


def test_slower_rule_says_what_it_compared():
    t = np.array([1.0, 10.0, 50.0, 100.0, 150.0, 200.0, 400.0, 1e4])

    def below_from(t_level):
        return lambda x, _s=0: 0.2 if x < t_level else 0.05

    fast = config(below_from(100.0), t=t)
    assert slower_part(config(below_from(200.0), t=t), fast, "x") == (
        NOT_REPRODUCED, "x: error below 0.1 from t = 200 vs 100 (x0.5): it gets there 2 times earlier, not later")
    assert slower_part(fast, config(below_from(150.0), t=t), "x") == (
        NO_VERDICT, "x: error below 0.1 from t = 100 vs 150 (x1.5): within a factor 2, which the checkpoints and seeds "
                    "do not resolve")
    assert slower_part(config(floor(0.2), t=t), fast, "x") == (
        NO_VERDICT, "x: error below 0.1 from t = - vs 100: the faster configuration never stays below 0.1; a longer "
                    "run decides")
    short = np.array([1.0, 10.0, 100.0, 150.0])
    assert slower_part(config(below_from(100.0), t=short), config(floor(0.2), t=short), "x") == (
        NO_VERDICT, "x: error below 0.1 from t = 100 vs not by 150: the run ends before it could be 2 times later; a "
                    "longer run decides")
    # another level: the rule reads the level it is given
    assert slower_part(fast, config(below_from(200.0), t=t), "x", level=0.01)[0] == NO_VERDICT


def test_monotone_loss_rule_output_word_for_word_and_its_relative_slack():
    t = np.array([1.0, 10.0, 98.0, 998.0, 9998.0])
    assert monotone_loss_part(t, np.array([0, -1, -2, -3, -2.5]), 2.0, "x") == (
        NOT_REPRODUCED, "x: log L rises by 0.5 from t = 998 to 1e+04, past the descent start t_d ~ 10^2 (1 rise(s))")
    assert monotone_loss_part(t, np.array([0, -1, -0.5, -3, -4]), 3.5, "x") == (
        NO_VERDICT, "x: the descent start t_d ~ 10^3.5 is not a decade before the run's end (t = 1e+04); log L rises "
                    "at 1 checkpoint(s), the last from t = 10; a run a decade past t_d decides")
    assert monotone_loss_part(t, np.array([0, -1, -2, -3, -4]), None, "x") == (
        NO_VERDICT, "x: the descent start t_d is unknown; no rise at any checkpoint")
    # t_d a decade before the end: log10(9998 + 2) - 1 = 3 decides, 3.00002 does not
    assert monotone_loss_part(t, np.array([0, -1, -2, -3, -4]), 3.0, "x") == (REPRODUCED, "")
    assert monotone_loss_part(t, np.array([0, -1, -2, -3, -4]), 3.00002, "x")[0] == NO_VERDICT
    # a rise counts when it passes 1e-12 of (1 + |log L|): at log L = -100, 1.01e-10
    level = np.array([-90.0, -95.0, -100.0, -100.0, -100.0])
    for step, expected in ((5e-11, REPRODUCED), (1.015e-10, NOT_REPRODUCED)):
        loss = level.copy()
        loss[-1] += step
        assert monotone_loss_part(t, loss, 1.0, "x")[0] == expected, step
    first_small = np.array([0.0, -95.0, -100.0, -100.0, -100.0 + 5e-11])  # the slack is the rise's own level's
    assert monotone_loss_part(t, first_small, 1.0, "x")[0] == REPRODUCED


def test_monotone_loss_row_output_word_for_word():
    assert monotone_loss_verdict({"signsgd": [(REPRODUCED, "")]}) == (REPRODUCED, "")
    assert monotone_loss_verdict({"signsgd": [(NOT_REPRODUCED, "a"), (NOT_REPRODUCED, "b")]}) == (
        NOT_REPRODUCED, "a; b")
    assert monotone_loss_verdict({"signsgd": [(NO_VERDICT, "a")], "nsgd": [(NO_VERDICT, "b")]}) == (
        NO_VERDICT, "no run of SignSGD, N-SGD reaches a decade past its descent start: a; b")


# ------------------------------------------------- Fig. 1 measures of a configuration, from their definitions

def test_window_means_trend_and_its_standard_error_by_hand():
    from rates.studies.minibatch.protocols import TREND_WINDOW, TREND_Z

    t = np.array([1.0, 10.0, 30.0, 50.0, 100.0, 300.0, 500.0, 1000.0])
    jitter = {1.0: 1.0, 10.0: 1.1, 30.0: 0.9, 50.0: 1.2, 100.0: 0.8, 300.0: 1.0, 500.0: 1.1, 1000.0: 0.95}

    def error(x, s=0):
        return 0.3 * x ** -0.5 * jitter[x] * (1 + 0.1 * s)

    c = config(error, t=t, seeds=2)
    seed_mean = np.array([np.mean([error(x, s) for s in (0, 1)]) for x in t])
    late = (t > 1000 / 10 ** TREND_WINDOW) & (t <= 1000)  # 562 < t <= 1000: one checkpoint
    early = (t > 100 / 10 ** TREND_WINDOW) & (t <= 100)  # 56 < t <= 100
    assert c.trend() == pytest.approx(seed_mean[late].mean() / seed_mean[early].mean(), rel=1e-12)
    span = (t > 1000 / 10 ** (1 + TREND_WINDOW)) & (t <= 1000)  # the trend's span: 4 checkpoints
    x, y = np.log(t[span]), np.log(seed_mean[span])
    residual = y - np.polyval(np.polyfit(x, y, 1), x)
    se = np.sqrt(np.sum(residual ** 2) / (x.size - 2)) * np.sqrt(1 / late.sum() + 1 / early.sum())
    assert c.trend_se() == pytest.approx(se, rel=1e-9) and se > 0
    low, high = c.trend_band()
    assert low == pytest.approx(c.trend() * np.exp(-TREND_Z * se))
    assert high == pytest.approx(c.trend() * np.exp(TREND_Z * se))
    assert c.state() == f"{c.final_rel():.3g} (x{c.trend():.2g} ± {c.trend() * (np.exp(TREND_Z * se) - 1):.2g}/decade)"
    # fewer than four checkpoints in the span: no scatter to estimate, se 0, and the state says no band
    sparse = config(lambda x, s=0: 0.3 * x ** -0.5, t=np.array([1.0, 100.0, 1000.0]))
    assert sparse.trend_se() == 0.0 and sparse.state() == f"{sparse.final_rel():.3g} (x{sparse.trend():.2g}/decade)"
    # a window with no checkpoint reads the last checkpoint before its end
    assert sparse._window_mean(50.0) == pytest.approx(0.3)
    assert sparse.trend() == pytest.approx((0.3 * 1000 ** -0.5) / (0.3 * 100 ** -0.5))


def test_fig1_measures_read_the_own_norm_and_each_seed():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    c = config(lambda x, s=0: 0.2 / (1 + s) * (1.0 if x < 1000 else 0.5), t=t, seeds=2)
    assert c.final_rel() == pytest.approx((0.1 + 0.05) / 2)
    assert c.final_cos() == pytest.approx(1 - 0.075)
    assert c.last_decade_range() == (pytest.approx(0.05), pytest.approx(0.2))  # t >= 100 over both seeds
    one = c.seed(1)
    assert one.rel["max"].shape == (1, 4) and one.final_rel() == pytest.approx(0.05)
    assert one.cos["frobenius"][0, -1] == pytest.approx(0.95)


def test_converged_converging_and_stalled_at_their_thresholds():
    from rates.studies.minibatch.protocols import FALLING

    t = np.array([1.0, 10.0, 100.0, 1000.0])

    def falling_by(factor, end):
        return config(lambda x, s=0: end * factor ** (np.log10(1000.0 / x) * -1), t=t)

    assert falling_by(0.5, 0.04).converged() and falling_by(0.5, 0.04).converging()
    assert not falling_by(0.5, 0.06).converged() and not falling_by(0.5, 0.06).converging()  # above 5 %
    assert falling_by(FALLING, 0.04).converging()  # exactly x0.6 per decade
    assert not falling_by(0.7, 0.04).converging() and falling_by(0.7, 0.04).converged()
    assert not falling_by(1.0, 0.04).converged()  # not falling
    assert falling_by(STALLED, 0.2).stalled() and not falling_by(0.8, 0.2).stalled()


def test_margin_above_target_from_reads_every_run():
    from rates.studies.minibatch.measures import margin_above_target_from

    t = [1.0, 10.0, 100.0, 1000.0]
    assert margin_above_target_from([t, t], [[1, -1, -1, -1], [1, 1, -1, -1]]) == 100.0  # the later run decides
    assert margin_above_target_from([t], [[-1, 1, -1, -1]]) == 100.0  # from the last positive gap on
    assert margin_above_target_from([t], [[-1, -1, -1, -1]]) == 1.0
    assert margin_above_target_from([t, t], [[1, -1, -1, -1], [-1, -1, -1, 1]]) is None  # above at the end
    assert margin_above_target_from([t], [[1, -1, 0.0, -1]]) == 10.0  # a gap of 0: the margin is at its target
    assert margin_above_target_from([], []) is None


def test_discrepancy_and_ordered_rules_word_for_word():
    t = T

    def stalled_at(level, batch=1):
        return config(floor(level), t=t, batch=batch)

    conv = config(converging, t=t)
    assert discrepancy_part([conv, stalled_at(0.2)], "x") == (REPRODUCED, "")
    assert discrepancy_part([conv, conv], "x") == (NOT_REPRODUCED, "x: beta = 0.5 converges at every b < n (no "
                                                                  "discrepancy remains)")
    assert discrepancy_part([conv, stalled_at(0.04)], "x")[0] == NO_VERDICT  # stalled but below 5 %
    assert ordered_part(stalled_at(0.1), stalled_at(0.1), "x") == (REPRODUCED, "")  # the same level
    assert ordered_part(conv, config(lambda x, s=0: converging(x) * 1.5, t=t), "x") == (REPRODUCED, "")
    verdict, reason = ordered_part(stalled_at(0.1), stalled_at(0.2), "x")
    assert verdict == NOT_REPRODUCED and reason == (f"x: {stalled_at(0.2).state()} stalled above "
                                                    f"{stalled_at(0.1).state()}")
    assert ordered_part(conv, config(lambda x, s=0: 0.2 * x ** -0.05, t=t), "x")[0] == NO_VERDICT  # still falling


# ---------------------------------------------- the edges of the trend's windows and the rules' boundaries

def _by_time(values, seeds=1):
    """A configuration whose own-norm relative error at checkpoint t is ``values[t]`` (all seeds alike)."""
    t = np.array(sorted(values))
    return config(lambda x, s=0: values[x], t=t, seeds=seeds)


def test_trend_windows_are_open_below_and_closed_at_their_end():
    """End 1000: the late window is (1000 / 10^(1/4), 1000] = (562.34, 1000], the early one (56.234, 100], the
    scatter's span (56.234, 1000]. Checkpoints sit exactly on both open edges (excluded), at 555 (outside: just
    below 562.34) and several inside each window; the windows' means and the standard error are written out from
    that membership (scatter about a least-squares line, scipy's fit, times sqrt(1/3 + 1/3))."""
    from scipy.stats import linregress

    from rates.studies.minibatch.protocols import TREND_WINDOW

    late_edge, early_edge = 1000 / 10 ** TREND_WINDOW, 1000 / 10 ** (1 + TREND_WINDOW)
    values = {1.0: 0.9, 10.0: 0.5, early_edge: 0.31, 58.0: 0.3, 80.0: 0.26, 100.0: 0.25, 300.0: 0.16, 555.0: 0.11,
              late_edge: 0.135, 600.0: 0.12, 800.0: 0.1, 1000.0: 0.095}
    c = _by_time(values)
    assert c._window_mean(1000.0) == pytest.approx((0.12 + 0.1 + 0.095) / 3, rel=1e-12)
    assert c._window_mean(100.0) == pytest.approx((0.3 + 0.26 + 0.25) / 3, rel=1e-12)
    assert c.trend() == pytest.approx(0.105 / 0.27, rel=1e-12)
    span = [58.0, 80.0, 100.0, 300.0, 555.0, late_edge, 600.0, 800.0, 1000.0]
    x, y = np.log(span), np.log([values[s] for s in span])
    fit = linregress(x, y)
    scatter = np.sqrt(np.sum((y - fit.intercept - fit.slope * x) ** 2) / (len(span) - 2))
    assert c.trend_se() == pytest.approx(scatter * np.sqrt(1 / 3 + 1 / 3), rel=1e-9)


def test_no_checkpoint_in_the_early_window_gives_no_standard_error():
    """Four checkpoints in (56.234, 1000] but none in the early window (56.234, 100]: no second window mean to weigh,
    so the standard error is 0 (not a division by zero), and the state prints no band."""
    c = _by_time({1.0: 0.5, 10.0: 0.4, 200.0: 0.3, 300.0: 0.25, 500.0: 0.22, 1000.0: 0.2})
    assert c.trend_se() == 0.0
    assert c.trend() == pytest.approx(0.2 / 0.4)  # the early window reads the last checkpoint before 100: t = 10
    assert c.state() == "0.2 (x0.5/decade)"


def test_last_decade_range_starts_a_decade_before_the_end():
    """t >= 1000 / 10 = 100 only: the checkpoints at 1, 10 and 95 lie before the last decade."""
    c = _by_time({1.0: 0.9, 10.0: 0.8, 95.0: 0.7, 100.0: 0.3, 1000.0: 0.1})
    assert c.last_decade_range() == (0.1, 0.3)


def test_seed_takes_one_seed_from_the_first_as_from_the_last():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    c = config(lambda x, s=0: 0.2 / (1 + s), t=t, seeds=2)
    first = c.seed(0)
    assert first.rel["max"].shape == (1, 4) and first.cos["spectral"].shape == (1, 4)
    assert first.final_rel() == pytest.approx(0.2) and first.final_cos() == pytest.approx(0.8)


def test_converged_needs_an_error_strictly_below_five_percent():
    """Final error exactly CONVERGED = 0.05, halving per decade: falling fast, but not below 5 %."""
    c = _by_time({1.0: 0.4, 10.0: 0.2, 100.0: 0.1, 1000.0: 0.05})
    assert c.final_rel() == 0.05 and c.trend() == pytest.approx(0.5)
    assert not c.converged() and not c.converging()


def test_stalled_within_noise_and_falling_partition_the_band_at_its_edges():
    """Stalled: the band's low end at or above STALLED = 0.9; within noise: low end below it and high end at or
    above it; otherwise falling beyond the noise."""
    c = config(floor(0.2))
    for band, stalled, within in (((0.9, 0.95), True, False), ((0.8, 0.9), False, True),
                                  ((0.8, 0.95), False, True), ((0.8, 0.89), False, False)):
        c.trend_band = lambda band=band: band
        assert (c.stalled(), c.stall_within_noise()) == (stalled, within), band


def test_converges_rule_states_its_band_and_the_horizon_that_decides():
    """Still falling above 5 %: error 0.2 at t = 1000, x10^(-1/2) per decade (sqrt(10) x 0.2 at t = 100); kept up,
    it reaches 0.05 after log(1/4) / log(10^(-1/2)) = 2 log10(4) = 1.2 decades, at t = 1000 x 16 = 1.6e4."""
    falling = _by_time({1.0: 6.0, 100.0: 0.2 * 10 ** 0.5, 1000.0: 0.2})
    assert converges_part(falling, "x") == (
        NO_VERDICT, "x: relative error 0.2 (x0.32/decade) is above 0.05 but still falling (stalled means >= x0.9 per "
                    "decade); at x0.32/decade it reaches 0.05 after 1.2 more decade(s), at t ~ 1.6e+04: a run that "
                    "long decides")
    rng = np.random.default_rng(3)
    jitter = dict(zip(T, 1 + 0.1 * rng.choice([-1.0, 1.0], size=T.size)))
    rough = config(lambda t, _s=0: 0.3 * (t / 1e5) ** np.log10(0.92) * jitter[t])
    low, high = rough.trend_band()
    assert low < high
    verdict, reason = converges_part(rough, "x")
    assert verdict == NO_VERDICT and f"of the trend: x{low:.3g}-x{high:.3g}); a longer run decides" in reason


def test_discrepancy_rule_at_exactly_five_percent_and_its_open_reason():
    conv = config(converging)
    assert discrepancy_part([conv, config(floor(0.05), batch=4)], "x") == (REPRODUCED, "")  # stalled at 5 %
    falling = config(lambda t, _s=0: 0.4 * (t / 2e5) ** -0.3, batch=4)
    assert discrepancy_part([conv, falling], "x") == (
        NO_VERDICT, f"x: beta = 0.5 neither converged nor stalled at every b (b=64: {conv.state()}, b=4: "
                    f"{falling.state()}); a longer run decides")


def _levels(rel, cos, beta=0.0, seeds=1):
    """A stalled configuration with final error ``rel`` and final cosine ``cos`` (set apart)."""
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    rel_rows, cos_rows = np.full((seeds, t.size), rel), np.full((seeds, t.size), cos)
    return Fig1Config("signsgd", 4, beta, False, t, {n: rel_rows for n in NORMS}, {n: cos_rows for n in NORMS})


def test_improves_rule_needs_both_a_lower_error_and_a_higher_cosine():
    plain = _levels(0.2, 0.9)
    assert improves_part(plain, _levels(0.1, 0.95, 0.5), "x") == (REPRODUCED, "")
    for momentum in (_levels(0.1, 0.8, 0.5),    # lower error, lower cosine
                     _levels(0.2, 0.95, 0.5),   # the same error
                     _levels(0.1, 0.9, 0.5)):   # the same cosine
        assert momentum.stalled()
        assert improves_part(plain, momentum, "x") == (
            NOT_REPRODUCED, f"x: beta = 0.5 ({momentum.state()}) no better than beta = 0 ({plain.state()})")


def test_ordering_rule_refutes_only_disjoint_ranges():
    """Two seeds stalled at 0.15 and 0.4 (mean 0.275, range [0.15, 0.4]) against one stalled at 0.2: the ranges
    overlap, so the larger mean decides nothing; seeds at 0.2 and 0.4 touch 0.2 (not disjoint either)."""
    lower = config(floor(0.2))
    for low_seed in (0.15, 0.2):
        higher = config(lambda t, s=0, low=low_seed: (low, 0.4)[s], seeds=2)
        assert higher.stalled() and higher.last_decade_range() == (low_seed, 0.4)
        assert ordered_part(lower, higher, "x") == (
            NO_VERDICT, f"x: {higher.state()} above {lower.state()} but still falling or within the other's range "
                        "over the last decade; a longer run or more seeds decide")
