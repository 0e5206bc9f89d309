"""Max margins per norm (docs/theory.md sections 1 and 7) against closed forms, a second formulation and sklearn.

Independent expectations used here:
* orthogonal data ``h_i = s_i e_{y_i}`` (d = k) have closed-form max margins, derived in
  :func:`orthogonal_lp_margin` and :func:`test_orthogonal_schatten_closed_forms`;
* every ``lambda`` in the simplex bounds gamma from above by ``||sum lambda A||_*`` (weak duality), recomputed
  here with numpy's own norms, not with :mod:`rates.norms`;
* scikit-learn's Crammer-Singer SVM (liblinear) solves the hard-margin Frobenius problem by another method.
"""

import math
import warnings

import numpy as np
import pytest
import torch

from rates.errors import InputError, NotSeparableError
from rates.numeric.data import Dataset, gaussian, orthogonal_skewed, parse_data
from rates.numeric.margins import (
    clear_cache,
    constraint_matrix,
    margin_of,
    max_margin,
    unnormalized_margins,
)

NORMS = ["max", "sum", "frobenius", "spectral", "nuclear", "lp:3", "lp:1.5"]


def numpy_norm(W: np.ndarray, name: str) -> float:
    """Norms by numpy only, independent of rates.norms."""
    if name.startswith("lp:"):
        p = float(name[3:])
        return float((np.abs(W) ** p).sum() ** (1 / p))
    return float({
        "max": np.abs(W).max(),
        "sum": np.abs(W).sum(),
        "frobenius": np.linalg.norm(W, "fro"),
        "spectral": np.linalg.norm(W, 2),
        "nuclear": np.linalg.norm(W, "nuc"),
    }[name])


DUAL_NAME = {"max": "sum", "sum": "max", "frobenius": "frobenius", "spectral": "nuclear", "nuclear": "spectral",
             "lp:3": "lp:1.5", "lp:1.5": "lp:3"}


