"""Candidate certificates for the Frobenius and spectral max margins of large data, from the minimax dual.

The max margin in a norm is ``gamma = min_{lambda in simplex} ||Z(lambda)||_*`` with
``Z(lambda) = sum_{i, c != y_i} lambda_ic (e_{y_i} - e_c) h_i^T`` (docs/theory.md section 1; the dual of
:mod:`rates.numeric.margins`). For the Frobenius norm (dual: Frobenius) and the spectral norm (dual: nuclear) this
dual is smooth wherever ``Z`` has full rank in the ``k - 1`` directions that margins see (``Z``'s rows always
sum to zero, so ``1^T Z = 0``), and its gradient is the vector of margins of the steepest direction
``W(lambda)`` of ``Z``: ``Z / ||Z||_F``, resp. the polar factor of ``Z``. So the problem is solved on the
support of ``lambda`` alone -- a few hundred of the ``n (k - 1)`` rows -- never building a program in the
``k d`` unknowns of ``W``:

1. accelerated projected gradient (FISTA with backtracking; Beck & Teboulle, SIAM J. Imaging Sci. 2009) on the
   simplex, two ``k x n x d`` products per step, finds the rows that carry weight;
2. on a working set ``S`` of rows, the KKT conditions ``margin_s(W(lambda)) = t`` for ``s`` in ``S``,
   ``sum_S lambda = 1`` are solved to rounding: for Frobenius a linear system (the hard-margin multiclass SVM's
   ``(A_S A_S^T) mu = 1``), for spectral Newton's method with the exact Hessian of the nuclear norm (the
   derivative of the polar factor, Higham, Functions of Matrices, 2008, section 8.1);
3. rows whose weight comes out negative leave ``S``, rows whose margin falls below ``t`` join it (an active-set
   method, as Lawson & Hanson's NNLS), until neither happens.

Every proposal is only a candidate: the caller scores ``W(lambda)`` on all rows (a lower bound) and
``||Z(lambda)||_*`` on the original data (an upper bound), so nothing here needs to be trusted. Where ``Z`` at the
optimum is rank-deficient the Newton steps stall and the caller falls back to its general solvers.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

FIRST_ORDER_STEPS = 400  # FISTA steps at most; the active-set rounds repair a support that is still rough
FIRST_ORDER_GAP = 1e-3  # stop FISTA once its own bracket is this close (relative)
ACTIVE_SET_ROUNDS = 40
NEWTON_STEPS = 25
NEWTON_RESIDUAL = 1e-14  # relative to t: the margins on the working set agree to rounding
SUPPORT_THRESHOLD = 1e-6  # a weight below this fraction of the largest is outside the first working set


class _Rows:
    """The data as the dual sees them: ``lambda`` as an (n, k) array that is zero at ``(i, y_i)``."""

    def __init__(self, H: np.ndarray, y: np.ndarray, k: int, spectral: bool):
        self.H, self.y, self.k, self.spectral = H, y, k, spectral
        self.n = H.shape[0]
        self.mask = np.ones((self.n, k), dtype=bool)
        self.mask[np.arange(self.n), y] = False
        # an orthonormal basis of the k - 1 directions orthogonal to the all-ones vector, where Z's columns lie
        self.P = np.linalg.qr(np.eye(k) - 1.0 / k)[0][:, :k - 1]

    def Z(self, L: np.ndarray) -> np.ndarray:
        B = -L
        B[np.arange(self.n), self.y] = L.sum(axis=1)
        return B.T @ self.H

    def steepest(self, Z: np.ndarray) -> tuple[np.ndarray, float]:
        """``(W, ||Z||_*)``: the steepest direction of Z (unit norm) and Z's dual norm."""
        if not self.spectral:
            value = float(np.linalg.norm(Z))
            return Z / value, value
        reduced = self.P.T @ Z
        eigenvalues, U = np.linalg.eigh(reduced @ reduced.T)
        singular = np.sqrt(np.clip(eigenvalues, 0.0, None))
        if not singular.min() > 0:
            return np.full_like(Z, np.nan), float(singular.sum())
        return self.P @ ((U / singular) @ (U.T @ reduced)), float(singular.sum())

    def margins(self, W: np.ndarray) -> np.ndarray:
        """(n, k) margins ``(W h_i)_{y_i} - (W h_i)_c``, +inf at ``c = y_i``."""
        logits = self.H @ W.T
        margins = logits[np.arange(self.n), self.y][:, None] - logits
        margins[~self.mask] = np.inf
        return margins

    def project(self, V: np.ndarray) -> np.ndarray:
        """Euclidean projection of the masked entries onto the simplex (Held, Wolfe & Crowder 1974)."""
        values = V[self.mask]
        ordered = np.sort(values)[::-1]
        cumulative = np.cumsum(ordered) - 1.0
        index = np.arange(1, ordered.size + 1)
        positive = ordered - cumulative / index > 0
        shift = cumulative[positive][-1] / index[positive][-1]
        out = np.zeros_like(V)
        out[self.mask] = np.maximum(values - shift, 0.0)
        return out


