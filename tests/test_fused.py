"""The fused engine (rates.numeric.fused) against the mpmath reference and against the torch engine, long.

Every registered name is held to mpmath at every one of its first steps on both CPU engines by
tests/test_one_definition.py (generated from the registry). This file runs longer and harder: every recipe the
engine runs (full-batch steepest directions in every norm, Newton-Schulz, momentum, reshuffled mini-batches,
VR with and without momentum, Adam with eps = 0 and eps > 0), on three datasets, one of them with every
margin past 500 (a float64 softmax rounds S_y to 1 there), after 2,000 steps:

* against :mod:`rates.numeric.reference` (50-digit mpmath, no log-domain trick; its configuration read from the
  run's composition, :func:`rates.numeric.reference.config_of`): 1e-12 relative;
* against the torch engine (``engine="torch"``): 1e-12 relative.

The default run checks every recipe against the torch engine on one dataset and a representative subset
against mpmath; the whole matrix is ``-m slow``.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch

import rates.numeric.reference as reference
from rates.norms import parse_norm
from rates.numeric.data import gaussian
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group

STEPS = 2000
TOLERANCE = 1e-12

# name: RunSpec keywords; "B" in a batch slot is replaced by the dataset's batch
RECIPES = {
    "signgd": dict(algo="signgd"),
    "ngd": dict(algo="ngd", eta0=0.5),
    "cd": dict(algo="cd"),
    "lp3": dict(algo="nsd", norm="lp:3"),
    "spectral": dict(algo="spectral-gd"),
    "spectral-ns": dict(algo="spectral-gd", polar="newton-schulz"),
    "nuclear": dict(algo="nsd", norm="nuclear", a="2/3"),
    "schatten3": dict(algo="nsd", norm="schatten:3"),
    "signum": dict(algo="signum", momentum=0.9),
    "muon": dict(algo="muon", momentum=0.5),
    "momentum-ngd": dict(algo="momentum-ngd", momentum=0.9),
    "adam": dict(algo="adam"),
    "adam-eps": dict(algo="adam", adam_eps=1e-8),
    "signsgd": dict(algo="signsgd", batch="B", seed=3),
    "nsgd": dict(algo="nsgd", batch=1, seed=4),
    "spectral-sgd": dict(algo="spectral-sgd", batch="B", seed=5),
    "vr-nsgd": dict(algo="vr-nsgd", batch="B", seed=6),
    "vr-signsgd": dict(algo="vr-signsgd", batch="B", seed=7),
    "vr-signum": dict(algo="vr-signum", batch="B", seed=8, momentum=0.5),
}


def hard_problem():
    """tests/test_reference.py's problem: 6 points near scaled basis vectors, logits pass 1000 early."""
    rng = np.random.default_rng(0)
    H = 500.0 * (np.repeat(np.eye(3), 2, axis=0) + 0.3 * rng.standard_normal((6, 3)))
    return H, np.repeat(np.arange(3), 2), 3, 2


def gaussian_problem(k, d, per_class, seed, batch):
    ds = gaussian(k, d, per_class, 0.5, seed)
    return np.asarray(ds.H), np.asarray(ds.y), k, batch


# name: (data maker -> (H, y, k, batch), factor on eta0 (steepest, Adam), recipes left out)
SPECTRAL_FAMILY = {"spectral", "spectral-ns", "nuclear", "schatten3", "muon", "spectral-sgd"}
DATASETS = {
    "hard": (hard_problem, (0.05, 1.0), SPECTRAL_FAMILY),
    "gauss-k3-d4": (lambda: gaussian_problem(3, 4, 2, 1, 3), (1.0, 1.0), {"nuclear"}),
    "gauss-k4-d3": (lambda: gaussian_problem(4, 3, 2, 2, 4), (0.2, 0.2),
                    {"spectral", "spectral-ns", "nuclear", "muon"}),
}
# Why recipes are left out (measured: fused and torch engines against the 50-digit reference, 2,000 steps):
# * nuclear: the direction u_1 v_1^T drives sigma_1 down to sigma_2 and then alternates between the two top
#   pairs, whose choice hinges on sigma_1 - sigma_2 ~ rounding; every float64 run is chaotic there (fused
#   1.4e-4 and torch 2.6e-4 from mpmath on gauss-k3-d4);
# * the polar factor when the gradient is nearly rank-deficient (its rows sum to 0; late in a run only a few
#   support vectors carry weight): the sensitivity is 1/sigma_min, so rounding grows step after step
#   (spectral on gauss-k4-d3 at eta0 = 1: fused 3.3e-2, torch 3.4e-2 from mpmath);
# These are limits of float64 arithmetic, not of either engine; they are recorded in docs/benchmarks.md. (signsgd on
# "hard", where a batch of two samples leaves a gradient row ~e^-740 below the largest, is compared: each
# class row has its own log-scale.)


