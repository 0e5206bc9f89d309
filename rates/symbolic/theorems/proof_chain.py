"""SIGNADAM Thm 5.3 instantiated on a run: the explicit bound ``B(t)`` its proof chain gives from an anchor step.

Setting: full-batch normalised steepest descent from ``W_0 = 0``, ``W_{s+1} = W_s - eta_s Delta_s``, on separable
data with max margin ``gamma`` in the algorithm's norm (docs/theory.md sections 1-3; SIGNADAM Thm 5.3 / C.4 for
entry-wise norms, MINIBATCH Thm 4.1 at ``b = n`` for the Schatten norms, whose chain is the same). Write
``L_s, G_s`` for the loss and the proxy at ``W_s``, ``pi_s = <grad L(W_s), Delta_s>/G_s`` the direction's dual pairing
and ``nu_s = ||Delta_s||`` its norm (1 for the steepest direction), ``N(a, b) = sum_{a<=s<b} eta_s nu_s``.

Derivation [derived; each step is a ``rates check`` claim, :data:`CHAIN`]. Fix an anchor ``r``; for ``t > r``:

1. *Descent with the curvature at the iterate* (SIGNADAM Lemma A.2/C.1; claim ``local-curvature-step``): along
   ``W_s - tau Delta_s`` the loss has second derivative ``(1/n) sum_i Var_{S(z_i(tau))}(v_i)``, ``v_i = Delta_s h_i``;
   ``Var <= (1 - S_y) max_c (v_c - v_y)^2`` (the variance about ``v_y``), and ``1 - S_y`` grows at most by
   ``e^{tau delta_i}``, ``delta_i = max_c (v_y - v_c)^+`` (each wrong-class weight ``e^{z_c - z_y}`` does). Taylor's
   remainder ``int_0^eta (eta - tau) e^{tau delta} d tau = eta^2 phi(eta delta)``, ``phi(x) = (e^x - 1 - x)/x^2``, gives
   ``L_{s+1} <= L_s - eta_s pi_s G_s + kappa_s eta_s^2 G_s`` with the *local curvature*
   ``kappa_s = sum_i [(1 - S_{y_i})/(n G_s)] phi(eta_s delta_i) max_c (v_c - v_y)^2``. The worst case
   ``|v_c - v_y| <= 2B``, ``delta_i <= 2B`` gives back ``alpha = 2 B^2 e^{2 B eta}`` of the template.
2. ``1 - x <= e^{-x}`` and ``G <= L`` (claim ``proxy-below-loss``):
   ``log L_t <= log L_r - sum_{s=r}^{t-1} eta_s pi_s G_s/L_s + sum_{s=r}^{t-1} kappa_s eta_s^2``.
3. *Pairing* ``pi_s >= gamma nu_s`` (SIGNADAM Lemma B.1; claim ``gradient-dual-lower``, measured on the run):
   the first sum is at least ``gamma sum eta_s nu_s G_s/L_s``. For a direction that is not the steepest one
   (Adam without eps, SIGNADAM Thm 6.3) the pairing is measured instead: with the shortfall
   ``delta_s = max(0, gamma nu_s - pi_s)``, ``pi_s >= gamma nu_s - delta_s`` and ``G_s/L_s <= 1`` make the first sum
   at least ``gamma sum eta_s nu_s G_s/L_s - sum eta_s delta_s`` (the *pairing deficit*; 0 for the steepest
   direction). Thm 6.3's proof bounds the same shortfall by ``c_adam eta_s^(1/2)``; the run's own ``delta_s``
   takes its place, so this certifies the chain on the run, never the constant ``c_adam``.
4. *Low loss separates* (Lemma B.4; claims ``low-loss-separability``, ``certificate-log-level``): for
   ``n L_t <= log 2``, ``min margin(W_t) >= -log(e^{n L_t} - 1) >= -log(n L_t) + log log 2 > 0``.
5. *Norm* ``||W_t|| <= N(0, t)`` (triangle inequality from ``W_0 = 0``), so with a positive unnormalised margin
   ``gap(t) <= (gamma N(0, t) - min margin(W_t)) / N(0, t)``.
6. *The ratio term* (Lemma B.3 (i), claim ``proxy-lower-bound``): ``1 - G_s/L_s <= n L_s / 2``; and the
   half-margin descent ``L_{s+1} <= L_s - (gamma/2) eta_s G_s`` with the contraction ``L_s <= 2 G_s`` (Lemma B.3 (iii),
   claim ``loss-below-twice-proxy``) give ``L_s <= L_r prod_{u=r}^{s-1} (1 - gamma eta_u / 4)`` (claim
   ``certificate-contraction``).

Together:

    gap(t) <= B(t) = [ gamma N(0, r)                                           (steps before the anchor)
                     + gamma (n/2) L_r sum_{s=r}^{t-1} eta_s nu_s prod_{u=r}^{s-1} (1 - gamma eta_u/4)   (ratio term)
                     + sum_{s=r}^{t-1} kappa_s eta_s^2                         (curvature at the iterates)
                     + sum_{s=r}^{t-1} eta_s delta_s                           (pairing deficit; 0 but for Adam)
                     + log(n L_r / log 2) ]                                    (anchor loss, <= 0)
                     / N(0, t)

The template of :mod:`rates.symbolic.theorems.nsd` keeps only ``alpha sum eta^2 + gamma S_1(0, t_1) + log n``: it
drops the ratio term (bounded, not zero) and replaces the anchor-loss term ``log(n L_r/log 2) <= 0`` by ``log n``;
its ``alpha`` is the worst case over every step, which on the default preset exceeds ``gamma/2`` until
``t_d ~ 3.3e4``. ``B`` needs, from the anchor on, every fact of steps 1-6: pairing, descent, half-margin, low loss
and contraction; :mod:`rates.numeric.certificate` checks them at every step and anchors ``B`` at ``s0``, the
first step from which all hold through the horizon.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import sympy as sp

SOURCE = "SIGNADAM Thm 5.3 / C.4 (proof chain, Lemmas A.2, B.1, B.3, B.4, C.1-C.3) [derived]"

gamma, n = sp.symbols("gamma n", positive=True)
N_anchor, N_t = sp.symbols("N_r N_t", positive=True)  # N(0, r), N(0, t)
L_anchor = sp.Symbol("L_r", positive=True)
ratio_sum = sp.Symbol("R", nonnegative=True)  # sum_{s=r}^{t-1} eta_s nu_s prod_{u=r}^{s-1} (1 - gamma eta_u / 4)
curvature_sum = sp.Symbol("K", nonnegative=True)  # sum_{s=r}^{t-1} kappa_s eta_s^2
deficit_sum = sp.Symbol("P", nonnegative=True)  # sum_{s=r}^{t-1} eta_s max(0, gamma nu_s - pi_s)

TERMS = {
    "before anchor": gamma * N_anchor,
    "ratio": gamma * n / 2 * L_anchor * ratio_sum,
    "curvature": curvature_sum,
    "anchor loss": sp.log(n * L_anchor / sp.log(2)),
    # last, so that a zero deficit (every steepest direction) leaves the sum of the terms bit for bit as without it
    "pairing deficit": deficit_sum,
}
NUMERATOR = sum(TERMS.values())
BOUND = NUMERATOR / N_t

# each step of the chain and the ``rates check`` claim that tries to break it
CHAIN = (
    ("descent with the local curvature kappa_s", "local-curvature-step"),
    ("G <= L (drops G/L from the curvature term)", "proxy-below-loss"),
    ("pairing <grad L, Delta> >= gamma ||Delta|| G (Adam: its measured shortfall paid in B)", "gradient-dual-lower"),
    ("low loss separates: min margin >= -log(e^{nL} - 1)", "low-loss-separability"),
    ("-log(e^x - 1) >= -log x + log log 2 on (0, log 2]", "certificate-log-level"),
    ("1 - G/L <= n L / 2", "proxy-lower-bound"),
    ("L <= 2 G once L <= log 2 / n", "loss-below-twice-proxy"),
    ("half-margin descent and L <= 2G contract L by (1 - gamma eta / 4)", "certificate-contraction"),
    ("gap(t) <= B(t) along runs", "certificate-on-runs"),
)

_TERM_FUNCTIONS = {name: sp.lambdify((gamma, n, N_anchor, L_anchor, ratio_sum, curvature_sum, deficit_sum), term,
                                      "numpy")
                   for name, term in TERMS.items() if name != "anchor loss"}


def bound_terms(gamma_value: float, n_value: int, n_anchor: float, log_loss_anchor: float, ratio: np.ndarray,
                curvature: np.ndarray, deficit: Optional[np.ndarray] = None) -> dict[str, np.ndarray]:
    """The numerator's terms of :data:`BOUND` (module docstring), the anchor loss given by its logarithm;
    ``deficit`` is the pairing deficit sum (None: 0, the steepest direction).

    >>> terms = bound_terms(1.0, 10, 2.0, math.log(0.05), np.array([4.0]), np.array([0.5]), np.array([0.25]))
    >>> {k: round(float(v[0]), 4) for k, v in terms.items()}
    {'before anchor': 2.0, 'ratio': 1.0, 'curvature': 0.5, 'anchor loss': -0.3266, 'pairing deficit': 0.25}
    """
    anchor_loss = math.exp(log_loss_anchor)
    deficit = np.zeros(np.shape(ratio)) if deficit is None else deficit
    out = {name: np.asarray(function(gamma_value, n_value, n_anchor, anchor_loss, ratio, curvature, deficit),
                            dtype=float) * np.ones(np.shape(ratio)) for name, function in _TERM_FUNCTIONS.items()}
    # in logs: L_r may lie far below the smallest float
    out["anchor loss"] = np.full(np.shape(ratio), math.log(n_value) + log_loss_anchor - math.log(math.log(2.0)))
    return {name: out[name] for name in TERMS}  # TERMS' order: the sum adds the deficit last


def chain_bound(gamma_value: float, n_value: int, n_anchor: float, log_loss_anchor: float, ratio: np.ndarray,
                curvature: np.ndarray, n_total: np.ndarray, deficit: Optional[np.ndarray] = None) -> np.ndarray:
    """``B(t)`` of the module docstring at the times whose running sums are given.

    >>> value = chain_bound(1.0, 10, 2.0, math.log(0.05), np.array([4.0]), np.array([0.5]), np.array([10.0]))
    >>> round(float(value[0]), 5)
    0.31734
    """
    terms = bound_terms(gamma_value, n_value, n_anchor, log_loss_anchor, ratio, curvature, deficit)
    return sum(terms.values()) / np.asarray(n_total, dtype=float)
