"""Every norm kind in every engine against the mpmath reference, the fused kernels' directions against their closed
forms, and the max-norm solver on features a thousand million times apart.

Independent expectations:

* a steepest direction ``D = argmax_{||D|| <= 1} <Z, D>`` is characterised without the code under test: ``||D|| = 1``
  and ``<Z, D> = ||Z||_*`` (Hoelder; docs/theory.md section 2), which for 1 < p < inf fixes D uniquely
  (strictly convex ball); the p-norm of a matrix's singular values is computed here with numpy's SVD;
* the engines (fused numba kernels, torch; the CUDA graphs where a GPU is present) against
  :mod:`rates.numeric.reference` (50-digit mpmath, its steps read from the run's composition), step by step;
* orthogonal scale-skewed data have the max-norm max margin ``2 min_c m_c`` in closed form
  (tests/test_margins.py, :func:`orthogonal_lp_margin`).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch

from rates.norms import parse_norm
from rates.numeric import margins, reference
from rates.numeric.data import gaussian, orthogonal_skewed
from rates.numeric.engine import RunSpec, resolve_spec, run_group
from rates.numeric.fused import kernels
from rates.numeric.fused.group import direction_of, supports

NORM_KINDS = ["max", "sum", "frobenius", "lp:3", "lp:1.5", "spectral", "nuclear", "schatten:3", "schatten:1.5"]
STEPS = 25
TOLERANCE = 1e-12


def schatten_value(Z: np.ndarray, p: float) -> float:
    sigma = np.linalg.svd(Z, compute_uv=False)
    return float(sigma.max() if math.isinf(p) else (sigma ** p).sum() ** (1 / p))


def entrywise_value(Z: np.ndarray, p: float) -> float:
    flat = np.abs(Z).ravel()
    return float(flat.max() if math.isinf(p) else (flat ** p).sum() ** (1 / p))


def value(Z: np.ndarray, kind: str, p: float) -> float:
    return schatten_value(Z, p) if kind == "schatten" else entrywise_value(Z, p)


def kernel_direction(Z: np.ndarray, norm_name: str) -> np.ndarray:
    """The fused kernels' steepest direction of ``Z`` in the named norm, with the code and q the engine uses."""
    norm = parse_norm(norm_name)
    run = resolve_spec(RunSpec("nsd", "1/2", norm=norm_name), 6)
    direction, q = direction_of(run.recipe)
    D = np.zeros_like(Z)
    if norm.kind == "schatten" and norm.p != 2.0:
        kernels._schatten_direction(np.ascontiguousarray(Z), direction, q, D)
    else:
        kernels._entrywise_direction(np.ascontiguousarray(Z), direction, q, D)
    return D


def gradient_like(k: int, d: int, seed: int) -> np.ndarray:
    """A matrix shaped like a cross-entropy gradient: rows summing to 0 (rank <= k - 1)."""
    Z = np.random.default_rng(seed).standard_normal((k, d)) * np.logspace(0, -2, d)[None, :]
    return Z - Z.mean(axis=0, keepdims=True)


@pytest.mark.parametrize("norm_name", NORM_KINDS)
@pytest.mark.parametrize("shape", [(3, 5), (4, 3), (5, 5)])
def test_kernel_direction_attains_the_dual_norm_on_the_unit_sphere(norm_name, shape):
    norm = parse_norm(norm_name)
    for seed in range(3):
        Z = gradient_like(*shape, seed)
        D = kernel_direction(Z, norm_name)
        assert value(D, norm.kind, norm.p) == pytest.approx(1.0, rel=1e-12), (norm_name, seed)
        assert float((Z * D).sum()) == pytest.approx(value(Z, norm.kind, norm.q), rel=1e-12), (norm_name, seed)


@pytest.mark.parametrize("norm_name", ["frobenius", "lp:3", "lp:1.5", "lp:4", "schatten:3", "schatten:1.5",
                                       "schatten:4", "spectral"])
def test_kernel_direction_is_the_mpmath_maximiser(norm_name):
    # unique maximiser (1 < p < inf, or the spectral polar factor of a full-rank Z): the kernel's D is the
    # reference's D entry by entry
    for shape, seed in (((3, 5), 0), ((4, 3), 1), ((2, 6), 2)):
        Z = np.random.default_rng(seed).standard_normal(shape)  # full rank: no singular value at rounding level
        with mp.workdps(50):
            expected = np.array(reference.to_float(reference.steepest([[mp.mpf(v) for v in row] for row in Z],
                                                                      norm_name)))
        D = kernel_direction(Z, norm_name)
        assert np.abs(D - expected).max() <= 1e-13 * np.abs(expected).max(), (norm_name, shape)


