"""Right answers, in bounded time, on schedules that once gave wrong ones or hung.

Each expectation is computed here independently of :mod:`rates.symbolic`: thresholds by exact (mpmath,
50-digit) evaluation of eta on integers and Hurwitz-zeta partial sums, monotonicity by direct evaluation on
integers, sums of exponential schedules by the geometric series. The wall-clock checks only guard against a
hang (the budget of an answer is 20 s); they are not speed benchmarks.
"""

from __future__ import annotations

import json
import os
import time

import mpmath
import numpy as np
import pytest

from rates.schedule import Schedule
from rates.symbolic.budget import OutOfTime, answer_within
from rates.symbolic.schedule_hypotheses import (
    DIVERGES,
    FAILS,
    HOLDS,
    NON_INCREASING,
    UNDECIDED,
    VANISHES,
    decide,
)
from tests.cli_invoke import invoke

HANG_GUARD_S = 40.0  # CPU seconds: an answer is budgeted at 20 s of CPU; twice that is still no hang
CONSTANTS = ["--gamma", "0.5", "--B", "2", "--n", "30", "--k", "3"]
WARM_UP = "Piecewise((eta0/1000000000, t<1000000), (eta0/sqrt(t+2), True))"
RISING_WARM_UP = "Piecewise((eta0*(t+1)/10, t<10), (eta0*(t+2)**(-3/4), True))"