def cases(test_torch: bool):
    """(recipe, dataset) pairs; schatten3 is not compared with the torch engine (see its test)."""
    return [(r, name) for name, (_, _, left_out) in DATASETS.items() for r in RECIPES
            if r not in left_out and not (test_torch and r == "schatten3")]


def problem(recipe: str, dataset: str):
    make, eta_scale, _ = DATASETS[dataset]
    H, y, k, batch = make()
    keywords = dict(RECIPES[recipe])
    if keywords.get("batch") == "B":
        keywords["batch"] = batch
    keywords.setdefault("a", "1/2")
    keywords["eta0"] = keywords.get("eta0", 1.0) * eta_scale[1 if keywords["algo"] == "adam" else 0]
    return H, y, k, RunSpec(**keywords)


def engine_W(spec: RunSpec, H, y, k, engine: str, steps: int = STEPS) -> np.ndarray:
    W, _ = run_group([resolve_spec(spec, len(y))], torch.tensor(H), torch.tensor(y), k, steps,
                     checkpoint_times(steps, 2), engine=engine)
    return W[0].numpy()


def reference_W(spec: RunSpec, H, y, k, steps: int = STEPS) -> np.ndarray:
    run = resolve_spec(spec, len(y))
    W = reference.run_trajectory(run, H.tolist(), y.tolist(), k, steps, (steps,))[steps]
    return np.array(reference.to_float(W))


def relative(A, B) -> float:
    return float(np.abs(np.asarray(A) - np.asarray(B)).max() / np.abs(np.asarray(B)).max())


# the default run: one full-batch and one VR + momentum mini-batch recipe; the rest is slow. Adam on "hard" (the
# same run, eta0 = 1, 2,000 steps) is compared with mpmath to 1e-12 by default in tests/test_reference.py.
DEFAULT_REFERENCE = [("signgd", "hard"), ("vr-signum", "gauss-k4-d3")]


def _marks(pairs, default):
    return [pytest.param(r, d, marks=() if (r, d) in default else pytest.mark.slow) for r, d in pairs]


@pytest.mark.parametrize("recipe, dataset", _marks(cases(test_torch=False), DEFAULT_REFERENCE))
def test_fused_engine_matches_mpmath_reference(recipe, dataset):
    H, y, k, spec = problem(recipe, dataset)
    W_fused = engine_W(spec, H, y, k, "fused")
    if dataset == "hard":  # every margin z_y - z_c > 500: a float64 softmax has S_y = 1 exactly (1 - S_y < e^-500)
        logits = H @ W_fused.T
        wrong = np.where(np.eye(k, dtype=bool)[y], -np.inf, logits)
        assert (logits[np.arange(len(y)), y] - wrong.max(axis=1)).min() > 500
    W_ref = reference_W(spec, H, y, k)
    assert relative(W_fused, W_ref) < TOLERANCE


@pytest.mark.parametrize("recipe, dataset", _marks(cases(test_torch=True),
                                                   [(r, "gauss-k3-d4") for r in RECIPES]))
def test_fused_engine_matches_torch_engine(recipe, dataset):
    """The previous engine, to 1e-12. Not schatten3: rates.norms keeps singular values at rounding level
    (weight ~eps^(q-1), 1e-8 at q = 3/2) where the kernel and the reference treat them as 0."""
    H, y, k, spec = problem(recipe, dataset)
    assert relative(engine_W(spec, H, y, k, "fused"), engine_W(spec, H, y, k, "torch")) < TOLERANCE


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_numpy_checkpoints_match_the_torch_measure(dataset):
    """The fused path records its checkpoints in numpy (rates.numeric.fused.measure: no torch in a default run); the
    torch path's ``_Measure`` on the same iterates is the independent expectation. Every field to 1e-13
    relative: log L, ||W|| and the margins relative to the scale of the logits whose differences they are
    (rounding of two BLAS products and SVDs), every recipe, 30 checkpoints over 2,000 steps (log L from -1
    to -2,100 on "hard", where margins pass 700 and e^-u is subnormal)."""
    from rates.numeric.engine import REPORTED_NORMS, _Measure

    compared = 0
    for recipe in RECIPES:
        H, y, k, spec = problem(recipe, dataset)
        run = resolve_spec(spec, len(y))
        _, records = run_group([run], torch.tensor(H), torch.tensor(y), k, STEPS, checkpoint_times(STEPS, 30),
                               engine="fused")
        torch_measure = _Measure(torch.tensor(H), torch.tensor(y), k, run.recipe.norm)
        for record in records:
            expected = torch_measure(torch.from_numpy(record["W"]))
            assert set(record) == set(expected)
            np.testing.assert_array_equal(record["W"], expected["W"])
            logit_scale = 1.0 + float(np.abs(record["W"][0] @ H.T).max())
            assert abs(record["log_loss"][0] - expected["log_loss"][0]) <= 1e-13 * max(
                abs(expected["log_loss"][0]), logit_scale), recipe
            assert record["norm"][0] == pytest.approx(expected["norm"][0], rel=1e-13), recipe
            for name in ("margin", *(f"margin:{n}" for n in REPORTED_NORMS)):
                norm = run.recipe.norm if name == "margin" else name.partition(":")[2]
                value = float(parse_norm(norm).value(torch.from_numpy(record["W"]))[0])
                assert abs(record[name][0] - expected[name][0]) <= 1e-13 * logit_scale / value, (recipe, name)
            compared += 1
    assert compared >= 25 * len(RECIPES)


