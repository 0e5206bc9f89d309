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


# ------------------------------------------------------------------ the certified onset s0 beside t_d
# Independent expectations: s0 = 238 of SignGD a = 1/2 on the default preset (the measurement, checked against
# an independent numpy chain in tests/test_certificate.py), t_d = 3.26e4 by brentq, the comparator's window by hand.

CERTIFIED_STEPS = 30_000  # the comparator's window [1.26e3, 3e4] lies past s0 = 238 and before t_d = 3.26e4


@pytest.fixture(scope="module")
def signgd_short():
    from rates.numeric.data import parse_data
    from rates.numeric.engine import RunSpec, simulate

    return simulate([RunSpec("signgd", "1/2")], parse_data("default", 0), CERTIFIED_STEPS, checkpoints=40,
                    device="cpu").runs[0]


def test_a_window_before_t_d_but_past_the_certified_onset_decides(signgd_short):
    from rates.output.claims import REPRODUCED
    from rates.studies.certificates import certified_onset
    from rates.studies.signadam.rows import _rate_part_of

    record = fit_group([signgd_short])
    t_d = _brentq_start(DEFAULT_GAMMA, DEFAULT_B, 0.5, 1.0)
    onset = certified_onset(record.runs)
    assert onset.s0 == 238 and onset.s0 < record.verdict.window.t0 < t_d
    assert record.verdict.label in ("tight", "loose")
    assert "before the descent start" in undecided_before_descent(record)  # the t_d rule alone leaves it open
    assert horizon.undecided_past_onset(record) is None
    assert _rate_part_of("SignGD", record) == (REPRODUCED, "")
    text = horizon.onset_text(record)
    assert "past the certified onset s0 = 238" in text and "not past the rebuilt t_d = 3.26e+04" in text
    # the row's record: the comparator's own window already lies past s0, so it is kept
    kept = horizon.fit_past_onset([signgd_short])
    assert kept.verdict.window.t0 == record.verdict.window.t0 and horizon.undecided_past_onset(kept) is None


# a perturbed direction, a max margin 10% too large (the pairing lemma fails), 5% too small (the run beats it)
@pytest.mark.parametrize("option, value", [("perturbation", 0.01), ("gamma", 1.1), ("gamma", 0.95)])
def test_a_broken_certificate_does_not_open_the_row(signgd_short, option, value, monkeypatch):
    from rates.numeric.certificate import certify
    from rates.output.claims import NO_VERDICT
    from rates.studies import certificates
    from rates.studies.signadam.rows import _rate_part_of

    scale = signgd_short.gamma["value"] if option == "gamma" else 1.0
    broken = certify(signgd_short, **{option: value * scale})
    assert broken.broken
    record = fit_group([signgd_short])
    onset = certificates.certified_onset(record.runs, [broken])
    assert onset.s0 is None and "BROKEN" in onset.why
    monkeypatch.setattr(certificates, "certificate_of", lambda run: broken)
    why = horizon.undecided_past_onset(record)
    assert why is not None and "before the descent start" in why and "BROKEN" in why
    verdict, reason = _rate_part_of("SignGD", record)
    assert verdict == NO_VERDICT and "1.5e+06 steps" in reason
    assert "past no onset" in horizon.onset_text(record)


def test_the_certified_onset_is_the_latest_s0_and_needs_every_run_certified(signgd_short):
    from rates.numeric.certificate import Certificate
    from rates.studies.certificates import certified_onset

    ok = [_certified(238), _certified(900)]
    assert certified_onset([signgd_short] * 2, ok).s0 == 900  # all facts hold from the latest s0 on every run
    no_anchor = Certificate(True, "half-margin still fail(s) at the horizon t = 200: no step anchors the chain",
                            "SIGNADAM Thm 5.3 (test)", steps=200)
    not_covered = Certificate(False, "momentum (MINIBATCH Thm 4.3) has its own chain", "MINIBATCH Thm 4.3")
    failed = _certified(238)
    failed.certified, failed.failures = False, {"certificate": {"first": 300, "last": 400, "count": 7}}  # gap > B
    disagrees = _certified(238)
    disagrees.engine_agrees = False  # the engine ran something else
    for other, why in ((no_anchor, "no step anchors the chain"), (not_covered, "not instantiated"), (failed, "BROKEN"),
                       (disagrees, "DIFFER")):
        onset = certified_onset([signgd_short] * 2, [ok[0], other])
        assert onset.s0 is None and why in onset.why, onset.why


