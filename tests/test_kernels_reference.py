"""The fused kernels on small cases against the 50-digit mpmath reference: short, so that they also run with
``NUMBA_DISABLE_JIT=1`` (the kernels as plain Python, a few seconds in all), which is how the kernels' mutation
target runs (docs/testing.md). tests/test_fused.py runs the same comparisons 2,000 steps long.

Independent expectations: :mod:`rates.numeric.reference` (each step written from its formula, mpmath at 50
digits, no log-domain trick), 40-digit mpmath for the kernels' own exp and log, and exact rational arithmetic for
the fused multiply-add.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch
from test_fused import (  # noqa: F401 -- the fma check runs here too, for the kernels' mutation target
    RECIPES,
    assert_within_one_ulp,
    engine_W,
    problem,
    reference_W,
    test_fused_multiply_add_rounds_once,
)

import rates.numeric.fused.kernels as kernels
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group

STEPS = 40
TOLERANCE = 1e-12
# gauss-k3-d4 (k = 3, d = 4, 6 samples, batches of 3) takes every recipe but the nuclear norm's (chaotic in any
# float64 run, tests/test_fused.py); "hard" (every margin past 500 after a few steps) the log-domain paths
SMALL = [(recipe, "gauss-k3-d4") for recipe in RECIPES if recipe != "nuclear"]
HARD = [("signgd", "hard"), ("adam", "hard"), ("signsgd", "hard"), ("vr-signum", "hard"), ("cd", "hard")]


def relative_error(A, B) -> float:
    return float(np.abs(np.asarray(A) - np.asarray(B)).max() / np.abs(np.asarray(B)).max())


@pytest.mark.parametrize("recipe, dataset", SMALL + HARD)
def test_every_recipe_matches_the_mpmath_reference(recipe, dataset):
    H, y, k, spec = problem(recipe, dataset)
    W = engine_W(spec, H, y, k, "fused", steps=STEPS)
    W_ref = reference_W(spec, H, y, k, steps=STEPS)
    assert np.abs(W).max() > 0
    assert relative_error(W, W_ref) < TOLERANCE, (recipe, dataset)


def test_a_block_of_lanes_gives_each_run_its_own_bits():
    """33 runs (the fewest that go through the 64-lane block) with 33 different (a, eta0): each equals the same
    run alone, bit for bit, and the reference to 1e-12."""
    H, y, k, _ = problem("signgd", "gauss-k3-d4")
    specs = [RunSpec("signgd", a, eta0=eta0) for a in ("1/2", "3/4", "1") for eta0 in np.linspace(0.5, 1.5, 11)]
    resolved = [resolve_spec(spec, len(y)) for spec in specs]
    steps = 6
    together, _ = run_group(resolved, torch.tensor(H), torch.tensor(y), k, steps, checkpoint_times(steps, 2),
                            engine="fused")
    for i in (0, 16, 32):
        alone = engine_W(specs[i], H, y, k, "fused", steps=steps)
        assert together[i].numpy().tobytes() == alone.tobytes()
        assert relative_error(together[i].numpy(), reference_W(specs[i], H, y, k, steps=steps)) < TOLERANCE
    assert len({w.numpy().tobytes() for w in together}) == len(specs)


def test_kernel_exp_log_and_exponential_parts_against_mpmath():
    rng = np.random.default_rng(5)
    mp.mp.dps = 40
    x = np.concatenate([rng.uniform(-708.0, 709.0, 60), rng.uniform(-1.0, 1.0, 30), [0.0, -700.5, 1e-9]])
    out = np.empty_like(x)
    kernels.exp_array(x, out)
    assert_within_one_ulp(x, out, mp.exp)
    edges = np.array([-746.0, -745.0, 709.78, 710.0])
    kernels.exp_array(edges, out[:4])
    assert out[0] == 0.0 and out[1] == 0.0 and np.isfinite(out[2]) and math.isinf(out[3])

    x = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 60)), rng.uniform(0.5, 2.0, 30), [1.0 + 1e-9, 3.0]])
    out = np.empty_like(x)
    kernels.log_array(x, out)
    assert_within_one_ulp(x, out, mp.log)
    kernels.log_array(np.array([1.0, 2.0, 0.5]), out[:3])
    assert out[0] == 0.0 and out[1] == math.log(2.0) and out[2] == -math.log(2.0)

    x = np.concatenate([-rng.uniform(0.0, 1e6, 40), -rng.exponential(1.0, 40), [0.0, -1000.0]])
    y, e = np.empty_like(x), np.empty_like(x)
    kernels.exp_parts_array(x, y, e)
    for xi, yi, ei in zip(x, y, e):
        assert ei == round(float(mp.mpf(float(xi)) / mp.log(2))), xi
        exact = mp.exp(mp.mpf(float(xi))) / mp.mpf(2) ** int(ei)
        assert abs(mp.mpf(float(yi)) - exact) < mp.mpf(float(np.spacing(float(yi)))), xi


def test_sign_of_zero_is_zero():
    values = [-2.5, -1e-300, -0.0, 0.0, 1e-300, 3.0]
    assert [kernels._sign(np.float64(v)) for v in values] == [float(np.sign(v)) for v in values]


def test_a_block_runs_while_its_scratch_fits_in_block_bytes():
    """(d + k + 4) x count x 64 doubles of scratch: d = 3, k = 2 reach 2^25 bytes past count = 2^25 / (9 x 512) =
    7281.8; below, a block pays from 33 runs (48 when each lane reads its own samples)."""
    assert kernels.filled_lanes(False, 7281, 2, 3) == 33 and kernels.filled_lanes(True, 7281, 2, 3) == 48
    assert kernels.filled_lanes(False, 7282, 2, 3) == 1 << 62 and kernels.filled_lanes(True, 7282, 2, 3) == 1 << 62
    assert kernels.filled_lanes(False, 100, 2, 3) == 33
    # d = k = 2: exactly 2^25 bytes at count = 8192 still fits
    assert kernels.filled_lanes(False, 8192, 2, 2) == 33 and kernels.filled_lanes(False, 8193, 2, 2) == 1 << 62


def test_power_of_two_is_exact_and_flushes_below_2_to_the_minus_1000():
    for e in (0.0, -1.0, -3.0, -52.0, -1000.0):
        assert kernels._power_of_two(np.float64(e)) == 2.0**e
    assert kernels._power_of_two(np.float64(-1001.0)) == 0.0 and kernels._power_of_two(np.float64(-5e15)) == 0.0


def test_entrywise_directions_attain_the_dual_norm_in_closed_form():
    """Steepest directions of the entry-wise balls on one gradient Z: sign(Z) (l_inf, sign(0) = 0), the first entry of
    largest magnitude (l_1, the first in row order on a tie, as argmax), Z / ||Z||_F (l_2) and, at q = 3 (p = 3/2),
    sign(Z) |Z|^2 / ||Z||_3^2 (the 50-digit mpmath formula); each attains <D, Z> = ||Z||_q. Z = 0 gives D = 0."""
    from rates.norms import _mp_lq_direction

    Z = np.array([[0.5, -3.0, 0.0], [3.0, -0.25, 1.5]])
    D = np.empty_like(Z)
    kernels._entrywise_direction(Z, kernels.DIRECTION_SIGN, 1.0, D)
    assert D.tolist() == [[1.0, -1.0, 0.0], [1.0, -1.0, 1.0]]
    D[:] = 7.0
    kernels._entrywise_direction(Z, kernels.DIRECTION_COORDINATE, math.inf, D)
    assert D.tolist() == [[0.0, -1.0, 0.0], [0.0, 0.0, 0.0]]  # |-3| ties with |3|: the first
    kernels._entrywise_direction(Z, kernels.DIRECTION_FROBENIUS, 2.0, D)
    fro = math.sqrt(0.25 + 9.0 + 9.0 + 0.0625 + 2.25)
    np.testing.assert_allclose(D, Z / fro, rtol=1e-15, atol=0)
    assert float(np.sum(D * Z)) == pytest.approx(fro, rel=1e-15)
    kernels._entrywise_direction(Z, kernels.DIRECTION_LP, 3.0, D)
    mp.mp.dps = 50
    expected = np.array(_mp_lq_direction([[mp.mpf(float(v)) for v in row] for row in Z], 3.0), dtype=float)
    np.testing.assert_allclose(D, expected, rtol=1e-14, atol=0)
    assert float(np.sum(D * Z)) == pytest.approx(float(np.sum(np.abs(Z) ** 3) ** (1 / 3)), rel=1e-14)
    # the directions do not depend on the gradient's scale, even where |Z|^3 under- or overflows
    for scale in (1e-200, 1e200):
        scaled = np.empty_like(Z)
        kernels._entrywise_direction(Z * scale, kernels.DIRECTION_LP, 3.0, scaled)
        np.testing.assert_allclose(scaled, expected, rtol=1e-14, atol=0)
        kernels._entrywise_direction(Z * scale, kernels.DIRECTION_FROBENIUS, 2.0, scaled)
        np.testing.assert_allclose(scaled, Z / fro, rtol=1e-14, atol=0)
    for shape in ((2, 3), (1, 2), (2, 1)):
        zero = np.zeros(shape)
        for direction, q in ((kernels.DIRECTION_COORDINATE, math.inf), (kernels.DIRECTION_FROBENIUS, 2.0),
                             (kernels.DIRECTION_LP, 3.0)):
            D = np.full(shape, 7.0)
            kernels._entrywise_direction(zero, direction, q, D)
            assert not D.any(), (shape, direction)


def test_open_entries_by_the_row_bound_then_the_entrys_own():
    """The undecided-sign test of rates.numeric.exact_sign on dyadic numbers (every sum exact): an entry (r, c, l) is
    open when max_j |x_jl| > 0 and |G| <= (rho_r sum_j |coef_cj| + flush) max_j |x_jl|, and then still open when
    |G| <= rho_r sum_j |coef_cj x_jl| + flush max_j |x_jl|. Each entry sits exactly on a bound or one ulp above it."""
    X = np.array([[1.0, 0.0, 0.0], [2.0, 0.5, 0.0], [-1.0, 0.0, 0.0], [0.5, 0.25, 0.0]])  # the last column is all 0
    column_max = np.abs(X).max(axis=0)
    Z = np.array([[1.0, -1.0, 0.5, 1.0], [0.0] * 4, [0.25, 0.25, -0.5, 0.0], [2.0, 0.0, 0.0, 0.5]])  # (R k, n)
    rho, flush = np.array([0.25, 0.5]), 0.0625
    R, k, d = 2, 2, 3  # four samples: n differs from d
    row_bound, own_bound = np.zeros((R, k, d)), np.zeros((R, k, d))
    for r in range(R):
        for c in range(k):
            coef = Z[r * k + c]
            row_bound[r, c] = (rho[r] * np.abs(coef).sum() + flush) * column_max
            own_bound[r, c] = rho[r] * (np.abs(coef) @ np.abs(X)) + flush * column_max
    # by hand: (0.25 x 3.5 + 1/16) x 2, 0.25 x 4 + 2/16; (0.5 x 2.5 + 1/16) x 2, 0.5 x 2.25 + 2/16
    assert (row_bound[0, 0, 0], own_bound[0, 0, 0]) == (1.875, 1.125)
    assert (row_bound[1, 1, 0], own_bound[1, 1, 0]) == (2.625, 1.25)
    above = np.nextafter(own_bound, np.inf)
    for name, G, open_count in (("on the entry's own bound", own_bound, 8),  # all but the zero column's 4
                                ("one ulp above it", above, 0),
                                ("one ulp above the row bound", np.nextafter(row_bound, np.inf), 0)):
        undecided = np.zeros((R, k, d), bool)
        expected = (G <= row_bound) & (G <= own_bound) & (column_max > 0)
        assert int(expected.sum()) == open_count, name
        anything = kernels.open_entries(-G, Z, X, column_max, *kernels.lit_samples(X), rho, flush, undecided)
        assert undecided.tolist() == expected.tolist(), name
        assert anything == (open_count > 0), name
    # one ulp above its own bound, (0, 0, 0) is still inside its row bound: the second test closes it
    assert above[0, 0, 0] < row_bound[0, 0, 0]


def test_own_scale_sums_decide_entries_far_below_their_row_and_leave_ties_open():
    """``_own_scale_signs`` on dyadic coefficients ``M 2^K`` (one run, k = 2, d = 3, three samples; rho = 2^-40), each
    entry's true value by hand:
    (0, 0): 0.5 x 1 x 2^-1100 - 0.25 x 3 x 2^-1101 = 2^-1103 > 0 (every term ~2^-1100, far below any row) -> +1;
    (0, 1): sample 2 alone, 1 x (-2) x 2^-5 -> -1;
    (0, 2): 2^-60 x 1 - 1 x 1 x 2^-1061: the second term is 2^-1001 of the first's exponent, left out with its bound
    2^-1000 |term| = 2^-1000, far below 2^-60 -> +1;
    (1, 0): 0.75 x 1 x 2^-1100 - 0.25 x 3 x 2^-1100 = 0 exactly: a tie stays undecided;
    (1, 2): 2^-1001 x 2^0 x 1 - 1 x 1 x 2^-1001 = 0: the second term lies 2^-1001 below the first's exponent, so it is
    left out with its bound 2^-1000, which exceeds the sum 2^-1001: it stays undecided (its true value is the tie 0).
    Entries not undecided on entry keep their G."""
    X = np.array([[1.0, 0.0, 1.0], [3.0, 0.0, 0.0], [0.0, -2.0, 1.0]])
    starts, rows = kernels.lit_samples(X)
    assert starts.tolist() == [0, 2, 3, 5] and rows.tolist() == [0, 1, 2, 0, 2]
    M = np.zeros((1, 2, 3))
    K = np.zeros((1, 2, 3))
    M[0, 0], K[0, 0] = [0.5, -0.25, 1.0], [-1100.0, -1101.0, -5.0]
    M[0, 1], K[0, 1] = [0.75, -0.25, -1.0], [-1100.0, -1100.0, -1001.0]
    # entries (0, 2) and (1, 2) read column 2 (samples 0 and 2): checked below with their own coefficients
    G = np.full((1, 2, 3), 7.0)
    undecided = np.array([[[True, True, False], [True, False, False]]])
    rho = np.array([2.0**-40])
    left = kernels._own_scale_signs(G, M, K, X, starts, rows, rho, undecided)
    assert G[0].tolist() == [[1.0, -1.0, 7.0], [7.0, 7.0, 7.0]]
    assert undecided[0].tolist() == [[False, False, False], [True, False, False]] and left
    # (0, 2) and (1, 2): column 2 is lit by samples 0 and 2
    M[0, 0, 0], K[0, 0, 0], M[0, 0, 2], K[0, 0, 2] = 2.0**-60, 0.0, -1.0, -1061.0
    M[0, 1, 0], K[0, 1, 0], M[0, 1, 2], K[0, 1, 2] = 2.0**-1001, 0.0, -1.0, -1001.0
    G[:] = 7.0
    undecided = np.array([[[False, False, True], [False, False, True]]])
    left = kernels._own_scale_signs(G, M, K, X, starts, rows, rho, undecided)
    assert G[0, 0, 2] == 1.0 and not undecided[0, 0, 2]
    assert G[0, 1, 2] == 7.0 and undecided[0, 1, 2] and left
    # nothing open: nothing left
    assert not kernels._own_scale_signs(G, M, K, X, starts, rows, rho, np.zeros((1, 2, 3), bool))


def test_undecided_signs_of_a_block_by_its_bounds():
    """The block path's undecided-sign test (``_undecided_signs``, two lanes, k = d = 2, two samples shared by the
    lanes) on dyadic numbers in units of eps = 2^-53. With W, rho_r = 4 eps (count + k + 16 + 4 (d + 2) M_r), M_r =
    max_c sum_l |W_clr| max_j |x_jl|: M = (1, 4) gives rho = (144, 336) eps. An entry is open when |G| <= rho_r
    sum_j |coef_cjr| max_j |x_jl| and then when |G| <= rho_r sum_j |coef_cjr x_jl| (+ the flush term 2.2 k 2^-1000
    max_j |x_jl|, which only decides entries of a row without coefficients). By hand, the entry's own bounds are
    (288, 576; 108, 144) eps on lane 0 and (4.4, 8.8 x 2^-1000; 504, 672 eps) on lane 1, the row bounds twice or
    more of them."""
    eps = 2.0**-53
    X = np.array([[1.0, 0.0], [0.5, 2.0]])[:, :, None]  # (count, d, 1): both lanes read the same samples
    column_max = np.array([[1.0, 1.0], [2.0, 2.0]])  # (d, lanes)
    W = np.empty((2, 2, 2))
    W[:, :, 0] = [[1.0, 0.0], [0.5, 0.0]]  # M_0 = max(1, 0.5) = 1
    W[:, :, 1] = [[0.0, 2.0], [1.0, 1.0]]  # M_1 = max(4, 3) = 4
    Z = np.empty((2, 2, 2))
    Z[:, :, 0] = [[1.0, -2.0], [0.5, 0.5]]
    Z[:, :, 1] = [[0.0, 0.0], [1.0, 1.0]]
    G = np.empty((2, 2, 2))
    G[:, :, 0] = [[288 * eps, -600 * eps], [120 * eps, -144 * eps]]
    G[:, :, 1] = [[2.0**-998, 2.0**-997], [-504 * eps, 700 * eps]]  # 4 and 8 x 2^-1000 <= the flush term's 4.4 and 8.8
    expected = np.full((3, 2, 2), 5.0)  # rows 1 and 2 are the lanes' runs (first = 1); row 0 is not touched
    expected[1] = [[np.nan, -1.0], [1.0, np.nan]]
    expected[2] = [[np.nan, np.nan], [np.nan, 1.0]]

    def signs_of(G, logit_bound):
        signs = np.full((3, 2, 2), 5.0)
        undecided = kernels._undecided_signs(W, G, Z, X, column_max, np.asarray(logit_bound, float), 1, 3, 2,
                                             np.empty(2), np.empty((2, 2)), signs)
        return bool(undecided), signs

    undecided, signs = signs_of(G, [2.0**20, 2.0**20])  # the caller's logit bound leaves every entry open
    assert undecided
    np.testing.assert_array_equal(signs, expected)
    # the first pass, with the caller's logit bound L = M = (1, 4): 4 eps (20 + 16 L) 2.2 k max_j |x_jl| (+ flush), i.e.
    # (633.6, 1478.4) eps max_j |x_jl|. Entries 2% above it are decided at once (nothing written); one entry exactly
    # on it, or at 300 eps (above its own bound 288 eps), sends the block to the full test, which decides every entry
    first_pass = np.array([4.0 * (20 * eps + 16 * eps * L) * 2.2 * 2 for L in (1.0, 4.0)])
    assert first_pass == pytest.approx(np.array([633.6, 1478.4]) * eps, rel=1e-15)
    clear = 1.02 * first_pass[None, None, :] * column_max[None, :, :] * np.ones((2, 1, 1))
    undecided, signs = signs_of(clear, [1.0, 4.0])
    assert not undecided and (signs == 5.0).all()
    for at, value in (((0, 0, 0), (first_pass[0] + 2.2 * 2 * 2.0**-1000) * 1.0), ((0, 0, 0), 300 * eps)):
        nearly = clear.copy()
        nearly[at] = value
        undecided, signs = signs_of(nearly, [1.0, 4.0])
        assert not undecided and (signs[1:] == 1.0).all() and (signs[0] == 5.0).all(), value


def _singular_values(A):
    return np.linalg.svd(A, compute_uv=False)


def test_schatten_directions_attain_the_dual_norm():
    """Steepest directions of the Schatten balls on a full-rank Z (k = 2, d = 3) and on a gradient whose rows sum to 0
    (rank k - 1, one singular value exactly 0 up to rounding): the polar factor (singular values 1 on Z's rank, 0
    beyond it, <D, Z> = the nuclear norm, D Z^T symmetric), the top pair (<D, Z> = the spectral norm, rank one) and at
    q = 3 (p = 3/2) U diag(s^2 / ||s||_3^2) V^T (<D, Z> = ||s||_3, ||D||_{S_3/2} = 1). Z = 0 gives 0; NaN gives NaN."""
    full = np.array([[0.5, -3.0, 1.0], [2.0, -0.25, 1.5]])
    rows_sum_to_zero = np.array([[1.0, -1.75, 0.5], [-1.0, 1.75, -0.5]])
    for Z, rank in ((full, 2), (rows_sum_to_zero, 1)):
        s = _singular_values(Z)
        D = np.empty_like(Z)
        kernels._schatten_direction(Z, kernels.DIRECTION_POLAR, 1.0, D)
        np.testing.assert_allclose(_singular_values(D), [1.0] * rank + [0.0] * (2 - rank), atol=1e-14)
        assert float(np.sum(D * Z)) == pytest.approx(s.sum(), rel=1e-14)
        np.testing.assert_allclose(D @ Z.T, (D @ Z.T).T, atol=1e-14)
        kernels._schatten_direction(Z, kernels.DIRECTION_NUCLEAR, math.inf, D)
        np.testing.assert_allclose(_singular_values(D), [1.0, 0.0], atol=1e-14)
        assert float(np.sum(D * Z)) == pytest.approx(s[0], rel=1e-14)
        kernels._schatten_direction(Z, kernels.DIRECTION_SCHATTEN, 3.0, D)
        assert float(np.sum(D * Z)) == pytest.approx(np.sum(s ** 3) ** (1 / 3), rel=1e-14)
        d_values = _singular_values(D)
        assert float(np.sum(d_values ** 1.5)) == pytest.approx(1.0, rel=1e-14)
        np.testing.assert_allclose(d_values, list(s[:rank] ** 2 / np.sum(s ** 3) ** (2 / 3)) + [0.0] * (2 - rank),
                                   atol=1e-14)
    # exactly rank one (a zero row: the second singular value is exactly 0): the top pair is (3, 0, 4) / 5 alone
    D = np.empty((2, 3))
    kernels._schatten_direction(np.array([[3.0, 0.0, 4.0], [0.0, 0.0, 0.0]]), kernels.DIRECTION_NUCLEAR, math.inf, D)
    np.testing.assert_allclose(D, [[0.6, 0.0, 0.8], [0.0, 0.0, 0.0]], rtol=0, atol=1e-15)
    for direction, q in ((kernels.DIRECTION_POLAR, 1.0), (kernels.DIRECTION_NUCLEAR, math.inf),
                         (kernels.DIRECTION_SCHATTEN, 3.0)):
        kernels._schatten_direction(full, direction, q, D)
        for scale in (1e-200, 0.1, 1e200):  # no direction depends on the gradient's scale
            scaled = np.empty_like(D)
            kernels._schatten_direction(full * scale, direction, q, scaled)
            np.testing.assert_allclose(scaled, D, rtol=0, atol=1e-14)
        D = np.full((2, 3), 7.0)
        kernels._schatten_direction(np.zeros((2, 3)), direction, q, D)
        assert not D.any(), direction
        broken = full.copy()
        broken[1, 2] = np.nan
        kernels._schatten_direction(broken, direction, q, D)
        assert np.isnan(D).all(), direction


def test_newton_schulz_direction_is_muons_iteration():
    """Five steps of Muon's quintic iteration X <- a X + (b A + c A^2) X, A = X X^T, (a, b, c) = (3.4445, -4.7750,
    2.0315), from Z / ||Z||_F, written with numpy's matrix products; a tall Z (k > d) is iterated transposed."""
    def muon(Z):
        X = Z.T if Z.shape[0] > Z.shape[1] else Z
        X = X / np.linalg.norm(X)
        for _ in range(5):
            A = X @ X.T
            X = 3.4445 * X + (-4.7750 * A + 2.0315 * A @ A) @ X
        return X.T if Z.shape[0] > Z.shape[1] else X

    wide = np.array([[0.5, -3.0, 1.0], [2.0, -0.25, 1.5]])
    for Z in (wide, wide.T, np.array([[1.0, 2.0], [3.0, 4.0]])):
        D = np.empty_like(Z)
        kernels._newton_schulz_direction(Z, D)
        np.testing.assert_allclose(D, muon(Z), rtol=0, atol=1e-13)
        assert 0.6 < _singular_values(D).min() and _singular_values(D).max() < 1.3  # near the polar factor's 1s
    D = np.full((2, 3), 7.0)
    kernels._newton_schulz_direction(np.zeros((2, 3)), D)
    assert not D.any()


