"""Exact max margins per norm, certified by two independent formulations; the margin of any W.

Setting (docs/theory.md section 1; SIGNADAM Ass. 3.1, MINIBATCH
Ass. 3.1, both [given]): data ``h_i`` with labels ``y_i`` in ``[k]``, a linear
classifier ``W`` in R^{k x d}, and the constraint matrices ``A_ic = (e_{y_i} - e_c) h_i^T`` for ``c != y_i``.

* Primal:  ``gamma = max_{||W|| <= 1} min_{i, c != y_i} <W, A_ic>``.
* Dual (minimax theorem, the second formulation):
  ``gamma = min_{lambda in simplex} ||sum_ic lambda_ic A_ic||_*``.

Weak duality makes every feasible ``W`` a lower bound (its achieved margin) and every ``lambda`` in the
simplex an upper bound (``||Z(lambda)||_*``), whatever solver produced them. Both bounds are re-evaluated
here in plain float64 from the returned points, so the reported bracket ``[gamma, upper]`` is certified
independently of the solvers' own tolerances.

Algorithm: the primal and the dual are solved as two separate programs -- LPs with HiGHS (dual simplex for
the primal, interior point with crossover for the dual) for the max-/sum-norm; conic programs with cvxpy +
Clarabel (tolerances 1e-13) for Frobenius, spectral, nuclear and entry-wise l_p. The constraint matrix and the
LPs are sparse (2d nonzeros per constraint row), and a wide LP (k d > 3000) skips its separate dual once the
primal's multipliers certify the bracket (:func:`_full_round`). Every candidate ``W`` and
every candidate ``lambda`` is scored exactly; the best of each gives ``gamma`` and ``upper``. Polishing:

* Frobenius: the active-set KKT system ``W = sum_S mu_s A_s``, ``<W, A_s> = 1`` solved by linear algebra
  closes the bracket to rounding;
* conic norms: a re-solve on the nearly active constraints with constraint generation (the interior-point
  SDPs stall near 1e-9 on the full, degenerate problem, not on the reduced one); if the target is still
  missed, whole rounds are repeated with other Clarabel settings, keeping the best certificates.

Measured (38 random Gaussian problems, k <= 5, d <= 10, n <= 70, plus the presets): worst certified
bracket max/sum ~1e-13, Frobenius 2e-11, spectral 1.1e-10, nuclear 3e-11, lp:1.5/3/4 2e-11.

Large programs (more than :data:`WORKING_SET_ENTRIES` constraint rows x unknowns) are solved on a working set
of rows, adding the rows a solution violates (constraint generation). A max-/sum-norm LP keeps one HiGHS model
(highspy) across the rounds, so the dual simplex resumes from the last optimal basis after rows are added
(:func:`_lp_working_set`); smaller ones take scipy's ``linprog`` on the whole program as before, so their
solutions are the same vertices. The max-norm optimum is a vertex with few active rows: Gaussian k = 10,
d = 784, n = 2000 (18,000 rows, 7,840 unknowns) has 292 active rows and 291 entries of W inside the box;
the working set ends at ~1,350-1,650 rows after ~17 rounds, 16-20 s of CPU in all (16,000 simplex pivots),
certified to ~1e-12 (scipy's dual simplex on a working set rebuilt every round: about 200 s of CPU);
k = 10, d = 100, n = 1000: 2.4 s of CPU (7.3 s before). Measured alternatives that were slower at that size:
HiGHS's interior point with or without crossover on the same working sets (as slow as the dual simplex per
row, and only 2e-9 without crossover), bigger first working sets or steps (27,000 pivots from 1,960 rows),
fixing the entries at the box and generating columns (the free set grew to 70 % of W), and a smoothed
first-order method (gap 4e-2 after 2,000 iterations at d = 100).

Large Frobenius and spectral programs (more than :data:`SIMPLEX_DUAL_ENTRIES` constraint entries) are first
solved on the dual's support (:mod:`rates.numeric.simplex_dual`: first-order steps on the simplex, then Newton's
method on an active set of rows), proposing points to the same pool; the general solvers run only when that
leaves the bracket open. Measured (Gaussian, k = 10, sigma 0.3, load ~4): d = 100, n = 1000, Frobenius 5 s
(bracket 2e-15), spectral 6 s (8e-12, against 475 s for the interior-point working set); d = 784, n = 2000,
Frobenius 13 s (4e-15). A spectral optimum whose dual matrix is rank-deficient slows the smoothed Newton path
(the d = 784 one: Z has rank 1 of 9 at the optimum, and the path's primal stalls near 1e-8); once the path's bracket
is below :data:`SUBSPACE_HANDOVER`, its rows go to an exact small SDP on the span of their samples
(:mod:`rates.numeric.spectral_subspace`, constraint generation, its weights refined by Newton's steps): d = 784,
n = 2000, 346 rows of 288 samples, two programs of ~8 s, spectral certified to 2.6e-10 in 22 s (31 s of CPU, load
~1; 41 s at load 3.2-4.5), where before the general solvers did not fit in memory; d = 100, n = 1000 now also ends
there, 1.6 s (3.7e-12).

When neither program finds a positive margin, a scale-free feasibility LP (``M w >= 1`` on the equilibrated
matrix) decides separability: only infeasibility is reported as "not separable"; a separable problem whose
bounds do not meet is reported as not certified, with both bounds (never as non-separable).

Guarantee: ``gamma`` is the achieved margin of ``W`` (``||W|| = 1``), a certified lower bound, and
``(upper - gamma) / gamma`` is a certified relative accuracy; :func:`max_margin` raises
:class:`~rates.errors.SolverError` when it exceeds ``TOLERANCE_FAIL``.

Reference: the minimax dual is the standard Lagrangian dual of the hard-margin program (e.g. SIGNADAM
Lemma B.4's use of ``gamma``; Crammer & Singer, JMLR 2001, for Frobenius).

Why one module (about 1,200 lines): the two formulations certify each other. Every norm's primal solve, the
dual evaluation and the certification pool share one constraint builder and one tolerance; split per norm or per
solver, the certificate that makes a margin trustworthy would be written once per piece.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Protocol, Union

import numpy as np
from scipy import sparse

from rates.errors import InputError, NotSeparableError, SolverError
from rates.lazy import lazy_module
from rates.norms import Norm, SchattenNorm, parse_norm
from rates.progress import phase

torch = lazy_module("torch", globals())  # a max margin read from the cache (a warm `rates run`) needs no torch


class Dataset(Protocol):
    """What the solver reads from a data set (:class:`rates.numeric.data.Dataset` has it); a protocol, so that this
    module never imports :mod:`rates.numeric.data`, which imports this one for its separability check."""

    H: np.ndarray
    y: np.ndarray
    k: int


NormLike = Union[str, Norm]

TARGET_ACCURACY = 1e-9  # docs/theory.md section 7: gamma to <= 1e-9 relative
POLISH_GOAL = 1e-11  # cheap active-set polishing continues until here, retries with other settings stop at target
TOLERANCE_FAIL = 1e-7  # beyond this the bracket is not trusted at all and the solve fails loudly
CROSSING_BY_ROUNDING = 1e-12  # relative: bounds crossing by less are equal up to float rounding
WIDE_LP_UNKNOWNS = 3000  # above this many entries of W, an LP's separate dual solve is skipped once certified
# constraint rows x unknowns above which an LP is first solved on a working set of rows (constraint generation);
# below it the whole LP is solved at once, as always (the presets' solutions stay the same vertices, bit for bit)
WORKING_SET_ENTRIES = 2_000_000
WORKING_SET_ROUNDS = 12
WORKING_SET_START = 200  # rows of the first working set (at least; a quarter of the unknowns when more)
WORKING_SET_STEP = 100  # violated rows added per round (at least; half the working set when more)
# a large LP keeps one HiGHS model across rounds (:func:`_lp_working_set`): it starts from fewer rows and adds
# fewer per round than the conic programs, since the dual simplex resumes from the last optimal basis
LP_START_FRACTION = 32  # first working set: the unknowns / this many rows (at least WORKING_SET_START)
LP_STEP_FRACTION = 100  # rows added per round: the unknowns / this many (at least WORKING_SET_STEP)
LP_ROUNDS = 400  # the working set grows every round until no row is violated; this bounds a pathological case
# above this many entries the Frobenius and spectral max margins are first solved on the dual's support
# (:mod:`rates.numeric.simplex_dual`); below it they take the general path, as always
SIMPLEX_DUAL_ENTRIES = 2_000_000
SIMPLEX_DUAL_STALLED = 20  # proposals in a row that do not narrow the bracket end that path
# a spectral program the smoothed path leaves open is then solved on the span of its nearly active samples
# (:mod:`rates.numeric.spectral_subspace`), adding violated rows
SUBSPACE_ROUNDS = 6
SUBSPACE_HANDOVER = 1e-6  # the smoothed path's relative gap at which its rows are handed to those programs
SUBSPACE_NEAR = 1e-3  # rows within this fraction of gamma of the best W's minimum margin start in the program
SUBSPACE_STEP = 100  # violated rows added per round (the lowest first)
SUBSPACE_SMOOTHING = (1e-10, 1e-12)  # smoothing levels of the Newton steps that refine each program's weights
NOT_SEPARABLE = 1e-9  # a dual certificate this small (data scaled to unit max entry) means gamma = 0


@dataclass
class MarginResult:
    """A certified max margin: ``gamma <= true max margin <= upper``, both evaluated from returned points."""

    gamma: float
    W: np.ndarray
    norm: str
    solver: str
    accuracy: float
    upper: float
    checks: dict = field(default_factory=dict)
    # the certificate of ``upper``: weights on the rows of :func:`constraint_matrix` (order i, then c != y_i),
    # in the simplex, with ``upper = ||sum_r dual_r A_r||_*`` on the original data
    dual: np.ndarray = field(default_factory=lambda: np.zeros(0))


# ----------------------------------------------------------------------------------------------------------
# margins of a given W


def unnormalized_margins(W: torch.Tensor, H: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``min_{i, c != y_i} (W h_i)_{y_i} - (W h_i)_c`` for W of shape (..., k, d); result has shape (...).

    H is (n, d), y is (n,) int64. Differences of logits are formed directly (no softmax), so the value is
    exact up to float rounding even when the logits are in the thousands.
    """
    logits = W @ H.transpose(-2, -1).to(device=W.device, dtype=W.dtype)  # (..., k, n)
    index = y.to(device=W.device, dtype=torch.long).expand(*logits.shape[:-2], 1, -1)
    correct = torch.gather(logits, -2, index)  # (..., 1, n)
    others = logits.scatter(-2, index, torch.full_like(correct, -math.inf))  # drop c = y_i from the min
    return (correct - others).amin(dim=(-2, -1))


