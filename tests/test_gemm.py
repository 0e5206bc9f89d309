"""The GEMM stepper (rates.numeric.gemm): the full-batch gradient as two stacked products, chosen by the data's size.

Independent expectations: the gradient in 40-digit mpmath (:func:`rates.numeric.reference.gradient`, unbounded
exponent) on an iterate whose class rows lie below float64's range of each other; the fused kernels' iterates
(another implementation of the same rules) on small data forced onto the GEMM path; each run advanced alone. The
exact-sign trajectories of tests/test_exact_sign.py and the step-by-step reference of every registered name in
tests/test_one_definition.py run this path too.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, group_stepper, resolve_spec, run_group, simulate
from rates.numeric.fused.products import MIN_FEATURES, rows_times_rows, worth_tiles
from rates.numeric.gemm import (
    GEMM_MIN_WORK,
    GEMM_MIN_WORK_SIGNS,
    GemmGradient,
    SignSteps,
    SteepestSteps,
    compiled_steepest,
    host_gradient,
    one_scale,
    worth_gemm,
)
from rates.numeric.reference import exact_sign_run, gradient

TOLERANCE = 1e-12


def gaussian(k: int, d: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Separable-looking class clouds (their separability does not matter to a gradient's value)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    return 2.0 * rng.standard_normal((k, d))[y] + rng.standard_normal((n, d)), y


@pytest.fixture(scope="module")
def hard_iterate():
    """The default preset's exact-sign SignGD iterate at t = 2000 (a = 1/4, eta0 = 2), where one class row of the
    gradient lies below 1e-308 of the largest (tests/test_exact_sign.py)."""
    data = parse_data("default")
    H, y = np.asarray(data.H, dtype=np.float64), np.asarray(data.y)
    W = np.array(exact_sign_run(H, y, data.k, "1/4", 2.0, 2000, record=[2000])[2000])
    return H, y, data.k, W


@pytest.mark.parametrize("products", ["gemm", "tiles"])
def test_gemm_gradient_has_every_row_of_the_40_digit_gradient(hard_iterate, products):
    """Every class row of ``2^N G`` equals mpmath's gradient row to 1e-12 of that row's largest entry, also the row
    ~1e-300 below the others, and every entry has mpmath's sign; two runs stacked in one product (the iterate and
    half of it) each get their own rows. ``tiles``: the same data and iterate with zero features appended up to
    the count where the products are the numba tiles (:mod:`rates.numeric.fused.products`): the same logits and
    gradient, and exactly 0 on the added features."""
    H, y, k, W = hard_iterate
    stacked = np.stack([W, 0.5 * W])
    d = W.shape[1]
    extra = MIN_FEATURES - d if products == "tiles" else 0
    H_in = np.ascontiguousarray(np.pad(H, ((0, 0), (0, extra))))
    assert worth_tiles(2 * k, d + extra) == (products == "tiles")
    G, exponents = host_gradient(np.pad(stacked, ((0, 0), (0, 0), (0, extra))), H_in, np.ascontiguousarray(H_in.T), y)
    assert np.all(G[:, :, d:] == 0.0)
    smallest_row = 0.0
    with mp.workdps(40):
        Hm = [[mp.mpf(float(v)) for v in row] for row in H]
        for r in range(2):
            exact = gradient([[mp.mpf(float(v)) for v in row] for row in stacked[r]], Hm, list(y), range(len(y)))
            top = max(abs(v) for row in exact for v in row)
            for c in range(k):
                row_top = max(abs(v) for v in exact[c])
                smallest_row = min(smallest_row, float(mp.log10(row_top / top)))
                for l in range(d):
                    got = mp.mpf(float(G[r, c, l])) * mp.mpf(2) ** int(exponents[r, c])
                    assert abs(got - exact[c][l]) <= TOLERANCE * row_top, (r, c, l)
                    assert mp.sign(got) == mp.sign(exact[c][l]), (r, c, l)
    assert smallest_row < -300  # the case is hard: a row far below float64's range of the largest


@pytest.mark.parametrize("m, K, N", [(1, 40, 5), (3, 40, 13), (7, 33, 61), (10, 784, 120), (12, 5, 6), (2, 9, 1),
                                     (5, 200, 12)])
def test_tiles_give_every_entry_of_the_product_within_its_rounding_bound(m, K, N):
    """``rows_times_rows(A, B)`` is ``A B^T`` entry by entry: within ``(K + 2) eps sum_l |a_l b_l|`` of the correctly
    rounded sum of the entry's terms (``math.fsum`` of exact products' roundings, an independent sum), on shapes
    that use every tile (5, 2 and 1 rows), the columns past the last whole tile, and inner lengths below and above
    one vector loop; entries of mixed signs and magnitudes over 2^-60..2^60."""
    rng = np.random.default_rng(m * 1000 + K + N)
    A = rng.standard_normal((m, K)) * 2.0 ** rng.integers(-60, 60, (m, K))
    B = rng.standard_normal((N, K))
    out = np.full((m, N), np.nan)
    rows_times_rows(A, B, out)
    eps = np.finfo(np.float64).eps
    for i in range(m):
        for j in range(N):
            terms = A[i] * B[j]
            bound = (K + 2) * eps * np.abs(terms).sum()
            assert abs(out[i, j] - math.fsum(terms)) <= bound, (i, j)


def test_one_scale_brings_rows_to_the_largest_exponent_by_exact_powers_of_two():
    """Rows move to the run's largest exponent by exact powers of two; a row below 2^-1000 of it is 0 (the fused
    kernels' flush), never a subnormal number."""
    G = np.array([[[1.5, -0.75], [1.0, 0.5], [0.3, -0.2]]])
    exponents = np.array([[-3.0, 7.0, -2000.0]])
    scaled, top = one_scale(G, exponents)
    assert top.tolist() == [[7.0]]
    assert scaled[0, 0].tolist() == [1.5 * 2.0**-10, -0.75 * 2.0**-10]
    assert scaled[0, 1].tolist() == [1.0, 0.5]
    assert scaled[0, 2].tolist() == [0.0, 0.0]


