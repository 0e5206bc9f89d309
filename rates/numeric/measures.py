"""The measures the seeds report at every checkpoint: relative margin error and cosine to reference directions.

Setting
    MINIBATCH section 5 and App. J [given]: convergence "is evaluated under the
    max, Frobenius and spectral norms using the relative error to the max-margin and cosine similarity to the
    max-margin solution", and in the per-sample regime also the "cosine similarity to the theoretical bias
    direction (Definition 4.8)". For an iterate ``W_t`` and a norm ``N`` in :data:`MEASURED_NORMS`:

    * relative margin error ``(gamma_N - margin_N(W_t)) / gamma_N`` (``gamma_N`` certified by
      :func:`rates.numeric.margins.max_margin`; ``margin_N`` as recorded by the engine);
    * cosine similarity ``<W_t, W*_N>_F / (||W_t||_F ||W*_N||_F)`` to a max-margin solution ``W*_N``
      (the Frobenius inner product, so it is the same for ``W_t/||W_t||`` in any norm);
    * on orthogonal scale-skewed data, the cosine to the bias matrix ``M`` of MINIBATCH Def. 4.8
      (:mod:`rates.symbolic.theorems.per_sample`): the predicted limit direction of b = 1 runs (Thm 4.9).

Which ``W*`` (the caveat every report repeats)
    ``W*_N`` is the point :func:`rates.numeric.margins.max_margin` returns: for the max norm a vertex of the LP found by
    HiGHS dual simplex; for the spectral norm the conic solver's (Clarabel) point after polishing; for the
    Frobenius norm the unique solution (a strictly convex norm has one maximiser). The max-norm and spectral
    unit balls are not strictly convex, so their maximiser can be a whole face: on orthogonal scale-skewed
    data every class column whose hardest scale exceeds the global smallest one is free within a range. A
    cosine to a non-unique ``W*`` is then a property of the chosen solution, not of the data;
    :func:`max_norm_solution_unique` tests the LP face (two LPs over it with a fixed generic objective; on large
    problems first the rank test that complementary slackness gives, which can only confirm uniqueness) and
    each :class:`ReferenceDirection` carries ``unique`` (True / False / None = not tested) and the caveat.

Guarantee
    Pure functions of ``W_t`` and the references; tested against a direct numpy computation.

Reference
    MINIBATCH section 5 (Fig. 1) and App. J (Fig. 2): the two measures; Def. 4.8 for M.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np

from rates.errors import SolverError

MEASURED_NORMS = ("max", "frobenius", "spectral")
BIAS_KEY = "M"
CONIC_SIZE_LIMIT = 100_000  # n (k-1) * k d above which a side measure's conic max-margin solve is time-bounded
SIDE_BUDGET_SECONDS = 30.0  # the time a side measure's max margin (a norm other than the run's) may take
# whether side measures of problems above CONIC_SIZE_LIMIT are solved at all (:func:`large_side_measures`): by
# default they are left out, so that a first answer on real data waits only for the max margin its run needs
_LARGE_SIDE_WANTED: list[bool] = [False]
# side measures left out in this process, by (data digest, k, norm, budget): a second call (after the run)
# does not retry
_SIDE_SKIPPED: dict[tuple, str] = {}
_FACE_SLACK = 1e-9  # relative margin slack that defines the LP's optimal face (the solver's own accuracy)
_FACE_WIDTH = 1e-6  # spread of a generic linear objective over the face above which W* is not unique
FACE_BUDGET_SECONDS = 10.0  # the face test is a side measure: past this it is left undecided (unique = None)
FACE_CACHE_KIND = "max-norm-faces"
# answers of max_norm_solution_unique in this process, keyed by (data digest, k, gamma): also filled from the
# worker processes that prepare data draws (rates.numeric.engine.prepare_draws), and used when the disk cache is off
_FACE_MEMORY: dict[tuple, Optional[bool]] = {}

SOLUTION_NOTES = {
    "max": "HiGHS dual-simplex vertex of the max-norm LP; the max-norm ball is not strictly convex, so other "
           "maximisers may exist and the cosine is a property of this vertex",
    "frobenius": "the unique Frobenius max-margin solution (strictly convex norm)",
    "spectral": "Clarabel conic point (polished); the spectral ball is not strictly convex, so W* may be "
                "non-unique and the cosine is a property of this point (uniqueness not tested)",
}


@dataclass(frozen=True)
class ReferenceDirection:
    """A direction checkpoints are compared with: a max-margin solution ``W*_N`` or the bias matrix ``M``."""

    name: str  # a norm of MEASURED_NORMS, or BIAS_KEY
    matrix: np.ndarray  # k x d
    gamma: Optional[float] = None  # the max margin, for W*_N
    solver: str = ""
    accuracy: Optional[float] = None
    unique: Optional[bool] = None  # None: not tested
    note: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "matrix": np.asarray(self.matrix, dtype=float).tolist(), "gamma": self.gamma,
                "solver": self.solver, "accuracy": self.accuracy, "unique": self.unique, "note": self.note,
                **self.extra}


def cosine(W: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Frobenius cosine of every matrix in ``W`` (..., k, d) with ``target`` (k, d); NaN where ``W = 0``."""
    W = np.asarray(W, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    dots = np.einsum("...ij,ij->...", W, target)
    norms = np.linalg.norm(W.reshape(*W.shape[:-2], -1), axis=-1) * np.linalg.norm(target)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), np.nan)


