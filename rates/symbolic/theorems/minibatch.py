"""Mini-batch steepest descent without momentum under random reshuffling (large batch).

Setting: as NSD (docs/theory.md section 1); each epoch splits the ``n`` samples into ``n/b`` disjoint batches of
size ``b`` (MINIBATCH section 3.1).

Algorithm: ``W_{t+1} = W_t - eta_t Delta_t``, ``Delta_t`` steepest for the batch gradient ``grad_B L(W_t)``.

Guarantee (MINIBATCH Thm 4.1 / D.4, Cor. 4.2 / D.5): if ``gamma_eff(b) > 0`` then for ``t > t_1``

    gamma_eff - gamma(W_t) <= [ alpha sum_{s=t_0}^{t-1} eta_s^2 + gamma_eff sum_{s<t_1} eta_s + log n ]
                              / sum_{s<t} eta_s,

the same shape as full-batch NSD with ``gamma`` replaced by :func:`gamma_eff_minibatch` [rebuilt].
"""

from __future__ import annotations

import sympy as sp

from rates.symbolic.theorems.base import (
    SEED_MINIBATCH,
    B,
    BoundTemplate,
    NoiseTerm,
    PowerSumTerm,
    Source,
    alpha,
    b,
    curvature_alpha,
    gamma,
    n,
)
from rates.symbolic.theorems.coverage import covers_minibatch
from rates.symbolic.theorems.hypotheses import (
    FamilyDeclaration,
    a_in_unit_interval,
    effective_margin,
    separable,
)

SOURCE = Source(SEED_MINIBATCH, "Thm 4.1/D.4, Cor. 4.2/D.5, Lemma C.11")
gamma_eff = sp.Symbol("gamma_eff")


def batch_error_factor(n_value, b_value):
    """``max(n/b - 1, 1)`` for ``b < n`` and ``0`` for ``b = n``: the finite-population factor of Lemma C.11.

    Equals ``n/b - 1`` whenever ``b`` divides ``n`` (then ``n/b >= 2`` or ``b = n``).
    """
    if isinstance(n_value, sp.Basic) or isinstance(b_value, sp.Basic):
        return n_value / b_value - 1  # symbolic use assumes b | n (enforced by resolve_algorithm)
    if b_value >= n_value:
        return 0.0
    return max(n_value / b_value - 1.0, 1.0)


def minibatch_gradient_error_bound(B_value, n_value, b_value, G_value):
    """MINIBATCH Lemma C.11 [rebuilt]: for every ``W`` and every batch ``S`` of size ``b``,

        || grad_S L(W) - grad L(W) ||_sum <= 2 B * c(n, b) * G(W),    c(n, b) = batch_error_factor(n, b),

    and the same bound holds in every entry-wise / Schatten dual norm (``||.||_* <= ||.||_sum``, Lemma C.1).

    Derivation: per-sample gradients ``g_i = (S(W h_i) - e_{y_i}) h_i^T`` have ``||g_i||_sum =
    ||S - e_y||_1 ||h_i||_1 = 2 (1 - S_{y_i}) ||h_i||_1 <= 2B (1 - S_{y_i})``, so ``sum_i ||g_i||_sum <= 2B n G``.
    Finite population split: ``grad_S - grad = (1/b - 1/n) sum_{i in S} g_i - (1/n) sum_{i not in S} g_i``, whose
    norm is at most ``max(1/b - 1/n, 1/n) sum_i ||g_i||_sum = (1/n) max(n/b - 1, 1) * 2B n G`` (worst case: all
    gradient mass in the set with the larger coefficient); for ``b = n`` the difference is 0.
    """
    return 2.0 * B_value * batch_error_factor(n_value, b_value) * G_value


def gamma_eff_minibatch(gamma_value, B_value, n_value, b_value):
    """``gamma_eff(b) = gamma - 4 B c(n, b)`` [rebuilt; docs/theory.md section 3].

    Derivation: with ``E = grad_S L - grad L`` and ``Delta`` steepest for ``grad_S L``,
    ``<grad L, Delta> = ||grad_S L||_* - <E, Delta> >= ||grad L||_* - 2 ||E||_* >= (gamma - 2 * 2B c(n,b)) G``
    using ``||grad L||_* >= gamma G`` (SIGNADAM Lemma 4.1) and Lemma C.11 (:func:`minibatch_gradient_error_bound`
    with ``G = 1``): gamma minus twice the dual-norm mismatch coefficient. ``gamma_eff -> gamma`` as ``b -> n``.

    Finding: ``gamma <= 2B`` (``|(e_y - e_c)^T W h| <= 2 ||W||_max ||h||_1``), so ``gamma_eff(b) > 0`` needs
    ``c(n, b) < 1/2``, which no ``b < n`` satisfies: in the worst case this bound certifies only ``b = n``.
    No data-dependent mismatch bound does better: :mod:`proofs.effective_margin` attains
    ``||grad_S L - grad L||_* / G >= gamma`` on any data (docs/findings.md F10).
    """
    return gamma_value - 4 * B_value * batch_error_factor(n_value, b_value)


def template(norm: str = "max") -> BoundTemplate:
    return BoundTemplate(
        family="minibatch",
        title=f"mini-batch NSD, no momentum ({norm})",
        source=SOURCE,
        status="given",
        gap_to="gamma_eff",
        numerator=(PowerSumTerm(sp.Integer(2), alpha, "second-order (curvature) noise"),),
        noise=(NoiseTerm(sp.Integer(1), alpha, "curvature: alpha eta_t"),),
        gamma_ref=gamma_eff,
        assumptions=("gamma_eff(b) = gamma - 4 B (n/b - 1) > 0 (large batch)", "b divides n (random reshuffling)",
                     "||h_i||_1 <= B"),
        constants={"alpha": "2 B^2 exp(2 B eta_0) [rebuilt]",
                   "gamma_eff": "gamma - 4 B (n/b - 1) [rebuilt, Lemma C.11]"},
        definitions={alpha: curvature_alpha(), gamma_eff: gamma_eff_minibatch(gamma, B, n, b)},
    )


# stochastic, no momentum or VR, not per-sample (rates.symbolic.theorems.coverage: sympy-free)
covers = covers_minibatch


_CITE = f"{SEED_MINIBATCH} Thm 4.1 [given], gamma_eff [rebuilt]"
FAMILY = FamilyDeclaration(
    name="minibatch",
    algorithms="signsgd, nsgd, spectral-sgd",
    example={"name": "signsgd"},
    covers=covers,
    hypotheses=(
        effective_margin(_CITE, "gamma - 4 B c(n, b)",
                         lambda f: gamma_eff_minibatch(f.gamma, f.B, f.samples, f.batch)),
        separable(_CITE),
        a_in_unit_interval(_CITE),
    ),
    source=SOURCE,
    template=lambda config: template(config.norm),
    statement="gamma_eff - gamma(W_t) <= [alpha S_2 + gamma_eff S_1(0, t_1) + log n] / S_1 for t > t_1",
)