def test_undecided_signs_with_each_lanes_own_samples_a_tight_logit_bound_and_a_zero_column():
    """Each lane reads its own samples (X (count, d, lanes)); lane 0's second column is all zero (G = 0 there is
    decided: sign 0). M = (1/2, 1024), the caller's logit bound equal to it: rho = 4 eps (20 + 16 M) = (112, 65616)
    eps. Lane 1's coefficients (4, 0) sit on the sample of largest |x| in both columns, so the entry's own bound
    equals its row bound there: 4 rho max_j |x_jl| = (65616, 524928) eps. G on lane 1, column 1 exactly at 524928 eps
    is the block's one open entry: the first pass (4 eps (20 + 16 M) 2.2 k max_j |x_jl| = 577421 eps) must send the
    block on. One ulp above lane 0's own bound 224 eps is decided; a G of 1e-300 against a flush term of
    2.2 k 2^-1000 x 0.25 ~ 1.0e-301 is decided."""
    eps = 2.0**-53
    X = np.empty((2, 2, 2))
    X[:, :, 0] = [[1.0, 0.0], [0.5, 0.0]]
    X[:, :, 1] = [[0.25, 2.0], [0.0, 1.0]]
    column_max = np.abs(X).max(axis=0)  # (d, lanes): (1, 0) and (0.25, 2)
    W = np.empty((2, 2, 2))
    W[:, :, 0] = [[0.5, 3.0], [0.25, 0.0]]  # M_0 = max(0.5 x 1 + 3 x 0, 0.25) = 1/2
    W[:, :, 1] = [[0.0, 512.0], [4.0, 0.0]]  # M_1 = max(512 x 2, 4 x 0.25) = 1024
    Z = np.empty((2, 2, 2))
    Z[:, :, 0] = [[1.0, 2.0], [0.0, 0.5]]
    Z[:, :, 1] = [[4.0, 0.0], [0.0, 1.0]]
    G = np.empty((2, 2, 2))
    G[:, :, 0] = [[1000 * eps, 0.0], [-1000 * eps, 0.0]]
    G[:, :, 1] = [[2e6 * eps, 524928 * eps], [-2e6 * eps, 6e5 * eps]]
    expected = np.full((2, 2, 2), 5.0)
    expected[0] = [[1.0, 0.0], [-1.0, 0.0]]
    expected[1] = [[1.0, np.nan], [-1.0, 1.0]]

    def signs_of(G):
        signs = np.full((2, 2, 2), 5.0)
        undecided = kernels._undecided_signs(W, G, Z, X, column_max, np.array([0.5, 1024.0]), 0, 2, 2, np.empty(2),
                                             np.empty((2, 2)), signs)
        return bool(undecided), signs

    undecided, signs = signs_of(G)
    assert undecided
    np.testing.assert_array_equal(signs, expected)
    decided = G.copy()
    decided[0, 1, 1] = 6e6 * eps  # every entry past the first pass (G = 0 in the zero column is decided there too)
    undecided, signs = signs_of(decided)
    assert not undecided and (signs == 5.0).all()
    G[0, 0, 0] = np.nextafter(224 * eps, 1.0)
    G[1, 0, 1] = -1e-300
    undecided, signs = signs_of(G)
    assert undecided
    np.testing.assert_array_equal(signs, expected)


