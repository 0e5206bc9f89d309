"""The mismatch floor of mini-batch NSD (proofs.effective_margin): closed forms on two-point data, the limit
``f_i >= gamma`` on the presets, and the claim's decision on a case where it must fail (``b = n``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from proofs.effective_margin import (
    batch_ratios,
    concentrated_witness,
    expected_descent_limit,
    floor_ratio,
    minibatch_mismatch_floor,
    mismatch_floor_simulation,
    pair_margins,
)
from rates.norms import parse_norm
from rates.numeric.data import PRESETS, Dataset, gaussian
from rates.numeric.margins import max_margin

# two samples, two classes: i = (1, 0.2) in class 0, j = (1, -0.5) in class 1; U = [v/2; -v/2], v = (0, 1)
# gives margins m_i = 0.2 < m_j = 0.5, so W = rU concentrates G on i as r grows
H_TWO = np.array([[1.0, 0.2], [1.0, -0.5]])
Y_TWO = np.array([0, 1])
U_TWO = np.array([[0.0, 0.5], [0.0, -0.5]])


def _complements(r):
    """``a = 1 - S_y = 1/(1 + e^{r m})`` for two classes."""
    return 1 / (1 + np.exp(r * np.array([0.2, 0.5])))


@pytest.mark.parametrize("r", [1.0, 10.0, 60.0, 400.0])
def test_two_point_ratios_match_closed_forms(r):
    # batch {j} (b = 1, n = 2), max norm: Delta = sign(g_j) = [[1, -1], [-1, 1]], so
    # <grad L, Delta> / G = (-1.6 a_i + 2 ||h_j||_1 a_j) / (a_i + a_j) and
    # ||grad_S L - grad L||_sum / G = 2 ||a_i h_i + a_j h_j||_1 / (a_i + a_j)
    a_i, a_j = _complements(r)
    ratios = batch_ratios(r * U_TWO, H_TWO, Y_TWO, [1], parse_norm("max"))
    assert ratios.descent == pytest.approx((-1.6 * a_i + 3.0 * a_j) / (a_i + a_j), rel=1e-12, abs=1e-12)
    expected_mismatch = 2 * np.abs(a_i * H_TWO[0] + a_j * H_TWO[1]).sum() / (a_i + a_j)
    assert ratios.mismatch == pytest.approx(expected_mismatch, rel=1e-12)


def test_two_point_step_ascends_the_full_loss_against_gamma():
    # in the limit: descent -> -2 <h_i, sign h_j> = -1.6 < 0, mismatch -> 2 ||h_i||_1 = 2.4 >= gamma
    ds = Dataset(H_TWO, Y_TWO, 2, "two-point")
    gamma = max_margin(ds, "max").gamma
    witness = concentrated_witness(U_TWO, H_TWO, Y_TWO, 2, 1, parse_norm("max"))
    assert witness.sample == 0 and witness.batch_without == (1,)
    assert witness.without.descent == pytest.approx(-1.6, rel=1e-9)
    assert witness.without.mismatch == pytest.approx(2.4, rel=1e-9) and witness.floor == pytest.approx(2.4)
    assert 0 < gamma <= witness.floor
    assert gamma - 2 * witness.without.mismatch < 0  # any rho >= the attained mismatch leaves gamma_eff < 0
    # with i in the batch (b = 1 = n/2): (n/b - 1) f_i
    assert witness.with_sample.mismatch == pytest.approx(2.4, rel=1e-9)


@pytest.mark.parametrize("preset,norm_name,b", [("minibatch", "max", 16), ("minibatch", "max", 32),
                                                ("default", "max", 10), ("default", "frobenius", 15)])
def test_preset_witness_reaches_its_floor_and_beats_half_gamma(preset, norm_name, b):
    ds = PRESETS[preset](None)
    norm = parse_norm(norm_name)
    solved = max_margin(ds, norm)
    rng = np.random.default_rng(3)
    V = rng.standard_normal(solved.W.shape)
    U = solved.W / np.abs(solved.W).max() + 0.01 * V / np.abs(V).max()
    witness = concentrated_witness(U, ds.H, ds.y, ds.k, b, norm)
    h = ds.H[witness.sample]
    closed = 2 * np.abs(h).sum() if norm_name == "max" else math.sqrt(2) * np.linalg.norm(h)
    assert witness.floor == pytest.approx(closed, rel=1e-12)  # ||(e_c - e_y) h^T||_* by hand
    assert witness.without.top_share == pytest.approx(1.0, abs=1e-9)
    assert witness.without.mismatch == pytest.approx(witness.floor, rel=1e-9)
    assert witness.with_sample.mismatch == pytest.approx((ds.n / b - 1) * witness.floor, rel=1e-9)
    assert solved.upper <= witness.floor  # f_i >= gamma for every sample
    assert floor_ratio(solved.upper, witness) < 0.5  # the mismatch is above 2 gamma here


def test_full_batch_is_the_negative_control():
    # b = n: no mismatch, so the claim's ratio is infinite (the decision must say refuted, not pass)
    ds = PRESETS["default"](None)
    norm = parse_norm("max")
    solved = max_margin(ds, norm)
    U = solved.W + 0.01 * np.random.default_rng(0).standard_normal(solved.W.shape)
    witness = concentrated_witness(U, ds.H, ds.y, ds.k, ds.n, norm)
    assert witness.without.mismatch == pytest.approx(0.0, abs=1e-12)
    assert witness.without.descent > 0
    assert floor_ratio(solved.gamma, witness) > 1


def test_claim_holds_on_the_presets_and_finds_an_ascending_step():
    outcome = mismatch_floor_simulation(False, minibatch_mismatch_floor().seed)
    assert not outcome.refuted and 0 < outcome.worst_ratio < 0.5
    # norms x direction spreads x draws x divisors b < n (30: 7, 64: 6)
    assert outcome.trials == 2 * 2 * 4 * (7 + 6)
    assert outcome.instance["most_negative_descent"]["descent_over_G"] < -5
    assert outcome.instance["most_negative_expected_descent"]["expected_descent_over_G"] < -0.5


def _separated_direction(ds, norm, seed):
    """A direction near W* whose pair margins are positive and separated enough that at the ``r`` below every
    competing term is ``e^-12`` of the leading one and no term underflows float64 (searched, deterministic)."""
    solved = max_margin(ds, norm)
    rng = np.random.default_rng(seed)
    for _ in range(5000):
        U = solved.W + 0.5 * rng.standard_normal(solved.W.shape)
        mu = np.sort(pair_margins(U, ds.H, ds.y)[np.isfinite(pair_margins(U, ds.H, ds.y))])
        if mu[0] > 0:
            r = 12 / np.diff(mu).min()
            if r * (mu[-1] - mu[0]) < 690:
                return U, r
    raise AssertionError("no separated direction found")


@pytest.mark.parametrize("norm_name", ["max", "frobenius"])
def test_expected_descent_limit_matches_exact_enumeration_of_batches(norm_name):
    # three classes, so the max norm's rows outside {y_j, c_j} matter: every b-subset enumerated at a finite W
    ds = gaussian(3, 2, 2, 0.3, seed=4)
    norm = parse_norm(norm_name)
    U, r = _separated_direction(ds, norm, 2)
    for b in (1, 2, 3):
        exact = np.mean([batch_ratios(r * U, ds.H, ds.y, S, norm).descent
                         for S in itertools.combinations(range(ds.n), b)])
        assert expected_descent_limit(U, ds.H, ds.y, ds.k, b, norm) == pytest.approx(exact, rel=2e-5, abs=2e-5)
    # b = n: the full gradient, <grad L, Delta> / G -> f_i
    assert expected_descent_limit(U, ds.H, ds.y, ds.k, ds.n, norm) == pytest.approx(
        batch_ratios(r * U, ds.H, ds.y, range(ds.n), norm).descent, rel=2e-5)


def test_expected_descent_is_negative_on_the_minibatch_preset_at_b_4():
    # on average over the batches a reshuffled epoch draws (uniform 4-subsets), the step ascends L at this W
    ds = PRESETS["minibatch"](None)
    norm = parse_norm("max")
    solved = max_margin(ds, norm)
    rng = np.random.default_rng(7)
    values = []
    for _ in range(40):
        V = rng.standard_normal(solved.W.shape)
        U = solved.W / np.abs(solved.W).max() + 0.01 * V / np.abs(V).max()
        values.append(expected_descent_limit(U, ds.H, ds.y, ds.k, 4, norm))
    assert min(values) < -0.5


def test_expected_descent_limit_refuses_a_norm_without_a_closed_form():
    ds = gaussian(3, 2, 2, 0.3, seed=4)
    with pytest.raises(ValueError, match="spectral"):
        expected_descent_limit(np.eye(3, 2), ds.H, ds.y, ds.k, 2, parse_norm("spectral"))