# (spec, steps): 1,000 steps where the trajectory does not amplify rounding; 30 where it does. Measured on this set
# between the fused kernels and the torch engine (two implementations neither of which is this path): spectral GD
# apart by 1.2e-11 at t = 100 and 1.2e-2 at t = 1000 (the polar factor of a nearly rank-deficient gradient), the l_3
# steepest direction by 2.7e-10 at t = 1000; the GEMM path was as far (9.1e-12, 4.7e-3; 3.2e-10).
RECIPES = [(RunSpec("signgd", "1/4", 2.0), 1000), (RunSpec("signum", "1/3", 1.0, momentum=0.9), 1000),
           (RunSpec("ngd", "1/2", 1.0), 1000), (RunSpec("adam", "1/2", 0.5), 1000),
           (RunSpec("adam", "1/2", 0.5, adam_eps=1e-8), 1000),
           (RunSpec("momentum-ngd", "1/2", 1.0, momentum=0.5), 1000),
           (RunSpec("spectral-gd", "1/2", 1.0), 30), (RunSpec("nsd", "1/2", 1.0, norm="lp:3"), 30)]


@pytest.mark.parametrize("spec, steps", RECIPES, ids=lambda s: f"{s.algo}{'-' + s.norm if s.norm else ''}"
                         if isinstance(s, RunSpec) else str(s))
def test_gemm_path_follows_the_fused_kernels_on_small_data(spec, steps):
    """Forced onto the GEMM path, two runs of a recipe on the Gaussian k = 4, d = 6, n = 48 set stay within 1e-12
    relative of the fused kernels' iterates at every checkpoint (the two paths differ only in the rounding of the
    two sums; for sign-type directions the signs are the same, so the iterates are)."""
    data = parse_data("gaussian:k=4,d=6,per_class=12", seed=9)
    H, y = np.asarray(data.H, dtype=np.float64), np.asarray(data.y)
    runs = [resolve_spec(spec, data.n), resolve_spec(RunSpec(**{**spec.__dict__, "eta0": spec.eta0 / 4}), data.n)]
    times = np.unique(np.geomspace(1, steps, 4).round().astype(int))
    _, fused = run_group(runs, H, y, data.k, steps, times, engine="fused")
    _, gemm = run_group(runs, H, y, data.k, steps, times, engine="gemm")
    for t, expected, got in zip(times, fused, gemm):
        for r in range(2):
            scale = np.abs(expected["W"][r]).max()
            assert np.abs(got["W"][r] - expected["W"][r]).max() <= TOLERANCE * scale, (spec.algo, t, r)
        np.testing.assert_allclose(got["margin"], expected["margin"], rtol=1e-10)