def test_own_scale_sums_at_their_bound_and_past_the_flush_exponent():
    """``_own_scale_signs``' decision on dyadic cases, one entry (0, 0, 1) each, each entry's true value by hand. The
    rule: with ``m`` the largest exponent ``K`` among the samples lighting up column 1, a term ``M x`` whose exponent
    lies at most 1000 below ``m`` enters the sum as ``M x 2^{K - m}``, a term further below is left out with the
    bound ``2^-1000 |M x|``; the entry is decided when ``|sum| > (rho + (count + 4) eps) sum |terms| + the terms
    left out's bounds`` (eps = 2^-53, count the samples lighting up the column). rho = 2^-40. Column 0 is lit by
    other samples (so the entry's samples start past the first row of ``rows``) and is not undecided."""
    rho = np.array([2.0**-40])

    def entry(column_0, column_1, M, K):
        X = np.array([column_0, column_1], dtype=float).T
        G = np.full((1, 1, 2), 7.0)
        undecided = np.array([[[False, True]]])
        left = kernels._own_scale_signs(G, np.array([[M]], float), np.array([[K]], float), X,
                                        *kernels.lit_samples(X), rho, undecided)
        assert undecided[0, 0, 1] == left, (M, K)
        return G[0, 0, 1] if not left else None

    # two terms 1 + b and -(1 - b) at one exponent, b = rho + 6 eps: the sum 2 b equals its bound 2 b exactly (open);
    # one ulp more on the first term: the sum 2 b + 2^-52 against the same bound (the mass 2 + 2^-52 rounds to 2)
    b = 2.0**-40 + 6 * 2.0**-53
    assert entry([0, 0, 1], [1, 1, 0], [1 + b, -(1 - b), 1.0], [0, 0, 0]) is None
    assert entry([0, 0, 1], [1, 1, 0], [1 + b + 2.0**-52, -(1 - b), 1.0], [0, 0, 0]) == 1.0
    # 1 - 1 + 2^-60 = 2^-60, far inside the bound of the three terms' mass (~2^-39): open
    assert entry([0, 0, 0, 1], [1, 1, 1, 0], [1.0, -1.0, 2.0**-60, 1.0], [0, 0, 0, 0]) is None
    # a term exactly 2^1000 below the top one still enters the sum: 1/2 x 1 + 1/2 x (-2^1001) x 2^-1000 = -1/2
    assert entry([0, 0, 1], [1, -2.0**1001, 0], [0.5, 0.5, 1.0], [0, -1000, 0]) == -1.0
    # two terms 2^1001 below the top one, each left out with its own bound: 1/2 - 3/8 - 3/16 = -1/16, the sum 1/2 of
    # the top term alone against the bounds 3/4 + 3/8: open
    assert entry([0, 0, 0, 1], [1, -0.75 * 2.0**1001, -0.375 * 2.0**1001, 0], [0.5, 0.5, 0.5, 1.0],
                 [0, -1001, -1001, 0]) is None
    # samples of subnormal size: 1/2 x 2^-1060 + 1/2 x 2^-1061 = 3 x 2^-1062, exact, at the entry's own exponent
    # -1100 (column 0's sample has exponent 0): nothing is left out and the bound is of order 2^-1100
    assert entry([0, 0, 1], [2.0**-1060, 2.0**-1061, 0], [0.5, 0.5, 1.0], [-1100, -1100, 0]) == 1.0
    # a sample lighting up both columns: column 1 holds 1 x 1 + 1 x (-3/4) = 1/4 (sample 1 counted once)
    assert entry([0, 1], [1, -0.75], [1.0, 1.0], [0, 0]) == 1.0
    # nothing left open: the answer is False, not merely falsy
    X = np.eye(2)
    assert kernels._own_scale_signs(np.ones((1, 1, 2)), np.ones((1, 1, 2)), np.zeros((1, 1, 2)), X,
                                    *kernels.lit_samples(X), rho, np.zeros((1, 1, 2), bool)) is False