def relative_margin_error(margin: np.ndarray, gamma: float) -> np.ndarray:
    """``(gamma - margin) / gamma`` (MINIBATCH section 5's relative error to the max margin)."""
    return (float(gamma) - np.asarray(margin, dtype=np.float64)) / float(gamma)


def max_norm_solution_unique(data: Any, gamma: float, W: Optional[np.ndarray] = None,
                             budget_seconds: Optional[float] = None,
                             dual: Optional[np.ndarray] = None) -> Optional[bool]:
    """Is the max-norm max-margin solution a single point? Two LPs over the optimal face.

    Face ``{W : |W_jl| <= 1, <A_ic, W> >= gamma (1 - slack)}``; a fixed generic objective ``C`` has
    ``max <C, W> - min <C, W> > width`` on it iff the face (up to the slack) is more than a point, for
    almost every ``C``. The answer is kept in :mod:`rates.cache` (as the max margins are), so a warm
    ``rates run`` does not import scipy for it.

    A side measure, so bounded: on a large problem the two LPs are solved on a working set of rows (those
    nearly active at ``W``, a max-norm solution, plus every row a solution violates) and both together get
    ``budget_seconds`` (default :data:`FACE_BUDGET_SECONDS`); past it the answer is ``None`` (not decided),
    which is not cached. There, given also the solver's multipliers ``dual`` (:attr:`MarginResult.dual`), a
    unique solution is first recognised by complementary slackness (:func:`_unique_by_complementarity`).
    """
    from rates import cache
    from rates.numeric.margins import constraint_matrix, data_digest

    H = np.asarray(data.H, dtype=np.float64)
    y = np.asarray(data.y, dtype=np.int64)
    memory_key = (data_digest(H, y), int(data.k), float(gamma))
    if memory_key in _FACE_MEMORY:
        return _FACE_MEMORY[memory_key]
    key = cache.key_for("max-norm face", *memory_key, _FACE_SLACK, _FACE_WIDTH,
                        packages=("rates",), libraries=("numpy", "scipy", "highspy"))
    saved = cache.load(FACE_CACHE_KIND, key) if key is not None else None
    if isinstance(saved, bool):
        unique = saved
    else:
        budget = FACE_BUDGET_SECONDS if budget_seconds is None else float(budget_seconds)
        unique = _face_is_a_point(constraint_matrix(H, y, int(data.k)), gamma, W, budget, dual)
        if unique is None:  # undecided within the budget: held for this process only, never on disk
            _FACE_MEMORY[memory_key] = None
            return None
        if key is not None:
            cache.store(FACE_CACHE_KIND, key, unique)
    _FACE_MEMORY[memory_key] = unique
    return unique


def faces_of(digest: str) -> dict[tuple, bool]:
    """The answers of :func:`max_norm_solution_unique` held in this process for the data of ``digest``."""
    return {key: value for key, value in _FACE_MEMORY.items() if key[0] == digest}


def remember_faces(answers: Mapping[tuple, bool]) -> None:
    """Hold answers of :func:`max_norm_solution_unique` obtained in another process (:func:`faces_of` there)."""
    _FACE_MEMORY.update(answers)


