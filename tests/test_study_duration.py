"""The studies' duration estimate: probed recipe costs, scaled by runs and steps, scheduled on the workers."""

from __future__ import annotations

import io

import pytest

from rates.numeric.duration import DRAW_SETUP_S, _contention, estimate, schedule_seconds
from rates.numeric.engine import RunSpec
from rates.studies.runner import StudyTask, print_plan

DATA = "gaussian:k=3,d=4,per_class=4,sigma=0.3"


def test_schedule_is_the_makespan_of_the_first_free_worker_rule():
    # worker 1 takes 5 then 3 (= 8), worker 2 takes 4, 3, 3 (= 10): makespan 10; one worker: the sum
    assert schedule_seconds([5, 4, 3, 3, 3], 2) == 10
    assert schedule_seconds([5, 4, 3, 3, 3], 1) == 18
    assert schedule_seconds([7], 4) == 7


def test_contention_is_the_ratio_of_cpu_shares():
    # an idle 2-core machine: the probe thread and each of 2 workers get a whole core
    assert _contention(0.0, 2, 2) == 1.0
    # two other busy processes: the probe got 2/3 of a core, each worker gets 2/4
    assert _contention(2.0, 2, 2) == pytest.approx((2 / 3) / (2 / 4))


def test_a_task_costs_its_runs_times_its_steps_times_the_probed_recipe():
    """Within one estimate the per-recipe cost is probed once: 4 runs of one recipe cost 4 runs' worth, and
    twice the steps twice as much (fused engine: the kernels' cost per run does not depend on the group); the
    data draw's set-up (max margins, cached for later tasks) is counted for its first task only."""
    one = StudyTask("one", DATA, 0, (RunSpec("signgd", "1/2"),), 2000)
    four = StudyTask("four", DATA, 0, tuple(RunSpec("signgd", a) for a in ("1/2", "3/4", "1", "3/10")), 2000)
    longer = StudyTask("longer", DATA, 0, (RunSpec("signgd", "1/2"),), 4000)
    other_draw = StudyTask("other draw", DATA, 1, (RunSpec("signgd", "1/2"),), 2000)
    plan = estimate([one, four, longer, other_draw], "cpu", parallel=False)
    per_run = plan.task_seconds[0] - DRAW_SETUP_S
    assert per_run > 0
    assert plan.task_seconds[1] == pytest.approx(4 * per_run, rel=1e-12)
    assert plan.task_seconds[2] == pytest.approx(2 * per_run, rel=1e-12)
    assert plan.task_seconds[3] == pytest.approx(per_run + DRAW_SETUP_S, rel=1e-12)
    assert plan.workers == 1 and plan.runs == 7 and plan.config_steps == 2000 + 4 * 2000 + 4000 + 2000
    # one process and no worker start: the tasks one after another (times the load correction, >= 1)
    assert plan.seconds >= sum(plan.task_seconds) - 1e-12


def test_the_plan_line_names_the_engine_and_the_expected_time():
    task = StudyTask("one", DATA, 0, (RunSpec("nsgd", "1/2", batch=3),), 500)
    plan = estimate([task], "cpu", parallel=False)
    stream = io.StringIO()
    print_plan("demo", [task], plan, stream)
    line = stream.getvalue()
    assert line.startswith("rates report demo: 1 tasks, 1 runs, 500 config-steps on 1 process(es), fused engine")
    assert "simulation expected ~" in line
