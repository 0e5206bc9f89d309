"""General schedules eta0*f(t): hypotheses, power-sum classes, rates and predict output against hand derivations.

Each expected number below was derived by hand (the derivation is in the comment next to it), independently of
rates.symbolic.growth / schedule_hypotheses / theorems.general.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sympy as sp

from rates.schedule import Schedule
from rates.symbolic.growth import Growth
from rates.symbolic.power_sums import check_order, mp_partial_sum, partial_sums
from rates.symbolic.schedule_hypotheses import decide

SQRT = "eta0*(t+2)**(-1/2)"
LOGLOG = "eta0/((t+2)*log(t+2))"
LOG_SQRT = "eta0*log(t+2)/sqrt(t+2)"
LOG_OVER_T = "eta0*log(t+2)/(t+2)"
WARMUP = "Min(eta0*(t+1)/100, eta0/sqrt(t+2))"
CONSTANT, SUMMABLE, WIGGLE = "eta0", "eta0*(t+2)**(-3/2)", "eta0*(2+sin(t))/sqrt(t+2)"


def statuses(text: str) -> dict[str, str]:
    return {f.name: f.status for f in decide(Schedule.parse(text).expr).findings}


def test_hypotheses_of_the_decreasing_schedules_hold_from_the_hand_derived_step():
    # (t+2)^(-1/2): f' = -(t+2)^(-3/2)/2 < 0 everywhere -> from t = 0; sum ~ 2 sqrt t -> inf; f -> 0
    # 1/((t+2) log(t+2)): f' = -(log(t+2) + 1)/((t+2) log(t+2))^2 < 0 -> from t = 0; int dx/(x log x) = log log x
    for text in (SQRT, LOGLOG):
        assert set(statuses(text).values()) == {"holds"}
        assert decide(Schedule.parse(text).expr).get("eventually non-increasing").from_t == 0
    # log(t+2)/sqrt(t+2): f' = (2 - log(t+2)) / (2 (t+2)^(3/2)) vanishes at t = e^2 - 2 = 5.389 and is < 0 after;
    # on the integers f(4) = log6/sqrt6 = 0.73151 < f(5) = log7/sqrt7 = 0.73549 > f(6) = log8/sqrt8 = 0.73517,
    # so the sequence is non-increasing from t = 5 (the derivative alone guarantees t = 6)
    assert math.log(7) / math.sqrt(7) > math.log(8) / math.sqrt(8)
    found = decide(Schedule.parse(LOG_SQRT).expr)
    assert {f.status for f in found.findings} == {"holds"}
    assert found.get("eventually non-increasing").from_t == 5
    assert "-2 + exp(2)" in found.get("eventually non-increasing").detail
    # warm-up: (t+1)/100 < 1/sqrt(t+2) at t = 20 (0.21 < 0.21320), > at t = 21 (0.22 > 0.20851): the switch is
    # between 20 and 21; eta_19 = 0.20 < eta_20 = 0.21 >= eta_21 = 0.20851, so non-increasing from t = 20
    found = decide(Schedule.parse(WARMUP).expr)
    assert {f.status for f in found.findings} == {"holds"}
    assert found.get("eventually non-increasing").from_t == 20
    assert found.branch.switch_t == 21


def test_failing_schedules_fail_the_hand_derived_hypothesis():
    # eta0: lim eta = eta0 > 0 (and Assumption 3.4: beta^tau (e^(c1 tau eta0) - 1) grows once c1 eta0 > log 1/beta)
    assert statuses(CONSTANT) == {"eventually non-increasing": "holds", "sum eta_t = inf": "holds",
                                  "eta_t -> 0": "fails", "Assumption 3.4": "fails"}
    # (t+2)^(-3/2): sum converges (p-series, 3/2 > 1); everything else holds
    assert statuses(SUMMABLE)["sum eta_t = inf"] == "fails"
    assert statuses(SUMMABLE)["eta_t -> 0"] == "holds"
    # (2 + sin t)/sqrt(t+2): sin(t+1) - sin(t) = 2 cos(t + 1/2) sin(1/2) exceeds the O(1/t) decay for a positive
    # density of integers t, so eta_(t+1) > eta_t infinitely often; the sum still diverges (>= 1/sqrt(t+2))
    found = statuses(WIGGLE)
    assert found["eventually non-increasing"] == "fails"
    assert found["sum eta_t = inf"] == "holds" and found["eta_t -> 0"] == "holds"


@pytest.mark.parametrize("text, rate, latex, key", [
    # S_1 ~ log log t, S_2 = sum 1/((t+2) log(t+2))^2 converges: rate = const / log log t
    (LOGLOG, "1 / log log t", r"1/\log\log t", (0, 0, -1)),
    # S_1 ~ int log x / x = (log t)^2 / 2, S_2 converges: rate 1/(log t)^2 (docs/theory.md section 4b)
    (LOG_OVER_T, "1 / (log t)^2", r"1/(\log t)^{2}", (0, -2, 0)),
    # S_1 ~ 2 sqrt(t) log t, S_2 ~ int (log x)^2/x = (log t)^3/3: rate (log t)^3 / (sqrt t log t) = (log t)^2/sqrt t
    (LOG_SQRT, "(log t)^2 / t^(1/2)", r"(\log t)^{2} / t^{1/2}", (sp.Rational(1, 2), 2, 0)),
    # eventually 1/sqrt(t+2): the polynomial a = 1/2 row, log t / t^(1/2)
    (WARMUP, "log t / t^(1/2)", r"\log t / t^{1/2}", (sp.Rational(1, 2), 1, 0)),
])
def test_signgd_rates_match_the_hand_derivations(text, rate, latex, key):
    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems import template_for
    from rates.symbolic.theorems.general import predict_schedule

    config = resolve_algorithm("signgd")
    prediction = predict_schedule(config, template_for(config), Schedule.parse(text))
    assert prediction.rate.text == rate and prediction.rate.latex == latex
    assert (prediction.rate.exponent, prediction.rate.log_power, prediction.rate.loglog_power) == key


def test_failing_hypothesis_gives_no_rate_naming_it():
    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems import template_for
    from rates.symbolic.theorems.general import NoRate, predict_schedule

    config = resolve_algorithm("signgd")
    for text, name in ((CONSTANT, "eta_t -> 0"), (SUMMABLE, "sum eta_t = inf"), (WIGGLE, "eventually non-increasing")):
        with pytest.raises(NoRate, match="no-theorem") as info:
            predict_schedule(config, template_for(config), Schedule.parse(text))
        assert name in [f.name for f in info.value.failing]


def test_float64_partial_sums_equal_a_plain_loop():
    schedule = Schedule.parse(LOGLOG)
    t = np.array([1, 10, 1000, 50_000])
    exact = [math.fsum(1 / ((s + 2) * math.log(s + 2)) for s in range(n)) for n in t]
    assert np.allclose(partial_sums(schedule, 1, t), exact, rtol=1e-12, atol=0)
    squares = [math.fsum((1 / ((s + 2) * math.log(s + 2))) ** 2 for s in range(n)) for n in t]
    assert np.allclose(partial_sums(schedule, 2, t), squares, rtol=1e-12, atol=0)
    # the Euler-Maclaurin tail of the mpmath route against the direct float64 sum at t = 1e5
    assert float(mp_partial_sum(schedule, 1, 100_000)) == pytest.approx(float(partial_sums(schedule, 1, 100_000)),
                                                                        rel=1e-12)


def test_power_sum_classes_agree_with_mpmath_sums_up_to_1e12():
    schedule = Schedule.parse(LOGLOG)
    # S_1 ~ log log t: from 1e10 to 1e12 it grows by log(log 1e12 / log 1e10) = log(1.2) = 0.18232
    check = check_order(schedule, 1, Growth(sp.Integer(0), sp.Integer(0), sp.Integer(1)))
    assert check.passed and check.sums[-1] - check.sums[-2] == pytest.approx(math.log(1.2), rel=1e-3)
    # a wrong class (log t instead of log log t) must be refused by the same check
    assert not check_order(schedule, 1, Growth(sp.Integer(0), sp.Integer(1), sp.Integer(0))).passed
    # S_2 converges: its increments beyond 1e6 are ~ 1/(1e6 log(1e6)^2) ~ 5e-9 of a total ~ 0.69
    assert check_order(schedule, 2, Growth(sp.Integer(0), sp.Integer(0), sp.Integer(0))).passed


def test_a_and_the_same_schedule_give_identical_predict_json():
    from cli.predict import derive

    common = dict(algo="signgd", norm=None, n=10, batch=None, momentum=None, vr=False, gamma=0.1, data_bound=1.0,
                  eta0=1.0, classes=3, c_adam=None, adam_beta1=0.9, adam_beta2=0.999, adam_eps=0.0, data=None,
                  as_json=True)
    by_a = json.loads(derive(a="1/2", schedule=None, **common))
    by_schedule = json.loads(derive(a=None, schedule=SQRT, **common))
    assert by_a == by_schedule
    assert by_a["schedule"] == {"expr": "eta0/sqrt(t + 2)", "a": "1/2"} and by_a["rate"]["loglog_power"] == 0
    # t0 closed form of the polynomial family: ceil((2 alpha eta0/gamma)^2 - 2), alpha = 2 B^2 e^(2 B eta0) = 2e^2
    assert by_a["thresholds"]["t0"]["numeric"] == math.ceil((2 * 2 * math.e**2 / 0.1) ** 2 - 2)
    general = json.loads(derive(a=None, schedule=LOGLOG, **common))
    assert general["rate"]["loglog_power"] == -1 and general["rate"]["text"] == "1 / log log t"
    # t0 of the general route: first t with 2e^2 / ((t+2) log(t+2)) <= 0.1/2, found by hand: t = 68
    # ((70 log 70) = 297.4 >= 4e^2/0.1 = 295.6 > 69 log 69 = 292.2)
    assert 70 * math.log(70) >= 40 * math.e**2 > 69 * math.log(69)
    assert general["thresholds"]["t0"]["numeric"] == 68
    failing = json.loads(derive(a=None, schedule=SUMMABLE, **common))
    assert failing["rate"] is None and "sum eta_t = inf" in failing["no_rate"]


def test_general_route_bound_members_equal_the_hurwitz_zeta_route_for_a_polynomial_schedule():
    # the same schedule through the general machinery (float64 chunked sums of the schedule's values) and through
    # the polynomial family's closed forms (Hurwitz zeta, rates.symbolic.schedules): the members must agree
    import sympy as sp

    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems import predict, template_for
    from rates.symbolic.theorems.general import predict_schedule

    config = resolve_algorithm("signgd")
    t = np.array([1, 7, 1000, 123_456])
    general = predict_schedule(config, template_for(config), Schedule.parse("eta0*(t+2)**(-3/4)"))
    polynomial = predict(config, sp.Rational(3, 4))
    for mine, theirs in zip(general.bound_members(t)[0], polynomial.bound_members(t)[0]):
        assert np.allclose(mine, theirs, rtol=1e-10, atol=0)
    assert general.rate.text == polynomial.rate.text == "t^(-1/4)"


def test_table_and_check_take_a_schedule(tmp_path):
    from tests.cli_invoke import invoke

    code, out, _ = invoke(["table", "--schedule", LOG_OVER_T, "--format", "json"])
    rows = json.loads(out)["rows"]
    assert code == 0 and {row["rate"]["text"] for row in rows} == {"1 / (log t)^2"}
    code, out, _ = invoke(["table", "--schedule", CONSTANT])
    assert code == 0 and out.count("| no-theorem |") == 5 and "eta_t -> 0 fails" in out
    code, out, _ = invoke(["check", "schedule-hypotheses", "--schedule", LOGLOG, "--json"])
    verdicts = [claim["verdict"] for claim in json.loads(out)["claims"]]
    assert code == 0 and verdicts == ["proven"] * 4
    code, out, _ = invoke(["check", "schedule-hypotheses", "--schedule", SUMMABLE, "--json"])
    found = {claim["name"].split(": ")[-1]: claim["verdict"] for claim in json.loads(out)["claims"]}
    assert code == 1 and found["sum eta_t = inf"] == "counterexample" and found["eta_t -> 0"] == "proven"
    code, _, err = invoke(["check", "--schedule", LOGLOG])
    assert code == 2 and "--schedule" in err


@pytest.mark.slow
def test_fit_judges_a_loglog_schedule_and_refuses_a_failing_one(tmp_path):
    from tests.cli_invoke import invoke

    code, out, _ = invoke(["fit", "--schedule", LOGLOG, "--algo", "signgd", "--steps", "30000", "--eta0", "0.5",
                           "--json"])
    record = json.loads(out)[0]
    assert code == 0 and record["verdict"]["verdict"] in ("tight", "loose", "inconclusive")
    assert "1 / log log t" in out
    for text, name in ((CONSTANT, "eta_t -> 0"), (SUMMABLE, "sum eta_t = inf"), (WIGGLE, "eventually non-increasing")):
        code, out, _ = invoke(["fit", "--schedule", text, "--algo", "signgd", "--steps", "3000", "--json"])
        record = json.loads(out)[0]
        assert code == 0 and record["verdict"]["verdict"] == "no-theorem" and name in record["verdict"]["reason"]


def test_gate_asks_assumption_34_of_momentum_and_adam_only():
    # MINIBATCH Thm 4.3 (momentum) and SIGNADAM Thm 6.3 (Adam) use Assumption 3.4; Thm 4.1 and SIGNADAM Thm 5.3 do not
    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems.hypotheses import Facts
    from rates.symbolic.theorems.registry import NO_THEOREM, gate

    schedule = Schedule.parse(CONSTANT)
    for algo, wants_34 in (("signgd", False), ("signum", True), ("adam", True)):
        result = gate(Facts(resolve_algorithm(algo), a=None, schedule=schedule, adam_eps=0.0, adam_beta1=0.9,
                            adam_beta2=0.999))
        names = [h.name for h, _ in result.checks]
        assert ("Assumption 3.4" in names) == wants_34 and "a in (0, 1]" not in names
        assert result.outcome == NO_THEOREM and "eta_t -> 0" in result.reason
    # a polynomial schedule keeps the family's own hypothesis list
    polynomial = gate(Facts(resolve_algorithm("signgd"), a=Schedule.polynomial("1/2").a,
                            schedule=Schedule.polynomial("1/2")))
    assert [h.name for h, _ in polynomial.checks][-1] == "a in (0, 1]"
