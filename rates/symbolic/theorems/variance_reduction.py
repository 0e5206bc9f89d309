"""SVRG-style variance-reduced steepest descent, with or without momentum (VR-SignSGD, VR-N-SGD, ...).

Setting: as :mod:`rates.symbolic.theorems.minibatch`; the snapshot ``W~`` is taken at the start of each epoch.

Algorithm: signal ``grad_S L(W_t) - grad_S L(W~) + grad L(W~)`` (optionally fed through momentum ``beta``),
``Delta_t`` steepest for the signal, ``W_{t+1} = W_t - eta_t Delta_t`` (MINIBATCH
section 3.1).

Guarantee (MINIBATCH Thm 4.6 / F.4 without momentum, G.4 with; Cor. 4.7 / F.5 / G.5): with no condition
on ``b`` or ``beta``, for ``t > t_1``

    gamma - gamma(W_t) <= [ alpha_vr sum_{s=t_0}^{t-1} eta_s^2 + gamma sum_{s<t_1} eta_s + log n (+ D_beta) ]
                          / sum_{s<t} eta_s.

The VR mismatch vanishes as the step shrinks (:func:`vr_deviation_bound`), so it enters the *noise*, not
the margin: ``alpha_vr = alpha + 8 B^2 c(n,b) m (1 + m) exp(4 B m eta_0)`` with ``m = n/b`` [rebuilt]:
twice the deviation, ``exp(x) - 1 <= x exp(x)``, ``||W_t - W~||_max <= m eta_{t-m} <= m (1 + m) eta_t`` for
``t >= m``, and ``G(W~) <= exp(2B m eta_0) G(W_t)`` (Lemma C.9). With momentum add ``4 B^2 (n/b) beta/(1-beta)``
(:func:`rates.symbolic.theorems.momentum.momentum_drift_alpha`). Larger constants, later ``t_0``, same exponents.

Step by step (the descent start, :mod:`rates.symbolic.theorems.descent_start`) the same chain keeps the epoch's
own step sizes instead of ``eta_0`` (:func:`vr_step_noise`): ``alpha_vr`` bounds the noise for every ``t`` at once and
so pays ``exp(4 B m eta_0)``, which on the minibatch preset puts ``t_0`` at 10^18-10^260 steps. With momentum the
error sums C.13 over older steps, whose ``eta_{tau-m}`` are larger (Lemma C.14), so no step-local form is derived and
the descent start keeps ``alpha_vr``.
"""

from __future__ import annotations

import math

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
    eta0_symbol,
    eta_lag,
    eta_step,
    gamma,
    n,
)
from rates.symbolic.theorems.coverage import covers_vr
from rates.symbolic.theorems.hypotheses import FamilyDeclaration, a_in_unit_interval, momentum_range, separable
from rates.symbolic.theorems.minibatch import batch_error_factor
from rates.symbolic.theorems.momentum import momentum_drift_alpha

SOURCE = Source(SEED_MINIBATCH, "Thm 4.6/F.4/G.4, Cor. 4.7/F.5/G.5, Lemma C.13/C.14")
alpha_vr = sp.Symbol("alpha_vr", positive=True)


def vr_deviation_bound(B_value, n_value, b_value, distance_max, G_snapshot):
    """MINIBATCH Lemma C.13 [rebuilt]: for all ``W, W~`` and every batch ``S`` of size ``b``,

        || (grad_S L(W) - grad_S L(W~)) - (grad L(W) - grad L(W~)) ||_sum
            <= 2 B c(n, b) (exp(2 B ||W - W~||_max) - 1) G(W~),

    ``distance_max = ||W - W~||_max``, ``G_snapshot = G(W~)``, ``c(n, b)`` from
    :func:`rates.symbolic.theorems.minibatch.batch_error_factor` (0 at ``b = n``).

    Derivation: with per-sample differences ``d_i = g_i(W) - g_i(W~)``, the finite-population split of
    Lemma C.11 gives ``<= (1/n) c(n, b) sum_i ||d_i||_sum``. Per sample ``||d_i||_sum = ||S(z_i) - S(z~_i)||_1
    ||h_i||_1`` with logits ``z_i = W h_i``; ``||z_i - z~_i||_inf <= B ||W - W~||_max =: delta``; every softmax
    ratio ``S_c(z)/S_c(z~)`` and ``(1 - S_y(z))/(1 - S_y(z~))`` lies in ``[e^{-2 delta}, e^{2 delta}]``, so
    ``||S(z) - S(z~)||_1 <= 2 (e^{2 delta} - 1)(1 - S_y(z~))``; summing,
    ``(1/n) sum ||d_i|| <= 2B (e^{2 delta} - 1) G(W~)``.
    """
    return 2.0 * B_value * batch_error_factor(n_value, b_value) * math.expm1(2.0 * B_value * distance_max) * G_snapshot


