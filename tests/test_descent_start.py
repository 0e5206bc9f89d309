"""``violated`` only past the descent start: the step-local t_0 (rates.symbolic.theorems.descent_start).

Independent expectations: for NSD (one noise term ``alpha eta_t``, J = 1) the descent start is the first ``t`` with
``2 B^2 exp(2 B eta_t) eta_t <= gamma/2``; that scalar equation is solved here by scipy's brentq, not by the
module's bisection, and inverted through ``eta_t = eta_0 (t+2)^(-a)`` by hand.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import brentq

from rates.numeric.algorithms import resolve_algorithm
from rates.studies.fitting import fit_group
from rates.symbolic.theorems import predict
from rates.symbolic.theorems.descent_start import descent_start
from tests.test_compare import checkpoints, synthetic_run

# the default preset's first draw: gamma and B as recorded by the engine (rates run --data default)
DEFAULT_GAMMA, DEFAULT_B = 0.8817944572646208, 6.097159394431712


def _brentq_start(gamma: float, B: float, a: float, eta0: float) -> float:
    def excess(log_eta):
        eta = math.exp(log_eta)
        return 2 * B**2 * math.exp(2 * B * eta) * eta - gamma / 2
    if excess(math.log(eta0)) <= 0:
        return 0.0
    eta_star = math.exp(brentq(excess, math.log(1e-300), math.log(eta0), xtol=1e-15, rtol=1e-15))
    return math.ceil((eta0 / eta_star) ** (1 / a) - 2)


def _nsd_template(a="3/4"):
    return predict(resolve_algorithm("signgd"), Fraction(a)).template


@pytest.mark.parametrize("gamma, B, a", [(DEFAULT_GAMMA, DEFAULT_B, "3/4"), (DEFAULT_GAMMA, DEFAULT_B, "1/2"),
                                         (DEFAULT_GAMMA, DEFAULT_B, "1"), (0.05, 20.0, "1/4")])
def test_descent_start_solves_the_step_local_descent_condition(gamma, B, a):
    start = descent_start(_nsd_template(a), {"gamma": gamma, "B": B}, Fraction(a), 1.0)
    expected = _brentq_start(gamma, B, float(Fraction(a)), 1.0)
    assert start.t == pytest.approx(expected, rel=1e-9, abs=1)
    # the worst-case t_0 (alpha at eta_0) is never earlier than the step-local one
    alpha0 = 2 * B**2 * math.exp(2 * B)
    assert math.log10(max(start.t, 0) + 2) <= (1 / float(Fraction(a))) * math.log10(2 * alpha0 / gamma) + 1e-9


def test_scaling_the_data_scales_the_descent_start_like_eta0():
    # data x c is the run with eta_0 x c: the same descent start
    c = 1e10
    scaled = descent_start(_nsd_template(), {"gamma": DEFAULT_GAMMA * c, "B": DEFAULT_B * c}, Fraction(3, 4), 1.0)
    faster = descent_start(_nsd_template(), {"gamma": DEFAULT_GAMMA, "B": DEFAULT_B}, Fraction(3, 4), c)
    assert scaled.log10 == pytest.approx(faster.log10, rel=1e-9)
    assert scaled.t > 1e15  # beyond any run
    tiny = descent_start(_nsd_template(), {"gamma": DEFAULT_GAMMA / c, "B": DEFAULT_B / c}, Fraction(3, 4), 1.0)
    assert tiny.t == 0.0


def test_adam_leaves_out_its_unknown_moment_constant_and_says_so():
    template = predict(resolve_algorithm("adam"), Fraction(1, 2)).template
    start = descent_start(template, {"gamma": DEFAULT_GAMMA, "B": DEFAULT_B}, Fraction(1, 2), 1.0)
    assert start.left_out and "c_adam" in start.left_out[0]
    # J = 2 noise terms: the curvature term alone must stay below gamma/4
    def excess(log_eta):
        eta = math.exp(log_eta)
        return 2 * DEFAULT_B**2 * math.exp(2 * DEFAULT_B * eta) * eta - DEFAULT_GAMMA / 4
    eta_star = math.exp(brentq(excess, math.log(1e-300), 0.0, xtol=1e-15, rtol=1e-15))
    assert start.t == pytest.approx(math.ceil((1 / eta_star) ** 2 - 2), rel=1e-9)


def _slow_run(gamma, B, slope=-0.007, a="3/4"):
    """A gap that decays, but far slower than SignGD's t^-1/4 bound, on data with the given constants."""
    t = checkpoints(2e4)
    # a loss falling twice as fast as the descent lemma guarantees (rates.judge.compare's entry rule) for NSD:
    # log L(t) = -2 (gamma/4) sum_{s<t} eta_s, with the integral of (x+2)^-a in place of the sum
    one_minus_a = 1 - float(Fraction(a))
    loss = -0.5 * gamma * (t + 2.0) ** one_minus_a / one_minus_a
    scale = gamma / DEFAULT_GAMMA  # margins and gaps scale with the data
    run = synthetic_run(lambda t: 0.5 * scale * t ** slope, t=t, a=a, noise=0.001, gamma=gamma, log_loss=loss)
    facts = {"B": B, "n": 30, "d": 5, "k": 3, "orthogonal": False, "class_counts": [10] * 3}
    run.config = dataclasses.replace(run.config, data_facts=facts, family="nsd", data="file.csv")
    return run