def margin_of(W: np.ndarray, ds: Dataset, norm: NormLike) -> float:
    """Normalised margin ``min_{i, c != y_i} (e_{y_i} - e_c)^T W h_i / ||W||`` (docs/theory.md section 1)."""
    norm = _as_norm(norm)
    Wt = torch.as_tensor(np.asarray(W, dtype=np.float64))
    value = float(norm.value(Wt))
    if not value > 0:
        raise InputError("W", "the margin of W = 0 is undefined")
    H = torch.tensor(np.asarray(ds.H), dtype=torch.float64)
    y = torch.tensor(np.asarray(ds.y), dtype=torch.int64)
    return float(unnormalized_margins(Wt, H, y)) / value


# ----------------------------------------------------------------------------------------------------------
# the two formulations


def _as_norm(norm: NormLike) -> Norm:
    return norm if isinstance(norm, Norm) else parse_norm(norm, "norm")


def _check_supported(norm: Norm) -> None:
    if not (norm.polyhedral or norm.has_conic_form):
        raise InputError(
            "norm",
            f"the max-margin solver cannot handle {norm.name} (no conic form for it here); supported: max, sum, "
            "frobenius, spectral, nuclear, lp:P (entry-wise, 1 <= P <= inf), schatten:1/2/inf",
        )


def constraint_matrix(H: np.ndarray, y: np.ndarray, k: int) -> sparse.csr_array:
    """Rows ``vec(A_ic)`` (row-major vec of the k x d matrix) for every i and c != y_i: shape (n(k-1), k d).

    Sparse: a row holds ``h_i`` in block ``y_i`` and ``-h_i`` in block ``c``, so 2d of its kd entries; a dense
    matrix would cost k/2 times more, and the LPs built on it (identity blocks of size kd) (kd)^2.
    """
    n, d = H.shape
    rows_i = np.repeat(np.arange(n), k)
    rows_c = np.tile(np.arange(k), n)
    keep = rows_c != y[rows_i]
    rows_i, rows_c = rows_i[keep], rows_c[keep]
    m = rows_i.size
    features = np.arange(d)
    # built in CSR's canonical form (column indices sorted within each row: the lower class's block first), the
    # form a COO build would sort into, without the sort (seconds at n (k-1) = 18,000, d = 784)
    labels = y[rows_i]
    low, high = np.minimum(labels, rows_c), np.maximum(labels, rows_c)
    columns = np.concatenate([low[:, None] * d + features, high[:, None] * d + features], axis=1)
    first = H[rows_i]
    first[labels > rows_c] *= -1.0  # the block of y_i holds h_i, the other -h_i
    values = np.concatenate([first, -first], axis=1)
    M = sparse.csr_array((values.reshape(-1), columns.reshape(-1), np.arange(0, 2 * d * m + 1, 2 * d)),
                         shape=(m, k * d))
    M.has_sorted_indices = True
    M.eliminate_zeros()
    return M


@dataclass
class _Problem:
    M: sparse.csr_array  # (m, k d) constraint rows, data scaled by 1/scale
    k: int
    d: int
    norm: Norm

    def lower(self, W: np.ndarray, margins: np.ndarray | None = None) -> float:
        """Achieved margin of W on the scaled data (a certified lower bound on the scaled gamma); ``margins`` is
        ``M @ vec(W)`` when the caller has it already."""
        value = float(self.norm.value(torch.as_tensor(W)))
        if not value > 0 or not np.all(np.isfinite(W)):
            return -math.inf
        W = np.asarray(W, dtype=np.float64)
        return float(np.min(self.M @ W.reshape(-1) if margins is None else margins)) / value

    def upper(self, lam: np.ndarray) -> float:
        """``||Z(lambda)||_*`` for lambda projected onto the simplex (a certified upper bound)."""
        lam = np.clip(np.nan_to_num(np.asarray(lam, dtype=np.float64)), 0.0, None)
        total = lam.sum()
        if not total > 0:
            return math.inf
        Z = (self.M.T @ (lam / total)).reshape(self.k, self.d)
        return float(self.norm.dual_value(torch.as_tensor(Z)))

    def steepest_of_dual(self, lam: np.ndarray) -> np.ndarray:
        """KKT: an optimal W maximises <Z(lambda*), W> on the unit ball, i.e. it is Z's steepest direction."""
        lam = np.clip(np.nan_to_num(np.asarray(lam, dtype=np.float64)), 0.0, None)
        Z = (self.M.T @ lam).reshape(self.k, self.d)
        return self.norm.steepest(torch.as_tensor(Z)).numpy()