def _face_is_a_point(A, gamma: float, W: Optional[np.ndarray] = None,
                     budget_seconds: float = math.inf, dual: Optional[np.ndarray] = None) -> Optional[bool]:
    """The two LPs over the face (see :func:`max_norm_solution_unique`); ``None`` when they did not finish in
    ``budget_seconds``. A problem of more than :data:`rates.numeric.margins.WORKING_SET_ENTRIES` entries
    starting from a solution ``W`` is solved by constraint generation (:func:`_face_on_working_set`): each LP on
    the rows nearly active at ``W``, adding every row its solution violates; the answer is that of the whole LP
    once none is violated. Measured k = 10, d = 784, n = 2000: 328 starting rows, 3.6 s of CPU for both LPs."""
    from scipy import sparse
    from scipy.optimize import linprog

    from rates.numeric.margins import WORKING_SET_ENTRIES

    started = time.perf_counter()
    A = sparse.csr_array(A)
    m, D = A.shape
    C = np.random.default_rng(0).normal(size=D)
    bounds = [(-1.0, 1.0)] * D
    floor = float(gamma) * (1 - _FACE_SLACK)
    all_rows = np.arange(m)
    if W is not None and m * D > WORKING_SET_ENTRIES:
        margins = A @ np.asarray(W, dtype=np.float64).reshape(-1)
        if dual is not None and _unique_by_complementarity(A, float(gamma), W, dual):
            return True
        start = np.flatnonzero(margins <= float(gamma) * (1 + 1e-3))
        return _face_on_working_set(A, C, floor, start, started, budget_seconds)
    else:
        start = all_rows
    values = []
    for sign in (1.0, -1.0):
        rows = start
        while True:
            left = budget_seconds - (time.perf_counter() - started)
            if not left > 0:
                return None
            options = {} if math.isinf(left) else {"time_limit": left}
            res = linprog(sign * C, A_ub=-A[rows], b_ub=-np.full(rows.size, floor), bounds=bounds,
                          method="highs-ds", options=options)
            if res.status == 1:  # the time limit
                return None
            if res.status != 0:
                raise SolverError(f"max-norm face LP failed: {res.message}")
            if rows.size == m:
                break
            violated = np.flatnonzero(A @ res.x < floor * (1 - 1e-12))
            if violated.size == 0:
                break
            rows = np.union1d(rows, violated)
        values.append(sign * res.fun)
    scale = max(1.0, float(np.abs(C).sum()))
    return abs(values[0] - values[1]) <= _FACE_WIDTH * scale


_ZERO, _NONZERO = 1e-10, 1e-6  # relative sizes below / above which a multiplier or an entry of Z is 0 / not 0
_MAX_FREE = 2000  # free entries of W above which the rank test (a dense SVD) is not tried
_RANK = 1e-8  # smallest singular value relative to the largest for full column rank


def _unique_by_complementarity(A, gamma: float, W: np.ndarray, dual: np.ndarray) -> bool:
    """True when complementary slackness pins the max-norm solution to one point; False when it cannot tell.

    For any optimal multipliers ``lambda`` (``Z = A^T lambda``), every maximiser has ``w_j = sign(Z_j)`` where
    ``Z_j != 0`` and margin exactly ``gamma`` on the rows with ``lambda_r > 0`` (LP complementary slackness). So
    if those rows restricted to the entries with ``Z_j = 0`` have full column rank, the maximiser is unique.
    Decided only when every size is clearly zero or clearly not (no value between :data:`_ZERO` and
    :data:`_NONZERO` relative to the largest), ``W`` itself has that form and the rank is clear (:data:`_RANK`);
    the face LPs answer otherwise. Measured k = 10, d = 784, n = 2000: 292 rows, 291 free entries, smallest
    singular value 3.7e-4 of the largest, entries of Z at 4e-14 or above 2.8e-5 of the largest -- where the
    face LPs, at their slack of 1e-9, found the face wider than their width of 1e-6 and said "not unique".
    """
    lam = np.clip(np.asarray(dual, dtype=np.float64), 0.0, None)
    if not lam.max() > 0:
        return False
    lam = lam / lam.max()
    Z = np.asarray(A.T @ lam, dtype=np.float64)
    z = np.abs(Z) / np.abs(Z).max()
    if np.any((z > _ZERO) & (z <= _NONZERO)) or np.any((lam > _ZERO) & (lam <= _NONZERO)):
        return False
    free, active = np.flatnonzero(z <= _ZERO), np.flatnonzero(lam > _NONZERO)
    w = np.asarray(W, dtype=np.float64).reshape(-1)
    w = w / np.abs(w).max()
    fixed = np.ones(w.size, dtype=bool)
    fixed[free] = False
    if not np.allclose(w[fixed], np.sign(Z[fixed]), rtol=0, atol=1e-9):
        return False
    margins = A[active] @ w
    if not np.allclose(margins, gamma, rtol=1e-9, atol=0):
        return False
    if free.size == 0:
        return True
    if free.size > _MAX_FREE or active.size < free.size:
        return False
    singular = np.linalg.svd(A[active][:, free].toarray(), compute_uv=False)
    return bool(singular.min() > _RANK * singular.max())


