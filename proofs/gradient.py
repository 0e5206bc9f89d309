"""Norm facts and the gradient dual-norm sandwich, for every entry-wise and Schatten norm.

SIGNADAM Lemma 4.1 / B.1 (max-norm; Lemma E.1 for general norms) and MINIBATCH Lemmas C.1 / C.5:
``gamma G(W) <= ||grad L(W)||_* <= 2 B G(W)`` and ``||A||_max <= ||A||, ||A||_* <= ||A||_sum``.
Norms come from :mod:`rates.norms`; the gradient from autograd of the loss (not from Lemma A.1's formula).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from proofs.claims import MINIBATCH, SIGNADAM, Claim, ScalarProblem, SearchProblem
from proofs.crossentropy import (
    NORM_NAMES,
    autograd_gradient,
    data_bound,
    log_uniform,
    logits,
    norm_value,
    proxy,
    random_problem,
    split,
)
from proofs.derivation import cited, derivation, identity, lazy, lemma, scalar


def norm_ordering() -> Claim:
    """MINIBATCH Lemma C.1 (Lemma 11 of Fan et al. 2025).

    Claim: for every entry-wise or Schatten p-norm, ``||A||_max <= ||A|| <= ||A||_sum`` and
    ``||A||_max <= ||A||_* <= ||A||_sum`` [given]. Worst ratio: the largest of the four ratios over the norms.
    Tight on rank-one matrices with one non-zero entry (every norm equals ``|a|``).
    """

    def sample(rng):
        k, d = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        A = rng.standard_normal((k, d))
        if rng.random() < 0.3:  # sparse / rank-one starts sit on the equality cases
            A = np.outer(rng.standard_normal(k), rng.standard_normal(d)) * (rng.random((k, d)) < 0.5)
        return A.ravel(), (k, d)

    def ratio(params, shape):
        A = params.reshape(shape)
        low, high = norm_value("max", A), norm_value("sum", A)
        if high == 0:
            return -np.inf
        worst = -np.inf
        for name in NORM_NAMES:
            for dual in (False, True):
                value = norm_value(name, A, dual)
                worst = max(worst, low / value, value / high)
        return worst

    return Claim(
        name="norm-ordering",
        source=f"{MINIBATCH} Lemma C.1",
        statement="||A||_max <= ||A|| <= ||A||_sum and ||A||_max <= ||A||_* <= ||A||_sum for every listed norm",
        latex=r"\|A\|_{\max} \le \|A\|,\ \|A\|_* \le \|A\|_{\mathrm{sum}}",
        status="given",
        domain=f"A in R^(k x d), k, d = 1..5; norms {', '.join(NORM_NAMES)} and their duals",
        search=SearchProblem(sample, ratio, lambda p, shape: {"A": p.reshape(shape).tolist()}, starts=150, polish=4),
        symbolic_proof=lazy(lambda: _norm_ordering_proof()),
    )


def _norm_ordering_proof():
    x, p = sp.symbols("x p", positive=True)
    return derivation(
        cited("entry-wise l_p: ||a||_inf <= ||a||_p <= ||a||_1 for p in [1, inf] (monotonicity of l_p norms); the dual "
              "of l_p is l_q, again between l_inf and l_1", "Hardy-Littlewood-Polya, Inequalities (1934), Thm 16/19"),
        scalar("the step inside it: scale a to ||a||_1 = 1, then |a_i|^(1+q) <= |a_i| (x^q <= 1 on [0, 1], any q >= 0; "
               "checked for q in [0, 16]) so ||a||_p^p <= ||a||_1 = 1",
               ScalarProblem([x, p], [(0, 1), (0, 16)], x**p, sp.Integer(1))),
        cited("Schatten: |a_ij| = |e_i^T A e_j| <= sigma_max(A) and ||A||_nuclear = max_{||U||_op <= 1} <U, A> <= "
              "sum |a_ij| since |U_ij| <= 1; Schatten-p lies between spectral and nuclear by the l_p monotonicity "
              "of the singular values; the dual of S_p is S_q", "Bhatia, Matrix Analysis (1997), IV.2"),
    )


def _gradient_search(ratio_of, with_reference: bool) -> SearchProblem:
    def sample(rng):
        n, k, d, y = random_problem(rng)
        scale = log_uniform(rng, 0.05, 10.0)
        parts = [rng.standard_normal(n * d), scale * rng.standard_normal(k * d)]
        if with_reference:
            parts.append(rng.standard_normal(k * d))
        return np.concatenate(parts), (n, k, d, y, NORM_NAMES[int(rng.integers(len(NORM_NAMES)))])

    def unpack(params, context):
        n, k, d, y, norm = context
        H, W, *reference = split(params, n, k, d, 2 if with_reference else 1)
        return H, W, (reference[0] if reference else None), y, norm

    def describe(params, context):
        H, W, reference, y, norm = unpack(params, context)
        out = {"norm": norm, "H": H.tolist(), "y": y.tolist(), "W": W.tolist()}
        if reference is not None:
            out["W_star"] = (reference / norm_value(norm, reference)).tolist()
        return out

    return SearchProblem(sample, lambda p, c: ratio_of(*unpack(p, c)), describe, tolerance=1e-7)


def gradient_dual_upper() -> Claim:
    """SIGNADAM Lemma 4.3 (i) / B.1 (upper); MINIBATCH Lemma C.5 (upper).

    Claim: ``||grad L(W)||_* <= 2 B G(W)`` for every entry-wise/Schatten norm [rebuilt].
    Derivation: ``grad L = (1/n) sum_i (S_i - e_{y_i}) h_i^T``, ``||.||_* <= ||.||_sum`` (Lemma C.1) and
    ``||(S - e_y) h^T||_sum = ||S - e_y||_1 ||h||_1 = 2 (1 - S_y) ||h||_1``. Tight for one sample ``h = B e_1``
    under the max-norm (dual: sum-norm).
    """

    def ratio(H, W, _reference, y, norm):
        return norm_value(norm, autograd_gradient(W, H, y), dual=True) / (2 * data_bound(H) * proxy(W, H, y))

    return Claim(
        name="gradient-dual-upper",
        source=f"{SIGNADAM} Lemma 4.3 (i) / B.1; {MINIBATCH} Lemma C.5",
        statement="||grad L(W)||_* <= 2 B G(W) for every entry-wise/Schatten norm, B = max_i ||h_i||_1",
        latex=r"\|\nabla L(W)\|_* \le 2B\,G(W)",
        status="rebuilt",
        domain=f"n = 1..6, k = 2..5, d = 1..4, any W with G(W) >= 1e-10 (autograd accuracy); "
               f"norms {', '.join(NORM_NAMES)}",
        search=_gradient_search(ratio, with_reference=False),
        notes="gradient by autograd; tolerance 1e-7 for its round-off where 1 - S_y is tiny",
        symbolic_proof=lazy(lambda: _dual_upper_proof()),
        constants={"c_grad": sp.Integer(2)},
    )


def _dual_upper_proof():
    s0, s1, s2 = sp.symbols("s0 s1 s2", nonnegative=True)
    return derivation(
        identity("grad L = (1/n) sum_i (S_i - e_{y_i}) h_i^T (SIGNADAM Lemma A.1; d/dz of log-sum-exp is softmax)",
                 sp.diff(sp.log(sum(sp.exp(v) for v in sp.symbols("z0:3"))), sp.Symbol("z0"))
                 - sp.exp(sp.Symbol("z0")) / sum(sp.exp(v) for v in sp.symbols("z0:3"))),
        lemma("||.||_* <= ||.||_sum for every entry-wise / Schatten norm", NORM_ORDERING),
        cited("triangle inequality and ||u h^T||_sum = ||u||_1 ||h||_1", "definition of the entry-wise 1-norm"),
        identity("||S - e_y||_1 = (1 - S_y) + sum_{c != y} S_c = 2 (1 - S_y) on the simplex (k = 3, y = 0)",
                 ((1 - s0) + s1 + s2 - 2 * (1 - s0)).subs(s0, 1 - s1 - s2)),
        identity("(1/n) sum_i 2 (1 - S_{y_i}) ||h_i||_1 <= 2 B G(W)", sp.Integer(0)),
    )


def gradient_dual_lower() -> Claim:
    """SIGNADAM Lemma 4.1 / B.1 (lower), E.1 for general norms; MINIBATCH Lemma C.5 (lower).

    Claim: ``gamma G(W) <= ||grad L(W)||_*`` with ``gamma`` the max margin in the norm [rebuilt].
    Searched in the equivalent form ``gamma(W*) G(W) <= ||grad L(W)||_*`` for every ``W* != 0``, where
    ``gamma(W*) = min_{i, c != y_i} (e_{y_i} - e_c)^T W* h_i / ||W*||`` (the max over W* is gamma), so no margin
    solver is trusted. Derivation: ``-grad L = (1/n) sum_i sum_{c != y_i} S_c (e_{y_i} - e_c) h_i^T`` has total
    weight ``G``; pair it with ``W*/||W*||`` (duality). Tight for one sample and two classes.
    """

    def ratio(H, W, reference, y, norm):
        z = logits(reference, H)
        n = len(y)
        margins = z[np.arange(n), y][:, None] - z
        margins[np.arange(n), y] = np.inf
        if not np.isfinite(margins.min()):
            return -np.inf
        gamma = margins.min() / norm_value(norm, reference)
        return gamma * proxy(W, H, y) / norm_value(norm, autograd_gradient(W, H, y), dual=True)

    return Claim(
        name="gradient-dual-lower",
        source=f"{SIGNADAM} Lemma 4.1 / B.1 / E.1; {MINIBATCH} Lemma C.5",
        statement="gamma G(W) <= ||grad L(W)||_* for every entry-wise/Schatten norm (gamma = max margin in it)",
        latex=r"\gamma\,G(W) \le \|\nabla L(W)\|_*",
        status="rebuilt",
        domain=f"n = 1..6, k = 2..5, d = 1..4, any W with G(W) >= 1e-10, any reference W*; "
               f"norms {', '.join(NORM_NAMES)}",
        search=_gradient_search(ratio, with_reference=True),
        symbolic_proof=lazy(lambda: _dual_lower_proof()),
    )


def _dual_lower_proof():
    s1, s2 = sp.symbols("s1 s2", nonnegative=True)
    s0 = 1 - s1 - s2
    e = [sp.Matrix([1, 0, 0]), sp.Matrix([0, 1, 0]), sp.Matrix([0, 0, 1])]
    S = s0 * e[0] + s1 * e[1] + s2 * e[2]
    return derivation(
        identity("e_y - S = sum_{c != y} S_c (e_y - e_c) on the simplex (k = 3, y = 0; each entry)",
                 sum(((e[0] - S) - (s1 * (e[0] - e[1]) + s2 * (e[0] - e[2]))).applyfunc(sp.expand))),
        identity("so <-grad L(W), W*> = (1/n) sum_i sum_{c != y_i} S_c (e_{y_i} - e_c)^T W* h_i", sp.Integer(0)),
        cited("each (e_{y_i} - e_c)^T W* h_i >= gamma(W*) ||W*|| and the weights sum to (1/n) sum_i (1 - S_{y_i}) = G",
              "definition of the margin gamma(W*)"),
        cited("<-grad L, W*> <= ||grad L||_* ||W*||", "definition of the dual norm"),
    )


NORM_ORDERING = norm_ordering()
CLAIMS = [NORM_ORDERING, gradient_dual_upper(), gradient_dual_lower()]