def test_schatten_direction_for_general_p_against_a_convex_solver():
    """``max <Z, D>`` over the Schatten-3 unit ball: bracketed by two convex programs (cvxpy, Clarabel), equal to
    Hoelder's ``||Z||_{S_3/2}``, and not beaten by random points of the ball."""
    cp = pytest.importorskip("cvxpy")
    Z = gradient_like(3, 4, 7)
    D_var = cp.Variable(Z.shape)
    # cvxpy has no Schatten-3 atom; the nuclear ball lies inside the Schatten-3 ball and that inside the spectral
    # ball, so the Schatten-3 optimum lies between the two programs' optima (||Z||_2 and ||Z||_*)
    spectral_ball = cp.Problem(cp.Maximize(cp.sum(cp.multiply(Z, D_var))), [cp.sigma_max(D_var) <= 1])
    spectral_ball.solve(solver=cp.CLARABEL)
    nuclear_ball = cp.Problem(cp.Maximize(cp.sum(cp.multiply(Z, D_var))), [cp.normNuc(D_var) <= 1])
    nuclear_ball.solve(solver=cp.CLARABEL)
    D = kernel_direction(Z, "schatten:3")
    attained = float((Z * D).sum())
    assert nuclear_ball.value * (1 - 1e-7) <= attained <= spectral_ball.value * (1 + 1e-7)
    assert attained == pytest.approx(schatten_value(Z, 1.5), rel=1e-12)
    assert schatten_value(D, 3.0) == pytest.approx(1.0, rel=1e-12)
    # and no other point of the ball does better: random points of the Schatten-3 sphere stay below
    rng = np.random.default_rng(0)
    for _ in range(200):
        other = rng.standard_normal(Z.shape)
        other /= schatten_value(other, 3.0)
        assert float((Z * other).sum()) <= attained * (1 + 1e-12)


def test_schatten_direction_drops_rounding_singular_values():
    # rows summing to 0 with k <= d: one singular value is exactly 0 and comes out of LAPACK as ~1e-17; with
    # weight sigma^(q-1) it would enter D at ~1e-8 for q = 3/2 (p = 3). The kernel, like the reference, drops it.
    Z = gradient_like(3, 5, 4)
    sigma = np.linalg.svd(Z, compute_uv=False)
    assert sigma[-1] < 1e-14 * sigma[0]
    U, _, Vh = np.linalg.svd(Z, full_matrices=False)
    D = kernel_direction(Z, "schatten:3")
    assert abs(float(U[:, -1] @ D @ Vh[-1])) < 1e-15


@pytest.mark.parametrize("x, expected", [(0.0, 0.0), (-0.0, 0.0), (1e-320, 1.0), (-1e-320, -1.0), (2.5, 1.0),
                                         (-math.inf, -1.0), (math.nan, 0.0)])
def test_kernel_sign_of_zero_is_zero(x, expected):
    assert kernels._sign(x) == expected


def test_sign_descent_leaves_a_feature_without_signal_at_zero():
    """A feature that is 0 in every sample has a zero gradient column: sign(0) = 0 keeps that column of W at 0 in
    every engine (mpmath's sign(0) = 0 too), for SignGD, Signum and coordinate descent's zero entries."""
    ds = gaussian(3, 4, 3, 0.5, 2)
    H = np.asarray(ds.H).copy()
    H[:, 2] = 0.0
    y = np.asarray(ds.y)
    for algo in ("signgd", "signum"):
        spec = RunSpec(algo, "1/2", eta0=0.3, momentum=0.9 if algo == "signum" else None)
        run = resolve_spec(spec, len(y))
        expected = reference.run_trajectory(run, H.tolist(), y.tolist(), ds.k, STEPS, (STEPS,))[STEPS]
        expected = np.array(reference.to_float(expected))
        assert np.all(expected[:, 2] == 0.0) and np.all(expected[:, [0, 1, 3]] != 0.0)
        for engine in engines(run):
            W = engine_W(run, H, y, ds.k, engine)
            assert np.all(W[:, 2] == 0.0), (algo, engine)
            assert np.abs(W - expected).max() <= TOLERANCE * np.abs(expected).max(), (algo, engine)


# ------------------------------------------------------------------------------------ every engine, every norm


def engines(run) -> list[str]:
    return (["fused"] if kernels_available() and supports(run.recipe) else []) + ["torch"]


def kernels_available() -> bool:
    from rates.numeric.fused import available

    return available()


def engine_W(run, H, y, k, engine: str, device: str = "cpu") -> np.ndarray:
    Ht, yt = torch.tensor(H, device=device), torch.tensor(y, device=device)
    W, _ = run_group([run], Ht, yt, k, STEPS, np.array([STEPS]), engine=engine)
    return W[0].cpu().numpy()


