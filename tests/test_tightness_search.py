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

from rates.errors import InputError, SolverError
from rates.judge import tightness
from rates.judge.tightness import Candidate, TightnessResult, _random_dataset, _score, _to_ball, search_worst_rate


def scripted(monkeypatch, scores):
    """Replace the engine + comparator by ``scores`` (one ``(label, exponent)`` per evaluation, in order); returns
    the list of candidates as they were scored."""
    seen = []

    def fake_score(candidate, algo, a, steps, prediction):
        label, exponent = scores[len(seen)]
        candidate.label, candidate.exponent = label, exponent
        seen.append(candidate)
        return candidate

    monkeypatch.setattr(tightness, "_score", fake_score)
    monkeypatch.setattr(tightness, "_check_budget", lambda *args: None)
    return seen


def test_the_search_keeps_the_slowest_decided_decay_not_the_fastest(monkeypatch):
    scores = [("loose", 0.8), ("tight", 0.3), ("loose", 0.6), ("loose", 0.9)]
    seen = scripted(monkeypatch, scores)
    result = search_worst_rate("signgd", "1/2", budget=4, seed=1, steps=12000, restarts=4)
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


class OnesRng:
    """A generator whose Gaussian draws are all 1: a perturbation ``H + step * N`` moves every entry by ``step``."""

    def standard_normal(self, shape):
        return np.ones(shape)


def test_the_step_grows_by_1_5_on_success_and_shrinks_by_0_7_on_failure(monkeypatch):
    monkeypatch.setattr(tightness.np.random, "default_rng", lambda seed: OnesRng())
    monkeypatch.setattr(tightness, "_random_dataset", lambda rng: (np.zeros((1, 1)), np.array([0]), 2))
    monkeypatch.setattr(tightness, "_to_ball", lambda H: H)  # the ball is tested on its own below
    scores = [("loose", 1.0), ("loose", 2.0), ("loose", 0.5), ("loose", 3.0), ("loose", 0.1), ("loose", 4.0)]
    seen = scripted(monkeypatch, scores)
    search_worst_rate("signgd", "1/2", budget=6, seed=0, steps=12000, restarts=1)
    H = [float(c.H[0, 0]) for c in seen]
    # by hand: step 0.3; eval 1 fails (x0.7 -> 0.21), eval 2 succeeds (x1.5 -> 0.315), eval 3 fails (-> 0.2205),
    # eval 4 succeeds (-> 0.33075); each perturbs the best H so far (0, 0, 0.21, 0.21, 0.4305)
    expected = [0.0, 0.3, 0.21, 0.21 + 0.315, 0.21 + 0.2205, 0.4305 + 0.33075]
    assert H == pytest.approx(expected, abs=1e-12)


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


def test_score_reads_the_comparators_fit_as_a_decay_exponent(monkeypatch):
    fit = SimpleNamespace(slope=-0.4, ci_low=-0.5, ci_high=-0.3)
    window = SimpleNamespace(t0=1000.0, t1=12000.0, points=40)
    verdict = SimpleNamespace(
        label="loose", reason="faster", assessment=None, fit=fit, window=window, predicted_local_slope=-0.55
    )
    calls = {}

    def fake_judge(runs, prediction, exponent):
        calls["exponent"] = exponent
        return verdict

    monkeypatch.setattr(
        tightness, "simulate", lambda *a, **k: SimpleNamespace(runs=[SimpleNamespace(gamma={"value": 0.125})])
    )
    monkeypatch.setattr(tightness, "judge", fake_judge)
    prediction = SimpleNamespace(rate=SimpleNamespace(exponent=0.5))
    c = _score(Candidate(np.eye(2) / 2, np.array([0, 1]), 2), "signgd", "1/2", 12000, prediction)
    assert calls["exponent"] == 0.5
    assert (c.label, c.reason, c.gamma, c.exponent, c.bound_local) == ("loose", "faster", 0.125, 0.4, 0.55)
    assert c.ci == (0.3, 0.5)  # the exponent's interval: the slope's, negated and in order
    assert c.window == "t in [1000, 1.2e+04] (40 checkpoints)"


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