def test_segments_threads_and_batching_change_no_bit(monkeypatch):
    """A VR + momentum mini-batch group advanced in one call, in 37-step chunks on two threads, and each run
    alone give the same W bit for bit (state and permutations carry over between kernel calls)."""
    import rates.numeric.fused.group as group

    H, y, k, _ = problem("vr-signum", "gauss-k4-d3")
    runs = [resolve_spec(RunSpec("vr-signum", a, batch=2, seed=s, momentum=0.5), len(y))
            for a, s in (("1/2", 0), ("1/3", 1), ("1", 2))]
    whole = group.FusedGroup(runs, H, y, k, threads=1)
    whole.advance_to(500)
    monkeypatch.setattr(group, "CHUNK_CONFIG_STEPS", 3 * 37)
    pieces = group.FusedGroup(runs, H, y, k, threads=2)
    for t in (1, 7, 40, 41, 333, 500):
        pieces.advance_to(t)
    np.testing.assert_array_equal(pieces.W, whole.W)
    for r, run in enumerate(runs):
        alone = group.FusedGroup([run], H, y, k)
        alone.advance_to(500)
        np.testing.assert_array_equal(alone.W[0], whole.W[r])


BLOCK_RECIPES = {
    # (recipe keywords, dataset): full batch in the large-margin regime from the first steps, and VR + momentum
    # mini-batches (each lane gathers its own samples)
    "signgd-hard": (dict(algo="signgd"), "hard"),
    "vr-signum": (dict(algo="vr-signum", batch=2, momentum=0.5), "gauss-k4-d3"),
}


@pytest.mark.parametrize("name", sorted(BLOCK_RECIPES))
def test_runs_give_the_same_bits_alone_and_in_a_64_lane_block(name):
    """The kernels compute 64 configurations side by side (vector lanes) and a small remainder one at a time;
    each run's iterate must not depend on that: LANES + 5 runs in one group (a full block, then five
    single-lane runs), on one thread and on two, give each run's W bit for bit as the run alone does."""
    import rates.numeric.fused.group as group
    import rates.numeric.fused.kernels as kernels

    keywords, dataset = BLOCK_RECIPES[name]
    make, eta_scale, _ = DATASETS[dataset]
    H, y, k, _ = make()
    exponents, etas = ("1/4", "1/3", "1/2", "2/3", "1"), (0.5, 1.0, 2.0)
    count = kernels.LANES + 5
    assert count - kernels.LANES < kernels.MIN_FILLED_LANES
    specs = [RunSpec(**keywords, a=exponents[i % 5], eta0=etas[i % 3] * eta_scale[0], seed=i) for i in range(count)]
    runs = [resolve_spec(spec, len(y)) for spec in specs]
    steps = 300
    together = group.FusedGroup(runs, H, y, k, threads=1)
    together.advance_to(steps)
    split = group.FusedGroup(runs, H, y, k, threads=2)
    split.advance_to(steps)
    np.testing.assert_array_equal(split.W, together.W)
    for r, run in enumerate(runs):
        alone = group.FusedGroup([run], H, y, k)
        alone.advance_to(steps)
        np.testing.assert_array_equal(alone.W[0], together.W[r])
    # and the block computed something: every run moved from 0, and the 15 (a, eta0) pairs end apart
    assert (np.abs(together.W).max(axis=(1, 2)) > 0).all() and len({w.tobytes() for w in together.W}) >= 15


def assert_within_one_ulp(x, computed, exact_function) -> None:
    """Each ``computed[i]`` within 1 ulp of ``exact_function(x[i])`` evaluated by mpmath at 40 digits."""
    mp.mp.dps = 40
    for xi, yi in zip(x, computed):
        exact = exact_function(mp.mpf(float(xi)))
        assert abs(mp.mpf(float(yi)) - exact) < mp.mpf(float(np.spacing(abs(float(exact))))), xi