def reference_steps(run, H, y, k) -> dict[int, np.ndarray]:
    ref = reference.run_trajectory(run, H.tolist(), y.tolist(), k, STEPS, range(1, STEPS + 1))
    return {t: np.array(reference.to_float(W)) for t, W in ref.items()}


def worst_step_error(run, H, y, k, engine: str, expected, device: str = "cpu") -> float:
    Ht, yt = torch.tensor(H, device=device), torch.tensor(y, device=device)
    _, records = run_group([run], Ht, yt, k, STEPS, np.arange(1, STEPS + 1), engine=engine)
    return max(float(np.abs(record["W"][0] - expected[t]).max() / np.abs(expected[t]).max())
               for t, record in zip(range(1, STEPS + 1), records))


def problem(k: int, d: int):
    ds = gaussian(k, d, 2, 0.5, 1)
    return np.asarray(ds.H), np.asarray(ds.y), k


# k > d: the gradient (rows summing to 0) can have full rank d, so no singular value sits at rounding level;
# k <= d: one singular value is exactly 0, which torch's Schatten-p weights keep at ~eps^(q-1) (see below).
SHAPES = {"k4-d3": (4, 3), "k3-d4": (3, 4)}


def _cases():
    out = []
    for norm_name in NORM_KINDS:
        for shape in SHAPES:
            for engine in ("fused", "torch"):
                marks = ()
                norm = parse_norm(norm_name)
                if engine == "torch" and shape == "k3-d4" and norm.kind == "schatten" and 1.0 < norm.q < 2.0:
                    marks = pytest.mark.xfail(strict=True, reason=(
                        "torch engine: rates.norms._schatten_steepest keeps the rounding-level singular value of a "
                        "k <= d gradient with weight ~eps^(q-1) (4e-9 relative after 25 steps at p = 3), where the "
                        "kernels and the reference drop it"))
                out.append(pytest.param(norm_name, shape, engine, id=f"{norm_name}-{shape}-{engine}", marks=marks))
    return out


@pytest.mark.parametrize("norm_name, shape, engine", _cases())
def test_every_norm_kind_follows_the_mpmath_reference_on_every_cpu_engine(norm_name, shape, engine):
    H, y, k = problem(*SHAPES[shape])
    run = resolve_spec(RunSpec("nsd", "1/2", norm=norm_name, eta0=0.3), len(y))
    assert engine in engines(run)  # every norm kind has a kernel direction
    expected = reference_steps(run, H, y, k)
    assert worst_step_error(run, H, y, k, engine, expected) < TOLERANCE


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a cuda device")
@pytest.mark.parametrize("norm_name", NORM_KINDS)
def test_every_norm_kind_follows_the_mpmath_reference_on_cuda(norm_name):
    H, y, k = problem(4, 3)
    run = resolve_spec(RunSpec("nsd", "1/2", norm=norm_name, eta0=0.3), len(y))
    expected = reference_steps(run, H, y, k)
    for engine in ("graph", "torch"):
        assert worst_step_error(run, H, y, k, engine, expected, device="cuda") < 1e-11, (norm_name, engine)


# ----------------------------------------------------------------------------------- max margin, scales 1e9 apart


@pytest.mark.parametrize("scales, hardest", [
    ([1e9, 1.0, 2.0], 1.0),  # one class's feature a thousand million times the others'
    ([1e9, 1e9, 1.0], 1.0),
    ([1.0, 1e-9, 1.0], 1e-9),
])
def test_max_norm_margin_of_features_scaled_1e9_apart(scales, hardest):
    """Orthogonal data h_i = s_i e_{y_i}: the max-norm max margin is 2 min_c m_c (tests/test_margins.py's
    closed form). On data scaled to unit max entry the plain LP loses the small features below HiGHS's
    tolerances; the column-equilibrated LP recovers them and the bracket is certified."""
    margins.clear_cache()
    ds = orthogonal_skewed([2, 2, 2], scales)
    result = margins.max_margin(ds, "max")
    assert result.gamma == pytest.approx(2.0 * hardest, rel=1e-9)
    assert result.upper == pytest.approx(2.0 * hardest, rel=1e-9) and result.accuracy <= margins.TARGET_ACCURACY
    assert "primal (equilibrated columns)" in result.checks["lower_candidates"]
    W = result.W
    assert np.abs(W).max() == pytest.approx(1.0, rel=1e-12)  # on the max-norm unit sphere
    logits = ds.H @ W.T
    correct = logits[np.arange(len(ds.y)), ds.y]
    others = np.where(np.eye(ds.k, dtype=bool)[ds.y], -np.inf, logits).max(axis=1)
    assert float((correct - others).min()) == pytest.approx(2.0 * hardest, rel=1e-9)  # the margin W achieves
