"""Norm facts and the gradient dual-norm sandwich, for every entry-wise and Schatten norm.

SIGNADAM Lemma 4.1 / B.1 (max-norm; Lemma E.1 for general norms) and MINIBATCH Lemmas C.1 / C.5:
``gamma G(W) <= ||grad L(W)||_* <= 2 B G(W)`` and ``||A||_max <= ||A||, ||A||_* <= ||A||_sum``.
Norms come from :mod:`rates.norms`; the gradient from autograd of the loss (not from Lemma A.1's formula).
"""

from __future__ import annotations

import numpy as np

from proofs.claims import MINIBATCH, SIGNADAM, Claim, SearchProblem
from proofs.crossentropy import (NORM_NAMES, autograd_gradient, data_bound, logits, log_uniform, norm_value,
                                 proxy, random_problem, split)


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
        domain=f"n = 1..6, k = 2..5, d = 1..4, any W with G(W) >= 1e-10 (autograd accuracy); norms {', '.join(NORM_NAMES)}",
        search=_gradient_search(ratio, with_reference=False),
        notes="gradient by autograd; tolerance 1e-7 for its round-off where 1 - S_y is tiny",
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
        domain=f"n = 1..6, k = 2..5, d = 1..4, any W with G(W) >= 1e-10, any reference W*; norms {', '.join(NORM_NAMES)}",
        search=_gradient_search(ratio, with_reference=True),
    )


CLAIMS = [norm_ordering(), gradient_dual_upper(), gradient_dual_lower()]