def test_a_slow_gap_on_data_scaled_by_1e10_is_pre_asymptotic_not_violated():
    record = fit_group([_slow_run(DEFAULT_GAMMA * 1e10, DEFAULT_B * 1e10)])
    verdict = record.verdict
    assert verdict.fit.ci_high < 0  # the gap decays: the plateau rule alone would not save it
    assert verdict.label == "inconclusive", verdict.reason
    assert "before the descent start" in verdict.reason and "without this rule: bound violated" in verdict.reason
    assert verdict.context["phase"]["descent_start"]["t"] > 1e15


@pytest.mark.parametrize("slope", [-0.007, -0.05])
def test_the_same_slow_gap_past_the_descent_start_stays_violated(slope):
    # the unscaled constants: t_d = 1.0e3 < the window's start (~1.2e3 .. 2e4): the rule does not apply
    start = descent_start(_nsd_template(), {"gamma": DEFAULT_GAMMA, "B": DEFAULT_B}, Fraction(3, 4), 1.0)
    record = fit_group([_slow_run(DEFAULT_GAMMA, DEFAULT_B, slope=slope)])
    assert start.t <= record.verdict.window.t0
    assert record.verdict.label == "violated", record.verdict.reason


def test_a_window_that_starts_before_the_descent_start_is_not_violated():
    # a = 3/10 on the default constants: t_d = 3.3e7, beyond a 2e4-step run whose gap decays like t^-0.05
    record = fit_group([_slow_run(DEFAULT_GAMMA, DEFAULT_B, slope=-0.05, a="3/10")])
    assert record.verdict.label == "inconclusive" and "descent start" in record.verdict.reason
    expected = _brentq_start(DEFAULT_GAMMA, DEFAULT_B, 0.3, 1.0)
    assert record.verdict.context["phase"]["descent_start"]["t"] == pytest.approx(expected, rel=1e-9)


def test_synthetic_runs_without_data_constants_keep_their_verdict():
    t = checkpoints(2e4)
    run = synthetic_run(lambda t: 0.5 * t ** -0.05, t=t, a="3/4", noise=0.01)
    assert fit_group([run]).verdict.label == "violated"


def test_bisection_agrees_with_the_closed_form_where_the_exponential_is_negligible():
    # B eta* << 1: 2 B^2 eta <= gamma/2  <=>  eta <= gamma / (4 B^2), up to the factor exp(2 B eta*) ~ 1
    gamma, B = 1e-6, 1.0
    start = descent_start(_nsd_template(), {"gamma": gamma, "B": B}, Fraction(1, 2), 1.0)
    eta_closed = gamma / (4 * B**2)
    assert start.eta_star == pytest.approx(eta_closed, rel=1e-5)
    assert np.isfinite(start.log10)


def test_a_confirmation_before_the_descent_start_does_not_count_for_a_claim():
    """The rule cuts both ways: where a slower gap would have been set aside (window before t_d), a gap as fast as
    the bound does not reproduce a claim either; past t_d both stand."""
    from rates.studies.horizon import undecided_before_descent
    from rates.studies.signadam.rules import rate_part

    fast = -0.3  # faster than SignGD's t^-1/4 bound: tight or loose
    before = fit_group([_slow_run(DEFAULT_GAMMA * 1e10, DEFAULT_B * 1e10, slope=fast)])
    assert before.verdict.label in ("tight", "loose"), before.verdict.reason
    why = undecided_before_descent(before)
    assert why is not None and "before the descent start" in why
    assert rate_part("SignGD", before.verdict.label, before.verdict.reason, why)[0] == "no verdict"
    past = fit_group([_slow_run(DEFAULT_GAMMA, DEFAULT_B, slope=fast)])
    assert past.verdict.label in ("tight", "loose"), past.verdict.reason
    from rates.studies.fitting import descent_start_of

    assert descent_start_of(past.runs, past.prediction).t <= past.verdict.window.t0
    assert undecided_before_descent(past) is None
    assert rate_part("SignGD", past.verdict.label, past.verdict.reason, "")[0] == "reproduced"


# the minibatch preset's draw 0 as recorded by the engine (rates run --data minibatch): n = 64, b = 16, m = 4
PRESET_B, PRESET_N, PRESET_BATCH = 10.439072691353195, 64, 16
PRESET_GAMMA = {"vr-signsgd": 2.152, "vr-nsgd": 0.586, "vr-spectral-sgd": 0.913}  # max / l2 / spectral margins
PRESET_ETA0 = {"vr-signsgd": 0.2, "vr-nsgd": 1.0, "vr-spectral-sgd": 1.0}


