"""Claims against independent expectations: closed-form instances, tightness, mutation tests."""

import math

import mpmath
import numpy as np

from proofs import crossentropy as ce
from proofs.adversarial import search
from proofs.homogeneous import euler_identity
from proofs.per_sample import _margin, _max_margin
from proofs.registry import all_claims, select_claims
from proofs.softmax import hessian_loss_bound, hessian_quadratic, simplex_complement
from rates.numeric.data import orthogonal_skewed
from rates.numeric.margins import max_margin
from rates.symbolic.papers import references_in
from rates.symbolic.theorems.minibatch import minibatch_gradient_error_bound


def test_registry_covers_the_issue_with_sources():
    claims = all_claims()
    assert len(claims) >= 15
    assert len({c.name for c in claims}) == len(claims)
    for claim in claims:
        assert references_in([claim.source]) or "rates.symbolic.theorems" in claim.source \
            or "docs/theory.md" in claim.source
        assert claim.status in ("given", "rebuilt") and claim.methods


def _mp_variance_ratio(z, v, c, constant):
    """Hessian quadratic ratio at 50 digits (independent of the float64 evaluator)."""
    with mpmath.workdps(50):
        e = [mpmath.exp(mpmath.mpf(zi)) for zi in z]
        total = mpmath.fsum(e)
        s = [ei / total for ei in e]
        mean = mpmath.fsum(si * vi for si, vi in zip(s, v))
        var = mpmath.fsum(si * (vi - mean) ** 2 for si, vi in zip(s, v))
        return var / (constant * max(abs(mpmath.mpf(vi)) for vi in v) ** 2 * (1 - s[c]))


def test_halved_hessian_constant_is_refuted_deterministically():
    weak = hessian_quadratic(constant=2)
    first, second = search(weak.search, weak.seed), search(weak.search, weak.seed)
    assert first.verdict == "counterexample" and first.instance == second.instance
    inst = first.instance
    assert _mp_variance_ratio(inst["logits"], inst["v"], inst["c"], 2) > 1  # confirmed at 50 digits


def test_halved_loss_hessian_constant_is_refuted():
    result = search(hessian_loss_bound(constant=2).search, 7)
    assert result.verdict == "counterexample" and result.worst_ratio > 1.05


def test_weakened_lemma_a4_is_refuted_by_search_too():
    result = search(simplex_complement(constant=1).search, 11)
    s, c = np.array(result.instance["s"]), result.instance["c"]
    assert result.verdict == "counterexample"
    assert np.sum(s * (1 - s)) > 1 - s[c]


def test_hessian_constant_four_is_tight_on_the_two_point_example():
    # s = (1 - e, e), v = (1, -1), c = 0: variance 4 e (1 - e) against 4 e -> ratio 1 - e
    ratio = hessian_quadratic().search.ratio
    eps = 1e-6
    value = ratio(np.array([0.0, math.log(eps / (1 - eps)), 1.0, -1.0]), (2, 0))
    assert abs(value - (1 - eps)) < 1e-9


def test_gradient_upper_bound_equality_for_one_sample_in_max_norm():
    # n = 1, h = B e_1: grad = (S - e_y) B e_1^T, sum-norm = 2 (1 - S_y) B = 2 B G exactly
    H = np.array([[3.0, 0.0]])
    W = np.array([[0.3, -1.0], [-0.2, 0.5], [1.1, 0.0]])
    y = np.array([1])
    grad = ce.autograd_gradient(W, H, y)
    assert abs(ce.norm_value("max", grad, dual=True) - 2 * 3.0 * ce.proxy(W, H, y)) < 1e-13


def test_seed_literal_minibatch_constant_breaks_for_large_batches():
    # The seed's proof of C.11 takes 1/b - 1/n as the larger coefficient; for b > n/2 it is 1/n.
    # n = 4, b = 3, batch {0, 1, 2} classified with huge margins, sample 3 not: the error is (1/n) g_3,
    # i.e. ||E||_sum = 2 B G (1 + o(1)) > 2 B (n/b - 1) G = (2/3) B G.
    H = np.eye(4)[:, :2] * 0 + np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([0, 0, 0, 0])
    W = np.array([[40.0, 0.0], [0.0, 0.0]])
    grads = ce.sample_gradients(W, H, y)
    error = np.abs(grads[[0, 1, 2]].mean(axis=0) - grads.mean(axis=0)).sum()
    G, B = ce.proxy(W, H, y), ce.data_bound(H)
    assert error > 2 * B * (4 / 3 - 1) * G * 1.4  # seed-literal constant broken by a factor ~3
    assert error <= minibatch_gradient_error_bound(B, 4, 3, G) * (1 + 1e-12)  # the project's max(n/b - 1, 1) holds


def test_wrong_homogeneity_degree_is_refuted():
    assert search(euler_identity(degree_offset=-1).search, 3).verdict == "counterexample"