def vr_step_noise(B_value=B, n_value=n, b_value=b, eta_lag_value=eta_lag):
    """The VR deviation's share of the descent noise at step ``t``: ``8 B^2 c(n,b) m eta_lag exp(4 B m eta_lag)``,
    ``m = n/b``, ``eta_lag = eta_{max(t-m, 0)}`` [rebuilt].

    Derivation (MINIBATCH F.1 with the epoch's step sizes): the snapshot ``W~ = W_e`` is taken at the epoch start
    ``e <= t < e + m``; every step has norm ``eta_s`` in the algorithm's norm, and the max-norm is the smallest
    (Lemma C.1), so ``delta_t = ||W_t - W~||_max <= sum_{s=e}^{t-1} eta_s <= m eta_{max(t-m, 0)} =: dbar`` (at most
    ``m - 1`` steps, each no larger than ``eta_{t-m}``; before the first ``m`` steps ``eta_0`` bounds each).
    ``<grad L, Delta_t> >= ||grad L||_* - 2 ||E_t||_*`` with ``E_t`` the VR signal's error, ``||E_t||_* <= ||E_t||_sum
    <= 2 B c (e^{2 B delta_t} - 1) G(W~)`` (Lemma C.13), ``e^x - 1 <= x e^x`` and ``G(W~) <= e^{2 B delta_t} G(W_t)``
    (Lemma C.9) give ``2 ||E_t||_* <= 8 B^2 c delta_t e^{4 B delta_t} G(W_t) <= (this) G(W_t)``. The global
    :func:`vr_noise_alpha` is this with ``dbar <= m (1 + m) eta_t`` and ``e^{4 B dbar} <= e^{4 B m eta_0}``.
    ``rates check vr-step-noise`` measures ``delta_t`` and ``||E_t||_sum`` at every step of engine runs.
    """
    m = n_value / b_value
    symbolic = any(isinstance(v, sp.Basic) for v in (B_value, n_value, b_value, eta_lag_value))
    exp = sp.exp if symbolic else math.exp
    return 8 * B_value**2 * batch_error_factor(n_value, b_value) * m * eta_lag_value * exp(
        4 * B_value * m * eta_lag_value)


def vr_noise_alpha(B_value=B, n_value=n, b_value=b, eta0_value=eta0_symbol):
    """``8 B^2 c(n,b) m (1 + m) exp(4 B m eta_0)``, ``m = n/b``: the VR deviation as step noise (module docstring)."""
    m = n_value / b_value
    return 8 * B_value**2 * batch_error_factor(n_value, b_value) * m * (1 + m) * sp.exp(4 * B_value * m * eta0_value)


def template(norm: str = "max", with_momentum: bool = False) -> BoundTemplate:
    extra = momentum_drift_alpha() if with_momentum else 0
    return BoundTemplate(
        family="vr",
        title=f"VR mini-batch NSD{' + momentum' if with_momentum else ''} ({norm})",
        source=SOURCE,
        status="given",
        gap_to="gamma",
        numerator=(PowerSumTerm(sp.Integer(2), alpha_vr, "curvature + VR deviation (+ momentum drift) noise"),),
        noise=(NoiseTerm(sp.Integer(1), alpha_vr, "alpha_vr eta_t"),),
        gamma_ref=gamma,
        assumptions=("data separable: gamma > 0", "b divides n", "||h_i||_1 <= B", "no condition on b or beta"),
        constants={"alpha_vr": "alpha + 8 B^2 (n/b - 1)(n/b)(1 + n/b) exp(4 B (n/b) eta_0)"
                               + (" + 4 B^2 (n/b) beta/(1-beta)" if with_momentum else "") + " [rebuilt]"},
        definitions={alpha: curvature_alpha(), alpha_vr: alpha + vr_noise_alpha() + extra},
        # with momentum the error sums C.13 over older steps with larger eta_{tau-m} (Lemma C.14): no step-local form
        step_local={} if with_momentum else {alpha_vr: alpha + vr_step_noise() / eta_step},
        lag=0 if with_momentum else n / b,
    )


covers = covers_vr  # rates.symbolic.theorems.coverage: sympy-free


_CITE = f"{SEED_MINIBATCH} Thm 4.6 [given]"
FAMILY = FamilyDeclaration(
    name="vr",
    algorithms="vr-signsgd, vr-nsgd, vr-spectral-sgd, vr-signum, vr-muon, vr-momentum-ngd",
    example={"name": "vr-signsgd"},
    covers=covers,
    hypotheses=(momentum_range(_CITE, low_open=False), separable(_CITE), a_in_unit_interval(_CITE)),
    source=SOURCE,
    template=lambda config: template(config.norm, with_momentum=config.momentum > 0),
    statement="gamma - gamma(W_t) <= [alpha_vr S_2 + gamma S_1(0, t_1) + log n (+ D_beta)] / S_1, no condition on b",
)