def _first_order(rows: _Rows, check: Callable[[], None]) -> np.ndarray:
    """FISTA with backtracking on ``min_simplex ||Z(lambda)||_*``; returns the last proximal point."""
    L = rows.mask / rows.mask.sum()
    X, momentum, step = L.copy(), 1.0, 1.0
    for index in range(FIRST_ORDER_STEPS):
        check()
        W, value = rows.steepest(rows.Z(X))
        if not np.all(np.isfinite(W)):
            break
        gradient = rows.margins(W)
        gradient[~rows.mask] = 0.0
        while True:
            candidate = rows.project(X - step * gradient)
            move = candidate - X
            if rows.steepest(rows.Z(candidate))[1] <= value + np.sum(gradient * move) + np.sum(move * move) / (
                    2 * step) + 1e-15 * value:
                break
            step *= 0.5
        following = (1.0 + np.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
        X = candidate + (momentum - 1.0) / following * (candidate - L)
        L, momentum, step = candidate, following, step * 1.1
        if index % 25 == 24:
            W, upper = rows.steepest(rows.Z(L))
            lower = float(rows.margins(W).min())
            if upper - lower <= FIRST_ORDER_GAP * upper:
                break
    return L


def _frobenius_on_support(rows: _Rows, a: np.ndarray, b: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Weights with equal margins on the working set: ``(A_S A_S^T) mu = 1``, normalised to the simplex."""
    gram = (a @ a.T) * (b @ b.T)
    try:
        mu = np.linalg.solve(gram, np.ones(lam.size))
    except np.linalg.LinAlgError:
        mu = np.linalg.lstsq(gram, np.ones(lam.size), rcond=None)[0]
    return mu / mu.sum()


def _spectral_on_support(rows: _Rows, a: np.ndarray, b: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Newton's method on ``margin_S(polar(Z(lambda))) = t``, ``sum lambda = 1``.

    With ``Z = U diag(s) V^T`` (in the k - 1 directions of P) and a row ``A = a b^T``, ``alpha = U^T a``,
    ``beta = V^T b``: the derivative of the polar factor in direction ``A_s'`` paired with ``A_s`` is
    ``sum_ij (alpha'_i beta'_j - alpha'_j beta'_i) alpha_i beta_j / (s_i + s_j)`` (the skew part in the row space)
    plus ``(alpha^T diag(1/s) alpha') (b^T b' - beta^T beta')`` (the part orthogonal to the row space).
    """
    a = a @ rows.P
    gram = b @ b.T
    size = lam.size
    lam = np.clip(lam, 1e-3 / size, None)
    lam = lam / lam.sum()
    for _ in range(NEWTON_STEPS):
        reduced = a.T @ (lam[:, None] * b)
        eigenvalues, U = np.linalg.eigh(reduced @ reduced.T)
        if not eigenvalues.min() > 0:
            break
        singular = np.sqrt(eigenvalues)
        V = (reduced.T @ U) / singular
        W = (U / singular) @ (U.T @ reduced)
        margins = np.sum((a @ W) * b, axis=1)
        t = float(lam @ margins)
        residual = margins - t
        if np.abs(residual).max() <= NEWTON_RESIDUAL * abs(t):
            break
        alpha, beta = a @ U, b @ V
        weights = (1.0 / (singular[:, None] + singular[None, :])).reshape(-1)
        outer = (alpha[:, :, None] * beta[:, None, :]).reshape(size, -1)
        swapped = (beta[:, :, None] * alpha[:, None, :]).reshape(size, -1)
        jacobian = (outer * weights) @ (outer - swapped).T
        jacobian += ((alpha / singular) @ alpha.T) * (gram - beta @ beta.T)
        system = np.zeros((size + 1, size + 1))
        system[:size, :size] = jacobian
        system[:size, size] = -1.0
        system[size, :size] = 1.0
        rhs = np.concatenate([-residual, [0.0]])
        try:
            step = np.linalg.solve(system, rhs)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(system, rhs, rcond=None)[0]
        if not np.all(np.isfinite(step)):
            break
        lam = lam + step[:size]
    return lam


def candidates(H: np.ndarray, y: np.ndarray, k: int, spectral: bool,
               check: Callable[[], None]) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Yield ``(name, W, lambda)`` proposals, ``lambda`` on the rows of
    :func:`rates.numeric.margins.constraint_matrix` (order i, then c != y_i); stop when the active set settles.

    ``check`` is called between steps (it raises when the caller's time budget is spent).
    """
    rows = _Rows(np.asarray(H, dtype=np.float64), np.asarray(y, dtype=np.int64), int(k), spectral)
    L = _first_order(rows, check)
    W, _ = rows.steepest(rows.Z(L))
    yield "first-order dual", W, L[rows.mask]
    active = np.argwhere(L > SUPPORT_THRESHOLD * L.max())
    lam = L[active[:, 0], active[:, 1]]
    solve_on_support = _spectral_on_support if spectral else _frobenius_on_support
    identity = np.eye(k)
    for index in range(ACTIVE_SET_ROUNDS):
        check()
        a = identity[rows.y[active[:, 0]]] - identity[active[:, 1]]
        lam = solve_on_support(rows, a, rows.H[active[:, 0]], lam)
        negative = lam < 0
        if negative.any():
            keep = ~negative
            if not keep.any():
                return
            active, lam = active[keep], lam[keep]
            continue
        L = np.zeros((rows.n, k))
        L[active[:, 0], active[:, 1]] = lam
        W, _ = rows.steepest(rows.Z(L))
        if not np.all(np.isfinite(W)):
            return
        yield f"dual active set {index}", W, L[rows.mask]
        margins = rows.margins(W)
        level = float(margins[active[:, 0], active[:, 1]].min())
        margins[active[:, 0], active[:, 1]] = np.inf
        violated = np.argwhere(margins < level - 1e-13 * abs(level))
        if violated.size == 0:
            return
        order = np.argsort(margins[violated[:, 0], violated[:, 1]], kind="stable")
        violated = violated[order[:max(10, active.shape[0] // 4)]]
        active = np.concatenate([active, violated])
        lam = np.concatenate([lam, np.zeros(violated.shape[0])])