def _synthetic_signgd(slope_gap, steps=2e6):
    t = checkpoints(steps)
    return _recorded(synthetic_run(slope_gap, t=t, a="1/2", noise=0.001, gamma=DEFAULT_GAMMA, algo="signgd"),
                     "signgd")


def _certified(s0):
    from rates.numeric.certificate import Certificate

    return Certificate(True, None, "SIGNADAM Thm 5.3 (test)", steps=2_000_000, s0=s0, s1=5, certified=True,
                       engine_agrees=True, engine_difference=0.0, worst_ratio=0.5, worst_at=s0 + 1,
                       failures={"certificate": {"first": -1, "last": -1, "count": 0}})


def test_an_uncertified_run_keeps_the_t_d_rule():
    """Runs whose data cannot be rebuilt (no certificate): fit_past_onset is fit_past_descent, and the reason is the
    t_d rule's, with why no certified onset stands in."""
    run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2), steps=4e5)
    record = horizon.fit_past_onset([run])
    assert record.verdict.window.t0 == horizon.fit_past_descent([run]).verdict.window.t0 < 3.3e4
    why = horizon.undecided_past_onset(record)
    assert why.startswith(undecided_before_descent(record)) and "no certified onset" in why
    assert "cannot be rebuilt" in why


@pytest.mark.parametrize("s0, refitted", [(2.5e4, True), (5e3, False)])
def test_a_window_before_both_onsets_is_refitted_from_the_earlier(s0, refitted, monkeypatch):
    """SignGD's gap over 2e6 steps: the comparator's window starts at 2e4, before t_d = 3.26e4. A certified s0 =
    2.5e4 (between the two) refits it from the first checkpoint past s0, which decides; s0 = 5e3 (before the window)
    keeps the comparator's window, which decides as it is."""
    from rates.studies import certificates

    run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2))
    monkeypatch.setattr(certificates, "certificate_of", lambda _run: _certified(int(s0)))
    auto = fit_group([run])
    assert auto.verdict.window.t0 < 2.5e4
    record = horizon.fit_past_onset([run])
    if refitted:
        assert s0 <= record.verdict.window.t0 <= s0 * 1.3 < 3.26e4
    else:
        assert record.verdict.window.t0 == auto.verdict.window.t0
    assert record.verdict.label in ("tight", "loose") and horizon.undecided_past_onset(record) is None
    assert f"past the certified onset s0 = {int(s0)}" in horizon.onset_text(record)


def test_a_refutation_past_the_certified_onset_stands_where_the_t_d_rule_sets_it_aside():
    """A gap far slower than the bound on a window before t_d is set aside (inconclusive); past a certified s0 it is
    the refutation the same window past t_d would be."""
    from rates.output.claims import NOT_REPRODUCED
    from rates.studies.signadam.rules import rate_part

    run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * (t + 2.0) ** -0.02)
    aside = fit_group([run])
    assert aside.verdict.window.t0 < 3.26e4 and aside.verdict.label == "inconclusive"
    assert "pre-asymptotic" in aside.verdict.reason
    stands = fit_group([run], observed_onset=1e3)
    assert stands.verdict.label == "violated"
    why = undecided_before_descent(stands, observed_onset=1e3)
    assert why is None and rate_part("SignGD", "violated", stands.verdict.reason, "")[0] == NOT_REPRODUCED
    assert fit_group([run], observed_onset=5e4).verdict.label == "inconclusive"  # s0 past the window: set aside


def test_a_row_decided_past_t_d_names_it_without_a_stepper_pass(monkeypatch):
    from rates.studies import certificates

    def no_stepper(run):
        raise AssertionError("the stepper ran for a row the t_d rule decides")

    monkeypatch.setattr(certificates, "certificate_of", no_stepper)
    run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2))
    record = horizon.fit_past_descent([run])  # refitted from t_d = 3.26e4
    assert record.verdict.window.t0 >= 3.26e4 and horizon.undecided_past_onset(record) is None
    expected = f"window from t = {record.verdict.window.t0:.3g} past the rebuilt t_d = 3.26e+04"
    assert horizon.onset_text(record) == expected