def _float_signs(W, X, y, entries):
    out = np.full(len(entries), 5.0)
    classes = np.array([c for c, _ in entries], dtype=np.int64)
    features = np.array([l for _, l in entries], dtype=np.int64)
    kernels.float_signs(W, X, np.asarray(y, dtype=np.int64), classes, features, *kernels.lit_samples(X), out)
    return out


def _mp_gradient_signs(W, X, y):
    """The signs of the mean cross-entropy gradient at 50 digits (:func:`rates.numeric.reference.gradient`), and
    each entry's value relative to the sum of its terms' sizes (how far from a cancellation it is)."""
    from rates.numeric.reference import gradient

    with mp.workdps(50):
        Wm = [[mp.mpf(float(v)) for v in row] for row in W]
        Xm = [[mp.mpf(float(v)) for v in row] for row in X]
        G = gradient(Wm, Xm, [int(v) for v in y], range(len(y)))
        sizes = [[mp.mpf(0)] * len(Xm[0]) for _ in Wm]
        for j, label in enumerate(y):
            z = [mp.fsum(w * x for w, x in zip(row, Xm[j])) for row in Wm]
            e = [mp.exp(v - max(z)) for v in z]
            for c in range(len(Wm)):
                coef = e[c] / mp.fsum(e) - (1 if c == label else 0)
                sizes[c] = [s + abs(coef * x) / len(y) for s, x in zip(sizes[c], Xm[j])]
        relative = np.array([[float(g / s) if s else 0.0 for g, s in zip(row, size)] for row, size in zip(G, sizes)])
        return np.array([[float(mp.sign(g)) for g in row] for row in G]), relative, G