def test_orthogonal_max_margin_closed_form_matches_the_solver():
    scales = np.array([0.5, 2.0, 1.0, 3.0, 0.7, 1.5])
    counts = [2, 3, 1]
    y = np.repeat(np.arange(3), counts)
    ds = orthogonal_skewed(counts, scales)
    for algorithm, norm in (("signsgd", "max"), ("nsgd", "frobenius")):
        solved = max_margin(ds, norm)
        assert abs(_max_margin(scales, y, 3, algorithm) - solved.gamma) < 1e-7 * solved.gamma
        assert abs(_margin(np.asarray(solved.W), ds.H, y, algorithm) - solved.gamma) < 1e-7


def test_subset_of_claims_passes_quickly():
    names = ["softmax-perturbation", "low-loss-separability", "minibatch-gradient-error", "vr-deviation"]
    from proofs.runner import run_checks
    results = run_checks(select_claims(names))
    for result in results:
        # proven by reduction (proofs.derivation) and not refuted by the search, whose worst ratio is reported
        assert result.verdict == "proven", (result.claim.name, result.verdict)
        searched = [r for r in result.results if r.method == "adversarial"]
        assert searched and searched[0].verdict.startswith("no counterexample")
        assert 0.2 < searched[0].worst_ratio <= 1 + 1e-9


def test_schedule_sum_matches_a_direct_double_loop_and_holds_at_t_star():
    from proofs.schedule import assumption_34_constant, assumption_34_sum, assumption_34_time

    a, beta, c1, eta0 = 0.5, 0.6, 1.3, 0.4
    eta = lambda s: mpmath.mpf(eta0) * (s + 2) ** (-mpmath.mpf(a))  # noqa: E731
    for t in (0, 1, 5, 17):
        with mpmath.workdps(40):
            direct = mpmath.fsum(mpmath.mpf(beta) ** tau
                                 * (mpmath.exp(c1 * mpmath.fsum(eta(t - j) for j in range(1, tau + 1))) - 1)
                                 for tau in range(t + 1))
        assert abs(assumption_34_sum(t, a, beta, c1, eta0) - float(direct)) <= 1e-12 * max(1.0, float(direct))
    t_star = assumption_34_time(a, beta, c1, eta0)
    C = assumption_34_constant(a, beta, c1)
    for t in (t_star, t_star + 1, 3 * t_star + 11):
        assert assumption_34_sum(t, a, beta, c1, eta0) <= C * eta0 * (t + 2) ** (-a)


def test_exact_power_sums_agree_with_brute_force_and_the_schedule_module():
    import sympy as sp

    from proofs.schedule import _exact_power_sum
    from rates.symbolic.schedules import Schedule

    for q, t0, t in ((0.5, 0, 50), (1, 3, 40), (2.0, 0, 30)):
        with mpmath.workdps(40):
            brute = mpmath.fsum(mpmath.mpf(s + 2) ** (-mpmath.mpf(q)) for s in range(t0, t))
            assert abs(_exact_power_sum(q, t0, t) - brute) < 1e-25
    schedule = Schedule(sp.Rational(1, 2), 1)
    assert abs(schedule.partial_sum_numeric(1, 0, 10**6) - _exact_power_sum(mpmath.mpf(1) / 2, 0, 10**6)) < 1e-20


def test_per_sample_signsgd_direction_is_the_theory_column():
    from proofs.per_sample import _direction, _log_gradient

    rng = np.random.default_rng(5)
    k = 4
    for _ in range(20):
        W = rng.standard_normal((k, k)) * 50  # logit gaps ~ 2000: every float64 softmax entry but one is 0
        c = int(rng.integers(k))
        H = np.eye(k)[[c]] * float(rng.uniform(0.1, 10))
        D = _direction(*_log_gradient(W, H, np.array([c])), "signsgd")
        expected = np.zeros((k, k))
        expected[:, c] = 2 * np.eye(k)[c] - 1  # docs/theory.md section 5: -sign(grad l_i) = (2 e_y - 1) e_y^T
        assert np.array_equal(D, expected)


def test_euler_identity_by_finite_differences_of_the_scaling():
    import torch

    from proofs.homogeneous import parameter_count, relu_net

    rng = np.random.default_rng(2)
    widths = (3, 4)
    theta = torch.as_tensor(rng.standard_normal(parameter_count(2, widths)))
    x = torch.as_tensor(rng.standard_normal((1, 2)))
    f = lambda c: float(relu_net(c * theta, x, widths)[0])  # noqa: E731
    h = 1e-5
    derivative = (f(1 + h) - f(1 - h)) / (2 * h)  # = <theta, grad f> (chain rule), no autograd involved
    assert abs(derivative - 3 * f(1)) < 1e-7 * max(1.0, abs(f(1)))
    assert abs(f(2.0) - 8 * f(1.0)) < 1e-12 * max(1.0, abs(f(1.0)))