def _face_on_working_set(A, C: np.ndarray, floor: float, start: np.ndarray, started: float,
                         budget_seconds: float) -> Optional[bool]:
    """The two face LPs of a large problem as one HiGHS model that rows are added to: first on the rows nearly
    active at a solution, then adding, per data point, the row a face LP's solution violates most, until none is;
    the second objective resumes from the first one's basis. ``None`` once ``budget_seconds`` are spent."""
    import highspy
    from scipy import sparse

    from rates.numeric.margins import _new_highs

    m, D = A.shape
    model = _new_highs()
    model.addCols(D, np.zeros(D), np.full(D, -1.0), np.full(D, 1.0), 0, np.zeros(D + 1, dtype=np.int32),
                  np.zeros(0, dtype=np.int32), np.zeros(0))
    in_set = np.zeros(m, dtype=bool)

    def add(rows: np.ndarray) -> None:
        block = sparse.csr_array(A[rows])
        block.sort_indices()
        model.addRows(rows.size, np.full(rows.size, floor), np.full(rows.size, highspy.kHighsInf), block.nnz,
                      block.indptr.astype(np.int32), block.indices.astype(np.int32), block.data)
        in_set[rows] = True

    add(start)
    values = []
    for sign in (1.0, -1.0):
        model.changeColsCost(D, np.arange(D, dtype=np.int32), sign * C)
        while True:
            left = budget_seconds - (time.perf_counter() - started)
            if not left > 0:
                return None
            model.setOptionValue("time_limit", float(left) if math.isfinite(left) else highspy.kHighsInf)
            model.run()
            status = model.getModelStatus()
            if status == highspy.HighsModelStatus.kTimeLimit:
                return None
            if status != highspy.HighsModelStatus.kOptimal:
                raise SolverError(f"max-norm face LP failed: {model.modelStatusToString(status)}")
            x = np.asarray(model.getSolution().col_value, dtype=np.float64)
            margins = A @ x
            violated = np.flatnonzero(~in_set & (margins < floor * (1 - 1e-12)))
            if violated.size == 0:
                break
            add(violated)
        values.append(float(C @ x))
    scale = max(1.0, float(np.abs(C).sum()))
    return abs(values[0] - values[1]) <= _FACE_WIDTH * scale


def problem_size(data: Any) -> int:
    """Constraint rows times unknowns of the max-margin program: ``n (k - 1) * k d``."""
    return int(data.n) * (int(data.k) - 1) * int(data.k) * int(data.d)


@contextlib.contextmanager
def large_side_measures(wanted: bool = True) -> Iterator[None]:
    """Within the block, side measures of large problems are solved (each within :data:`SIDE_BUDGET_SECONDS`)
    when ``wanted``; outside any such block they are left out with the reason (``rates run --side-measures``)."""
    _LARGE_SIDE_WANTED.append(bool(wanted))
    try:
        yield
    finally:
        _LARGE_SIDE_WANTED.pop()