def brute_margin(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> float:
    """Unnormalised margin by an explicit double loop (the definition of docs/theory.md section 1)."""
    best = math.inf
    for h, label in zip(H, y):
        logits = W @ h
        for c in range(W.shape[0]):
            if c != label:
                best = min(best, logits[label] - logits[c])
    return best


@pytest.fixture(scope="module")
def default_data():
    return parse_data("default")


@pytest.mark.parametrize("name", NORMS)
def test_two_formulations_agree_and_certificates_check_out(name, default_data):
    """gamma (primal W) and upper (dual lambda) agree to 1e-8; both re-verified independently here."""
    result = max_margin(default_data, name)
    assert result.accuracy <= 1e-9
    assert abs(result.upper - result.gamma) <= 1e-8 * result.gamma
    # lower side: the returned W has norm 1 and achieves gamma (brute-force loop, numpy norm)
    assert numpy_norm(result.W, name) == pytest.approx(1.0, abs=1e-12)
    achieved = brute_margin(result.W, default_data.H, default_data.y) / numpy_norm(result.W, name)
    assert achieved == pytest.approx(result.gamma, rel=1e-12)
    # upper side: lambda in the simplex, ||sum lambda A||_* recomputed with numpy's dual norm
    lam = result.dual
    assert np.all(lam >= 0) and lam.sum() == pytest.approx(1.0, abs=1e-12)
    Z = (constraint_matrix(default_data.H, default_data.y, default_data.k).T @ lam).reshape(default_data.k, -1)
    assert numpy_norm(Z, DUAL_NAME[name]) == pytest.approx(result.upper, rel=1e-12)
    assert result.upper >= result.gamma * (1 - 1e-14)


@pytest.mark.parametrize("name", NORMS)
def test_random_classifiers_never_beat_the_max_margin(name, default_data):
    result = max_margin(default_data, name)
    gen = np.random.default_rng(3)
    W = gen.standard_normal((200, default_data.k, default_data.d))
    W[:100] = result.W + 0.05 * W[:100]  # half of them near the maximiser, where the bound is tight
    logits = W @ default_data.H.T  # (200, k, n)
    correct = logits[:, default_data.y, np.arange(default_data.n)]
    others = logits.copy()
    others[:, default_data.y, np.arange(default_data.n)] = -np.inf
    raw = (correct[:, None, :] - others).min(axis=(1, 2))
    margins = raw / np.array([numpy_norm(w, name) for w in W])
    assert np.all(margins <= result.gamma * (1 + 1e-12))
    assert margin_of(W[0], default_data, name) == pytest.approx(margins[0], rel=1e-12)


def orthogonal_lp_margin(hardest: list[float], p: float) -> float:
    """Closed-form entry-wise l_p max margin of orthogonal data (derivation).

    Column c of W only meets samples of class c: margin ``s_i (W_cc - W_c'c)``, so only the hardest scale
    ``m_c`` counts. With column budget ``r_c = ||w_c||_p``, the best ``W_cc - max_{c'} W_c'c`` is
    ``alpha r_c`` where (off-diagonal entries equal by symmetry and concavity)
    ``alpha = max {a + b : a^p + (k-1) b^p <= 1} = (1 + (k-1)^{1-q})^{1/q}``, 1/p + 1/q = 1.
    Equalising the column margins ``alpha m_c r_c = t`` under ``sum r_c^p = 1`` gives
    ``gamma = alpha / (sum_c m_c^{-p})^{1/p}`` (p = inf: ``2 min_c m_c``; p = 1: ``1 / sum_c 1/m_c``).
    """
    k = len(hardest)
    m = np.asarray(hardest)
    if math.isinf(p):
        return 2.0 * m.min()
    if p == 1.0:
        return 1.0 / (1.0 / m).sum()
    q = p / (p - 1)
    alpha = (1 + (k - 1) ** (1 - q)) ** (1 / q)
    return alpha / ((m ** -p).sum() ** (1 / p))


@pytest.mark.parametrize("p_name,p", [("max", math.inf), ("sum", 1.0), ("frobenius", 2.0), ("lp:3", 3.0),
                                      ("lp:1.5", 1.5), ("lp:4", 4.0)])
def test_orthogonal_lp_closed_form(p_name, p):
    # easy samples (larger scales) must not matter: only the hardest scale per class enters
    ds = orthogonal_skewed([3, 2, 1, 2], [1.0, 1.7, 2.5, 0.5, 0.9, 2.0, 1.3, 4.0])
    hardest = [1.0, 0.5, 2.0, 1.3]
    assert ds.meta["hardest_scales"] == hardest
    expected = orthogonal_lp_margin(hardest, p)
    result = max_margin(ds, p_name)
    assert result.gamma == pytest.approx(expected, rel=1e-9)
    assert result.upper == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_orthogonal_schatten_closed_forms(k):
    """Equal hardest scale m in every class (easier samples elsewhere).

    The permutation symmetry suggests ``W = P / ||P||`` with the centring projection ``P = I - 11^T/k``
    (each column margin ``P_cc - P_c'c = 1``); the uniform ``lambda`` gives ``Z = m/(k-1) P``. Hence
    spectral: lower ``m`` (||P||_2 = 1), upper ``||Z||_nuc = m/(k-1) (k-1) = m``, so gamma = m;
    nuclear: lower ``m/(k-1)`` (||P||_nuc = k-1), upper ``||Z||_2 = m/(k-1)``, so gamma = m/(k-1).
    """
    m = 0.7
    counts = [2] * k
    scales = np.tile([m, 3.0], k)
    ds = orthogonal_skewed(counts, scales)
    assert max_margin(ds, "spectral").gamma == pytest.approx(m, rel=1e-9)
    assert max_margin(ds, "nuclear").gamma == pytest.approx(m / (k - 1), rel=1e-9)


def test_frobenius_matches_crammer_singer_svm(default_data):
    """liblinear's Crammer-Singer SVM: min 1/2 ||W||_F^2 + C sum xi_i s.t. (W h_i)_{y_i} - (W h_i)_c >= 1 - xi_i.

    For separable data and large C the slacks vanish and this is the hard-margin problem
    ``min ||W||_F s.t. all margins >= 1``, whose solution rescaled to unit norm is the max-margin W:
    ``gamma_F = 1 / ||W_svm||_F`` (unit margin target, so the constant is exactly 1).
    """
    svm = pytest.importorskip("sklearn.svm")
    result = max_margin(default_data, "frobenius")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = svm.LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=1e5, tol=1e-12,
                            max_iter=1_000_000).fit(default_data.H, default_data.y)
    W_svm = clf.coef_
    assert 1.0 / np.linalg.norm(W_svm) == pytest.approx(result.gamma, rel=1e-8)
    assert np.allclose(W_svm / np.linalg.norm(W_svm), result.W, atol=1e-6)