def _vr_brentq_start(gamma, B, n, b, a, eta0):
    """First t with 2 B^2 e^{2 B eta_t} eta_t + 8 B^2 (m-1) m eta_{t-m} e^{4 B m eta_{t-m}} <= gamma/2, t continuous."""
    m = n // b

    def excess(log_t):
        t = math.exp(log_t)
        eta, lag = eta0 * (t + 2) ** -a, eta0 * (max(t - m, 0) + 2) ** -a
        return 2 * B**2 * math.exp(2 * B * eta) * eta + 8 * B**2 * (m - 1) * m * lag * math.exp(4 * B * m * lag) \
            - gamma / 2
    return math.ceil(math.exp(brentq(excess, math.log(m), math.log(1e40), xtol=1e-14, rtol=1e-15)))


@pytest.mark.parametrize("algorithm", sorted(PRESET_GAMMA))
@pytest.mark.parametrize("a", ["1", "3/4", "1/2"])
def test_vr_descent_start_uses_the_epochs_step_sizes(algorithm, a):
    config = resolve_algorithm(algorithm, n=PRESET_N, batch=PRESET_BATCH)
    constants = {"gamma": PRESET_GAMMA[algorithm], "B": PRESET_B, "n": PRESET_N, "b": PRESET_BATCH, "k": 4}
    start = descent_start(predict(config, Fraction(a)).template, constants, Fraction(a), PRESET_ETA0[algorithm])
    expected = _vr_brentq_start(PRESET_GAMMA[algorithm], PRESET_B, PRESET_N, PRESET_BATCH, float(Fraction(a)),
                                PRESET_ETA0[algorithm])
    assert start.t == pytest.approx(expected, rel=1e-6, abs=1)
    assert start.lag == 4 and "4 steps back" in start.text()
    # the bound valid for every t (exp(4 B m eta_0)) put it beyond 10^18 steps on this data
    worst = 8 * PRESET_B**2 * 3 * 4 * 5 * math.exp(4 * PRESET_B * 4 * PRESET_ETA0[algorithm])
    assert math.log10(PRESET_ETA0[algorithm] * 2 * worst / PRESET_GAMMA[algorithm]) / float(Fraction(a)) > 18
    assert start.log10 < 10


def test_vr_with_momentum_keeps_the_bound_valid_for_every_step():
    # Lemma C.14 sums older steps' errors: no step-local form, the descent start is the global alpha_vr's
    config = resolve_algorithm("vr-signum", n=PRESET_N, batch=PRESET_BATCH, momentum=0.9)
    constants = {"gamma": 2.152, "B": PRESET_B, "n": PRESET_N, "b": PRESET_BATCH, "k": 4, "beta": 0.9}
    start = descent_start(predict(config, Fraction(1)).template, constants, Fraction(1), 0.2)
    assert start.lag == 0 and start.log10 > 18


def _recorded(run, algo):
    run.config = dataclasses.replace(
        run.config, algo=algo, data="file.csv", family="nsd" if algo == "signgd" else "adam",
        data_facts={"B": DEFAULT_B, "n": 30, "d": 5, "k": 3, "orthogonal": False, "class_counts": [10] * 3})
    return run


@pytest.mark.parametrize("slope", [-0.45, -0.02])  # as fast as the bound (confirms), far slower (refutes)
def test_an_unknown_descent_start_decides_nothing_where_a_known_one_decides(slope):
    """SignGD and Adam at a = 2/3 on the default preset's constants, the same gap over [1e4, 1e6]. SignGD's t_d is
    known (2.4e3) and the window lies past it: its verdict stands. Adam's t_d leaves out c_adam (its curvature term
    alone gives 6.5e3, a lower bound only): the same window decides nothing, and the reason names c_adam -- unless a
    certified descent onset before the window is supplied."""
    from rates.studies.horizon import undecided_before_descent
    from rates.studies.signadam.rules import rate_part

    t = checkpoints(1e6)
    def gap(t):
        return 0.4 * DEFAULT_GAMMA * (t + 2.0) ** slope

    records = {algo: fit_group([_recorded(synthetic_run(gap, t=t, a="2/3", noise=0.001, gamma=DEFAULT_GAMMA,
                                                        algo=algo), algo)])
               for algo in ("signgd", "adam")}
    expected = "reproduced" if slope < -0.3 else "not reproduced"
    signgd, adam = records["signgd"], records["adam"]
    assert undecided_before_descent(signgd) is None
    assert rate_part("SignGD", signgd.verdict.label, signgd.verdict.reason, "")[0] == expected, signgd.verdict.reason
    why = undecided_before_descent(adam)
    assert why is not None and "c_adam" in why and "unknown" in why
    assert rate_part("Adam", adam.verdict.label, adam.verdict.reason, why)[0] == "no verdict"
    assert claim_verdict_of(adam) == expected  # the comparator alone would have decided it
    assert undecided_before_descent(adam, observed_onset=1e3) is None
    assert "certified descent onset" in undecided_before_descent(adam, observed_onset=1e5)


def claim_verdict_of(record):
    from rates.output.claims import claim_verdict_from_fit

    return claim_verdict_from_fit(record.verdict.label, record.verdict.reason)[0]