def test_a_row_open_before_the_certified_onset_plans_a_run_one_and_a_half_decades_past_it(monkeypatch):
    """SignGD's gap over 4e5 steps with a certified s0 = 2e5 (after the window's start, too late for a window of 1.5
    decades): the longer run is 10^1.65 s0 steps, rounded up (by hand: 8.9e6), where the budget allows it; none
    where the CPU budget at the probed cost (1e-4 s a step: 6e6 steps) does not, where s0 is unknown, or where the
    row is decided already."""
    from rates.studies import certificates

    run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2), steps=4e5)
    monkeypatch.setattr(certificates, "certificate_of", lambda _run: _certified(200_000))
    record = horizon.fit_past_onset([run])
    assert horizon.undecided_past_onset(record) is not None
    steps = horizon.steps_past_onset(record, None)
    assert 2e5 * 10**1.65 <= steps <= 2e5 * 10**1.65 * 1.1
    assert horizon.steps_past_onset(record, 1e-5) == steps  # 6e7 steps in the CPU budget
    assert horizon.steps_past_onset(record, 1e-4) is None  # 6e6 < 8.9e6
    no_anchor = _certified(200_000)
    no_anchor.s0 = None
    monkeypatch.setattr(certificates, "certificate_of", lambda _run: no_anchor)
    assert horizon.steps_past_onset(record, None) is None
    monkeypatch.setattr(certificates, "certificate_of", lambda _run: _certified(25_000))
    long_run = _synthetic_signgd(lambda t: 0.4 * DEFAULT_GAMMA * np.log(t + 2) / np.sqrt(t + 2))
    decided = horizon.fit_past_onset([long_run])
    assert horizon.undecided_past_onset(decided) is None and horizon.steps_past_onset(decided, None) is None
    # decided past the rebuilt t_d = 3.26e4 already: a later certified s0 plans nothing
    monkeypatch.setattr(certificates, "certificate_of", lambda _run: _certified(200_000))
    past_t_d = horizon.fit_past_onset([long_run])
    assert past_t_d.verdict.window.t0 >= 3.26e4 and horizon.steps_past_onset(past_t_d, None) is None


@pytest.mark.parametrize("algo, a, eps, norm", [("adam", "1/2", 0.0, None), ("adam", "2/3", 1e-8, None),
                                                ("signgd", "3/10", 0.0, None), ("nsd", "1/2", 0.0, "lp:3")])
def test_the_signadam_rerun_repeats_the_configuration_that_ran(algo, a, eps, norm):
    """The longer run from the certified onset must run the configuration of the row's runs, not a default one."""
    from rates.numeric.engine import simulate
    from rates.studies.runner import dataset
    from rates.studies.signadam.runs import _spec, spec_of

    spec = _spec(algo, a, 0, eps, norm)
    run = simulate([spec], dataset("default", 0), 2, checkpoints=2).runs[0]
    assert spec_of(run.config) == spec


def test_the_signadam_rerun_runs_each_data_draw_on_its_own_data(monkeypatch):
    """A row whose runs come from two data draws (``--seeds 2``) reruns each draw's configuration on that draw's
    data, not every run on the first draw's."""
    from types import SimpleNamespace

    from rates.numeric.engine import simulate
    from rates.studies.runner import dataset
    from rates.studies.signadam import runs as signadam_runs
    from rates.studies.signadam.protocols import FULL

    monkeypatch.setattr(horizon, "steps_past_onset", lambda record, cost: 5_000_000)
    monkeypatch.setattr(horizon, "probed_cost", lambda spec, data: 1e-6)
    recorded = []
    for seed in (0, 1):
        spec = signadam_runs._spec("adam", "1/2", seed)
        run = simulate([spec], dataset("default", seed), 2, checkpoints=2).runs[0]
        run.config = run.config.with_draw(seed)
        recorded.append(run)
    record = SimpleNamespace(prediction=object(), runs=recorded)
    tasks = signadam_runs.onset_tasks({("adam", "1/2", 0.0): record}, FULL)[("adam", "1/2", 0.0)]
    assert [(t.data_seed, [s.seed for s in t.specs], t.steps) for t in tasks] == [(0, [0], 5_000_000),
                                                                                (1, [1], 5_000_000)]
    assert len({t.key for t in tasks}) == 2