def max_margin_references(data: Any, required: Sequence[str] = ()) -> tuple[dict[str, ReferenceDirection],
                                                                          dict[str, str]]:
    """``W*_N`` for the norms of :data:`MEASURED_NORMS`, and the norms left out with the reason.

    Norms in ``required`` (a run's own norm, solved for its gap anyway) and the max norm (an LP) are always
    solved. The others are side measures: up to :data:`CONIC_SIZE_LIMIT` they are solved as they come; above
    it they are left out unless asked for (:func:`large_side_measures`), and then each gets
    :data:`SIDE_BUDGET_SECONDS` (a line on stderr says so) and is left out with the reason when
    its program would not fit in memory or does not finish in time (measured before constraint generation:
    k = 10, d = 32, n = 200 took 160 s of interior-point solves on the whole program). A reported norm whose
    solver cannot certify its gamma is left out too, as is the face test of the max norm past its budget.
    """
    import sys

    from rates.errors import InputError
    from rates.numeric.margins import OverBudgetError, data_digest, is_held, max_margin

    references: dict[str, ReferenceDirection] = {}
    skipped: dict[str, str] = {}
    size = problem_size(data)
    digest = data_digest(np.asarray(data.H, dtype=np.float64), np.asarray(data.y, dtype=np.int64))
    for name in MEASURED_NORMS:
        memo = (digest, int(data.k), name, SIDE_BUDGET_SECONDS)
        if memo in _SIDE_SKIPPED and name not in required:
            skipped[name] = _SIDE_SKIPPED[memo]
            continue
        budget: Optional[float] = None
        if name not in required and name != "max" and size > CONIC_SIZE_LIMIT:
            if not (_LARGE_SIDE_WANTED[-1] or is_held(data, name)):
                skipped[name] = (f"not solved: a side measure (the {name} max margin, n(k-1) kd = {size} > "
                                 f"{CONIC_SIZE_LIMIT}) on large data is solved only when asked (rates run "
                                 "--side-measures)")
                continue
            budget = SIDE_BUDGET_SECONDS
        if budget is not None and not is_held(data, name):
            print(f"rates: solving the {name} max margin for the cosines (a side measure; n(k-1) kd = {size}, "
                  f"at most {budget:g} s)", file=sys.stderr)
        try:
            result = max_margin(data, name, budget_seconds=budget)
        except OverBudgetError:
            skipped[name] = (f"not solved: the {name} max-margin program (n(k-1) kd = {size}) did not finish "
                             f"within the side measures' budget of {SIDE_BUDGET_SECONDS:g} s (a run in that norm "
                             "solves it)")
            _SIDE_SKIPPED[memo] = skipped[name]
            continue
        except InputError as err:
            if budget is None:
                raise
            skipped[name] = f"not solved: {err.message}"
            _SIDE_SKIPPED[memo] = skipped[name]
            continue
        except SolverError as err:
            skipped[name] = f"not certified: {err}"
            continue
        unique: Optional[bool] = None
        extra: dict = {}
        if name == "frobenius":
            unique = True
        elif name == "max":
            unique = max_norm_solution_unique(data, result.gamma, result.W * 1.0, dual=result.dual)
            if unique is None:
                extra["unique_reason"] = (f"uniqueness not decided: the face LPs did not finish within "
                                          f"{FACE_BUDGET_SECONDS:g} s")
        references[name] = ReferenceDirection(name, result.W, float(result.gamma), result.solver,
                                              float(result.accuracy), unique, SOLUTION_NOTES[name], extra)
    return references, skipped


def checkpoint_measures(W: np.ndarray, margins: Mapping[str, np.ndarray],
                        references: Mapping[str, ReferenceDirection]) -> tuple[dict, dict]:
    """Relative margin errors and cosines of one run's checkpoints.

    ``W`` is (T, k, d) (the iterates at the checkpoints), ``margins`` maps a norm to the (T,) margins of
    ``W_t`` in it, ``references`` maps a norm (or :data:`BIAS_KEY`) to its direction. Returns
    ``(margin_errors, cosines)``, dicts of (T,) arrays keyed like ``references``.
    """
    errors = {name: relative_margin_error(margins[name], ref.gamma) for name, ref in references.items()
              if ref.gamma is not None and name in margins}
    cosines = {name: cosine(W, ref.matrix) for name, ref in references.items()}
    return errors, cosines


def bias_reference(data, norm: str):
    """``M`` of the per-sample algorithm of ``norm`` as a :class:`ReferenceDirection`, or None.

    The bias matrix of MINIBATCH Thm 4.9 (:mod:`rates.symbolic.theorems.per_sample`), measured at checkpoints
    like the max-margin solutions.

    None when the data are not orthogonal scale-skewed or the norm has no per-sample algorithm here.
    """
    from rates.symbolic.theorems.per_sample import (
        ALGORITHM_OF_NORM,
        SOURCE,
        algorithm_norm,
        bias_matrix,
        orthogonal_structure,
    )

    if norm not in ALGORITHM_OF_NORM or not orthogonal_structure(data)[0]:
        return None
    from rates.numeric.margins import margin_of

    algorithm = ALGORITHM_OF_NORM[norm]
    counts = data.class_counts()
    M = bias_matrix(counts, algorithm)
    margins = {name: margin_of(M, data, name) for name in MEASURED_NORMS}
    return ReferenceDirection(BIAS_KEY, M / algorithm_norm(M, algorithm), solver="closed form", unique=True,
                              note=f"bias matrix of per-sample {algorithm} (the predicted limit for b = 1 only)",
                              extra={"algorithm": algorithm, "class_counts": counts.tolist(), "margins": margins,
                                     "source": SOURCE.to_json(), "status": "rebuilt"})