def test_float_signs_at_zero_are_the_integer_sums_signs_and_leave_exact_ties_open():
    """At W = 0 every probability is 1/k, so entry (c, l) is sum_j (1/k - [y_j = c]) x_jl / n, of the sign of the
    integer sum_j (1 - k [y_j = c]) x_jl (counted below in Python integers). Stage 1 gives every nonzero one its sign,
    an exact tie NaN (its float terms cancel only within their rounding: the exact stage decides it) and an entry of
    an all-zero column 0 (no term at all). Pixels 0..16 in 10 classes, as on digits; entries asked in a scrambled
    order with repeats."""
    rng = np.random.default_rng(3)
    n, d, k = 30, 8, 10
    X = rng.integers(0, 17, (n, d)).astype(float)
    X[rng.random((n, d)) < 0.5] = 0.0
    X[:, 2] = 0.0
    y = np.arange(n) % k
    sums = np.array([[sum(int(x) * (1 - k * int(label == c)) for x, label in zip(X[:, l], y)) for l in range(d)]
                     for c in range(k)])
    expected = np.where(sums == 0, np.nan, np.sign(sums))
    expected[:, 2] = 0.0
    assert (sums[:, [0, 1, 3, 4, 5, 6, 7]] == 0).sum() == 1  # one exact tie besides the zero column
    entries = [(c, l) for c in range(k) for l in range(d)]
    out = _float_signs(np.zeros((k, d)), X, y, entries)
    np.testing.assert_array_equal(out.reshape(k, d), expected)
    some = [entries[i] for i in rng.permutation(len(entries))[:25]] + entries[3:7]
    np.testing.assert_array_equal(_float_signs(np.zeros((k, d)), X, y, some), [expected[e] for e in some])