def cpu_now() -> float:
    """CPU seconds of this process and of its reaped children (the budget's forked questions): what a busy machine
    does not inflate, unlike the wall clock."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_predict(schedule: str, *extra: str) -> tuple[int, str, str, float]:
    start = cpu_now()
    code, out, err = invoke(["predict", "--algo", "signgd", "--schedule", schedule, *extra])
    return code, out, err, cpu_now() - start


def level() -> mpmath.mpf:
    """SignGD's t0 level: alpha eta_t <= gamma / 2 with alpha = 2 B^2 exp(2 B eta0) (SIGNADAM Thm 5.3), J = 1,
    at gamma = 1/2, B = 2, eta0 = 1: f(t) <= gamma / (2 alpha) = 1/(32 e^4)."""
    return 1 / (32 * mpmath.exp(4))


def thresholds(schedule: str) -> dict:
    code, out, err, seconds = timed_predict(schedule, *CONSTANTS, "--json")
    assert code == 0, err
    assert seconds < HANG_GUARD_S
    return json.loads(out)["thresholds"]


# ------------------------------------------------------------------------------------------- wrong answers


def test_a_piecewise_warm_up_has_the_thresholds_of_its_actual_steps():
    with mpmath.workdps(50):
        L = level()
        # eta_t = 1e-9 <= L before 1e6; after it (t+2)^(-1/2) <= L from t = ceil(1/L^2) - 2 on (> 1e6)
        t0 = int(mpmath.ceil(1 / L**2)) - 2
        assert t0 > 10**6 and (t0 + 2) ** mpmath.mpf(-0.5) <= L < (t0 + 1) ** mpmath.mpf(-0.5)

        def zeta_sum(lo, hi):  # sum_{s=lo}^{hi-1} (s+2)^(-1/2)
            return mpmath.zeta(0.5, lo + 2) - mpmath.zeta(0.5, hi + 2)

        drift = mpmath.mpf(10**6) / 10**9 + zeta_sum(10**6, t0)
        requirement = 4 * 30 / mpmath.mpf(0.5) * (mpmath.log(3) + 2 * 2 * drift)
        lo, hi = t0, 2 * t0
        while zeta_sum(t0, hi) < requirement:
            lo, hi = hi, 2 * hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if zeta_sum(t0, mid) >= requirement else (mid, hi)
        t1 = hi
    found = thresholds(WARM_UP)
    assert found["t0"]["numeric"] == t0 == 3052499  # as for eta0/sqrt(t+2) (the number)
    assert abs(found["t1"]["numeric"] - t1) <= 1, (found["t1"], t1)  # float64 head sum: at most one step off
    assert found["t1"]["numeric"] > 10**11  # not 53749: the steps to there sum to ~5e-5


def exact_start_of_non_increase(f, stop: int) -> int:
    """First t from which f(s+1) <= f(s) for every integer s up to ``stop`` (direct 50-digit evaluation)."""
    with mpmath.workdps(50):
        values = [f(mpmath.mpf(s)) for s in range(stop + 1)]
    rising = [s for s in range(stop) if values[s + 1] > values[s]]
    return rising[-1] + 1 if rising else 0


@pytest.mark.parametrize("text, f", [
    (RISING_WARM_UP, lambda t: (t + 1) / 10 if t < 10 else (t + 2) ** mpmath.mpf(-0.75)),
    ("Min(eta0*(t+1)/10, eta0*(t+2)**(-3/4))", lambda t: min((t + 1) / 10, (t + 2) ** mpmath.mpf(-0.75))),
    # a plateau at the top (t = 4..9): non-increasing from its first step, 4
    ("Piecewise((eta0*(t+1)/10, t<5), (eta0/2, t<10), (eta0*(t+2)**(-3/4), True))",
     lambda t: (t + 1) / 10 if t < 5 else (mpmath.mpf(1) / 2 if t < 10 else (t + 2) ** mpmath.mpf(-0.75))),
])
def test_a_rising_warm_up_is_non_increasing_only_from_where_it_stops_rising(text, f):
    finding = decide(Schedule.parse(text).expr).get(NON_INCREASING)
    assert finding.status == HOLDS
    assert finding.from_t == exact_start_of_non_increase(f, 2000)
    assert finding.from_t > 0  # f rises over the first steps: never "from t = 0"


def test_piecewise_and_min_warm_ups_share_t0_of_their_common_tail():
    with mpmath.workdps(50):
        expected = int(mpmath.ceil(level() ** (-mpmath.mpf(4) / 3))) - 2  # (t+2)^(-3/4) <= L
    assert thresholds(RISING_WARM_UP)["t0"]["numeric"] == expected
    assert thresholds("Min(eta0*(t+1)/10, eta0*(t+2)**(-3/4))")["t0"]["numeric"] == expected


def test_t0_counts_a_step_above_the_level_before_the_last_rise():
    # eta = 1 for t < 3 (above the level), 1e-5 up to t = 99, then rises at t = 100 to 1e-4/sqrt(2) (below it) and
    # decreases: non-increasing only from t = 100, yet t0 is 3, after the last step above the level
    text = "Piecewise((eta0, t<3), (eta0/10**5, t<100), (eta0/(10**4*sqrt(t-98)), True))"

    def f(t):
        return mpmath.mpf(1) if t < 3 else (mpmath.mpf(10) ** -5 if t < 100 else 1 / (10**4 * mpmath.sqrt(t - 98)))

    with mpmath.workdps(50):
        above = [s for s in range(5000) if f(s) > level()]
    assert decide(Schedule.parse(text).expr).get(NON_INCREASING).from_t == 100
    assert thresholds(text)["t0"]["numeric"] == above[-1] + 1 == 3


def test_a_growing_schedule_does_not_vanish():
    hypotheses = decide(Schedule.parse("eta0*log(t+2)").expr)
    assert np.log(1e12 + 2) > np.log(1e6 + 2) > 13  # independent: log grows without bound
    assert hypotheses.get(VANISHES).status == FAILS and "oo" in hypotheses.get(VANISHES).detail


def test_a_slow_exponential_decreases_and_its_sum_converges():
    hypotheses = decide(Schedule.parse("eta0*exp(-t/10**15)").expr)
    with mpmath.workdps(30):
        ratio = mpmath.exp(mpmath.mpf(-1) / 10**15)  # f(t+1)/f(t), the same at every t
        total = 1 / (1 - ratio)  # the geometric series: finite (about 1e15)
    assert ratio < 1 and mpmath.isfinite(total) and 0.9e15 < total < 1.1e15
    monotone = hypotheses.get(NON_INCREASING)
    assert monotone.status == HOLDS and monotone.from_t == 0
    assert hypotheses.get(DIVERGES).status == FAILS
    code, out, err, _ = timed_predict("eta0*exp(-t/10**15)")
    assert code == 0 and "needs sum eta_t = inf" in out, err


def test_a_step_schedule_is_non_increasing_and_has_its_exact_t0():
    text = "eta0/(floor(t/1000)+1)"
    finding = decide(Schedule.parse(text).expr).get(NON_INCREASING)
    steps = np.arange(0, 200_000)
    values = 1.0 / (np.floor(steps / 1000) + 1)
    assert np.all(np.diff(values) <= 0)  # independent: direct evaluation
    assert finding.status == HOLDS and finding.from_t == 0 and "NotImplementedError" not in finding.detail
    # f <= L  <=>  floor(t/1000) + 1 >= 1/L  <=>  t >= 1000 (ceil(1/L) - 1)
    with mpmath.workdps(50):
        expected = 1000 * (int(mpmath.ceil(1 / level())) - 1)
        # t1: blocks of 1000 equal steps, so sum_{s<1000 j} f = 1000 H_j; the requirement R = (4 n / gamma)
        # (log k + 2 B S(t0)) exceeds everything 1e15 steps from t0 can add, 1000 (H_1e12 - H_{j0})
        j0 = expected // 1000
        requirement = 4 * 30 / mpmath.mpf(0.5) * (mpmath.log(3) + 2 * 2 * 1000 * mpmath.harmonic(j0))
        most = 1000 * (mpmath.harmonic(10**12) - mpmath.harmonic(j0))
    assert most < requirement
    found = thresholds(text)
    assert found["t0"]["numeric"] == expected
    assert found["t1"]["numeric"] is None and found["t1"]["note"].startswith("beyond 1e+15 steps")
    assert abs(found["t1"]["requirement"] / float(requirement) - 1) < 1e-9


# --------------------------------------------------------------------------------------------------- hangs


@pytest.mark.parametrize("argv", [
    ["predict", "--algo", "signgd", "--schedule", "eta0*(t+2)**(-(10**10**10))"],
    ["predict", "--algo", "signgd", "--schedule", "eta0*9**9**9/(t+2)"],
    ["check", "schedule-hypotheses", "--schedule", "eta0*(t+2)**(-(10**10**10))"],
])
def test_huge_powers_are_refused_at_once_naming_the_option_and_the_range(argv):
    start = cpu_now()
    code, out, err = invoke(argv)
    assert cpu_now() - start < HANG_GUARD_S
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("rates: error: --schedule: the power") and "400 digits" in err


def test_a_max_with_a_late_switch_is_decided_with_its_exact_switch():
    code, out, err, seconds = timed_predict("Max(eta0/1000000000*(t+1)/1000000, eta0/sqrt(t+2))", *CONSTANTS)
    assert seconds < HANG_GUARD_S
    assert code == 0 and "fails     eventually non-increasing: eventually increasing" in out, err
    branch = decide(Schedule.parse("Max(eta0/1000000000*(t+1)/1000000, eta0/sqrt(t+2))").expr).branch
    with mpmath.workdps(50):
        def rising_wins(t):  # (t+1)/1e15 >= (t+2)^(-1/2)
            return mpmath.mpf(t + 1) / 10**15 >= (t + 2) ** mpmath.mpf(-0.5)

        lo, hi = 0, 10**12  # one crossing: the left side increases, the right one decreases
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if rising_wins(mid) else (mid, hi)
    assert branch.switch_t == hi


@pytest.mark.slow  # ~12 s: sympy's limits on |sin t| use most of their budgets
def test_an_oscillating_schedule_is_answered_within_the_budget():
    code, out, err, seconds = timed_predict("eta0*Abs(sin(t))/(t+2)+eta0/(t+2)**2", *CONSTANTS)
    assert seconds < HANG_GUARD_S
    assert code == 0, err
    # |sin t| rises at integers of every scale (independent: direct evaluation at the reported witness steps)
    assert "eventually non-increasing" in out and ("fails" in out or "undecided" in out)
    f = np.abs(np.sin(np.arange(1000, 1064.0))) / (np.arange(1000, 1064.0) + 2)
    assert np.any(np.diff(f) > 0)
    assert "applies     no" in out or "applies     yes, if" in out


def test_a_question_past_its_budget_is_undecided_with_the_reason(monkeypatch):
    from rates.symbolic import schedule_hypotheses

    monkeypatch.setattr(schedule_hypotheses, "QUESTION_SECONDS", 0.05)
    monkeypatch.setattr(schedule_hypotheses, "MIN_QUESTION_SECONDS", 0.05)
    schedule_hypotheses._decide_cached.cache_clear()
    try:
        hypotheses = schedule_hypotheses.decide(Schedule.parse("eta0*Abs(sin(t))/(t+2)+eta0/(t+2)**2").expr)
    finally:
        schedule_hypotheses._decide_cached.cache_clear()
    assert all(f.status == UNDECIDED and "did not answer within 0.05 s" in f.detail for f in hypotheses.findings)


def _spin(seconds: float) -> float:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def test_the_budget_kills_a_question_and_passes_answers_and_errors_through(monkeypatch):
    from rates.symbolic import budget

    start = time.monotonic()
    with pytest.raises(OutOfTime, match="did not answer within 0.3 s"):
        answer_within(0.3, _spin, 30)  # 30 s of CPU asked, 0.3 s given
    assert time.monotonic() - start < budget.WALL_FLOOR
    assert answer_within(5, sum, [1, 2, 3]) == 6
    assert answer_within(5, _spin, 0.2) == 0.2  # 0.2 s of CPU fits a 5 s budget however busy the machine is
    with pytest.raises(ZeroDivisionError):
        answer_within(5, divmod, 1, 0)
    # a question that waits instead of computing uses no CPU: the wall-clock cap ends it
    monkeypatch.setattr(budget, "WALL_FLOOR", 1.0)
    start = time.monotonic()
    with pytest.raises(OutOfTime):
        answer_within(0.01, time.sleep, 30)
    assert time.monotonic() - start < 10


def test_the_budget_reads_the_cpu_time_the_kernel_counts():
    from rates.symbolic.budget import cpu_seconds

    before, own = cpu_seconds(os.getpid()), time.process_time()
    _spin(0.3)
    used, own_used = cpu_seconds(os.getpid()) - before, time.process_time() - own
    assert abs(used - own_used) < 0.05  # /proc's ticks against the interpreter's own clock
    assert cpu_seconds(2**22 + 12345) is None  # no such process