def test_larger_problem_reaches_target_accuracy():
    """k = 5, d = 10 (the SIGNADAM-like preset): the SDP norms need the retry rounds to reach 1e-9."""
    ds = parse_data("signadam")
    for name in ("spectral", "nuclear", "frobenius", "max"):
        result = max_margin(ds, name)
        assert result.accuracy <= 1e-9, (name, result.accuracy)
        assert abs(result.upper - result.gamma) <= 1e-8 * result.gamma


def test_margin_of_by_hand():
    # two classes in 2-D: h = (1, 0) class 0, (0, 2) class 1; W = [[1, 0], [0, 1]]
    ds = Dataset(np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([0, 1]), 2, "hand")
    W = np.eye(2)
    # margins: sample 0: 1 - 0 = 1; sample 1: 2 - 0 = 2 -> min 1; ||I||_F = sqrt 2, ||I||_2 = 1, ||I||_max = 1
    assert margin_of(W, ds, "frobenius") == pytest.approx(1 / math.sqrt(2), rel=1e-15)
    assert margin_of(W, ds, "spectral") == pytest.approx(1.0, rel=1e-15)
    assert margin_of(3 * W, ds, "sum") == pytest.approx(0.5, rel=1e-15)  # scale invariant: 3 / 6
    with pytest.raises(InputError):
        margin_of(np.zeros((2, 2)), ds, "max")


def test_unnormalized_margins_batched_equals_loop_and_survives_huge_logits():
    gen = torch.Generator().manual_seed(0)
    H = torch.randn(12, 4, dtype=torch.float64, generator=gen)
    y = torch.arange(12) % 3
    W = 1e4 * torch.randn(2, 5, 3, 4, dtype=torch.float64, generator=gen)  # logits ~ 1e4
    got = unnormalized_margins(W, H, y)
    assert got.shape == (2, 5)
    for a in range(2):
        for b in range(5):
            expected = brute_margin(W[a, b].numpy(), H.numpy(), y.numpy())
            assert got[a, b].item() == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("name", ["max", "frobenius", "spectral"])
def test_non_separable_data_is_refused(name):
    # d = 1, k = 3: every W h_i is h_i times a fixed vector, so both positive points get the same argmax
    ds = Dataset(np.array([[1.0], [2.0], [-1.0]]), np.array([0, 1, 2]), 3, "line")
    with pytest.raises(NotSeparableError) as info:
        max_margin(ds, name)
    assert info.value.option == "--data"
    assert "\n" not in str(info.value) and "not linearly separable" in str(info.value)


def test_identical_points_with_different_labels_are_refused():
    ds = Dataset(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]]), np.array([0, 1, 1]), 2, "clash")
    with pytest.raises(NotSeparableError):
        max_margin(ds, "sum")


def test_unsupported_norm_is_an_input_error(default_data):
    with pytest.raises(InputError) as info:
        max_margin(default_data, "schatten:3")
    assert info.value.option == "--norm" and "schatten:3" in info.value.message
    with pytest.raises(InputError) as info:
        max_margin(default_data, "bogus")
    assert info.value.option == "--norm"