def test_kernel_exp_and_log_are_within_one_ulp():
    """The kernels' own exp and log (fdlibm's algorithms, branch-free so that they vectorise) against 40-digit
    mpmath: below 1 ulp of the result over their whole domain (exp: every normal result down to x = -708.05,
    0 below, never a subnormal number, inf above 709.8; log: positive normal numbers), and exact where the
    result is exact."""
    import rates.numeric.fused.kernels as kernels

    rng = np.random.default_rng(11)
    # x / ln 2 rounds to k = -1021 just above -1021.5 ln 2 (normal results) and to -1022 below it (0)
    flush_edge = -1021.5 * math.log(2.0)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 3000), rng.uniform(-1.0, 1.0, 1000),
                        rng.uniform(-1e-8, 1e-8, 200), rng.uniform(flush_edge + 1e-9, -700.0, 500)])
    out = np.empty_like(x)
    kernels.exp_array(x, out)
    assert_within_one_ulp(x, out, mp.exp)
    assert (out >= np.finfo(np.float64).tiny).all()
    below = np.concatenate([rng.uniform(-745.2, flush_edge - 1e-9, 500), [-746.0, -1e4]])
    out = np.empty_like(below)
    kernels.exp_array(below, out)
    assert (out == 0.0).all()
    edges = np.array([0.0, 709.78, 710.0, 1e4])
    out = np.empty_like(edges)
    kernels.exp_array(edges, out)
    assert out[0] == 1.0 and np.isfinite(out[1]) and np.isinf(out[2:]).all()

    x = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 2000)), rng.uniform(0.5, 2.0, 2000),
                        1.0 + rng.uniform(-1e-7, 1e-7, 200), [2.2250738585072014e-308, 1.7976931348623157e308]])
    out = np.empty_like(x)
    kernels.log_array(x, out)
    assert_within_one_ulp(x, out, mp.log)
    kernels.log_array(np.array([1.0, 2.0, 0.5]), out[:3])
    assert out[0] == 0.0 and out[1] == math.log(2.0) and out[2] == -math.log(2.0)


def test_gradient_exponential_parts_are_within_one_ulp_far_below_range():
    """The gradient's exponential ``e^x = y 2^k`` (mantissa and integer exponent, so nothing underflows) against
    40-digit mpmath for x in [-1e6, 0], far below where a double's exponential is 0: ``y`` within 1 ulp of
    ``e^x / 2^k``, in [0.70, 1.42], and ``k`` the nearest integer to ``x / ln 2``."""
    import rates.numeric.fused.kernels as kernels

    rng = np.random.default_rng(12)
    x = np.concatenate([-rng.uniform(0.0, 1e6, 1500), -rng.exponential(1.0, 1500), -rng.uniform(700.0, 1500.0, 500),
                        [0.0, -1e-300]])
    y, k = np.empty_like(x), np.empty_like(x)
    kernels.exp_parts_array(x, y, k)
    mp.mp.dps = 40
    for xi, yi, ki in zip(x, y, k):
        assert ki == round(float(mp.mpf(float(xi)) / mp.log(2))), xi
        exact = mp.exp(mp.mpf(float(xi))) / mp.mpf(2) ** int(ki)
        assert abs(mp.mpf(float(yi)) - exact) < mp.mpf(float(np.spacing(float(yi)))), xi
    assert ((y > 0.70) & (y < 1.42)).all() and y[-2] == 1.0 and k[-2] == 0.0


def test_fused_multiply_add_rounds_once():
    """``_fma(a, b, c)`` is ``a b + c`` rounded once: equal to the exact rational value rounded to the nearest
    double (Python's Fraction -> float), including cases where rounding ``a b`` first would give another result."""
    from fractions import Fraction

    import rates.numeric.fused.kernels as kernels

    rng = np.random.default_rng(13)
    a, b = rng.normal(size=400), rng.normal(size=400)
    c = np.concatenate([-(a[:200] * b[:200]), rng.normal(size=200)])  # cancellation: the product's rounding shows
    out = np.empty_like(a)
    kernels.fma_array(a, b, c, out)
    exact = np.array([float(Fraction(ai) * Fraction(bi) + Fraction(ci)) for ai, bi, ci in zip(a, b, c)])
    np.testing.assert_array_equal(out, exact)
    assert (out[:200] != a[:200] * b[:200] + c[:200]).sum() > 150  # separate rounding gives 0 there


def test_engine_option_is_checked(tmp_path, capsys):
    from cli.app import main
    from rates.numeric.engine import resolve_engine

    cpu = torch.device("cpu")
    assert resolve_engine("auto", cpu) == "fused" and resolve_engine("torch", cpu) == "torch"
    out = tmp_path / "t.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--algo", "signgd", "--a", "1/2", "--steps", "5", "--engine", "numpy", "--out", str(out)])
    assert exit_info.value.code == 2 and "--engine" in capsys.readouterr().err and not out.exists()