@pytest.mark.parametrize("spec", [RunSpec("signgd", "1/4", 2.0), RunSpec("ngd", "1/2", 1.0),
                                  RunSpec("signum", "1/3", 1.0, momentum=0.9)], ids=lambda s: s.algo)
def test_the_tiles_path_follows_the_fused_kernels(spec):
    """Two runs on a set with MIN_FEATURES features (k = 3, n = 45), forced onto the GEMM stepper, where the
    products are the numba tiles (2 x 3 rows): within 1e-12 relative of the fused kernels' iterates over 300
    steps, at every checkpoint."""
    k, d, n = 3, MIN_FEATURES, 45
    H, y = gaussian(k, d, n, seed=4)
    assert worth_tiles(2 * k, d)
    runs = [resolve_spec(spec, n), resolve_spec(RunSpec(**{**spec.__dict__, "eta0": spec.eta0 / 4}), n)]
    times = np.array([1, 10, 100, 300])
    _, fused = run_group(runs, H, y, k, 300, times, engine="fused")
    _, tiles = run_group(runs, H, y, k, 300, times, engine="gemm")
    for t, expected, got in zip(times, fused, tiles):
        for r in range(2):
            scale = np.abs(expected["W"][r]).max()
            assert np.abs(got["W"][r] - expected["W"][r]).max() <= TOLERANCE * scale, (spec.algo, t, r)


def test_sixty_four_configurations_share_one_pair_of_products_and_each_is_its_own_run():
    """64 SignGD configurations (8 exponents x 8 step sizes) on a set the size rule gives to the GEMMs (k = 10,
    d = 20, n = 1000): auto picks the GEMM path, each run's iterate equals the fused kernels' to 1e-12 and that run
    advanced alone bit for bit (a stacked product may round a run's sums differently from the product of the run
    alone, but sign steps see the same signs: rates.numeric.gemm on batch independence)."""
    k, d, n = 10, 20, 1000
    H, y = gaussian(k, d, n)
    exponents = ["1/4", "1/3", "2/5", "1/2", "3/5", "2/3", "3/4", "1"]
    runs = [resolve_spec(RunSpec("signgd", a, eta0), n) for a in exponents for eta0 in (2, 1, 0.5, 0.25, 3, 1.5, 0.75,
                                                                                     0.1)]
    assert group_stepper("auto", "cpu", runs[0].recipe, k, d, n) == "gemm"
    steps, times = 60, np.array([60])
    W, _ = run_group(runs, H, y, k, steps, times)
    W_fused, _ = run_group(runs, H, y, k, steps, times, engine="fused")
    assert np.abs(W - W_fused).max() <= TOLERANCE * np.abs(W_fused).max()
    for r in (0, 13, 37, 63):
        alone, _ = run_group([runs[r]], H, y, k, steps, times)
        assert np.array_equal(alone[0], W[r]), r


def test_a_normalised_step_alone_and_among_others_agree_to_rounding():
    """33 NGD runs on k = 7, d = 300, n = 700 (a shape where OpenBLAS rounds a stacked run's rows differently from
    the run alone): each run's iterate after 6 steps equals the run alone to 1e-13 relative, and the same group
    twice gives the same bits."""
    k, d, n = 7, 300, 700
    H, y = gaussian(k, d, n, seed=2)
    runs = [resolve_spec(RunSpec("ngd", a, eta0), n) for a in ("1/2", "1/3", "3/4") for eta0 in
            (2, 1, 0.5, 0.25, 3, 1.5, 0.75, 0.1, 1.25, 0.6, 0.3)]
    times = np.array([6])
    W, _ = run_group(runs, H, y, k, 6, times, engine="gemm")
    again, _ = run_group(runs, H, y, k, 6, times, engine="gemm")
    assert np.array_equal(W, again)
    for r in (0, 16, 32):
        alone, _ = run_group([runs[r]], H, y, k, 6, times, engine="gemm")
        assert np.abs(alone[0] - W[r]).max() <= 1e-13 * np.abs(W[r]).max(), r