def test_float_signs_match_the_mpmath_gradient_with_a_class_row_far_below_float64():
    """Stage 1 against the 50-digit gradient on dyadic W and samples of either sign (k = 4, d = 7, 10 samples;
    column 3 all zero, column 5 a constant 1, column 6 of size 2^-1000): every entry that is not a near-cancellation
    (at least 1% of the sum of its terms' sizes: all but two of the misclassified case below) gets the
    reference's sign, and the zero column 0. Then class 3, which no
    sample has, gets a logit of about -2000 from the constant column: its whole row lies near 1e-870 (S_3 ~ e^-2000),
    below float64's range; then class 0 about +1000 more: every sample of classes 1 and 2 is misclassified by ~1000
    (its S_y ~ e^-1000, its wrong classes' e^z beyond float64), and entries (0, 6) and (1, 4), sums over those
    samples that cancel (0) plus terms ~e^-1000 of theirs, are near-cancellations: left open or given their sign.
    In the log domain, each entry at its own largest term, stage 1 still gives every other entry its sign."""
    rng = np.random.default_rng(3)
    k, d, n = 4, 6, 10
    X = rng.integers(-4, 5, (n, d)) / 4.0
    X[:, 3], X[:, 5] = 0.0, 1.0
    y = rng.integers(0, k, n) % 3
    W = rng.integers(-8, 9, (k, d)) / 8.0
    X = np.hstack([X, rng.integers(-4, 5, (n, 1)) * 2.0**-1002])
    W = np.hstack([W, rng.integers(-8, 9, (k, 1)) / 8.0])
    d = 7
    entries = [(c, l) for c in range(k) for l in range(d)]
    for case in ("moderate", "far", "misclassified"):
        if case == "far":
            W[3, 5] = -2000.0
        if case == "misclassified":
            W[0, 5] = 1000.0
        signs, relative, G = _mp_gradient_signs(W, X, y)
        clear = np.abs(relative) > 0.01
        assert clear.sum() == (24 if case != "misclassified" else 22) and (signs[:, 3] == 0).all(), case
        assert 0 < min(abs(g) for g in G[0][6:] + G[1][6:]) < mp.mpf("1e-300")
        if case != "moderate":
            assert max(abs(g) for g in G[3]) < mp.mpf("1e-860") and min(abs(g) for g in G[3] if g) > 0
            assert (signs[3] != 0).sum() == 6 and set(signs[3].tolist()) == {-1.0, 0.0, 1.0}
        out = _float_signs(W, X, y, entries).reshape(k, d)
        np.testing.assert_array_equal(out[clear], signs[clear], err_msg=case)
        assert (out[:, 3] == 0).all() and ((out == signs) | np.isnan(out)).all(), case