def test_cache_returns_independent_copies():
    clear_cache()
    ds = gaussian(3, 4, 5, 0.3, seed=11)
    first = max_margin(ds, "frobenius")
    first.W[:] = 0.0
    second = max_margin(ds, "frobenius")
    assert np.linalg.norm(second.W) == pytest.approx(1.0, abs=1e-12)
    assert second.gamma == first.gamma
    same_bytes = Dataset(ds.H.copy(), ds.y.copy(), ds.k, "copy")
    assert max_margin(same_bytes, "frobenius").gamma == first.gamma
    # the key is the data's bytes at call time: changing the data in place is a new problem
    ds.H[:] *= 2.0
    assert max_margin(ds, "frobenius").gamma == pytest.approx(2.0 * first.gamma, rel=1e-9)


def test_gamma_is_linear_in_the_data_and_separability_is_norm_free():
    ds = gaussian(3, 3, 6, 0.4, seed=2)
    scaled = Dataset(ds.H * 1e3, ds.y, ds.k, "scaled")
    for name in ("max", "nuclear", "lp:3"):
        assert max_margin(scaled, name).gamma == pytest.approx(1e3 * max_margin(ds, name).gamma, rel=1e-9)


def _same_result(first, second):
    """Bit-for-bit equality of two MarginResults (floats compared as bytes, -0.0 included)."""
    assert (first.norm, first.solver, first.checks) == (second.norm, second.solver, second.checks)
    for name in ("gamma", "accuracy", "upper"):
        assert np.float64(getattr(first, name)).tobytes() == np.float64(getattr(second, name)).tobytes(), name
    for name in ("W", "dual"):
        a, b = getattr(first, name), getattr(second, name)
        assert a.dtype == b.dtype == np.float64 and a.shape == b.shape and a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("norm", ["max", "frobenius", "spectral"])
def test_disk_cache_returns_the_solved_result_bit_for_bit(norm, monkeypatch, own_rates_cache):
    """A later process gets from disk exactly what the solvers returned, without calling them."""
    import rates.numeric.margins as margins

    ds = gaussian(3, 4, 5, 0.3, seed=23)
    clear_cache()
    solved = max_margin(ds, norm)  # solved now, saved
    assert len(list((own_rates_cache / margins.DISK_KIND).glob("*.json"))) >= 1
    margins._CACHE.clear()  # as a new process would start: nothing in memory

    with monkeypatch.context() as patch:
        patch.setattr(margins, "_solve", lambda *args: pytest.fail("the saved result should have been used"))
        _same_result(solved, max_margin(ds, norm))
    clear_cache()  # memory and disk: solved afresh, and the same again
    assert not list((own_rates_cache / margins.DISK_KIND).glob("*.json"))
    _same_result(solved, max_margin(ds, norm))


def test_disk_cache_keeps_not_separable_answers_and_skips_norms_defined_elsewhere(monkeypatch):
    import rates.numeric.margins as margins

    ds = Dataset(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0, 1]), 2, "same point, two labels")
    clear_cache()
    with pytest.raises(NotSeparableError) as fresh:
        max_margin(ds, "max")
    margins._CACHE.clear()
    with monkeypatch.context() as patch:
        patch.setattr(margins, "_solve", lambda *args: pytest.fail("solved again"))
        with pytest.raises(NotSeparableError) as saved:
            max_margin(ds, "max")
    assert (saved.value.option, saved.value.message) == (fresh.value.option, fresh.value.message)

    from rates.norms import EntrywiseNorm

    class LocalNorm(EntrywiseNorm):  # same mathematics, but its code lives outside rates.norms
        pass

    assert margins._disk_key(("x",), LocalNorm(2.0)) is None
    assert margins._disk_key(("x",), EntrywiseNorm(2.0)) is not None


def test_damaged_disk_entry_is_solved_again(own_rates_cache):
    import rates.numeric.margins as margins

    ds = gaussian(3, 4, 5, 0.3, seed=29)
    clear_cache()
    solved = max_margin(ds, "max")
    for entry in (own_rates_cache / margins.DISK_KIND).glob("*.json"):
        entry.write_text('{"key": "' + entry.stem + '", "value": {"gamma": 1.0}}')  # a layout it cannot read
    margins._CACHE.clear()
    _same_result(solved, max_margin(ds, "max"))