def test_the_device_branch_gives_the_host_branch_gradient():
    """The torch branch of the source (the one cuda takes: two ``mm`` calls around the torch coefficients), run here
    on the CPU, gives the host branch's signal (the gradient with its per-row log-scales) to rounding."""
    k, d, n = 5, 24, 300
    H, y = gaussian(k, d, n, seed=3)
    W = torch.tensor(np.random.default_rng(1).standard_normal((3, k, d)))
    for per_row in (True, False):
        host = GemmGradient(torch.tensor(H), torch.tensor(y), k, per_row)
        device = GemmGradient(torch.tensor(H), torch.tensor(y), k, per_row)
        device.on_host = False  # the cuda branch, on CPU tensors
        device.Ht, device.H_mean = torch.tensor(H).T.contiguous(), torch.tensor(H) / n
        from rates.numeric.losses import labels

        device.labels = labels(torch.tensor(y), k, torch.float64)
        a, _ = host(W, host.init(W), 0)
        b, _ = device(W, device.init(W), 0)
        np.testing.assert_allclose((torch.exp(a.log_scale) * a.value).numpy(),
                                   (torch.exp(b.log_scale) * b.value).numpy(), rtol=1e-12, atol=0)


def test_size_rule_keeps_the_papers_sets_on_the_fused_kernels_and_gives_large_ones_to_the_gemms():
    full = resolve_spec(RunSpec("signgd", "1/2"), 30).recipe
    minibatch = resolve_spec(RunSpec("signsgd", "1/2", batch=10), 30000).recipe
    # every preset and the largest sets of the studies and tests: fused
    for k, d, n in ((3, 5, 30), (5, 10, 50), (4, 8, 64), (4, 4, 40), (4, 6, 48), (10, 10, 30)):
        assert group_stepper("auto", "cpu", full, k, d, n) == "fused"
    # MNIST-scale and the size at which the products dominate: gemm
    for k, d, n in ((10, 784, 2000), (10, 784, 10000), (10, 100, 1000), (10, 20, 1000)):
        assert group_stepper("auto", "cpu", full, k, d, n) == "gemm"
    assert worth_gemm(10, 20, GEMM_MIN_WORK // 200) and not worth_gemm(10, 20, GEMM_MIN_WORK // 200 - 1)
    # plain SignGD steps its GEMMs in one compiled loop, which pays from a smaller size on; other recipes do not
    assert group_stepper("auto", "cpu", full, 10, 32, 500) == "gemm"
    assert group_stepper("auto", "cpu", resolve_spec(RunSpec("ngd", "1/2"), 500).recipe, 10, 32, 500) == "fused"
    assert worth_gemm(10, 20, GEMM_MIN_WORK_SIGNS // 200, signs=True)
    assert not worth_gemm(10, 20, GEMM_MIN_WORK_SIGNS // 200 - 1, signs=True)
    assert group_stepper("auto", "cpu", full, 3, 5, 100000) == "fused"  # five features: too short an inner product
    assert group_stepper("auto", "cpu", minibatch, 10, 784, 30000) == "fused"  # mini-batches: no shared product
    assert group_stepper("fused", "cpu", full, 10, 784, 2000) == "fused"  # an explicit engine is kept
    assert group_stepper("torch", "cpu", full, 10, 784, 2000) == "torch"
    assert group_stepper("gemm", "cpu", full, 3, 5, 30) == "gemm"
    assert group_stepper("gemm", "cuda", full, 3, 5, 30) == "gemm"
    with pytest.raises(InputError, match="full-batch"):
        group_stepper("gemm", "cpu", minibatch, 10, 784, 30000)


def test_default_run_stays_on_the_fused_kernels_bit_for_bit():
    """``simulate`` on the default preset with ``engine=auto`` is the fused path: same stepper label, same bits."""
    data = parse_data("default")
    specs = [RunSpec("signgd", "1/2"), RunSpec("ngd", "1/3")]
    auto = simulate(specs, data, 300, checkpoints=8, device="cpu")
    fused = simulate(specs, data, 300, checkpoints=8, device="cpu", engine="fused")
    assert auto.meta["stepper"] == "fused"
    for a, b in zip(auto.runs, fused.runs):
        assert np.array_equal(a.margin, b.margin) and np.array_equal(a.log_loss, b.log_loss)


def test_compiled_signgd_loop_stops_at_undecided_signs_and_equals_the_fused_kernels(monkeypatch):
    """The compiled SignGD loop of the GEMM stepper (SignSteps) on integer pixels where the first 12 columns are exact
    ties at W = 0 (each pixel row appears once with every label, so ``sum_j (1/k - [y_j = c]) x_jl = 0``; the
    other columns carry a class offset): it stops at step 0 and settles there, the ties get sign 0 (those
    entries are exactly 0 after step 1, the others move by eta_0 2^-a), and three runs then equal the fused
    kernels' iterates bit for bit at every checkpoint of 400 steps (both take exact signs, so their iterates are
    the same float64 operations)."""
    rng = np.random.default_rng(3)
    k, d, rows = 4, 24, 30
    pixels = rng.integers(0, 17, size=(rows, d)).astype(np.float64)
    H, y = np.tile(pixels, (k, 1)), np.repeat(np.arange(k), rows)
    H[:, 12:] += 3.0 * y[:, None] * (np.arange(12) % 3 + 1)
    runs = [resolve_spec(RunSpec("signgd", a, eta0), len(y)) for a, eta0 in (("1/2", 1.0), ("1/3", 0.5), ("1", 2.0))]
    settled = []
    original = SignSteps._settle
    monkeypatch.setattr(SignSteps, "_settle", lambda self, t: (settled.append(t), original(self, t)))
    first = SignSteps(runs, H, y, k)
    first.advance_to(1)
    assert settled == [0]
    assert np.all(first.W[:, :, :12] == 0.0)
    moved = np.array([1.0, 0.5, 2.0]) * 2.0 ** -np.array([0.5, 1 / 3, 1.0])  # eta0 2^-a, to each power's rounding
    np.testing.assert_allclose(np.abs(first.W[:, :, 12:]), np.broadcast_to(moved[:, None, None], (3, k, 12)),
                               rtol=1e-15, atol=0)
    times = np.array([1, 7, 50, 400])
    W_fused, fused = run_group(runs, H, y, k, 400, times, engine="fused")
    W_gemm, gemm = run_group(runs, H, y, k, 400, times, engine="gemm")
    assert np.array_equal(W_gemm, W_fused)
    for expected, got in zip(fused, gemm):
        assert np.array_equal(got["W"], expected["W"])


STEEPEST = [RunSpec("ngd", "1/2", 1.0), RunSpec("cd", "1/2", 1.0), RunSpec("nsd", "1/2", 1.0, norm="lp:3"),
            RunSpec("spectral-gd", "1/2", 1.0), RunSpec("spectral-gd", "1/2", 1.0, polar="newton-schulz")]


def test_plain_steepest_recipes_and_only_those_take_the_compiled_loop():
    """The compiled steepest loop takes plain full-batch steepest descent for the built-in norms other than the sign
    (NGD, CD, l3, spectral, Muon's Newton-Schulz factor); SignGD has its own loop, and momentum, Adam, mini-batches,
    VR and schedules outside the polynomial family stay on the torch program."""
    n = 100
    for spec in STEEPEST:
        run = resolve_spec(spec, n)
        assert compiled_steepest(run.recipe, [run]), spec.algo
    others = [RunSpec("signgd", "1/2", 1.0), RunSpec("momentum-ngd", "1/2", 1.0, momentum=0.5),
              RunSpec("adam", "1/2", 0.5), RunSpec("nsgd", "1/2", 1.0, batch=10),
              RunSpec("muon", "1/2", 1.0, momentum=0.9),
              RunSpec("ngd", None, 1.0, schedule="eta0/((t+2)*log(t+2))")]
    for spec in others:
        run = resolve_spec(spec, n)
        assert not compiled_steepest(run.recipe, [run]), spec.algo


@pytest.mark.parametrize("spec", STEEPEST, ids=lambda s: s.algo + ("-" + s.norm if s.norm else "") + "-" + s.polar)
def test_compiled_steepest_loop_follows_the_torch_program_on_the_same_products(spec, monkeypatch):
    """Three runs of a recipe on a set the size rule gives to the GEMMs (k = 10, d = 20, n = 1000), in the compiled
    loop and in the torch program around the same two products (the loop switched off): within 1e-12 relative at
    every checkpoint of 300 steps (the same gradient; the directions are computed by two implementations, the
    fused kernels' and rates.norms'); the polar factors over fewer steps and wider, since their sensitivity
    sigma_max / sigma_min amplifies two SVDs' rounding (measured on this set: 68 at t = 1, 3.3e3 at t = 30, so
    ~7e-13 per step; 5e-12 relative seen at t = 30: 30 steps to 1e-10), Muon's Newton-Schulz factor more: its quintic
    has slope 3.4445 at 0, so five iterations multiply the rounding of the gradient's zero singular value (its rows
    sum to 0) by ~485 each step (the fused kernels and the torch engine differ by 3.5e-10 at t = 10 on this set,
    and by percents at t = 30: 10 steps to 1e-8). The loop's own class is what ran."""
    import rates.numeric.gemm as gemm_module

    k, d, n = 10, 20, 1000
    H, y = gaussian(k, d, n, seed=5)
    runs = [resolve_spec(RunSpec(**{**spec.__dict__, "eta0": eta0, "a": a}), n)
            for eta0, a in ((1.0, "1/2"), (0.5, "1/3"), (2.0, "3/4"))]
    assert group_stepper("auto", "cpu", runs[0].recipe, k, d, n) == "gemm"
    made = []
    original_init = SteepestSteps.__init__
    monkeypatch.setattr(SteepestSteps, "__init__", lambda self, *args: (made.append(1), original_init(self, *args))[1])
    steps = {"exact": 30, "newton-schulz": 10}[spec.polar] if spec.algo == "spectral-gd" else 300
    times = np.array([1, 10, steps])
    _, compiled = run_group(runs, H, y, k, steps, times)
    assert made == [1]
    monkeypatch.setattr(gemm_module, "compiled_steepest", lambda recipe, runs: False)
    _, program = run_group(runs, H, y, k, steps, times)
    assert made == [1]
    for t, expected, got in zip(times, program, compiled):
        for r in range(len(runs)):
            scale = np.abs(expected["W"][r]).max()
            tolerance = {"exact": 1e-10, "newton-schulz": 1e-8}[spec.polar] if spec.algo == "spectral-gd" else TOLERANCE
            assert np.abs(got["W"][r] - expected["W"][r]).max() <= tolerance * scale, (spec.algo, t, r)



def test_compiled_signgd_loop_decides_entries_far_below_their_row_without_leaving_the_loop(monkeypatch):
    """SignGD on scikit-learn's digits (integer pixels, sparse columns), a = 1/2, eta0 = 1, 400 steps from W = 0: from
    t = 254 entries of sparse columns lie more than 2^1000 below their row's largest and the bound leaves them open at
    most steps; the loop decides them itself (stage 1 of rates.numeric.exact_sign), so it returns to Python only at
    step 0, for the exact ties at W = 0. Its iterates equal the fused kernels' bit for bit at every checkpoint (both
    take exact signs)."""
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    H, y = digits.data.astype(np.float64), digits.target.astype(np.int64)
    k = 10
    run = resolve_spec(RunSpec("signgd", "1/2", 1.0), len(y))
    assert group_stepper("auto", "cpu", run.recipe, k, H.shape[1], len(y)) == "gemm"
    settled = []
    original = SignSteps._settle
    monkeypatch.setattr(SignSteps, "_settle", lambda self, t: (settled.append(t), original(self, t)))
    times = np.array([1, 100, 254, 300, 400])
    _, gemm_records = run_group([run], H, y, k, 400, times, engine="gemm")
    assert settled == [0]
    _, fused_records = run_group([run], H, y, k, 400, times, engine="fused")
    for t, expected, got in zip(times, fused_records, gemm_records):
        assert np.array_equal(got["W"], expected["W"]), t
