"""Frobenius and spectral max margins of large data from the dual's support (rates.numeric.simplex_dual).

The new path is forced onto problems the general solvers (Clarabel on the whole program) answer in seconds and
checked against them, to the two results' certified accuracies; and against closed forms on orthogonal data
(``h_i = s_i e_{y_i}``, every class's hardest scale m): ``gamma_spectral = m`` and ``gamma_F = m / sqrt(k - 1)``,
derived here -- the column of W for class c is ``(gamma / m)(e_c - 1/k)`` at both optima, and the uniform weights
on the hardest samples' rows give ``Z = m/(k-1) (I - 11^T/k)``, of nuclear norm m and Frobenius norm
``m / sqrt(k - 1)``, so the two bounds meet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rates.norms import parse_norm
from rates.numeric import margins, simplex_dual, spectral_subspace
from rates.numeric.data import gaussian, orthogonal_skewed


def _solve(ds, norm: str):
    return margins._solve(np.asarray(ds.H, dtype=np.float64), np.asarray(ds.y), int(ds.k), parse_norm(norm, "norm"))


def _forced(ds, norm: str, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(margins, "SIMPLEX_DUAL_ENTRIES", 0)  # every problem is "large" for this path now
        patch.setattr(margins, "FROBENIUS_QP_ROUNDS", 0)  # and a large Frobenius one skips its first path
        return _solve(ds, norm)


@pytest.mark.parametrize("norm,seed,k,d,per_class,sigma", [
    ("frobenius", 3, 5, 8, 12, 0.6), ("frobenius", 1, 3, 30, 20, 0.3), ("frobenius", 2, 6, 40, 10, 0.3),
    # spectral: data whose optimal Z has full rank k - 1 (a rank-deficient one falls back, see below)
    ("spectral", 1, 3, 30, 20, 0.3), ("spectral", 2, 6, 40, 10, 0.3),
])
def test_dual_support_equals_the_whole_conic_program(norm, seed, k, d, per_class, sigma, monkeypatch):
    ds = gaussian(k, d, per_class, sigma, seed=seed)
    whole = _solve(ds, norm)
    assert whole.solver != "simplex-dual-active-set"  # below the threshold: the general path, as always
    reduced = _forced(ds, norm, monkeypatch)
    assert reduced.solver == "simplex-dual-active-set"
    assert reduced.checks["working_set"].startswith("dual active set")
    assert reduced.accuracy <= margins.TARGET_ACCURACY
    tolerance = (whole.accuracy + reduced.accuracy + 1e-13) * whole.gamma
    assert abs(reduced.gamma - whole.gamma) <= tolerance
    assert reduced.gamma <= whole.upper * (1 + 1e-13) and whole.gamma <= reduced.upper * (1 + 1e-13)
    # the returned W achieves gamma on every row, and the dual weights are in the simplex
    assert margins.margin_of(reduced.W, ds, norm) == pytest.approx(reduced.gamma, rel=1e-12)
    assert reduced.dual.min() >= 0 and reduced.dual.sum() == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("k", [3, 5])
def test_orthogonal_data_meet_the_closed_forms(k, monkeypatch):
    rng = np.random.default_rng(k)
    counts = [6 + c for c in range(k)]
    hardest = 0.7
    scales = []
    for count in counts:  # each class has one sample at the hardest scale, the others farther out
        scales += [hardest] + list(hardest * (1.0 + rng.uniform(0.05, 2.0, size=count - 1)))
    ds = orthogonal_skewed(counts, scales)
    spectral = _forced(ds, "spectral", monkeypatch)
    frobenius = _forced(ds, "frobenius", monkeypatch)
    assert spectral.solver == frobenius.solver == "simplex-dual-active-set"
    assert spectral.gamma == pytest.approx(hardest, rel=1e-9)
    assert frobenius.gamma == pytest.approx(hardest / math.sqrt(k - 1), rel=1e-9)
    assert spectral.upper == pytest.approx(hardest, rel=1e-9)


def test_rank_deficient_nuclear_optimum_is_certified_by_the_sample_span_program(monkeypatch):
    """Data whose optimal Z has rank 1 of the k - 1 = 3 possible (two singular values vanish): the polar factor is
    undefined there and the smoothed steps stall near 1e-6; the exact program on the span of the nearly active
    samples then certifies it, and agrees with the general solvers on the whole program."""
    ds = gaussian(4, 12, 15, 0.5, seed=7)
    whole = _solve(ds, "spectral")
    H = np.asarray(ds.H) / np.abs(ds.H).max()
    proposals = list(simplex_dual.candidates(H, ds.y, ds.k, spectral=True, check=lambda: None))
    lam = proposals[-1][2]
    rows = simplex_dual._Rows(H, ds.y, ds.k, True)
    L = np.zeros((rows.n, rows.k))
    L[rows.mask] = lam
    singular = np.linalg.svd(rows.P.T @ rows.Z(L), compute_uv=False)
    assert singular[1] < 1e-6 * singular[0]  # the rank-deficient optimum this test is about
    forced = _forced(ds, "spectral", monkeypatch)
    assert forced.solver == "simplex-dual-active-set" and forced.accuracy <= margins.TARGET_ACCURACY
    assert "sample-span SDP" in forced.checks["lower_bound"] + forced.checks["upper_bound"]
    assert abs(forced.gamma - whole.gamma) <= (whole.accuracy + forced.accuracy + 1e-13) * whole.gamma
    assert margins.margin_of(forced.W, ds, "spectral") == pytest.approx(forced.gamma, rel=1e-12)


@pytest.mark.parametrize("seed,k,d,per_class,sigma", [(7, 4, 12, 15, 0.5), (2, 6, 40, 10, 0.3), (4, 5, 60, 8, 0.4)])
def test_sample_span_program_on_all_rows_meets_the_whole_conic_program(seed, k, d, per_class, sigma):
    """On every row the sample-span program is the whole spectral max-margin program, in other unknowns (the
    (k - 1) x rank block of W on the samples' span) and with other cones (one of size k per column): its W, scored
    on all rows, and its weights, scored on the original data, bracket the general solvers' gamma to ~1e-7 (the
    caller refines the weights by Newton's steps on their support)."""
    ds = gaussian(k, d, per_class, sigma, seed=seed)
    whole = _solve(ds, "spectral")
    H = np.asarray(ds.H, dtype=np.float64)
    all_rows = np.arange(H.shape[0] * (k - 1))
    W, weights = spectral_subspace.solve_on_rows(H, np.asarray(ds.y), k, all_rows, margins._CLARABEL_OPTIONS)
    problem = margins._Problem(margins.constraint_matrix(H, np.asarray(ds.y), k), k, d, parse_norm("spectral", "norm"))
    lower, upper = problem.lower(W), problem.upper(weights)
    assert weights.min() >= 0 and weights.sum() == pytest.approx(1.0, rel=1e-6)  # the interior point's equality
    assert lower <= whole.upper * (1 + 1e-12) and upper >= whole.gamma * (1 - 1e-12)  # weak duality, both ways
    assert lower == pytest.approx(whole.gamma, rel=1e-7)
    assert upper == pytest.approx(whole.gamma, rel=1e-6)  # the interior point's raw weights (measured 1.1e-7)