def _lp_primal(problem: _Problem, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """max t s.t. M w >= t, ||w|| <= 1 for the max-norm (box) or the sum-norm (w = w+ - w-)."""
    from scipy.optimize import linprog

    m, D = problem.M.shape
    if math.isinf(problem.norm.p):
        c = np.zeros(D + 1)
        c[-1] = -1.0
        A_ub = sparse.hstack([-problem.M, sparse.csr_array(np.ones((m, 1)))], format="csc")
        bounds = np.array([(-1.0, 1.0)] * D + [(-np.inf, np.inf)])
        res = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method="highs-ds")
        _require(res, "highs-ds primal LP")
        return res.x[:D].reshape(problem.k, problem.d), -res.ineqlin.marginals
    c = np.zeros(2 * D + 1)
    c[-1] = -1.0
    A_ub = sparse.vstack([
        sparse.hstack([-problem.M, problem.M, sparse.csr_array(np.ones((m, 1)))]),
        sparse.hstack([sparse.csr_array(np.ones((1, 2 * D))), sparse.csr_array(np.zeros((1, 1)))]),
    ], format="csc")
    b_ub = np.concatenate([np.zeros(m), [1.0]])
    bounds = [(0.0, None)] * (2 * D) + [(None, None)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs-ds")
    _require(res, "highs-ds primal LP")
    return (res.x[:D] - res.x[D:2 * D]).reshape(problem.k, problem.d), -res.ineqlin.marginals[:m]


def _column_scales(M) -> np.ndarray:
    """Max absolute entry of each column of M (1 for an all-zero column)."""
    scales = abs(sparse.csc_array(M)).max(axis=0).toarray().reshape(-1)
    scales[~(scales > 0)] = 1.0
    return scales


def _lp_primal_equilibrated(problem: _Problem) -> tuple[np.ndarray, np.ndarray]:
    """The max-norm primal in the variables ``v = s * w`` (s the column scales of M): the same LP with every
    column of unit max entry and the box ``|v_l| <= s_l``, for data whose features differ by many orders of
    magnitude (the plain LP then loses the small features below HiGHS's tolerances)."""
    from scipy.optimize import linprog

    scales = _column_scales(problem.M)
    m, D = problem.M.shape
    scaled = problem.M @ sparse.diags_array(1.0 / scales)
    c = np.zeros(D + 1)
    c[-1] = -1.0
    A_ub = sparse.hstack([-scaled, sparse.csr_array(np.ones((m, 1)))], format="csc")
    box = scales / scales.min()  # the LP is homogeneous: any positive multiple of the box has the same optimum
    bounds = np.vstack([np.column_stack([-box, box]), [-np.inf, np.inf]])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method="highs-ds")
    _require(res, "highs-ds primal LP (equilibrated columns)")
    return (res.x[:D] / scales).reshape(problem.k, problem.d), -res.ineqlin.marginals


def _lp_dual(problem: _Problem, options: dict) -> np.ndarray:
    """min over the simplex of ||M^T lambda||_* : sum-norm (for max) or max-norm (for sum), as an LP."""
    from scipy.optimize import linprog

    m, D = problem.M.shape
    MT = problem.M.T
    if math.isinf(problem.norm.p):  # dual norm l1: min sum u, -u <= M^T lam <= u
        c = np.concatenate([np.zeros(m), np.ones(D)])
        identity = sparse.eye_array(D, format="csr")
        A_ub = sparse.vstack([sparse.hstack([MT, -identity]), sparse.hstack([-MT, -identity])], format="csc")
        bounds = [(0.0, None)] * (m + D)
    else:  # dual norm l_inf: min s, -s <= M^T lam <= s
        c = np.concatenate([np.zeros(m), [1.0]])
        column = sparse.csr_array(-np.ones((D, 1)))
        A_ub = sparse.vstack([sparse.hstack([MT, column]), sparse.hstack([-MT, column])], format="csc")
        bounds = [(0.0, None)] * (m + 1)
    A_eq = np.concatenate([np.ones(m), np.zeros(c.size - m)])[None, :]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=[1.0], bounds=bounds,
                  method="highs-ipm")
    _require(res, "highs-ipm dual LP")
    return res.x[:m]


def _require(res, what: str) -> None:
    if res.status != 0:
        raise SolverError(f"{what} failed: {res.message}")


_CLARABEL_OPTIONS = dict(tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13, tol_ktratio=1e-10,
                         max_iter=400)
# Interior-point SDPs (spectral, nuclear) stall near 1e-9 relative gap at points that depend on the linear
# algebra path; any W is a valid lower bound and any lambda a valid upper bound, so re-solving with other
# settings and keeping the best certificate of each side is a sound way to narrow the bracket.
_RETRY_OPTIONS = (
    dict(direct_solve_method="faer"),
    dict(max_step_fraction=0.9),
    dict(equilibrate_enable=False),
    dict(direct_solve_method="faer", max_step_fraction=0.9),
    dict(max_step_fraction=0.8, equilibrate_enable=False),
)


class OverBudgetError(SolverError):
    """A max margin solved under a time budget (:func:`max_margin`'s ``budget_seconds``) ran past it."""


_DEADLINE: list[float] = []  # perf_counter() deadline of the solve in progress, when it has a budget


def _check_deadline(what: str) -> dict:
    """Clarabel's time limit for the next program (``{}`` without a budget); raises once the budget is spent."""
    if not _DEADLINE:
        return {}
    left = _DEADLINE[-1] - time.perf_counter()
    if not left > 0:
        raise OverBudgetError(f"{what}: time budget spent")
    return {"time_limit": left}


def _solve_cvx(problem_cvx, what: str, options: dict) -> None:
    import cvxpy as cp

    limit = _check_deadline(what)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            problem_cvx.solve(solver=cp.CLARABEL, **{**_CLARABEL_OPTIONS, **options, **limit})
        except cp.error.SolverError as exc:
            raise SolverError(f"{what} failed: {exc}") from None
    if limit and problem_cvx.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        _check_deadline(what)  # raises when the time limit stopped it
    if problem_cvx.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"{what} failed: status {problem_cvx.status}")


def _conic_primal(problem: _Problem, options: dict) -> tuple[np.ndarray, np.ndarray]:
    import cvxpy as cp

    W = cp.Variable((problem.k, problem.d))
    t = cp.Variable()
    w = cp.vec(W, order="C")
    margin_constraint = problem.M @ w >= t
    prob = cp.Problem(cp.Maximize(t), [margin_constraint, problem.norm.cvxpy(W, w) <= 1])
    _solve_cvx(prob, "clarabel primal conic program", options)
    return np.asarray(W.value, dtype=np.float64), np.asarray(margin_constraint.dual_value, dtype=np.float64)


def _conic_dual(problem: _Problem, options: dict) -> np.ndarray:
    import cvxpy as cp

    m = problem.M.shape[0]
    lam = cp.Variable(m, nonneg=True)
    z = problem.M.T @ lam
    Z = cp.reshape(z, (problem.k, problem.d), order="C")
    prob = cp.Problem(cp.Minimize(problem.norm.dual().cvxpy(Z, z)), [cp.sum(lam) == 1])
    _solve_cvx(prob, "clarabel dual conic program", options)
    return np.asarray(lam.value, dtype=np.float64)


