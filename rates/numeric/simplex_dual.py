"""Candidate certificates for the Frobenius and spectral max margins of large data, from the minimax dual.

The max margin in a norm is ``gamma = min_{lambda in simplex} ||Z(lambda)||_*`` with
``Z(lambda) = sum_{i, c != y_i} lambda_ic (e_{y_i} - e_c) h_i^T`` (docs/theory.md section 1; the dual of
:mod:`rates.numeric.margins`). For the Frobenius norm (dual: Frobenius) and the spectral norm (dual: nuclear) this
dual is smooth wherever ``Z`` has full rank in the ``k - 1`` directions that margins see (each column of ``Z``
sums to zero: ``1^T Z = 0``), and its gradient is the vector of margins of the steepest direction ``W(lambda)``
of ``Z``: ``Z / ||Z||_F``, resp. the polar factor of ``Z``. So the problem is solved on the support of ``lambda``
alone -- a few hundred of the ``n (k - 1)`` rows -- never building a program in the ``k d`` unknowns of ``W``:

1. accelerated projected gradient (FISTA with backtracking; Beck & Teboulle, SIAM J. Imaging Sci. 2009) on the
   simplex, two ``k x n x d`` products per step, finds the rows that carry weight;
2. on a working set ``S`` of rows, the KKT conditions ``margin_s(W(lambda)) = t`` for ``s`` in ``S``,
   ``sum_S lambda = 1`` are solved to rounding: for Frobenius a linear system (the hard-margin multiclass SVM's
   ``(A_S A_S^T) mu = 1``), for spectral a projected Newton method with the exact Hessian of the nuclear norm
   smoothed to ``sum_i sqrt(s_i^2 + eps^2)`` (Lewis & Sendov's formula for spectral functions), eps shrinking
   tenfold per level from 1e-3 of the starting value (continuation: the smoothed optimum is within
   ``(k - 1) eps`` of the true one, and it exists where ``Z`` at the optimum is rank-deficient);
3. a row whose weight reaches zero leaves ``S``, the row whose margin lies lowest below ``t`` joins it (the
   classical primal active-set method, as Lawson & Hanson's NNLS), until no row is below ``t``.

Every proposal is only a candidate: the caller scores ``W(lambda)`` on all rows (a lower bound) and
``||Z(lambda)||_*`` on the original data (an upper bound), so nothing here needs to be trusted. Where ``Z`` at the
optimum is rank-deficient the small singular values are resolved only to ~1e-16 of the largest, the steps stall
above the target accuracy (measured ~1e-5 to 1e-8), and the caller solves an exact small program on the rows found
(:mod:`rates.numeric.spectral_subspace`), whose weights :func:`refined` sharpens by the same Newton steps.
"""

from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np

