"""Rate rows planned from the descent start (rates.studies.horizon).

Independent expectations: t_d of SignGD/NGD on the default preset by scipy's brentq on the step-local descent
condition (tests/test_descent_start.py), the horizon as 10^1.5 t_d by hand, and the window's start against t_d.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from rates.studies import horizon
from rates.studies.fitting import fit_group
from rates.studies.horizon import undecided_before_descent
from tests.test_compare import checkpoints, synthetic_run
from tests.test_descent_start import DEFAULT_B, DEFAULT_GAMMA, _brentq_start, _recorded


def test_steps_to_decide_is_one_and_a_half_decades_past_the_start_rounded_up():
    for t_from in (3.26e4, 1.81e5, 3.3e7):
        steps = horizon.steps_to_decide(t_from)
        assert t_from * 10**1.65 <= steps <= t_from * 10**1.65 * 1.1  # 1.5 decades and one checkpoint gap
    assert horizon.steps_to_decide(10.0) == horizon.steps_to_decide(1e3)  # never before the comparator's 1e3


@pytest.mark.parametrize("algo, a, default", [("signgd", "1/2", 2_000_000), ("signgd", "3/10", 2_000_000)])
def test_the_plan_runs_as_long_as_the_descent_start_needs_within_the_budget(algo, a, default):
    from rates.studies.runner import dataset
    from rates.studies.signadam.runs import _spec

    plan = horizon.plan(_spec(algo, a, 0), dataset("default", 0), default)
    t_d = _brentq_start(DEFAULT_GAMMA, DEFAULT_B, float(Fraction(a)), 1.0)
    assert plan.descent_start.t == pytest.approx(t_d, rel=1e-6, abs=1)
    assert plan.needed >= t_d * 10**1.5
    if plan.needed <= horizon.STEP_BUDGET:  # a = 1/2: t_d = 3.3e4, 1.1e6 steps, within the default 2e6
        assert plan.steps == max(default, plan.needed) and plan.within_budget
    else:  # a = 3/10: t_d = 3.3e7 needs 1.1e9 steps: the default runs, and the row says what would decide it
        assert plan.steps == default and not plan.within_budget and "beyond the budget" in plan.text()


def test_a_window_before_the_descent_start_is_refitted_from_it():
    """SignGD at a = 1/2 on the default constants (t_d = 3.3e4) over 2e6 steps: the comparator's two decades start
    at 2e4, before t_d, which decides nothing; refitted from the first checkpoint past t_d (1.8 decades) it does."""
    t = checkpoints(2e6)
    run = _recorded(synthetic_run(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2), t=t, a="1/2",
                                  noise=0.001, gamma=DEFAULT_GAMMA, algo="signgd"), "signgd")
    t_d = _brentq_start(DEFAULT_GAMMA, DEFAULT_B, 0.5, 1.0)
    auto = fit_group([run])
    assert auto.verdict.window.t0 < t_d and "before the descent start" in undecided_before_descent(auto)
    assert f"{horizon.steps_to_decide(t_d):.2g} steps" in undecided_before_descent(auto)
    refitted = horizon.fit_past_descent([run])
    assert t_d <= refitted.verdict.window.t0 <= t_d * 1.5
    assert math.log10(refitted.verdict.window.t1 / refitted.verdict.window.t0) >= 1.5
    assert undecided_before_descent(refitted) is None and refitted.verdict.label in ("tight", "loose")


def test_a_run_too_short_past_the_descent_start_keeps_its_window_and_says_what_decides():
    t = checkpoints(4e5)  # t_d = 3.3e4: 4e5 is only 1.1 decades past it
    run = _recorded(synthetic_run(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2), t=t, a="1/2",
                                  noise=0.001, gamma=DEFAULT_GAMMA, algo="signgd"), "signgd")
    record = horizon.fit_past_descent([run])
    assert record.verdict.window.t0 < 3.3e4
    assert "1.5e+06 steps (1.5 decades past t_d) decides it" in undecided_before_descent(record)


def test_the_signadam_study_runs_each_nsd_configuration_as_long_as_its_descent_start_needs():
    from rates.studies.signadam.protocols import FULL
    from rates.studies.signadam.runs import _spec as spec
    from rates.studies.signadam.runs import planned_tasks, task_runs

    specs = tuple(spec("ngd", a, 0) for a in ("1/2", "3/4"))
    tasks = planned_tasks("rates/ngd", FULL, 0, specs, FULL.nsd_steps)
    steps = {s.a: task.steps for task in tasks for s in task.specs}
    t_d = _brentq_start(0.3594243284774234, DEFAULT_B, 0.5, 1.0)  # NGD: the 2-norm max margin of draw 0
    assert steps["3/4"] == FULL.nsd_steps  # t_d = 3.2e3: the default 2e6 is long enough
    assert 10**1.65 * t_d * 0.9 <= steps["1/2"] <= 10**1.65 * t_d * 1.3  # t_d = 1.8e5: 8.1e6 steps
    keys = sorted(task.key for task in tasks)
    assert keys == ["rates/ngd/seed0", f"rates/ngd/t{steps['1/2']:g}/seed0"]

    class Result:
        def __init__(self, runs):
            self.runs = runs

    results = {key: Result([key]) for key in keys + ["rates/ngd-other/seed0", "rates/ngd/seed1"]}
    assert sorted(task_runs(results, "rates/ngd", 0)) == keys
