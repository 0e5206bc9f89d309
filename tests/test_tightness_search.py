"""The worst-case search of ``rates tightness`` as a procedure, with the engine and comparator replaced by scripted
scores: which dataset it keeps, which it ranks, where its data lie and how its step adapts.

Independent expectations: the module docstring's rules, applied by hand to the scripted scores -- the kept
dataset is the decided one of *smallest* exponent (slowest decay), every decided label (tight, loose, violated)
is ranked and only those, every candidate row lies in the l1 unit ball (B <= 1), the (1+1) step grows by 1.5
after a success and shrinks by 0.7 after a failure. The real engine and comparator run in tests/test_tightness.py.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp

from rates.errors import InputError, SolverError
from rates.judge import tightness
from rates.judge.tightness import Candidate, TightnessResult, _random_dataset, _score, _to_ball, search_worst_rate


class Seen(list):
    """The candidates in the order scored, and the arguments of each budget check."""

    def __init__(self):
        super().__init__()
        self.budget_checks = []


def scripted(monkeypatch, scores):
    """Replace the engine + comparator by ``scores`` (one ``(label, exponent)`` per evaluation, in order); returns
    the list of candidates as they were scored."""
    seen = Seen()

    def fake_score(candidate, algo, a, steps, prediction):
        label, exponent = scores[len(seen)]
        assert set(candidate.y.tolist()) == set(range(candidate.k))  # a dataset the engine accepts: every class
        candidate.label, candidate.exponent = label, exponent
        candidate.calls = (algo, a, steps, prediction.rate.exponent)
        seen.append(candidate)
        return candidate

    monkeypatch.setattr(tightness, "_score", fake_score)
    monkeypatch.setattr(tightness, "_check_budget", lambda *args: seen.budget_checks.append(args))
    return seen


def test_the_search_keeps_the_slowest_decided_decay_not_the_fastest(monkeypatch):
    scores = [("loose", 0.8), ("tight", 0.3), ("loose", 0.6), ("loose", 0.9)]
    seen = scripted(monkeypatch, scores)
    result = search_worst_rate("signgd", "1/2", budget=4, seed=1, steps=12000, restarts=4)
    assert seen.budget_checks == [("signgd", "1/2", 4, 12000, 1)]
    assert result.worst is seen[1] and result.worst.exponent == 0.3
    assert result.history == [(0, 0.8), (1, 0.3)]  # improvements only: 0.6 and 0.9 are faster than 0.3
    assert result.scored == 4 and result.evaluated == 4 and result.labels == {"loose": 3, "tight": 1}


def test_violated_datasets_are_ranked_and_undecided_ones_are_not(monkeypatch):
    scores = [("loose", 0.8), ("violated", 0.2), ("inconclusive", 0.05), ("not scored", math.nan)]
    seen = scripted(monkeypatch, scores)
    result = search_worst_rate("signgd", "1/2", budget=4, seed=2, steps=12000, restarts=4)
    assert result.worst is seen[1]  # the violated one (0.2); the inconclusive 0.05 decides nothing
    assert result.scored == 2 and result.history == [(0, 0.8), (1, 0.2)]
    assert result.verdict.startswith("violated on some dataset")
    assert "1 inconclusive, 1 loose, 1 not scored, 1 violated" in result.verdict


def test_no_decided_dataset_is_no_verdict(monkeypatch):
    scripted(monkeypatch, [("inconclusive", 0.1), ("inconclusive", 0.2)])
    result = search_worst_rate("signgd", "1/2", budget=2, seed=0, steps=12000)
    assert result.worst is None and result.scored == 0 and result.verdict.startswith("no verdict")
    assert "2 inconclusive" in result.verdict


def test_random_restarts_continue_until_a_dataset_is_decided(monkeypatch):
    """budget 4, restarts 1: the first draw is undecided, so the second is a fresh draw too (nothing to perturb)."""
    drawn = []
    real = tightness._random_dataset

    def counting(rng):
        drawn.append(1)
        return real(rng)

    monkeypatch.setattr(tightness, "_random_dataset", counting)
    seen = scripted(monkeypatch, [("inconclusive", 0.1), ("loose", 0.5), ("loose", 0.7), ("loose", 0.9)])
    search_worst_rate("signgd", "1/2", budget=4, seed=0, steps=12000, restarts=1)
    assert len(drawn) == 2
    # the perturbed ones keep the best dataset's labels and classes
    assert all(np.array_equal(c.y, seen[1].y) and c.k == seen[1].k for c in seen[2:])


class TwosRng:
    """A generator whose Gaussian draws are all 2: a perturbation ``H + step * N`` moves every entry by 2 step."""

    def standard_normal(self, shape):
        return np.full(shape, 2.0)


def test_the_step_grows_by_1_5_on_success_and_shrinks_by_0_7_on_failure(monkeypatch):
    monkeypatch.setattr(tightness.np.random, "default_rng", lambda seed: TwosRng())
    monkeypatch.setattr(tightness, "_random_dataset", lambda rng: (np.zeros((2, 1)), np.array([0, 1]), 2))
    monkeypatch.setattr(tightness, "_to_ball", lambda H: H)  # the ball is tested on its own below
    scores = [("loose", 1.0), ("loose", 2.0), ("loose", 0.5), ("loose", 3.0), ("loose", 0.1), ("loose", 4.0)]
    seen = scripted(monkeypatch, scores)
    search_worst_rate("signgd", "1/2", budget=6, seed=0, steps=12000, restarts=1)
    H = [float(c.H[0, 0]) for c in seen]
    # by hand: step 0.3; eval 1 fails (x0.7 -> 0.21), eval 2 succeeds (x1.5 -> 0.315), eval 3 fails (-> 0.2205),
    # eval 4 succeeds (-> 0.33075); each perturbs the best H so far (0, 0, 0.21, 0.21, 0.4305); x2 the draws
    expected = [0.0, 0.3, 0.21, 0.21 + 0.315, 0.21 + 0.2205, 0.4305 + 0.33075]
    assert H == pytest.approx(2 * np.array(expected), abs=1e-12)


def test_every_candidate_lies_in_the_l1_ball_the_bound_assumes(monkeypatch):
    seen = scripted(monkeypatch, [("loose", 1.0 - 0.01 * i) for i in range(12)])  # every perturbation succeeds
    search_worst_rate("signgd", "1/2", budget=12, seed=5, steps=12000, restarts=2)
    assert len(seen) == 12
    for candidate in seen:
        assert np.abs(candidate.H).sum(axis=1).max() <= 1 + 1e-12
    # the step grew 1.5x ten times (0.3 * 1.5^9 ~ 11 at the last perturbation): rows were pushed far outside
    # and scaled back onto the surface
    assert np.abs(seen[-1].H).sum(axis=1) == pytest.approx(1.0)


def test_to_ball_scales_long_rows_onto_the_surface_and_keeps_short_ones():
    H = np.array([[3.0, -1.0], [0.25, -0.25], [0.0, 0.0], [-0.5, 0.5]])
    out = _to_ball(H)
    assert out[0] == pytest.approx([0.75, -0.25])  # l1 norm 4 -> divided by 4
    assert out[1:].tolist() == H[1:].tolist()  # norms 0.5, 0, 1: unchanged


@pytest.mark.parametrize("seed", range(8))
def test_random_datasets_have_every_class_and_lie_in_the_ball(seed):
    H, y, k = _random_dataset(np.random.default_rng(seed))
    n, d = H.shape
    assert k in (2, 3) and k <= n <= 6 and d in (2, 3) and len(y) == n
    assert set(y.tolist()) == set(range(k))
    assert np.abs(H).sum(axis=1).max() <= 1 + 1e-12


def test_score_runs_the_candidate_once_from_eta0_1_and_reads_the_comparators_fit(monkeypatch):
    fit = SimpleNamespace(slope=-0.4, ci_low=-0.5, ci_high=-0.3)
    window = SimpleNamespace(t0=1000.0, t1=12000.0, points=40)
    assessment = SimpleNamespace(to_json=lambda: {"bound": "holds"})
    verdict = SimpleNamespace(label="loose", reason="faster", assessment=assessment, fit=fit, window=window,
                              predicted_local_slope=-0.55)
    run = SimpleNamespace(gamma={"value": 0.125})
    calls = {}

    def fake_simulate(specs, data, steps, checkpoints, device):
        calls["simulate"] = (specs, data, steps, checkpoints, device)
        return SimpleNamespace(runs=[run])

    def fake_judge(runs, prediction, exponent):
        calls["judge"] = (runs, prediction, exponent)
        return verdict

    monkeypatch.setattr(tightness, "simulate", fake_simulate)
    monkeypatch.setattr(tightness, "judge", fake_judge)
    prediction = SimpleNamespace(rate=SimpleNamespace(exponent=sp.Rational(1, 2)))
    H, y = np.eye(2) / 2, np.array([0, 1])
    c = _score(Candidate(H, y, 2), "signgd", sp.Rational(1, 2), 12000, prediction)
    specs, data, steps, checkpoints, device = calls["simulate"]
    assert specs == [tightness.RunSpec("signgd", sp.Rational(1, 2), eta0=1.0, seed=0)]
    assert (steps, checkpoints, device) == (12000, 120, "cpu")
    assert np.array_equal(data.H, H) and np.array_equal(data.y, y) and data.k == 2 and data.name == "tightness"
    assert calls["judge"][0] == [run] and calls["judge"][1] is prediction and calls["judge"][2] == 0.5
    assert (c.label, c.reason, c.gamma, c.exponent, c.bound_local) == ("loose", "faster", 0.125, 0.4, 0.55)
    assert c.ci == (0.3, 0.5)  # the exponent's interval: the slope's, negated and in order
    assert c.window == "t in [1000, 1.2e+04] (40 checkpoints)"
    assert c.findings == {"bound": "holds"}
    verdict.assessment, verdict.fit = None, None  # no window: judged, but no exponent
    c = _score(Candidate(H, y, 2), "signgd", sp.Rational(1, 2), 12000, prediction)
    assert c.findings is None and c.label == "loose" and math.isnan(c.exponent)


def test_random_datasets_draw_every_shape_and_label():
    shapes, extra_labels = set(), set()
    for seed in range(40):
        H, y, k = _random_dataset(np.random.default_rng(seed))
        shapes.add((k, H.shape[1]))
        extra_labels.update(y[k:].tolist())
    assert shapes == {(2, 2), (2, 3), (3, 2), (3, 3)}
    assert extra_labels == {0, 1, 2}


def test_score_keeps_a_candidate_the_engine_refuses_unscored(monkeypatch):
    def refuse(*args, **kwargs):
        raise SolverError("margin not certified")

    monkeypatch.setattr(tightness, "simulate", refuse)
    c = _score(Candidate(np.eye(2) / 2, np.array([0, 1]), 2), "signgd", "1/2", 12000, None)
    assert c.label == "not scored" and "margin not certified" in c.reason and math.isnan(c.exponent)


def _result(labels, worst=True, log_power=1):
    best = Candidate(np.zeros((2, 2)), np.array([0, 1]), 2, exponent=0.5) if worst else None
    return TightnessResult("signgd", "1/2", 0, 3, 12000, "1/2", log_power, 3, 2, best, [], labels)


def test_the_verdict_word_follows_the_labels_in_order_violated_tight_loose():
    assert _result({"violated": 1, "tight": 2}).verdict.startswith("violated")
    attained = _result({"tight": 1, "loose": 2}).verdict
    assert attained.startswith("attained") and "t^-1/2 (log t)^1" in attained
    assert "(log t)" not in _result({"tight": 1}, log_power=0).verdict
    assert _result({"loose": 3}).verdict.startswith("not attained in the datasets searched")
    assert _result({"inconclusive": 3}, worst=False).verdict.startswith("no verdict")


@pytest.mark.parametrize(
    "kwargs, option", [({"budget": 0}, "budget"), ({"steps": 11_999}, "steps"), ({"algo": "signsgd"}, "algo")]
)
def test_bad_search_parameters_name_their_option(monkeypatch, kwargs, option):
    scripted(monkeypatch, [("loose", 0.5)] * 3)
    args = {"algo": "signgd", "a": "1/2", "budget": 1, "steps": 12_000, **kwargs}
    with pytest.raises(InputError) as err:
        search_worst_rate(**args)
    assert err.value.parameter == option
    # the boundary values themselves are accepted
    assert search_worst_rate("signgd", "1/2", budget=1, steps=12_000).evaluated == 1


def test_the_search_passes_its_parameters_on_and_reports_them(monkeypatch):
    seen = scripted(monkeypatch, [("loose", 0.7), ("tight", 0.4)])
    result = search_worst_rate("adam", "2/3", budget=2, seed=9, steps=13000, restarts=2)  # Adam: a family searched
    assert seen.budget_checks == [("adam", "2/3", 2, 13000, 9)]
    assert [c.calls for c in seen] == [("adam", sp.Rational(2, 3), 13000, sp.Rational(1, 3))] * 2  # Cor. 6.4: 1/3
    payload = result.to_json()
    assert (payload["algo"], payload["a"], payload["seed"], payload["budget"], payload["steps"]) == (
        "adam", "2/3", 9, 2, 13000)
    assert payload["bound"] == {"exponent": "1/3", "log_power": 1}  # log t / t^(1/3) at a = 2/3
    assert (payload["evaluated"], payload["scored"], payload["comparator_labels"]) == (2, 2, {"loose": 1, "tight": 1})
    assert payload["verdict"] == result.verdict and payload["verdict"].startswith("attained")
    assert payload["improvements"] == [{"evaluation": 0, "exponent": 0.7}, {"evaluation": 1, "exponent": 0.4}]
    worst = payload["worst"]
    assert worst["H"] == seen[1].H.tolist() and worst["y"] == seen[1].y.tolist() and worst["k"] == seen[1].k
    assert worst["empirical_exponent"] == 0.4 and worst["comparator"] == "tight"


def test_candidate_json_carries_every_measured_number():
    c = Candidate(np.eye(2) / 2, np.array([0, 1]), 2, exponent=0.4, ci=(0.3, 0.5), window="t in [1, 2]",
                  bound_local=0.55, gamma=0.125, label="loose", reason="faster", findings={"bound": "holds"})
    assert c.to_json() == {"H": [[0.5, 0.0], [0.0, 0.5]], "y": [0, 1], "k": 2, "gamma": 0.125,
                           "empirical_exponent": 0.4, "ci95": [0.3, 0.5], "window": "t in [1, 2]",
                           "bound_local_exponent": 0.55, "comparator": "loose", "reason": "faster",
                           "findings": {"bound": "holds"}}
    assert _result({"inconclusive": 1}, worst=False).to_json()["worst"] is None


@pytest.mark.parametrize("budget, draws", [(1, 1), (2, 1), (5, 2), (6, 3)])
def test_half_the_budget_goes_to_random_restarts_by_default(monkeypatch, budget, draws):
    drawn = []
    real = tightness._random_dataset
    monkeypatch.setattr(tightness, "_random_dataset", lambda rng: drawn.append(1) or real(rng))
    scripted(monkeypatch, [("loose", 1.0)] * budget)
    search_worst_rate("signgd", "1/2", budget=budget, seed=0, steps=12000)
    assert len(drawn) == draws


def test_the_seed_decides_the_datasets(monkeypatch):
    def datasets(seed):
        seen = scripted(monkeypatch, [("loose", 1.0 - 0.1 * i) for i in range(4)])
        search_worst_rate("signgd", "1/2", budget=4, seed=seed, steps=12000, restarts=2)
        return [c.H.tolist() for c in seen]

    assert datasets(3) == datasets(3)
    assert datasets(3) != datasets(4)


def test_a_search_whose_records_exceed_memory_is_refused_before_any_run(monkeypatch):
    from rates import budget as budgets

    monkeypatch.setattr(budgets, "available_memory", lambda: 2**30)
    ran = []
    monkeypatch.setattr(tightness, "_score", lambda *args: ran.append(args))
    with pytest.raises(InputError) as err:
        search_worst_rate("signgd", "1/2", budget=10**8, steps=12000)
    assert err.value.parameter == "budget"
    assert err.value.message.endswith("; ask for a smaller --budget or fewer --steps")
    assert ran == []


def test_the_budget_estimate_is_for_the_largest_candidate_shape(monkeypatch):
    """Candidates have n <= 6, k <= 3, d <= 3 (``_random_dataset``): the estimate is for that shape, one simulate
    call per evaluation, 120 checkpoints each."""
    from rates import budget as budgets

    estimates = []
    monkeypatch.setattr(budgets, "check", lambda estimate, **kwargs: estimates.append((estimate, kwargs["option"])))
    tightness._check_budget("signgd", "1/2", 7, 15000, 0)
    assert estimates == [(budgets.estimate_linear_runs(7, 15000, 120, 6, 3, 3, calls=7), "budget")]


def test_a_long_search_is_timed_by_a_probe_of_its_own_runs(monkeypatch):
    from rates import budget as budgets

    probes = []
    monkeypatch.setattr(budgets, "available_memory", lambda: 2**40)
    runs = []

    def measured(probe, steps, calls):
        probes.append((steps, calls))
        probe(64)  # a probe is the search's own run on the default preset (larger than any candidate)
        return 1.0

    def fake_simulate(specs, data, steps, checkpoints, device):
        runs.append((specs, data.name, data.H.shape, steps, checkpoints, device))

    monkeypatch.setattr(budgets, "measured_seconds", measured)
    monkeypatch.setattr(tightness, "simulate", fake_simulate)
    monkeypatch.setattr(tightness, "_score", lambda candidate, *args: candidate)
    search_worst_rate("signgd", "1/2", budget=3, steps=10**9)  # ~ hours by the constants: probed
    assert probes == [(10**9, 3)]
    assert runs == [([tightness.RunSpec("signgd", "1/2", eta0=1.0, seed=0)], "default", (30, 5), 64, 2, "cpu")]


def test_defaults_messages_and_progress(monkeypatch):
    seen = scripted(monkeypatch, [("loose", 1.0)] * 12)
    reported = []
    result = search_worst_rate("signgd", "1/2", progress=lambda *args: reported.append(args))
    assert (result.budget, result.seed, result.steps, result.evaluated) == (12, 0, 20000, 12)
    assert seen.budget_checks == [("signgd", "1/2", 12, 20000, 0)]
    assert [(e, c) for e, c, _ in reported] == list(enumerate(seen)) and all(b is seen[0] for *_, b in reported)
    for kwargs, text in (({"budget": 0}, "must be a positive number of engine runs, got 0"),
                         ({"steps": 500}, "must be >= 12000 (the late window starts near t = 1000 and needs a "
                                          "decade), got 500"),
                         ({"algo": "signsgd"}, "the search covers full-batch algorithms (nsd, adam families); got "
                                               "'signsgd'")):
        with pytest.raises(InputError) as err:
            search_worst_rate(**{"algo": "signgd", "a": "1/2", **kwargs})
        assert err.value.message == text


def test_a_tie_keeps_the_first_dataset_found(monkeypatch):
    seen = scripted(monkeypatch, [("loose", 0.5), ("loose", 0.5)])
    result = search_worst_rate("signgd", "1/2", budget=2, seed=0, steps=12000, restarts=2)
    assert result.worst is seen[0] and result.history == [(0, 0.5)]