FIRST_ORDER_STEPS = 400  # FISTA steps at most; the active-set rounds repair a support that is still rough
FIRST_ORDER_GAP = 1e-3  # stop FISTA once its own bracket is this close (relative)
ACTIVE_SET_ROUNDS = 40
NEWTON_STEPS = 25
NEWTON_RESIDUAL = 1e-14  # relative to t: the margins on the working set agree to rounding
# the nuclear norm is smoothed for the first-order steps (singular values s -> sqrt(s^2 + eps^2), eps this fraction
# of the starting nuclear norm): at data whose optimal Z is rank-deficient its polar factor jumps, and the steps stall
SMOOTHING = 1e-3
SMOOTHING_FACTOR = 0.1  # the smoothing of each level of the continuation, relative to the previous level
SMOOTHING_LEVELS = 12  # from 1e-3 to 1e-14 of the starting nuclear norm
SUPPORT_THRESHOLD = 1e-6  # a weight below this fraction of the largest is outside the first working set
JOINING_ROWS = 1  # rows that join the working set per round
FIRST_ORDER_NAME = "first-order dual"


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

    def steepest(self, Z: np.ndarray, smoothing: float = 0.0) -> tuple[np.ndarray, float]:
        """``(W, ||Z||_*)``: the steepest direction of Z (unit norm) and Z's dual norm; with ``smoothing`` eps > 0
        (spectral only), the gradient and value of the smoothed nuclear norm ``sum_i sqrt(s_i^2 + eps^2)``."""
        if not self.spectral:
            value = float(np.linalg.norm(Z))
            return Z / value, value
        reduced = self.P.T @ Z
        eigenvalues, U = np.linalg.eigh(reduced @ reduced.T)
        singular = np.sqrt(np.clip(eigenvalues, 0.0, None) + smoothing ** 2)
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
    smoothing = SMOOTHING * rows.steepest(rows.Z(L))[1] if rows.spectral else 0.0
    X, momentum, step = L.copy(), 1.0, 1.0
    for index in range(FIRST_ORDER_STEPS):
        check()
        W, value = rows.steepest(rows.Z(X), smoothing)
        if not np.all(np.isfinite(W)):
            break
        gradient = rows.margins(W)
        gradient[~rows.mask] = 0.0
        while True:
            candidate = rows.project(X - step * gradient)
            move = candidate - X
            model = value + np.sum(gradient * move) + np.sum(move * move) / (2 * step)
            if rows.steepest(rows.Z(candidate), smoothing)[1] <= model + 1e-15 * value:
                break
            step *= 0.5
        following = (1.0 + np.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
        X = candidate + (momentum - 1.0) / following * (candidate - L)
        L, momentum, step = candidate, following, step * 1.1
        if index % 25 == 24:
            W, upper = rows.steepest(rows.Z(L))
            lower = float(rows.margins(W).min())  # W is the polar factor, of spectral norm 1
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


def _smoothed_polar(a: np.ndarray, b: np.ndarray, lam: np.ndarray, smoothing: float):
    """``(U, s, V, W, value)`` for ``Z = sum_s lam_s a_s b_s^T`` (a in the k - 1 directions of P): Z's thin SVD,
    the gradient ``W = U diag(s / sqrt(s^2 + eps^2)) V^T`` of the smoothed nuclear norm and its value."""
    U, singular, Vt = np.linalg.svd(a.T @ (lam[:, None] * b), full_matrices=False)
    soft = np.sqrt(singular ** 2 + smoothing ** 2)
    return U, singular, Vt.T, (U * (singular / soft)) @ Vt, float(soft.sum())


def _spectral_on_support(rows: _Rows, a: np.ndarray, b: np.ndarray, lam: np.ndarray,
                         smoothing: float) -> np.ndarray:
    """Newton's method for ``min F(Z(lambda))`` over the weights of the working set (``lambda >= 0``,
    ``sum lambda = 1``), F the nuclear norm smoothed to ``sum_i phi(s_i)``, ``phi(s) = sqrt(s^2 + eps^2)``;
    returns weights with zeros where a row reached the bound (the caller drops those rows).

    The gradient is the vector of margins of ``W = U diag(phi'(s)) V^T``. The Hessian of a spectral function
    (Lewis & Sendov, SIAM J. Matrix Anal. Appl. 2001/2002), for rows ``A = a b^T``, ``B = U^T A V`` =
    ``alpha beta^T`` and ``b_perp`` the part of b outside Z's row space, pairs rows s, s' as
    ``1/4 sum_ij [c+_ij (B + B^T)_ij (B' + B'^T)_ij + c-_ij (B - B^T)_ij (B' - B'^T)_ij]
    + sum_i phi'(s_i) / s_i alpha_i alpha'_i <b_perp, b'_perp>`` with ``c+_ij = (phi'(s_i) - phi'(s_j)) / (s_i - s_j)``
    (``phi''(s_i)`` on the diagonal) and ``c-_ij = (phi'(s_i) + phi'(s_j)) / (s_i + s_j)``. Steps keep the weights
    feasible (cut at the first bound) and decrease F (Armijo backtracking), a projected Newton method.
    """
    a = a @ rows.P
    gram = b @ b.T
    size = lam.size
    eps2 = smoothing ** 2
    for _ in range(NEWTON_STEPS):
        U, singular, V, W, value = _smoothed_polar(a, b, lam, smoothing)
        margins = np.sum((a @ W) * b, axis=1)
        residual = margins - float(lam @ margins)
        if np.abs(residual).max() <= NEWTON_RESIDUAL * value:
            return lam
        soft = np.sqrt(singular ** 2 + eps2)
        slope_ = singular / soft  # phi'
        left, right = singular[:, None], singular[None, :]
        soft_l, soft_r = soft[:, None], soft[None, :]
        total = left + right
        with np.errstate(divide="ignore", invalid="ignore"):
            # (phi'(x) - phi'(y)) / (x - y) = eps^2 (x + y) / ((x soft_y + y soft_x) soft_x soft_y), stable at x = y
            plus = eps2 * total / ((left * soft_r + right * soft_l) * soft_l * soft_r)
            minus = (slope_[:, None] + slope_[None, :]) / total
        curvature = eps2 / soft ** 3  # phi''
        plus = np.where(total > 0, plus, np.broadcast_to(curvature[:, None], plus.shape))
        minus = np.where(total > 0, minus, 0.0)
        np.fill_diagonal(plus, curvature)
        alpha, beta = a @ U, b @ V
        outer = (alpha[:, :, None] * beta[:, None, :]).reshape(size, -1)
        swapped = (beta[:, :, None] * alpha[:, None, :]).reshape(size, -1)
        symmetric, skew = outer + swapped, outer - swapped
        hessian = 0.25 * ((symmetric * plus.reshape(-1)) @ symmetric.T + (skew * minus.reshape(-1)) @ skew.T)
        hessian += ((alpha / soft) @ alpha.T) * (gram - beta @ beta.T)
        system = np.zeros((size + 1, size + 1))
        system[:size, :size] = hessian
        system[:size, size] = -1.0
        system[size, :size] = 1.0
        rhs = np.concatenate([-residual, [0.0]])
        try:
            direction = np.linalg.solve(system, rhs)[:size]
        except np.linalg.LinAlgError:
            direction = np.linalg.lstsq(system, rhs, rcond=None)[0][:size]
        slope = float(margins @ direction)
        if not (np.all(np.isfinite(direction)) and slope < 0):
            return lam
        shrinking = direction < 0
        ratios = np.where(shrinking, -lam / np.where(shrinking, direction, -1.0), math.inf)
        bound = float(ratios.min())
        step = min(1.0, bound)
        # near the solution the decrease is below the objective's rounding: take the full step unchecked
        while step > 1e-12 and -slope > 1e-14 * value:
            trial = np.clip(lam + step * direction, 0.0, None)
            if _smoothed_polar(a, b, trial, smoothing)[4] <= value + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            if step <= 1e-12:
                return lam
        trial = np.clip(lam + step * direction, 0.0, None)
        if step == bound:  # the first row to reach zero leaves the working set
            trial[int(np.argmin(ratios))] = 0.0
            return trial
        lam = trial
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
    yield FIRST_ORDER_NAME, W, L[rows.mask]
    active = np.argwhere(L > SUPPORT_THRESHOLD * L.max())
    lam = L[active[:, 0], active[:, 1]]
    if not spectral:
        for proposal in _active_set(rows, active, lam, 0.0, "", check):
            yield proposal[:3]
        return
    # continuation: the smoothed problems' solutions approach the spectral one (each bound moves by at most
    # (k - 1) eps), and each warm-starts the next; a rank-deficient optimum is reached through them
    start = rows.steepest(rows.Z(L))[1]
    for level in range(SMOOTHING_LEVELS):
        smoothing = start * SMOOTHING * SMOOTHING_FACTOR ** level
        for proposal in _active_set(rows, active, lam, smoothing, f"eps {smoothing:.1e} ", check):
            yield proposal[:3]
            active, lam = proposal[3], proposal[4]


def refined(H: np.ndarray, y: np.ndarray, k: int, lam: np.ndarray, levels: tuple[float, ...],
            check: Callable[[], None]) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Spectral only: the smoothed active-set steps from given weights (on the rows of
    :func:`rates.numeric.margins.constraint_matrix`), at the smoothing ``levels`` (fractions of ``||Z(lambda)||_*``);
    proposals as :func:`candidates`, one per level. Weights from an exact solve near the optimum start on the right
    support, so a small smoothing is reached without the continuation's many rounds."""
    rows = _Rows(np.asarray(H, dtype=np.float64), np.asarray(y, dtype=np.int64), int(k), True)
    L = np.zeros((rows.n, rows.k))
    L[rows.mask] = np.clip(lam, 0.0, None)
    active = np.argwhere(L > SUPPORT_THRESHOLD * L.max())
    weights = L[active[:, 0], active[:, 1]]
    weights = weights / weights.sum()
    start = rows.steepest(rows.Z(L / L.sum()))[1]
    for level in levels:
        smoothing = start * level
        for proposal in _active_set(rows, active, weights, smoothing, f"refined eps {smoothing:.1e} ", check):
            yield proposal[:3]
            active, weights = proposal[3], proposal[4]
            break  # the first round on the exact solve's support; rows joining one by one would take long


def _active_set(rows: _Rows, active: np.ndarray, lam: np.ndarray, smoothing: float, tag: str,
                check: Callable[[], None]) -> Iterator[tuple]:
    """Exact solves on a working set of rows (``active``, (i, c) pairs, weights ``lam``); see :func:`candidates`.

    Yields ``(name, W, lambda on all rows, active, lam)`` after each round."""
    k = rows.k
    identity = np.eye(k)
    for index in range(ACTIVE_SET_ROUNDS):
        for _ in range(active.shape[0]):  # rows leave one or a few at a time; each leaving needs a new solve
            check()
            a = identity[rows.y[active[:, 0]]] - identity[active[:, 1]]
            if rows.spectral:
                lam = _spectral_on_support(rows, a, rows.H[active[:, 0]], lam, smoothing)
            else:
                lam = _frobenius_on_support(rows, a, rows.H[active[:, 0]], lam)
            leaving = ~(lam > 0)
            if not leaving.any():
                break
            keep = ~leaving
            if not keep.any():
                return
            active, lam = active[keep], lam[keep] / lam[keep].sum()
        L = np.zeros((rows.n, k))
        L[active[:, 0], active[:, 1]] = lam
        W, _ = rows.steepest(rows.Z(L), smoothing)
        if not np.all(np.isfinite(W)):
            return
        yield f"dual active set {tag}{index}", W, L[rows.mask], active, lam
        margins = rows.margins(W)
        level = float(lam @ margins[active[:, 0], active[:, 1]])
        margins[active[:, 0], active[:, 1]] = np.inf
        violated = np.argwhere(margins < level - 1e-13 * abs(level))
        if violated.size == 0:
            return
        # the most violated rows join with weight 0: the next Newton step raises them (for one row, as in the
        # classical primal active-set method, the step is a descent direction that does; a few at once save rounds)
        order = np.argsort(margins[violated[:, 0], violated[:, 1]], kind="stable")
        violated = violated[order[:JOINING_ROWS]]
        active = np.concatenate([active, violated])
        lam = np.concatenate([lam, np.zeros(violated.shape[0])])