def test_settle_in_loop_decides_what_stage_1_decides_run_by_run():
    """``_settle_in_loop`` on three runs of the samples of the test above (k = 4, d = 6): run 0 has nothing undecided
    (its NaN iterate is never read), run 1 a NaN iterate with undecided entries (left to the caller: kept as they
    are), run 2 the dyadic W of that test; then run 2 at W = 0 with an exact tie. Each decided entry gets the
    50-digit gradient's sign in G (0 in the zero column) and leaves ``undecided``; the others keep their G."""
    rng = np.random.default_rng(3)
    k, d, n = 4, 6, 10
    X = rng.integers(-4, 5, (n, d)) / 4.0
    X[:, 3], X[:, 5] = 0.0, 1.0
    y = (rng.integers(0, k, n) % 3).astype(np.int64)
    W = np.full((3, k, d), np.nan)
    W[2] = rng.integers(-8, 9, (k, d)) / 8.0
    signs, _, _ = _mp_gradient_signs(W[2], X, y)
    starts, rows = kernels.lit_samples(X)
    G = np.full((3, k, d), 7.0)
    undecided = np.zeros((3, k, d), bool)
    undecided[1, 0, :3] = True
    undecided[2, :, [1, 3, 4]] = True
    undecided[2, 3, 5] = True
    open_before = undecided.copy()
    assert kernels._settle_in_loop(W, X, y, G, undecided, starts, rows) is False  # run 1 is left open
    assert undecided[1].tolist() == open_before[1].tolist() and not undecided[2].any() and not undecided[0].any()
    expected = np.full((3, k, d), 7.0)
    expected[2][open_before[2]] = signs[open_before[2]]
    np.testing.assert_array_equal(G, expected)
    assert (G[2, :, 3] == 0.0).all() and set(G[2][open_before[2]].tolist()) == {-1.0, 0.0, 1.0}
    undecided[1] = False
    undecided[2, 1, 0] = True
    G[2, 1, 0] = 7.0
    assert kernels._settle_in_loop(W, X, y, G, undecided, starts, rows) is True
    assert G[2, 1, 0] == signs[1, 0] and not undecided.any()
    # W = 0 on samples x with sum over class 0 of (1 - 2 [y = 0]) x exactly 0: the tie stays open, the other is decided
    X = np.array([[1.0, 1.0], [1.0, 0.0], [2.0, 3.0]])
    W0 = np.zeros((1, 2, 2))
    G = np.full((1, 2, 2), 7.0)
    undecided = np.array([[[True, True], [False, False]]])
    assert kernels._settle_in_loop(W0, X, np.array([1, 1, 0]), G, undecided, *kernels.lit_samples(X)) is False
    # (0, 0): (1/2)(1 + 1) - (1/2) 2 = 0; (0, 1): (1/2) 1 - (1/2) 3 = -1 < 0
    assert undecided.tolist() == [[[True, False], [False, False]]] and G.tolist() == [[[7.0, -1.0], [7.0, 7.0]]]