def _frobenius_polish(problem: _Problem, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Active-set KKT solve for the Frobenius max margin (hard-margin multiclass SVM).

    With S the support (lambda_s > 0), the minimum-norm W with ``<W, A_s> = 1`` on S is
    ``W = A_S^T mu``, ``(A_S A_S^T) mu = 1``. If mu >= 0 and every other margin is >= 1 this is the exact
    optimum, and ``lambda = mu / sum(mu)`` certifies it: ``||Z(lambda)||_F = 1/||W||_F`` = achieved margin.
    """
    lam = np.clip(lam, 0.0, None)
    if not lam.max() > 0:
        return None
    for threshold in (1e-6, 1e-8, 1e-4, 1e-10):
        support = np.flatnonzero(lam > threshold * lam.max())
        A_S = problem.M[support]
        mu, *_ = np.linalg.lstsq((A_S @ A_S.T).toarray(), np.ones(support.size), rcond=None)
        W = A_S.T @ mu
        if np.all(mu >= -1e-12) and np.min(problem.M @ W) >= 1 - 1e-12:
            full = np.zeros_like(lam)
            full[support] = np.clip(mu, 0.0, None)
            return W.reshape(problem.k, problem.d), full
    return None


def _frobenius_ldp(problem: _Problem, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The Frobenius max margin as least-distance programming, solved exactly by non-negative least squares.

    ``min ||w||_2 s.t. M w >= 1`` (the margin is ``1 / ||w||``) is an LDP; Lawson & Hanson (Solving Least
    Squares Problems, 1974, ch. 23) reduce it to NNLS: ``u = argmin_{u >= 0} ||E u - f||`` with
    ``E = [M^T; 1^T]``, ``f = e_{D+1}``, then ``w = -r_{1..D} / r_{D+1}`` for ``r = E u - f``, and ``u`` are
    the multipliers. An active-set method with dense linear algebra: for a working set of rows (a few
    thousand), not the whole program; both points are scored exactly by the caller, like the conic solver's.
    """
    from scipy.optimize import nnls

    m, D = problem.M.shape
    E = np.vstack([problem.M.toarray().T, np.ones((1, m))])
    f = np.zeros(D + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=max(50 * m, 1000))
    r = E @ u - f
    if not abs(r[-1]) > 0:
        raise SolverError("Frobenius least-distance program failed: the working set's rows are not separable")
    return (-r[:D] / r[-1]).reshape(problem.k, problem.d), u


_SOLVERS: dict[str, tuple[str, Callable, Callable]] = {
    "lp": ("highs-lp", _lp_primal, _lp_dual),
    "conic": ("clarabel-conic", _conic_primal, _conic_dual),
}


# ----------------------------------------------------------------------------------------------------------
# the public solver


_CACHE: dict[tuple, MarginResult] = {}


def data_digest(H: np.ndarray, y: np.ndarray) -> str:
    """sha256 of the data's shapes and float64 / int64 bytes: the identity of a problem in every cache."""
    digest = hashlib.sha256()
    for array in (np.ascontiguousarray(H, dtype=np.float64), np.ascontiguousarray(y, dtype=np.int64)):
        digest.update(str(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _cache_key(H: np.ndarray, y: np.ndarray, k: int, norm: Norm) -> tuple:
    return data_digest(H, y), int(k), norm.kind, norm.p


def _copy(result: MarginResult) -> MarginResult:
    return replace(result, W=result.W.copy(), checks=dict(result.checks), dual=result.dual.copy())


def max_margin(ds: Dataset, norm: NormLike, budget_seconds: float | None = None) -> MarginResult:
    """Max margin ``gamma`` of ``ds`` in ``norm`` and a maximiser W with ``||W|| = 1``, certified.

    Raises :class:`~rates.errors.NotSeparableError` (parameter ``data``) when gamma <= 0,
    :class:`~rates.errors.InputError` (parameter ``norm``) for a norm without a conic form here (general
    Schatten-p), :class:`~rates.errors.SolverError` when the certified bracket exceeds ``TOLERANCE_FAIL``.
    Results are cached on (data bytes, norm): in memory, and on disk (:mod:`rates.cache`) for the norm kinds
    of :mod:`rates.norms`, so a later process gets the same result bit for bit without cvxpy or scipy.

    ``budget_seconds`` bounds a conic solve (a side measure's): past it :class:`OverBudgetError` is raised
    and nothing is cached, so a later call without a budget solves it.
    """
    norm = _as_norm(norm)
    _check_supported(norm)
    H = np.asarray(ds.H, dtype=np.float64)
    y = np.asarray(ds.y, dtype=np.int64)
    key = _cache_key(H, y, ds.k, norm)
    if key not in _CACHE:
        if budget_seconds is not None:
            _DEADLINE.append(time.perf_counter() + float(budget_seconds))
        try:
            _CACHE[key] = _solve_or_load(H, y, int(ds.k), norm, key)
        finally:
            if budget_seconds is not None:
                _DEADLINE.pop()
    return _copy(_CACHE[key])


def is_held(ds: Dataset, norm: NormLike) -> bool:
    """Whether the max margin of ``ds`` in ``norm`` is held in this process's memory (a call returns at once)."""
    H, y = np.asarray(ds.H, dtype=np.float64), np.asarray(ds.y, dtype=np.int64)
    return _cache_key(H, y, ds.k, _as_norm(norm)) in _CACHE


def solved_for(ds: Dataset) -> dict[tuple, MarginResult]:
    """Every max margin of ``ds`` held in this process's memory (all norms solved so far), by cache key."""
    digest = data_digest(np.asarray(ds.H, dtype=np.float64), np.asarray(ds.y, dtype=np.int64))
    return {key: result for key, result in _CACHE.items() if key[0] == digest}


def remember(solved: dict[tuple, MarginResult]) -> None:
    """Hold max margins solved in another process (:func:`solved_for` there), so that :func:`max_margin`
    returns them here as it would have computed them: the same solver on the same bytes gives the same bits."""
    _CACHE.update(solved)


def clear_cache() -> None:
    """Forget every max margin solved so far: in memory and on disk."""
    from rates import cache

    _CACHE.clear()
    cache.clear(DISK_KIND)


# ----------------------------------------------------------------------------------------------------------
# the on-disk cache


DISK_KIND = "margins"
# everything _solve's answer can depend on besides the data and the norm (the source of rates/ comes on top)
_SOLVER_LIBRARIES = ("numpy", "scipy", "torch", "cvxpy", "clarabel", "highspy")


def _disk_key(memory_key: tuple, norm: Norm) -> str | None:
    """The on-disk key, or ``None`` for a norm kind defined outside :mod:`rates.norms` (a user's kind, whose
    code the fingerprint of ``rates`` does not cover)."""
    from rates import cache

    if type(norm).__module__ != parse_norm.__module__:
        return None
    return cache.key_for("max_margin", memory_key, norm.name, packages=("rates",), libraries=_SOLVER_LIBRARIES)


def _encode(result: MarginResult) -> dict:
    return {"gamma": result.gamma, "W": result.W.tolist(), "norm": result.norm, "solver": result.solver,
            "accuracy": result.accuracy, "upper": result.upper, "checks": result.checks,
            "dual": result.dual.tolist()}


def _decode(value: dict) -> MarginResult:
    return MarginResult(gamma=float(value["gamma"]), W=np.array(value["W"], dtype=np.float64),
                        norm=str(value["norm"]), solver=str(value["solver"]), accuracy=float(value["accuracy"]),
                        upper=float(value["upper"]), checks=dict(value["checks"]),
                        dual=np.array(value["dual"], dtype=np.float64))


def _solve_or_load(H: np.ndarray, y: np.ndarray, k: int, norm: Norm, memory_key: tuple) -> MarginResult:
    """:func:`_solve`, or its saved answer: a result, or the NotSeparableError it raised (same message)."""
    from rates import cache

    disk_key = _disk_key(memory_key, norm)
    saved = cache.load(DISK_KIND, disk_key) if disk_key is not None else None
    if isinstance(saved, dict):
        try:
            if "not_separable" in saved:
                raise NotSeparableError("data", str(saved["not_separable"]))
            return _decode(saved)
        except (KeyError, TypeError, ValueError):
            pass  # an entry of another layout: solve again and overwrite it
    _check_memory(H.shape[0], k, H.shape[1], norm)
    try:
        # wide data (d = 1e4) takes minutes here, with nothing else on the screen
        with phase(f"max margin: {norm.name}-norm program, n = {H.shape[0]}, d = {H.shape[1]}, k = {k}"), \
                _one_blas_thread():
            result = _solve(H, y, k, norm)
    except NotSeparableError as err:
        if disk_key is not None:
            cache.store(DISK_KIND, disk_key, {"not_separable": err.message})
        raise
    if disk_key is not None:
        cache.store(DISK_KIND, disk_key, _encode(result))
    return result


@contextmanager
def _one_blas_thread():
    """NumPy's BLAS on one thread while solving: the solvers' dense algebra is small (systems of a few hundred rows,
    products of k x n x d), where a second thread only waits. Measured on a shared 2-core machine (load 8): 200
    solves of 272 x 272 took 1.97 s of CPU on OpenBLAS's two threads and 0.13 s on one; the spectral max margin of
    sklearn's digits took 15-17 s of CPU on one thread, against 205 s (profiled) on two at load 8-15."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _check_memory(n: int, k: int, d: int, norm: Norm, general: bool = False) -> None:
    """Refuse, before building it, a program the memory available now cannot hold (one line, exit 2).

    A large Frobenius or spectral program is first solved on its dual's support (:func:`_simplex_dual_rounds`):
    the sparse constraint matrix, as for an LP, and dense blocks of the support's size; ``general`` asks for the
    general solvers' needs, checked again only when that path leaves the bracket open.
    """
    from rates import budget

    if not general and n * (k - 1) * k * d > SIMPLEX_DUAL_ENTRIES and _smooth_dual(norm):
        budget.check_max_margin(n, k, d, norm.name, semidefinite=False, conic=False)
        return
    semidefinite = isinstance(norm, SchattenNorm) and not norm.is_frobenius
    # a large Frobenius program is solved on a working set by NNLS (:func:`_frobenius_ldp`): the sparse matrix as
    # for an LP, plus the dense working-set block, at most k d rows of k d + 1 entries in the measured cases
    ldp = norm.is_frobenius and n * (k - 1) * k * d > WORKING_SET_ENTRIES
    budget.check_max_margin(n, k, d, norm.name, semidefinite=semidefinite, conic=not (norm.polyhedral or ldp),
                            dense_rows=min(n * (k - 1), k * d) if ldp else 0)


class _Pool:
    """Candidate maximisers W (lower bounds) and simplex weights lambda (upper bounds), scored exactly."""

    def __init__(self, problem: _Problem):
        self.problem = problem
        self.lowers: dict[str, float] = {}
        self.uppers: dict[str, float] = {}
        self.W: dict[str, np.ndarray] = {}
        self.lam: dict[str, np.ndarray] = {}

    def add_W(self, name: str, W: np.ndarray, margins: np.ndarray | None = None) -> None:
        self.W[name] = np.asarray(W, dtype=np.float64).reshape(self.problem.k, self.problem.d)
        self.lowers[name] = self.problem.lower(self.W[name], margins)

    def add_lam(self, name: str, lam: np.ndarray) -> None:
        self.lam[name] = np.asarray(lam, dtype=np.float64)
        self.uppers[name] = self.problem.upper(self.lam[name])

    def best(self) -> tuple[str, float, str, float]:
        best_W = max(self.lowers, key=self.lowers.get)
        best_lam = min(self.uppers, key=self.uppers.get)
        return best_W, self.lowers[best_W], best_lam, self.uppers[best_lam]

    def certified(self, goal: float = TARGET_ACCURACY) -> bool:
        _, lower, _, upper = self.best()
        return lower > 0 and upper - lower <= goal * lower


def _full_round(problem: _Problem, primal, dual, options: dict, tag: str, pool: _Pool) -> None:
    """Solve both formulations on all constraints; pool the solutions and the points derived from them.

    On a wide LP (k d above :data:`WIDE_LP_UNKNOWNS`) the dual program is solved only when the primal's own
    multipliers leave the bracket open: every lambda is scored exactly whichever solver produced it, so the
    certificate stays sound, and the interior-point dual grows much faster than the simplex primal
    (measured k = 3, n = 60: d = 6000 primal 2.7 s, dual 24 s; d = 20000 about 4 min for the dual).
    """
    W_primal, lam_from_primal = primal(problem, options)
    pool.add_W(f"primal{tag}", W_primal)
    pool.add_lam(f"primal multipliers{tag}", lam_from_primal)
    if problem.norm.polyhedral and problem.k * problem.d > WIDE_LP_UNKNOWNS and pool.certified(POLISH_GOAL):
        return
    lam_dual = dual(problem, options)
    pool.add_W(f"steepest(dual Z){tag}", problem.steepest_of_dual(lam_dual))
    pool.add_lam(f"dual{tag}", lam_dual)
    # norm-specific points of the optimal face (the spectral norm's polar factor on the positive singular values)
    Z_dual = (problem.M.T @ np.clip(lam_dual, 0.0, None)).reshape(problem.k, problem.d)
    for index, point in enumerate(problem.norm.face_points(Z_dual)):
        pool.add_W(f"polar face(dual Z){'' if index == 0 else index}{tag}", point)
    if problem.norm.is_frobenius:
        for source, lam in (("dual", lam_dual), ("primal multipliers", lam_from_primal)):
            polished = _frobenius_polish(problem, lam)
            if polished is not None:
                pool.add_W(f"kkt polish({source}){tag}", polished[0])
                pool.add_lam(f"kkt polish({source}){tag}", polished[1])


def _smooth_dual(norm: Norm) -> bool:
    """Frobenius and spectral: norms whose dual (:mod:`rates.numeric.simplex_dual`) is smooth at a generic optimum."""
    return norm.is_frobenius or (isinstance(norm, SchattenNorm) and math.isinf(norm.p))


def _simplex_dual_rounds(problem: _Problem, H: np.ndarray, y: np.ndarray, k: int, pool: _Pool) -> int:
    """Pool the proposals of :func:`rates.numeric.simplex_dual.candidates` (first-order dual, then the exact KKT
    conditions on an active set of rows) until certified; returns the number of rows carrying weight at the end.

    Each W is scored on all rows and each lambda on the original data, as every other candidate; the path ends
    early when :data:`SIMPLEX_DUAL_STALLED` proposals in a row leave the bracket as it was.
    """
    from rates.numeric import simplex_dual

    support, best, stalled, handed_over = 0, math.inf, 0, False
    for name, W, lam in simplex_dual.candidates(H, y, k, spectral=not problem.norm.is_frobenius,
                                                check=lambda: _check_deadline(f"the {problem.norm.name} max margin")):
        pool.add_W(name, W)
        pool.add_lam(name, lam)
        support = int(np.count_nonzero(lam))
        if pool.certified(POLISH_GOAL):
            break
        _, lower, _, upper = pool.best()
        gap = (upper - lower) / upper
        if not problem.norm.is_frobenius and not handed_over and gap <= SUBSPACE_HANDOVER:
            # the rows are found: exact small programs on them, rather than the smoothing continuation's slow end
            handed_over = True
            support = max(support, _spectral_subspace_rounds(problem, H, y, k, pool))
            if pool.certified():
                break
        stalled = stalled + 1 if gap >= best else 0
        best = min(best, gap)
        if stalled >= SIMPLEX_DUAL_STALLED:  # a rank-deficient optimum the smoothing does not resolve in float64
            break
    if not problem.norm.is_frobenius and not handed_over and not pool.certified():
        support = max(support, _spectral_subspace_rounds(problem, H, y, k, pool))
    return support


def _spectral_subspace_rounds(problem: _Problem, H: np.ndarray, y: np.ndarray, k: int, pool: _Pool) -> int:
    """Constraint generation with :func:`rates.numeric.spectral_subspace.solve_on_rows` (an exact small SDP on the
    span of the rows' samples), from the rows the best lambda weights and those the best W holds near its minimum;
    returns the number of rows of the last program. Each W is scored on all rows, each lambda on the original data.
    """
    from rates.numeric import simplex_dual, spectral_subspace

    best_W, lower, best_lam, _ = pool.best()
    W = pool.W[best_W]
    margins = problem.M @ W.reshape(-1) / float(problem.norm.value(torch.as_tensor(W)))
    lam = np.clip(pool.lam[best_lam], 0.0, None)
    rows = np.union1d(np.flatnonzero(lam > 0), np.flatnonzero(margins <= margins.min() + SUBSPACE_NEAR * abs(lower)))
    for index in range(SUBSPACE_ROUNDS):
        limit = _check_deadline(f"the {problem.norm.name} max margin")
        W_reduced, weights = spectral_subspace.solve_on_rows(H, y, k, rows, {**_CLARABEL_OPTIONS, **limit})
        if not (np.all(np.isfinite(W_reduced)) and np.all(np.isfinite(weights)) and weights.sum() > 0):
            break  # the interior point failed or ran out of time: the caller goes on with what the pool holds
        full = np.zeros(problem.M.shape[0])
        full[rows] = weights
        name = f"sample-span SDP {index}"
        margins = problem.M @ W_reduced.reshape(-1)
        pool.add_W(name, W_reduced, margins)
        pool.add_lam(name, full)
        if pool.certified(POLISH_GOAL):
            break
        # the interior point's weights are accurate to ~1e-7; Newton's steps on their support sharpen the upper bound
        for refined_name, W_refined, lam_refined in simplex_dual.refined(
                H, y, k, full, SUBSPACE_SMOOTHING, lambda: _check_deadline(f"the {problem.norm.name} max margin")):
            pool.add_W(f"{name}, {refined_name}", W_refined)
            pool.add_lam(f"{name}, {refined_name}", lam_refined)
        if pool.certified():
            break
        reduced_min = float(margins[rows].min())
        violated = np.flatnonzero(margins < reduced_min - 1e-12 * abs(reduced_min))
        if violated.size == 0:
            break
        rows = np.union1d(rows, violated[np.argsort(margins[violated], kind="stable")[:SUBSPACE_STEP]])
    return int(rows.size)


def _working_set_rounds(problem: _Problem, primal, options: dict, pool: _Pool) -> int:
    """Constraint generation for a large program (LP or conic): solve on a working set of rows, add the rows the
    solution violates.

    Most of the n (k - 1) rows are far from active at the optimum; a reduced LP on the rows that matter has the
    same optimum, and it is found by adding back every row the reduced solution violates (cutting planes).
    Every point stays a certificate of the full problem: the reduced W is scored on all rows (lower bound), and
    the reduced multipliers, zero elsewhere, lie in the full simplex (upper bound). Returns whether the pool is
    the number of rows of the last working set; the caller solves the whole program when the pool is not
    certified. Measured (k = 10, d = 100,
    n = 1000, max norm): 9 rounds up to 2,188 of 9,000 rows, 3 s, against 17 s for the whole primal and dual.
    """
    m, D = problem.M.shape
    start = problem.steepest_of_dual(np.full(m, 1.0 / m))  # the class-centroid direction, steepest for the norm
    margins = problem.M @ start.reshape(-1)
    rows = np.sort(np.argsort(margins, kind="stable")[:min(m, max(WORKING_SET_START, D // 4))])
    for index in range(WORKING_SET_ROUNDS):
        _check_deadline(f"the {problem.norm.name} max margin on a working set")
        reduced = _Problem(sparse.csr_array(problem.M[rows]), problem.k, problem.d, problem.norm)
        W, lam = primal(reduced, options)
        full = np.zeros(m)
        full[rows] = np.clip(lam, 0.0, None)
        pool.add_W(f"working set {index}", W)
        pool.add_lam(f"working set multipliers {index}", full)
        if problem.norm.is_frobenius:
            polished = _frobenius_polish(problem, full)
            if polished is not None:
                pool.add_W(f"kkt polish(working set {index})", polished[0])
                pool.add_lam(f"kkt polish(working set {index})", polished[1])
        if pool.certified(POLISH_GOAL):
            return rows.size
        all_margins = problem.M @ W.reshape(-1)
        reduced_min = float(all_margins[rows].min())
        violated = np.flatnonzero(all_margins < reduced_min - 1e-12 * abs(reduced_min))
        if violated.size == 0:
            return rows.size
        violated = violated[np.argsort(all_margins[violated], kind="stable")][:max(rows.size // 2, WORKING_SET_STEP)]
        rows = np.union1d(rows, violated)
    return rows.size


FROBENIUS_QP_ROUNDS = 40  # constraint-generation rounds of :func:`_frobenius_qp_working_set` at most
FROBENIUS_QP_START = 400  # rows of its first working set: the lowest row of each of this many points
FROBENIUS_QP_STEP = 200  # violated rows added per round (at least; half the working set when more)
FROBENIUS_QP_KEEP = 1.05  # rows whose margin is below this (the program's margins are >= 1) stay in the set


def _frobenius_qp(M: sparse.csr_array) -> tuple[np.ndarray, np.ndarray] | None:
    """The hard-margin multiclass SVM ``min ||w||^2 / 2 s.t. M w >= 1`` by Clarabel's interior point on the rows of
    ``M``: ``(w, multipliers)``, or None when Clarabel reports no solution (its tolerances 1e-10; the caller polishes
    by :func:`_frobenius_polish` and scores every point exactly)."""
    import clarabel

    m, D = M.shape
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    deadline = _check_deadline("the frobenius max margin on a working set").get("time_limit")
    if deadline is not None:
        settings.time_limit = float(deadline)
    solver = clarabel.DefaultSolver(sparse.identity(D, format="csc"), np.zeros(D), sparse.csc_matrix(-M),
                                    -np.ones(m), [clarabel.NonnegativeConeT(m)], settings)
    solution = solver.solve()
    if str(solution.status) not in ("Solved", "AlmostSolved"):
        return None
    return np.asarray(solution.x, dtype=np.float64), np.clip(np.asarray(solution.z, dtype=np.float64), 0.0, None)


def _frobenius_qp_working_set(problem: _Problem, pool: _Pool) -> int:
    """The Frobenius max margin of a large problem as a quadratic program on a working set of rows (constraint
    generation): solve on the set, add each violating point's lowest row, drop the rows whose multiplier is 0 and
    whose margin is well above 1, until no row is violated; then the active-set KKT polish (:func:`_frobenius_polish`)
    closes the bracket to rounding. Every point is scored on all rows, every lambda on the whole problem.

    Keeping every row with a positive multiplier makes the optimal value non-decreasing from round to round (the
    last solution stays optimal on the kept rows, and each added row cuts it off). Measured on sklearn's digits
    (n = 1797, d = 64, k = 10; 16,173 rows): 11 rounds, 280 rows in the last set, 267 support rows, 1.4 s of CPU.
    Returns the size of the last working set.
    """
    m, _ = problem.M.shape
    k = problem.k
    point = np.arange(m) // (k - 1)  # constraint rows come k - 1 per data point (constraint_matrix)
    start = problem.steepest_of_dual(np.full(m, 1.0 / m)).reshape(-1)
    margins = problem.M @ start
    lowest = np.argmin(margins.reshape(-1, k - 1), axis=1) + np.arange(m // (k - 1)) * (k - 1)
    rows = np.sort(lowest[np.argsort(margins[lowest], kind="stable")[:FROBENIUS_QP_START]])
    for index in range(FROBENIUS_QP_ROUNDS):
        solved = _frobenius_qp(sparse.csr_array(problem.M[rows]))
        if solved is None:
            break
        w, multipliers = solved
        full = np.zeros(m)
        full[rows] = multipliers
        all_margins = problem.M @ w
        pool.add_W(f"qp working set {index}", w, all_margins)
        pool.add_lam(f"qp working set multipliers {index}", full)
        violated = np.flatnonzero(all_margins < 1.0 - 1e-9)
        if violated.size == 0 or index == FROBENIUS_QP_ROUNDS - 1:
            polished = _frobenius_polish(problem, full)
            if polished is not None:
                pool.add_W(f"kkt polish(qp working set {index})", polished[0])
                pool.add_lam(f"kkt polish(qp working set {index})", polished[1])
            if violated.size == 0:
                break
        violated = violated[np.argsort(all_margins[violated], kind="stable")]
        _, first = np.unique(point[violated], return_index=True)
        joining = violated[np.sort(first)][:max(FROBENIUS_QP_STEP, rows.size // 2)]
        kept = rows[(multipliers > 1e-9 * max(multipliers.max(), 1e-300)) | (all_margins[rows] < FROBENIUS_QP_KEEP)]
        rows = np.union1d(kept, joining)
    return rows.size


@contextmanager
def _silent_stdout():
    """Send the process's file descriptor 1 to /dev/null: HiGHS writes its banner there (not through Python's
    sys.stdout) when the first model of a process is made, and `rates` writes JSON on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


_HIGHS_STARTED: list[bool] = []  # whether this process has made a HiGHS model (the banner comes with the first)


def _new_highs():
    """A HiGHS model (highspy) that prints nothing."""
    import highspy

    if _HIGHS_STARTED:
        model = highspy.Highs()
    else:
        with _silent_stdout():
            model = highspy.Highs()
        _HIGHS_STARTED.append(True)
    model.setOptionValue("output_flag", False)
    return model


class _HighsRows:
    """``max t`` s.t. ``M_r w >= t`` for the rows added so far and ``||w|| <= 1`` (the max norm's box, or the sum
    norm's ``w = w+ - w-``, ``sum(w+ + w-) <= 1``), as one HiGHS model that rows are added to.

    Adding rows keeps the last optimal basis dual feasible, so the dual simplex resumes from it instead of starting
    over (measured k = 10, d = 784, n = 2000: 16,000 pivots in all against 6,800 for the first 1,960-row working
    set alone when each round is solved afresh).
    """

    def __init__(self, problem: _Problem):
        import highspy

        self.problem = problem
        self.inf = highspy.kHighsInf
        self.model = _new_highs()
        self.model.setOptionValue("simplex_strategy", 1)  # dual simplex: the one that resumes after added rows
        self.box = math.isinf(problem.norm.p)
        D = problem.M.shape[1]
        columns = D if self.box else 2 * D
        cost = np.zeros(columns + 1)
        cost[-1] = -1.0  # HiGHS minimises: -t
        lower = np.concatenate([np.full(columns, -1.0 if self.box else 0.0), [-self.inf]])
        upper = np.concatenate([np.full(columns, 1.0 if self.box else self.inf), [self.inf]])
        self.model.addCols(columns + 1, cost, lower, upper, 0, np.zeros(columns + 2, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))
        self.offset = 0
        if not self.box:  # the sum norm's ball, the model's first row
            self.model.addRows(1, np.array([-self.inf]), np.array([1.0]), columns, np.array([0, columns], np.int32),
                               np.arange(columns, dtype=np.int32), np.ones(columns))
            self.offset = 1

    def add(self, rows: np.ndarray) -> None:
        """Add the rows ``M_r w - t >= 0`` (``M_r w+ - M_r w- - t >= 0``), written straight into CSR arrays."""
        D = self.problem.M.shape[1]
        block = self.problem.M[rows]
        ptr, counts = block.indptr, np.diff(block.indptr)
        copies = 1 if self.box else 2
        start = copies * ptr + np.arange(rows.size + 1)  # each row: its entries (twice for the sum norm), then t
        indices = np.empty(start[-1], dtype=np.int32)
        values = np.empty(start[-1])
        row_of = np.repeat(np.arange(rows.size), counts)
        within = np.arange(ptr[-1]) - ptr[row_of]
        for copy in range(copies):
            position = start[row_of] + copy * counts[row_of] + within
            indices[position] = block.indices + copy * D
            values[position] = block.data if copy == 0 else -block.data
        indices[start[1:] - 1] = copies * D
        values[start[1:] - 1] = -1.0
        self.model.addRows(rows.size, np.zeros(rows.size), np.full(rows.size, self.inf), values.size,
                           start[:-1].astype(np.int32), indices, values)

    def solve(self, time_limit: float = math.inf) -> tuple[np.ndarray, np.ndarray] | None:
        """``(W, multipliers of the rows in the order added)``, or None when HiGHS did not reach the optimum."""
        import highspy

        self.model.setOptionValue("time_limit", float(time_limit) if math.isfinite(time_limit) else self.inf)
        self.model.run()
        if self.model.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        solution = self.model.getSolution()
        x = np.asarray(solution.col_value, dtype=np.float64)
        D = self.problem.M.shape[1]
        w = x[:D] if self.box else x[:D] - x[D:2 * D]
        duals = np.asarray(solution.row_dual, dtype=np.float64)[self.offset:]
        if duals.sum() < 0:  # HiGHS's sign convention for a >= row of a minimisation, whichever it is
            duals = -duals
        return w.reshape(self.problem.k, self.problem.d), np.clip(duals, 0.0, None)


def _lp_working_set(problem: _Problem, pool: _Pool) -> int:
    """Constraint generation for a large LP (max or sum norm) in one HiGHS model: solve on a working set of rows,
    add the rows the solution violates, resume the dual simplex from the last basis.

    The optimum is a vertex with few active rows (k = 10, d = 784, n = 2000: 292 of 18,000, and 291 of the 7,840
    entries of W strictly inside the box), so the working set starts small (:data:`LP_START_FRACTION`) and grows
    by the most violated row of each data point, at most :data:`LP_STEP_FRACTION`-th of the unknowns per round
    (rows of one point are violated together; one of them usually suffices). Every point is a certificate of the
    whole problem as in :func:`_working_set_rounds`. Returns the number of rows of the last working set.
    """
    m, D = problem.M.shape
    start = problem.steepest_of_dual(np.full(m, 1.0 / m))  # the class-centroid direction, steepest for the norm
    margins = problem.M @ start.reshape(-1)
    rows = np.sort(np.argsort(margins, kind="stable")[:min(m, max(WORKING_SET_START, D // LP_START_FRACTION))])
    step = max(WORKING_SET_STEP, D // LP_STEP_FRACTION)
    point = np.arange(m) // (problem.k - 1)  # constraint rows come k - 1 per data point (constraint_matrix)
    in_set = np.zeros(m, dtype=bool)
    in_set[rows] = True
    model = _HighsRows(problem)
    model.add(rows)
    for index in range(LP_ROUNDS):
        limit = _check_deadline(f"the {problem.norm.name} max margin on a working set").get("time_limit", math.inf)
        solved = model.solve(limit)
        if solved is None:
            _check_deadline(f"the {problem.norm.name} max margin on a working set")
            break  # not optimal on the working set: the caller solves the whole LP, as for a small one
        W, lam = solved
        full = np.zeros(m)
        full[rows] = lam
        all_margins = problem.M @ W.reshape(-1)
        pool.add_W(f"working set {index}", W, all_margins)
        pool.add_lam(f"working set multipliers {index}", full)
        if pool.certified(POLISH_GOAL):
            break
        reduced_min = float(all_margins[rows].min())
        violated = np.flatnonzero(~in_set & (all_margins < reduced_min - 1e-12 * abs(reduced_min)))
        if violated.size == 0:
            break
        violated = violated[np.argsort(all_margins[violated], kind="stable")]
        _, first = np.unique(point[violated], return_index=True)
        violated = violated[np.sort(first)][:step]
        model.add(violated)
        rows = np.concatenate([rows, violated])
        in_set[violated] = True
    return rows.size


def _active_set_rounds(problem: _Problem, primal, dual, options: dict, tag: str, pool: _Pool,
                       max_rounds: int = 4) -> None:
    """Re-solve on the (nearly) active constraints, adding back any constraint the reduced W comes close to.

    Dropping the many inactive constraints removes the degeneracy at which the interior-point SDPs stall;
    a reduced lambda is still in the full simplex and the reduced W is scored on all constraints, so every
    point stays a valid certificate (constraint generation, as for cutting-plane methods).
    """
    best_W, lower, best_lam, _ = pool.best()
    W = pool.W[best_W].reshape(-1)
    margins = problem.M @ W / float(problem.norm.value(torch.as_tensor(pool.W[best_W])))
    lam = np.clip(pool.lam[best_lam], 0.0, None)
    rows = np.union1d(np.flatnonzero(margins <= lower + 1e-2 * abs(lower)), np.flatnonzero(lam > 1e-6 * lam.max()))
    for index in range(max_rounds):
        reduced = _Problem(problem.M[rows], problem.k, problem.d, problem.norm)
        W_reduced, lam_from_primal = primal(reduced, options)
        lam_reduced = dual(reduced, options)
        name = f"active set {index}{tag}"
        pool.add_W(f"primal {name}", W_reduced)
        for source, weights in (("dual", lam_reduced), ("primal multipliers", lam_from_primal)):
            full = np.zeros(problem.M.shape[0])
            full[rows] = np.clip(weights, 0.0, None)
            pool.add_lam(f"{source} {name}", full)
        if pool.certified(POLISH_GOAL):
            return
        norm_value = float(problem.norm.value(torch.as_tensor(W_reduced)))
        all_margins = problem.M @ W_reduced.reshape(-1) / norm_value
        reduced_min = float(all_margins[rows].min())
        close = np.flatnonzero(all_margins <= reduced_min + 1e-3 * abs(reduced_min))
        new_rows = np.union1d(rows, close)
        if new_rows.size == rows.size:
            return
        rows = new_rows


def _separating_witness(problem: _Problem) -> tuple[bool | None, np.ndarray | None]:
    """Is there a W with every margin positive? ``(True, W)``, ``(False, None)`` or ``(None, None)`` (undecided).

    Separable iff ``M w >= 1`` is feasible, a question unchanged by scaling the columns and rows of M, so it is
    asked of M equilibrated to unit max entry per column and per row (HiGHS then sees no tiny entries). A
    feasible point counts only if its margins on the unscaled constraints are positive in float64; infeasible
    is HiGHS's verdict, so it only confirms a dual certificate that is already ~0.
    """
    from scipy.optimize import linprog

    columns = _column_scales(problem.M)
    scaled = sparse.csr_array(problem.M @ sparse.diags_array(1.0 / columns))
    rows = abs(scaled).max(axis=1).toarray().reshape(-1)
    rows[~(rows > 0)] = 1.0
    scaled = sparse.diags_array(1.0 / rows) @ scaled
    m, D = scaled.shape
    res = linprog(np.zeros(D), A_ub=-sparse.csc_array(scaled), b_ub=-np.ones(m), bounds=(None, None),
                  method="highs-ds")
    if res.status == 2:
        return False, None
    if res.status != 0:
        return None, None
    W = np.asarray(res.x) / columns
    if np.all(problem.M @ W > 0):
        return True, W.reshape(problem.k, problem.d)
    return None, None


def _least_hinge_errors(problem: _Problem) -> str:
    """How far from separable: the points that the least-hinge classifier ``argmin_W sum_r max(0, 1 - <W, A_r>)``
    (an LP, as a separable problem's hinge is 0) leaves with a margin <= 0, as text for the refusal; empty when
    that LP does not solve."""
    from scipy.optimize import linprog

    m, D = problem.M.shape
    k = problem.k
    # variables (w, s): minimise sum s subject to M w + s >= 1, s >= 0
    A = sparse.hstack([-problem.M, -sparse.identity(m)], format="csc")
    bounds = [(None, None)] * D + [(0, None)] * m
    res = linprog(np.r_[np.zeros(D), np.ones(m)], A_ub=A, b_ub=-np.ones(m), bounds=bounds, method="highs")
    if res.status != 0:
        return ""
    worst = (problem.M @ res.x[:D]).reshape(-1, k - 1).min(axis=1)
    wrong = int(np.count_nonzero(worst <= 0))
    return (f"; the least-hinge linear classifier, an LP, leaves {wrong} of {worst.size} points with a margin <= 0, "
            f"total hinge {res.fun:.4g}")


def _uncertified(norm: Norm, H: np.ndarray, lower: float, upper: float, separable: bool | None) -> str:
    """The one-line reason a max margin could not be certified: the two bounds, and what the data look like."""
    column_max = np.abs(H).max(axis=0)
    used = column_max[column_max > 0]
    spread = float(used.max() / used.min()) if used.size else 1.0
    if separable:
        state = "the data are separable (a W with every margin positive was found)"
    elif separable is None:
        state = "whether the data are separable could not be decided either"
    else:
        state = "the feasibility LP found no separating W, yet the dual bound is positive"
    advice = (f"; feature scales span {spread:.2g}x (largest / smallest column max): rescale the features "
              "(e.g. standardise the columns) and run again") if spread > 1e6 else ""
    return (f"max margin in the {norm.name} norm could not be certified: {state}, but the primal lower bound "
            f"{lower:.9g} and the dual upper bound {upper:.9g} disagree by more than {TOLERANCE_FAIL:g} relative"
            + advice)


def _certified_accuracy(lower: float, upper: float) -> float | None:
    """The certified relative accuracy ``(upper - lower) / lower`` of the bracket ``[lower, upper]``, or None when
    the bracket certifies nothing: a lower bound not positive, a bracket wider than :data:`TOLERANCE_FAIL`, or
    bounds that cross by more than float rounding (weak duality puts every achieved margin at or below every dual
    bound, so a larger crossing means one of the two is wrong, never an exact margin)."""
    if not lower > 0:
        return None
    accuracy = (upper - lower) / lower
    if -CROSSING_BY_ROUNDING < accuracy < 0:
        accuracy = 0.0
    return accuracy if 0.0 <= accuracy <= TOLERANCE_FAIL else None


def _solve(H: np.ndarray, y: np.ndarray, k: int, norm: Norm) -> MarginResult:
    n, d = H.shape
    # gamma is linear in the data: solve on data of unit max entry so solver tolerances are relative.
    scale = float(np.abs(H).max()) if H.size else 0.0
    if not scale > 0:
        raise NotSeparableError("data", "all features are zero, so no classifier separates the data (gamma = 0)")
    problem = _Problem(constraint_matrix(H / scale, y, k), k, d, norm)

    is_lp = norm.polyhedral
    solver, primal, dual = _SOLVERS["lp" if is_lp else "conic"]
    pool = _Pool(problem)
    rounds = 0
    entries = problem.M.shape[0] * problem.M.shape[1]
    working_set = entries > WORKING_SET_ENTRIES
    working_rows = 0
    working_note = ""
    if working_set and is_lp:
        working_rows = _lp_working_set(problem, pool)
    elif entries > SIMPLEX_DUAL_ENTRIES and _smooth_dual(norm):
        if norm.is_frobenius:
            working_rows = _frobenius_qp_working_set(problem, pool)
        if pool.lowers and pool.certified():
            working_set, solver = True, "clarabel-qp-working-set"
            working_note = (f"quadratic program on a working set: {working_rows} of {problem.M.shape[0]} rows in "
                            "the last set, then the KKT conditions on the support")
        else:
            working_rows = _simplex_dual_rounds(problem, H / scale, y, k, pool)
            if pool.certified():
                working_set, solver = True, "simplex-dual-active-set"
                working_note = (f"dual active set: {working_rows} of {problem.M.shape[0]} rows carry weight "
                                "(first-order dual, then the exact KKT conditions on the support)")
            else:
                _check_memory(n, k, d, norm, general=True)  # the general solvers below need more
    if working_set and not is_lp and not (pool.lowers and pool.certified()):
        working_rows = _working_set_rounds(problem, _frobenius_ldp if norm.is_frobenius else primal, {}, pool)
        if norm.is_frobenius and pool.certified():
            solver = "nnls-ldp"
    for options in (() if working_set and pool.certified() else ({},) + (() if is_lp else _RETRY_OPTIONS)):
        tag = f" #{rounds}" if rounds else ""
        rounds += 1
        _full_round(problem, primal, dual, options, tag, pool)
        if pool.certified(POLISH_GOAL) or pool.best()[3] <= NOT_SEPARABLE:
            break
        if not is_lp and pool.best()[1] > 0:
            _active_set_rounds(problem, primal, dual, options, tag, pool)
            if pool.certified():
                break
    if is_lp and not pool.certified(POLISH_GOAL) and math.isinf(norm.p):
        W_equilibrated, lam_equilibrated = _lp_primal_equilibrated(problem)
        pool.add_W("primal (equilibrated columns)", W_equilibrated)
        pool.add_lam("primal multipliers (equilibrated columns)", lam_equilibrated)
    best_W, lower, best_lam, upper = pool.best()
    separable: bool | None = True
    if not lower > 1e-12:
        # the margin programs found no positive margin: decide separability by a scale-free feasibility LP
        # before calling the data non-separable (a feature a thousand million times larger than the others
        # leaves the rest below the solvers' tolerances on data scaled to unit max entry)
        separable, witness = _separating_witness(problem)
        if witness is not None:
            pool.add_W("separating witness (feasibility LP)", witness)
            best_W, lower, best_lam, upper = pool.best()
    if separable is False and not upper > NOT_SEPARABLE:
        raise NotSeparableError(
            "data",
            f"data are not linearly separable: the max margin in the {norm.name} norm is 0 "
            f"(dual certificate {upper * scale:.2g}, and no W with all margins positive exists"
            f"{_least_hinge_errors(problem)}); need gamma > 0 (docs/theory.md section 1)",
        )
    accuracy = _certified_accuracy(lower, upper)
    if accuracy is None:
        raise SolverError(_uncertified(norm, H, lower * scale, upper * scale, separable))

    W = pool.W[best_W]
    W = W / float(norm.value(torch.as_tensor(W)))
    gamma = lower * scale
    checks = {
        "lower_bound": f"achieved margin of W from {best_W}",
        "upper_bound": f"||Z(lambda)||_* of {norm.dual().name} at lambda from {best_lam}",
        "formulations": "primal max-min program and minimax dual over the simplex, solved separately",
        "lower_candidates": {name: value * scale for name, value in pool.lowers.items()},
        "upper_candidates": {name: value * scale for name, value in pool.uppers.items()},
        "target_accuracy": TARGET_ACCURACY,
        "meets_target": accuracy <= TARGET_ACCURACY,
        "data_scale": scale,
        "solver_rounds": rounds,
        **({"working_set": working_note or f"constraint generation: {working_rows} of {problem.M.shape[0]} rows "
                                           "in the last working set"} if working_set else {}),
    }
    lam = np.clip(pool.lam[best_lam], 0.0, None)
    return MarginResult(gamma=gamma, W=W, norm=norm.name, solver=solver, accuracy=accuracy,
                        upper=upper * scale, checks=checks, dual=lam / lam.sum())
