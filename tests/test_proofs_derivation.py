"""Reductions (proofs.derivation): they prove what they claim, and a mutated constant breaks them."""

import math

import numpy as np
import pytest
import sympy as sp

from proofs.adam import moment_ratio, moment_ratio_constant
from proofs.claims import ScalarProblem
from proofs.derivation import derivation, identity, proof_of, scalar
from proofs.registry import select_claims
from proofs.softmax import hessian_loss_bound, hessian_quadratic
from proofs.stochastic import minibatch_gradient_error, seed_literal_error_bound

PROVEN_BY_REDUCTION = ["hessian-quadratic", "softmax-perturbation", "proxy-ratio", "low-loss-separability",
                       "gradient-dual-upper", "gradient-dual-lower", "minibatch-gradient-error", "gradient-stability",
                       "adam-moment-ratio", "adam-entry-alignment", "loss-lipschitz", "per-sample-step-direction"]


@pytest.mark.parametrize("name", PROVEN_BY_REDUCTION)
def test_reduction_proves_the_claim(name):
    (claim,) = select_claims([name])
    result = proof_of(claim)
    assert result.proven, result.detail
    assert all("[" in line for line in result.instance["steps"])  # every step says how it was checked


def test_weakened_hessian_constant_breaks_the_reduction_at_its_scalar_step():
    result = proof_of(hessian_quadratic(constant=3))
    assert not result.proven and "certified violation" in result.detail  # (u - w)^2 = 4 > 3 at a corner
    chained = proof_of(hessian_loss_bound(constant=3))
    assert not chained.proven and "hessian-quadratic" in chained.detail


def test_seed_literal_batch_constant_breaks_the_reduction_at_b_above_n_over_2():
    result = proof_of(minibatch_gradient_error(seed_literal_error_bound, "seed-literal"))
    assert not result.proven and "fails at (3, 2)" in result.detail  # n = 3, b = 2: (1/n) > 1/b - 1/n


def test_a_false_identity_is_not_proven():
    x = sp.Symbol("x")
    assert not derivation(identity("x + 1 = x", x + 1 - x))().proven
    assert not derivation(scalar("x <= 1/2 on [0, 1]", ScalarProblem([x], [(0, 1)], x, sp.Rational(1, 2))))().proven


def test_moment_ratio_constant_is_attained_by_the_cauchy_schwarz_case():
    """Independent check of D.1's constant: gradients g_{t-tau} = (beta1/beta2)^tau make Cauchy-Schwarz an
    equality, and the ratio |m_t|/sqrt(v_t) tends to C_D1 as t grows."""
    b1, b2 = 0.9, 0.999
    t = 4000
    g = (b1 / b2) ** np.arange(t + 1)[::-1]
    m = (1 - b1) * np.sum(b1 ** np.arange(t + 1) * g[::-1])
    v = (1 - b2) * np.sum(b2 ** np.arange(t + 1) * g[::-1] ** 2)
    assert abs(m) / math.sqrt(v) == pytest.approx(moment_ratio_constant(b1, b2), rel=1e-9)
    assert moment_ratio_constant(b1, b2) == pytest.approx(7.2703, rel=1e-4)


def test_weakened_moment_ratio_is_refuted_by_its_search():
    from proofs.adversarial import search

    claim = moment_ratio()
    weak = claim.search.__class__(claim.search.sample,
                                  lambda g, betas: 1.01 * claim.search.ratio(g, betas),
                                  claim.search.describe, starts=200, polish=2)
    first, second = search(weak, 11), search(weak, 11)
    assert first.verdict == "counterexample" and first.worst_ratio == second.worst_ratio
