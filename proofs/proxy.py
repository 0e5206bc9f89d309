"""The proxy ``G`` versus the loss ``L``: SIGNADAM Lemmas B.3/B.4, MINIBATCH Lemmas C.7/C.8.

With ``s_i = S_{y_i}(W h_i)``: ``L = (1/n) sum_i -log s_i`` and ``G = (1/n) sum_i (1 - s_i)``. Each claim
is a scalar inequality in one ``s`` (or ``u = -log s``) that sums over samples to the lemma; the scalar
is proven by interval arithmetic on its whole domain and by sympy's derivative-sign argument, and the
summed, data-level statement is attacked by search as a check of the reduction.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from proofs.claims import MINIBATCH, SIGNADAM, Claim, ScalarProblem, SearchProblem
from proofs.crossentropy import log_uniform, logits, loss, proxy, random_problem, split
from proofs.derivation import cited, derivation, identity, lazy

s = sp.Symbol("s")
u = sp.Symbol("u")
x = sp.Symbol("x")


def _data_search(ratio_of, condition=None, **kwargs) -> SearchProblem:
    """A data-level search: random data, labels and weights (scaled so that small losses are reached)."""

    def sample(rng):
        n, k, d, y = random_problem(rng, n_range=(1, 8))
        scale = log_uniform(rng, 0.05, 30.0)
        return np.concatenate([rng.standard_normal(n * d), scale * rng.standard_normal(k * d)]), (n, k, d, y)

    def unpack(params, context):
        n, k, d, y = context
        return (*split(params, n, k, d, 1), y)

    def ratio(params, context):
        H, W, y = unpack(params, context)
        return ratio_of(H, W, y)

    def describe(params, context):
        H, W, y = unpack(params, context)
        return {"H": H.tolist(), "W": W.tolist(), "y": y.tolist(), "L": loss(W, H, y), "G": proxy(W, H, y)}

    return SearchProblem(sample, ratio, describe, **kwargs)


def proxy_below_loss() -> Claim:
    """SIGNADAM Lemma B.3 (i) upper part; MINIBATCH Lemma C.7 (i).

    Claim: ``G(W) <= L(W)`` [rebuilt]; per sample ``1 - s <= -log s`` on ``s in (0, 1]`` (``log s <= s - 1``).
    """
    return Claim(
        name="proxy-below-loss",
        source=f"{SIGNADAM} Lemma B.3 (i); {MINIBATCH} Lemma C.7 (i)",
        statement="G(W) <= L(W); per sample 1 - s <= -log s for s in (0, 1]",
        latex=r"G(W) \le L(W)",
        status="rebuilt",
        domain="s in (0, 1] (the closed box [0, 1], -log 0 = +inf)",
        scalar=ScalarProblem([s], [(0, 1)], 1 - s, -sp.log(s)),
        search=_data_search(lambda H, W, y: proxy(W, H, y) / loss(W, H, y)),
    )


def loss_below_twice_proxy() -> Claim:
    """SIGNADAM Lemma B.3 (ii); MINIBATCH Lemma C.7 (ii).

    Claim: if ``L(W) <= log 2 / n`` or ``G(W) <= 1/(2n)`` then ``L(W) <= 2 G(W)`` [rebuilt].
    Reduction: either condition gives every ``s_i >= 1/2`` (``-log s_i <= n L`` and ``1 - s_i <= n G``), and
    ``-log s <= 2 (1 - s)`` on ``[1/2, 1]`` (``2(1 - s) + log s`` decreases to 0 at ``s = 1``).
    """

    def ratio(H, W, y):
        n, L, G = len(y), loss(W, H, y), proxy(W, H, y)
        if L > math.log(2) / n and G > 1 / (2 * n):
            return -math.inf
        return L / (2 * G)

    return Claim(
        name="loss-below-twice-proxy",
        source=f"{SIGNADAM} Lemma B.3 (ii); {MINIBATCH} Lemma C.7 (ii)",
        statement="L(W) <= log2/n or G(W) <= 1/(2n) implies L(W) <= 2 G(W); per sample -log s <= 2(1 - s) on [1/2, 1]",
        latex=r"L(W)\le \tfrac{\log 2}{n} \ \vee\ G(W)\le\tfrac{1}{2n} \implies L(W) \le 2G(W)",
        status="rebuilt",
        domain="s in [1/2, 1]; data-level search over instances meeting the condition",
        scalar=ScalarProblem([s], [(sp.Rational(1, 2), 1)], -sp.log(s), 2 * (1 - s)),
        search=_data_search(ratio),
    )


def proxy_lower_bound() -> Claim:
    """SIGNADAM Lemma B.3 (i) lower part; MINIBATCH Lemma C.7 (i) ("second-order Taylor expansion").

    Claim: ``G(W) >= L(W) - n L(W)^2 / 2`` [rebuilt], i.e. ``G/L -> 1`` as the loss vanishes.
    Reduction: per sample with ``l = -log s >= 0``: ``1 - e^{-l} >= l - l^2/2`` (Taylor with remainder), then
    ``sum_i l_i^2 <= (sum_i l_i)^2 = n^2 L^2``. The scalar is stated in ``s = e^{-l} in (0, 1]`` so that the
    domain is a bounded box; ``log s (log s + 2)`` keeps the interval enclosure finite at ``s = 0``.
    """

    def ratio(H, W, y):
        n, L = len(y), loss(W, H, y)
        return (L - n * L * L / 2) / proxy(W, H, y)

    return Claim(
        name="proxy-lower-bound",
        source=f"{SIGNADAM} Lemma B.3 (i), eq. (15); {MINIBATCH} Lemma C.7 (i)",
        statement="G(W) >= L(W) - n L(W)^2/2; per sample 1 - s >= -log s - (log s)^2/2 on s in (0, 1]",
        latex=r"G(W) \ge L(W) - \tfrac{n}{2} L(W)^2",
        status="rebuilt",
        domain="s in (0, 1] (closed box [0, 1])",
        scalar=ScalarProblem([s], [(0, 1)], -sp.log(s) - sp.log(s) ** 2 / 2, 1 - s,
                             margin=(sp.log(s) * (sp.log(s) + 2) + 2 - 2 * s) / 2),
        search=_data_search(ratio),
    )


def low_loss_separability() -> Claim:
    """SIGNADAM Lemma B.4; MINIBATCH Lemma C.8 (eq. 16 / C.11).

    Claim: for every ``W``, sample ``i`` and ``c != y_i``: ``exp(-(e_{y_i} - e_c)^T W h_i) <= e^{n L(W)} - 1``
    [rebuilt], i.e. the margin is at least ``-log(e^{nL} - 1)``, which is ``> 0`` once ``L(W) < log 2 / n``:
    low loss implies separability. Derivation: ``n L >= -log s_i = log(1 + sum_{c != y} e^{-m_ic})``.
    """

    def ratio(H, W, y):
        z = logits(W, H)
        n = len(y)
        margins = z[np.arange(n), y][:, None] - z
        margins[np.arange(n), y] = np.inf
        L = loss(W, H, y)
        return float(np.exp(-margins.min() - np.log(np.expm1(n * L))))

    return Claim(
        name="low-loss-separability",
        source=f"{SIGNADAM} Lemma B.4; {MINIBATCH} Lemma C.8",
        statement="(e_y - e_c)^T W h_i >= -log(exp(n L(W)) - 1) for all i, c != y_i; so L < log2/n separates",
        latex=r"(e_{y_i}-e_c)^\top W h_i \ge -\log\!\big(e^{nL(W)}-1\big)",
        status="rebuilt",
        domain="any data, labels and W (n = 1..8, k = 2..5, d = 1..4 searched)",
        search=_data_search(ratio),
        symbolic_proof=lazy(lambda: _separability_proof()),
    )


def _separability_proof():
    E = sp.symbols("E0:3", positive=True)  # e^{z_c}; label y = 0, m_c = z_0 - z_c
    return derivation(
        identity("-log S_y = log(1 + sum_{c != y} e^(-m_c)) with m_c = z_y - z_c (k = 3, E_c = e^(z_c))",
                 sp.simplify(sp.expand_log(-sp.log(E[0] / sum(E)) - sp.log(1 + E[1] / E[0] + E[2] / E[0]),
                                           force=True))),
        cited("log is increasing and every term is positive: log(1 + e^(-m_c)) <= -log S_{y_i} <= n L(W)",
              "monotonicity of log; L(W) is an average of non-negative terms"),
        cited("so e^(-m_c) <= e^(n L) - 1", "monotonicity of exp"),
    )


def separation_level_chord() -> Claim:
    """Step 3 of the project's theorem template (:mod:`rates.symbolic.theorems.base`, after SIGNADAM Lemma B.3 (ii) /
    MINIBATCH Lemma C.7 (ii)): ``G(W) <= 1/(2n)`` gives ``L(W) <= 2 log 2 G(W) <= log 2 / n`` because
    ``-log(1 - x) <= 2 log(2) x`` on ``x = 1 - s_i in [0, 1/2]`` [rebuilt].

    Tight at both ends. Sympy proves it by the chord argument (the concave ``f = 2 log2 x + log(1 - x)``
    vanishes at both ends); interval arithmetic proves it on ``exp(f) - 1 = 4^x (1 - x) - 1``, which is exactly
    0 at ``x = 1/2`` (an enclosure of ``log 2 - log 2`` would straddle 0 there).
    """
    return Claim(
        name="separation-level-chord",
        source=f"rates.symbolic.theorems.base step 3; {SIGNADAM} Lemma B.3 (ii); {MINIBATCH} Lemma C.7 (ii)",
        statement="-log(1 - x) <= 2 log(2) x for x in [0, 1/2]; so G <= 1/(2n) implies L <= 2 log2 G <= log2/n",
        latex=r"-\log(1-x) \le 2\log 2\, x,\ x\in[0,\tfrac12]",
        status="rebuilt",
        domain="x in [0, 1/2]",
        scalar=ScalarProblem([x], [(0, sp.Rational(1, 2))], -sp.log(1 - x), 2 * sp.log(2) * x,
                             margin=4**x * (1 - x) - 1),
    )


CLAIMS = [proxy_below_loss(), loss_below_twice_proxy(), proxy_lower_bound(), low_loss_separability(),
          separation_level_chord()]
