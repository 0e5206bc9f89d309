"""Mini-batch (or full-batch) steepest descent with heavy-ball momentum: Signum, momentum-NGD, Muon.

Setting: as :mod:`rates.symbolic.theorems.minibatch`, ``m = n/b`` batches per epoch, momentum ``beta in [0, 1)``.

Algorithm: ``M_t = beta M_{t-1} + (1 - beta) grad_{S_t} L(W_t)``, ``Delta_t`` steepest for ``M_t``,
``W_{t+1} = W_t - eta_t Delta_t`` (MINIBATCH section 3.1).

Guarantee (MINIBATCH Thm 4.3 / E.4, Cor. 4.5 / E.5): if ``gamma_eff(beta, b) > 0`` then for ``t > t_1``

    gamma_eff - gamma(W_t) <= [ alpha_beta sum_{s=t_0}^{t-1} eta_s^2 + gamma_eff sum_{s<t_1} eta_s + log n + D_beta ]
                              / sum_{s<t} eta_s,

with :func:`gamma_eff_momentum` [rebuilt, Lemma C.12], the momentum-drift constant ``D_beta`` (bounded
geometric series, Lemma E.3) and ``alpha_beta = alpha + 4 B^2 (n/b) beta/(1 - beta)`` [rebuilt, leading
order]: the signal averages gradients at iterates up to ``j`` steps old, ``||W_{t-j} - W_t||_max <= j eta_{t-j}``,
each batch gradient moves by ``<= 2B (n/b) (exp(2B j eta) - 1) G`` (Lemma C.10 with the batch sum bounded by
the full sum), and ``sum_j (1 - beta) beta^j j = beta/(1 - beta)``; to leading order in ``eta_t`` this adds
``4 B^2 (n/b) beta/(1-beta) eta_t`` to the noise (Ass. 3.4 makes ``eta_{t-j} = O(eta_t)``). Only the
exponents are the firm contract; ``alpha_beta`` affects ``t_0`` only.
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
    beta,
    curvature_alpha,
    gamma,
    n,
)
from rates.symbolic.theorems.coverage import covers_momentum
from rates.symbolic.theorems.hypotheses import (
    FamilyDeclaration,
    a_in_unit_interval,
    effective_margin,
    momentum_range,
    separable,
)
from rates.symbolic.theorems.minibatch import minibatch_gradient_error_bound

SOURCE = Source(SEED_MINIBATCH, "Thm 4.3/E.4, Cor. 4.5/E.5, Lemma C.12")
gamma_eff = sp.Symbol("gamma_eff")
alpha_beta = sp.Symbol("alpha_beta", positive=True)


def _pow(x, e):
    return x**e if isinstance(x, sp.Basic) or isinstance(e, sp.Basic) else float(x) ** float(e)


def momentum_error_factor(n_value, b_value, beta_value):
    """``(1 - beta^(m-1)) + (1 - beta^m)`` with ``m = n/b``: Lemma C.12's multiplier of the one-batch bound.

    It is at most ``(2m - 1)(1 - beta)`` (so it vanishes as ``beta -> 1``) and at most 2.
    """
    m = n_value / b_value
    return (1 - _pow(beta_value, m - 1)) + (1 - _pow(beta_value, m))


def momentum_accumulated_error_bound(B_value, n_value, b_value, beta_value, G_value):
    """MINIBATCH Lemma C.12 [rebuilt]: at a fixed ``W``, with batches drawn by random reshuffling
    (``m = n/b`` disjoint batches per epoch, epochs aligned at ``tau = 0``) and
    ``E_tau = grad_{S_tau} L(W) - grad L(W)``,

        || sum_{tau=0}^{t} (1 - beta) beta^{t-tau} E_tau ||_sum
            <= [ (1 - beta^(m-1)) + (1 - beta^m) ] * 2 B c(n, b) G(W)       for every t >= 0,

    ``c(n, b)`` from :func:`rates.symbolic.theorems.minibatch.batch_error_factor`.

    Derivation: each full epoch's errors sum to zero (its batches partition the data), so subtracting the
    epoch's first coefficient ``(1-beta) beta^{t - tau_start}`` changes nothing; the remaining coefficients are
    ``(1-beta) beta^{t-tau} (1 - beta^{tau - tau_start}) <= (1-beta) beta^{t-tau} (1 - beta^{m-1})`` and sum over
    all past epochs to at most ``1 - beta^{m-1}``; the current (possibly partial) epoch has coefficients summing
    to ``<= 1 - beta^m``. Each ``||E_tau||_sum <= 2B c(n,b) G(W)`` (Lemma C.11).
    """
    return (momentum_error_factor(n_value, b_value, beta_value)
            * minibatch_gradient_error_bound(B_value, n_value, b_value, G_value))


def gamma_eff_momentum(gamma_value, B_value, n_value, b_value, beta_value):
    """``gamma_eff(beta, b) = gamma - 4 B c(n, b) [(1 - beta^(m-1)) + (1 - beta^m)]`` [rebuilt].

    Derivation: at fixed ``W`` the momentum signal is ``(1 - beta^{t+1}) grad L + A`` with ``A`` the accumulated
    error of Lemma C.12; the steepest direction ``Delta`` of the signal has ``<grad L, Delta> >= ||grad L||_* -
    2 ||A||_* / (1 - beta^{t+1})``, i.e. gamma minus twice the mismatch coefficient as ``t -> infinity``.
    ``gamma_eff -> gamma`` as ``beta -> 1`` (high momentum) or ``b -> n`` (large batch), as Thm 4.3 says.
    """
    return gamma_value - 2 * momentum_accumulated_error_bound(B_value, n_value, b_value, beta_value, 1)


def momentum_drift_alpha(B_value=B, n_value=n, b_value=b, beta_value=beta):
    """Leading-order noise coefficient added by momentum: ``4 B^2 (n/b) beta/(1 - beta)`` (see module docstring)."""
    return 4 * B_value**2 * (n_value / b_value) * beta_value / (1 - beta_value)


def template(norm: str = "max") -> BoundTemplate:
    return BoundTemplate(
        family="momentum",
        title=f"mini-batch NSD + momentum ({norm})",
        source=SOURCE,
        status="given",
        gap_to="gamma_eff",
        numerator=(PowerSumTerm(sp.Integer(2), alpha_beta, "curvature + momentum drift noise"),),
        noise=(NoiseTerm(sp.Integer(1), alpha_beta, "alpha_beta eta_t"),),
        gamma_ref=gamma_eff,
        assumptions=("gamma_eff(beta, b) > 0 (high momentum or large batch)", "b divides n", "||h_i||_1 <= B",
                     "schedule satisfies MINIBATCH Ass. 3.4 (Lemma C.15)"),
        constants={"alpha_beta": "alpha + 4 B^2 (n/b) beta/(1-beta) [rebuilt, leading order]",
                   "gamma_eff": "gamma - 4 B (n/b - 1) [(1 - beta^(n/b-1)) + (1 - beta^(n/b))] [rebuilt, Lemma C.12]",
                   "D_beta": "momentum drift constant (bounded geometric series, Lemma E.3)"},
        definitions={alpha: curvature_alpha(), alpha_beta: alpha + momentum_drift_alpha(),
                     gamma_eff: gamma_eff_momentum(gamma, B, n, b, beta)},
    )



covers = covers_momentum  # heavy ball without VR, not Adam (rates.symbolic.theorems.coverage: sympy-free)


_CITE = f"{SEED_MINIBATCH} Thm 4.3 [given], gamma_eff [rebuilt]"
FAMILY = FamilyDeclaration(
    name="momentum",
    algorithms="signum, momentum-ngd, muon (+ mini-batch)",
    example={"name": "signum"},
    covers=covers,
    hypotheses=(
        momentum_range(_CITE, low_open=True),
        effective_margin(_CITE, "gamma - 4 B c(n, b) [(1 - beta^(m-1)) + (1 - beta^m)]",
                         lambda f: gamma_eff_momentum(f.gamma, f.B, f.samples, f.batch, f.config.momentum)),
        separable(_CITE),
        a_in_unit_interval(_CITE),
    ),
    source=SOURCE,
    template=lambda config: template(config.norm),
    statement="gamma_eff - gamma(W_t) <= [alpha_beta S_2 + gamma_eff S_1(0, t_1) + log n + D_beta] / S_1",
)
