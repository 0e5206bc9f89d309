"""The full-batch log-domain gradient as two GEMMs, for data sets where the products are the whole step.

Setting: docs/theory.md sections 1 and 7, the engine's full-batch signal ``grad L(W_t)`` (one per run of a group,
R runs sharing one data set ``H`` (n, d), labels ``y``). Per step and run the gradient costs two products of
k x d x n multiply-adds (the logits ``W X^T`` and the weighted sum of the samples) and k n exponentials. On the
papers' sets (n = 30-48, d = 5-6) the fused kernels (:mod:`rates.numeric.fused`) are the fast path: tiny
products, 64 runs vectorised side by side. From some ``k d n`` on, the products dominate and a BLAS GEMM,
blocked for the caches and the vector units, does them faster than the kernels' loops over one run at a time
(measured: 1.4-1.8x at k d n = 1e6, about 2x at 10 x 784 x 2000; docs/benchmarks.md, "Data size");
:func:`worth_gemm` is where the engine switches.

Algorithm (one step, every run of the group at once): the runs' iterates stacked as one (R k) x d matrix,
``Z = W X^T`` one GEMM ((R k) x n); the coefficients of :func:`rates.numeric.fused.kernels.logit_coefficients`
(the fused kernels' formula, in place in Z: every exponential as mantissa times an exact power of two, each
class row with its own exponent ``N_c``, nothing underflows); ``G = Z X`` one GEMM ((R k) x d). On the CPU the
GEMMs are NumPy's (OpenBLAS, one thread: on this project's 2-core machines one thread gives the most steps per
CPU second, and the engine's other paths are single-threaded too), except for a few stacked rows on many
features (one or two configurations of 10 classes on MNIST's 784 features), where a GEMM spends as long copying
the samples into its blocks as multiplying them: there the two products are the numba tiles of
:mod:`rates.numeric.fused.products`, which read the samples in place (1.3-1.6x faster at k = 10, d = 784,
n = 2000); on cuda the same three stages are torch ``mm`` calls and :func:`rates.numeric.losses.coefficients`.
The rest of the recipe (momentum, Adam, the steepest direction, the schedule) is the torch program of
:mod:`rates.numeric.optim`, the one definition of every recipe, fed this source's
:class:`~rates.numeric.optim.base.Signal`. Plain SignGD on the CPU (polynomial schedules) is
the exception: its whole step -- the two GEMMs, the coefficients, the exact-sign check and ``W - eta_t sign(G)``
-- is one compiled loop (:class:`SignSteps`, :func:`rates.numeric.fused.kernels.gemm_sign_advance`), because at
mid sizes (10 classes, 32-100 features, 500-2,000 samples, one configuration) the torch program's Python and
calls around the products cost ~100 us a step, as much as the products; the loop's steps are the fused kernels'
float64 operations, so its iterates equal theirs bit for bit (tests/test_gemm.py). Plain steepest descent for the
other built-in norms (NGD, coordinate descent, l_p, the Schatten norms and Muon's Newton-Schulz factor, without
momentum) runs the same way in :class:`SteepestSteps` (:func:`rates.numeric.fused.kernels.gemm_steepest_advance`),
with the fused kernels' direction functions.

Exact signs (tests/test_exact_sign.py, tests/test_gemm.py). The coefficients follow the fused rules: each
class row carries its own exponent for sign-type directions (SignGD, Signum, Adam), and for the others the
rows are brought to one scale by exact powers of two, as the fused kernel does. What differs from the fused
kernels is only the rounding of the two sums: a GEMM sums a dot product in its own blocked order with fused
multiply-adds, where the kernels sum in index order without them. Both are sums of the same terms with a
relative error of ~(count + |z| + 10) eps of ``sum_j |coef_j x_j|`` (the bound of
:func:`rates.numeric.fused.kernels._gradient_lanes`; a GEMM's blocked sum, and the tiles' sums split across
vector lanes, have a bound no larger), so the sign
of an entry is exact under the same condition: unless it cancels to ~1e-12 of its own terms. The iterates
therefore agree with the fused kernels' and with the mpmath reference to rounding (tests hold them to 1e-12
relative), not bit for bit. For plain SignGD every entry is tested against that bound and the open ones (exact
ties, entries whose coefficients are all flushed) get their exact signs (:func:`settle_signs`).

Batch independence (what differs from the other steppers): a run's logits and gradient rows are rows of the
stacked products, and OpenBLAS rounds a row according to where it falls in its blocking (edge blocks have their
own kernels), as the tiles do (a row in a tile of 5, 2 or 1 rows), and a run alone may take the tiles where its
batch takes the GEMMs, so a run advanced among others can differ from the same run alone by the rounding of its sums
(measured: k = 7, d = 300, n = 700, 33 runs, the gradient rows of a run differed in the last bits; 6 NGD steps
later the iterates too). Steps that take the sign of the fresh gradient (SignGD, Adam at beta1 = beta2 = 0)
see the same signs, so their iterates are equal bit for bit (tests/test_gemm.py, 64 runs); the others agree to
rounding, 1e-13 relative in the same test. A given group is deterministic: the same runs together give the same
bits on every call (one thread, fixed shapes). The fused kernels and the torch engine keep the stronger property
(a run's bits do not depend on its batch), and every set of the papers' size runs on the fused kernels.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np

from rates.lazy import lazy_module

torch = lazy_module("torch", globals())

# auto takes this path for full-batch groups with at least this many multiply-adds per product and run
# (k d n). Measured on the 2-core AMD EPYC (benchmarks/size_scaling.py, SignGD, one thread, configuration-steps
# per CPU second): see docs/benchmarks.md; below it the fused kernels win, far below it by 64 runs per vector.
GEMM_MIN_WORK = 200_000
# ... and for plain SignGD, whose GEMM steps run in one compiled loop (SignSteps, no Python per step): from this
# many on. Measured (load 10, one thread, configuration-steps per CPU second): k = 10, d = 32, n = 500 the
# compiled GEMM loop 22,300 against the fused kernels' 12,300 at one configuration and 23,100 against 21,500 at 64;
# k = 10, d = 16, n = 500 26,800 against 24,400 and 28,200 against 31,700.
GEMM_MIN_WORK_SIGNS = 150_000
# ... and at least this many features: with a handful of features a GEMM's inner dimension is too short to pay
# (k = 3, d = 5, n = 30,000: the fused kernels 1.3x faster at one and at 64 runs; from d = 20 on the GEMMs won)
GEMM_MIN_FEATURES = 16


def worth_gemm(k: int, d: int, n: int, signs: bool = False) -> bool:
    """Whether a full-batch group on ``n`` samples of ``d`` features and ``k`` classes runs faster as GEMMs;
    ``signs``: plain SignGD (:func:`rates.numeric.exact_sign.takes_exact_signs`), which runs them compiled.

    A function of the recipe and the data's shape only, so a run takes the same path alone or in any batch."""
    return k * d * n >= (GEMM_MIN_WORK_SIGNS if signs else GEMM_MIN_WORK) and d >= GEMM_MIN_FEATURES


class GemmState(NamedTuple):
    """Scratch of a step (CPU), made once: the logits and coefficients ``Z`` ((R k), n), and the coefficient kernel's
    per class and sample ``K`` (k, n) and per sample ``T, L, U, P`` (n,). Reusing ``Z`` saves the page faults of a
    fresh 10 MB array per step at R = 64, k = 10, n = 2000."""

    Z: Any = None
    K: Any = None
    T: Any = None
    L: Any = None
    U: Any = None
    P: Any = None


class GemmGradient:
    """``grad L(W_t)`` over all n samples, every run of the group in two stacked GEMMs per step: the source
    protocol of :class:`rates.numeric.optim.sources.FullGradient` (``init``, ``__call__``).

    ``per_row``: the signal keeps one log-scale per class row (sign-type directions and Adam); otherwise one per
    run, the rows brought to it by exact powers of two (the fused kernels' rule). The signal always carries its
    exact scale (momentum needs it; a steepest direction alone ignores it).

    ``exact_signs`` (plain SignGD): entries whose computed sign the rounding bound does not decide are replaced by
    their exact signs (:mod:`rates.numeric.exact_sign`), ties by 0."""

    def __init__(self, H: torch.Tensor, y: torch.Tensor, k: int, per_row: bool = True, exact_signs: bool = False):
        self.k, self.per_row, self.exact_signs = k, per_row, exact_signs
        self.on_host = H.device.type == "cpu"
        if self.on_host:
            from rates.numeric.fused.kernels import lit_samples

            # the samples as rows (n, d) and as columns (d, n): the few-row products read each as rows, the GEMMs
            # read Xt for both (the second as its transpose)
            self.X = np.ascontiguousarray(H.numpy(), dtype=np.float64)
            self.Xt = np.ascontiguousarray(self.X.T)
            self.y = np.ascontiguousarray(y.numpy(), dtype=np.int64)
            self.column_max = np.abs(self.X).max(axis=0)  # max_j |x_jl|, for the exact signs' bound
            self.lit = lit_samples(self.X) if exact_signs else None
        else:
            from rates.numeric.losses import labels

            self.Ht = H.transpose(0, 1).contiguous()
            self.H_mean = H / H.shape[0]
            self.labels = labels(y, k, H.dtype)

    def init(self, W: torch.Tensor) -> GemmState:
        if not self.on_host:
            return GemmState()
        return scratch(W.shape[0], self.k, self.Xt.shape[1])

    def __call__(self, W: torch.Tensor, state: GemmState, t: int) -> tuple[Any, GemmState]:
        from rates.numeric.optim.base import Signal

        R, k, d = W.shape
        if not self.on_host:
            from rates.numeric.losses import coefficients

            logits = torch.mm(W.reshape(R * k, d), self.Ht).view(R, k, -1)
            coeff, log_scale = coefficients(logits, self.labels, self.per_row)
            G = torch.mm(coeff.reshape(R * k, -1), self.H_mean).view(R, k, d)
            return Signal(G, log_scale), state
        G, log2_scale = host_gradient(W.numpy(), self.X, self.Xt, self.y, state)
        if self.exact_signs:
            settle_signs(W.numpy(), self.X, self.column_max, self.y, G, state, k, self.lit)
        if self.per_row:
            log_scale = log2_scale * math.log(2.0)
        else:
            G, top = one_scale(G, log2_scale)
            log_scale = top * math.log(2.0)
        return Signal(torch.from_numpy(G), torch.from_numpy(log_scale[..., None])), state


def host_gradient(W: np.ndarray, X: np.ndarray, Xt: np.ndarray, y: np.ndarray,
                  state: Optional[GemmState] = None) -> tuple[np.ndarray, np.ndarray]:
    """``(G, N)`` for iterates ``W`` (R, k, d) on the samples ``X`` (n, d), also given as ``Xt`` (d, n) (both
    C-contiguous), with labels ``y``: row c of run r's mean gradient is ``2^{N[r, c]} G[r, c]``, ``G`` (R, k, d),
    ``N`` (R, k) exact integers. Two products around :func:`rates.numeric.fused.kernels.logit_coefficients`.

    For a few stacked rows (R k) on many features (:func:`rates.numeric.fused.products.worth_tiles`) the
    products are :func:`~rates.numeric.fused.products.rows_times_rows` (``W X^T``, then the coefficients times
    ``Xt^T``), which read the samples without copying them; otherwise NumPy GEMMs, both reading the one array
    ``Xt`` (the second as its transpose, a BLAS flag): with a separate (n, d) copy the two GEMMs stream twice the
    memory, measured 3.08 -> 2.43 ms per step at k = 10, d = 784, n = 2000 with one copy."""
    from rates.numeric.fused import kernels
    from rates.numeric.fused.products import rows_times_rows, worth_tiles

    R, k, d = W.shape
    n = Xt.shape[1]
    if state is None or state.Z is None or state.Z.shape != (R * k, n):
        state = scratch(R, k, n)
    stacked = np.ascontiguousarray(W.reshape(R * k, d))
    few = worth_tiles(R * k, d)
    if few:
        rows_times_rows(stacked, X, state.Z)
    else:
        np.matmul(stacked, Xt, out=state.Z)
    Z = state.Z.reshape(R, k, n)
    log2_scale = np.empty((R, k))
    kernels.logit_coefficients(Z, y, state.K, state.T, state.L, state.U, state.P, log2_scale)
    if few:
        G = np.empty((R * k, d))
        rows_times_rows(state.Z, Xt, G)
    else:
        G = np.matmul(state.Z, Xt.T)
    return G.reshape(R, k, d), log2_scale


def settle_signs(W: np.ndarray, X: np.ndarray, column_max: np.ndarray, y: np.ndarray, G: np.ndarray,
                 state: GemmState, k: int, lit: Optional[tuple[np.ndarray, np.ndarray]] = None) -> None:
    """Give the entries of ``G`` (R, k, d) from :func:`host_gradient` (coefficients left in ``state.Z``) whose
    rounding bound straddles 0 their exact signs (:mod:`rates.numeric.exact_sign`): first with each class row's
    ``sum_j |coef_j|`` (one pass over the coefficients), then, where that leaves entries open, with each entry's own
    ``sum_j |coef_j x_jl|`` (:func:`rates.numeric.exact_sign.open_entries`). ``column_max`` is ``max_j |x_jl|``, ``lit``
    the columns' nonzero rows (:func:`rates.numeric.fused.kernels.lit_samples`, made here when not given)."""
    from rates.numeric import exact_sign

    rho = exact_sign.relative_error(X.shape[0], k, exact_sign.logit_error(W, column_max))
    undecided = np.empty(G.shape, dtype=bool)
    starts, rows = lit if lit is not None else exact_sign.lit_samples(X)
    if exact_sign.open_entries(G, state.Z, X, column_max, starts, rows, rho, exact_sign.flush_error(k), undecided):
        exact_sign.settle(W, X, y, G, undecided)


def scratch(R: int, k: int, n: int) -> GemmState:
    """The :class:`GemmState` of R runs, k classes, n samples."""
    return GemmState(np.empty((R * k, n)), np.empty((k, n)), *(np.empty(n) for _ in range(4)))


def one_scale(G: np.ndarray, log2_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows brought to one exponent per run, as the fused kernel does for directions that weigh entries against
    each other: row c times ``2^{N_c - top}`` (exact; 0 below ``2^FLUSH_EXPONENT``); returns ``(G, top)`` with
    ``top`` (R, 1)."""
    from rates.numeric.fused.kernels import FLUSH_EXPONENT

    top = log2_scale.max(axis=1, keepdims=True)
    shift = log2_scale - top
    factor = np.where(shift >= FLUSH_EXPONENT, np.ldexp(1.0, np.maximum(shift, FLUSH_EXPONENT).astype(np.int64)), 0.0)
    return G * factor[..., None], top


# A call of the compiled SignGD loop covers about this many multiply-adds (k d n per product, run and step), so
# that a progress bar moves about once a second and the Python around a call is nothing.
SIGN_CALL_WORK = 1 << 31


def compiled_signs(recipe: Any, runs: Any) -> bool:
    """Whether the GEMM stepper's group runs in the compiled SignGD loop
    (:func:`rates.numeric.fused.kernels.gemm_sign_advance`) rather than the torch program: plain full-batch SignGD
    (the recipes with exact signs, :func:`rates.numeric.exact_sign.takes_exact_signs`) whose runs all follow the
    polynomial family ``eta0 (t + 2)^-a``; on the CPU (the caller's check). The products are OpenBLAS GEMMs or the
    tiles of :mod:`rates.numeric.fused.products`, each by its own rule."""
    from rates.numeric.exact_sign import takes_exact_signs

    return takes_exact_signs(recipe) and all(r.schedule.is_polynomial for r in runs)


def _compiled_group(stepper: Any, runs: Any, H: np.ndarray, y: np.ndarray, k: int) -> None:
    """What both compiled loops' steppers hold: the samples as rows ``X`` and columns ``Xt``, the labels, each run's
    ``eta0`` and ``a``, the iterates ``W`` (R, k, d) from 0 at step ``t`` = 0, the scratch of
    :func:`rates.numeric.fused.kernels._stacked_gradient` (``Z``, ``K``, ``T``, ``L``, ``U``, ``P``, the row
    exponents, ``G``), the steps of one call and which products run in the tiles."""
    from rates.numeric.fused.products import worth_gradient_tiles, worth_tiles

    stepper.X = np.ascontiguousarray(H, dtype=np.float64)
    stepper.Xt = np.ascontiguousarray(stepper.X.T)
    stepper.y = np.ascontiguousarray(y, dtype=np.int64)
    n, d = stepper.X.shape
    R = len(runs)
    stepper.eta0 = np.array([r.spec.eta0 for r in runs], dtype=np.float64)
    stepper.a = np.array([float(r.schedule.a) for r in runs], dtype=np.float64)
    stepper.W = np.zeros((R, k, d))
    stepper.t = 0
    stepper.scratch = (np.empty((R * k, n)), np.empty((R, k, n)), *(np.empty(n) for _ in range(4)), np.empty((R, k)),
                       np.empty((R, k, d)))
    stepper.chunk = max(1, SIGN_CALL_WORK // (R * k * d * n))
    stepper.tiles = (worth_tiles(R * k, d), worth_gradient_tiles(R * k, d, n))


class SignSteps:
    """Plain full-batch SignGD of a group on the CPU, the GEMM stepper's gradient in one compiled loop
    (:func:`rates.numeric.fused.kernels.gemm_sign_advance`): its iterates ``W`` (R, k, d), from 0, advanced by
    :meth:`advance_to`; where the loop stops at an undecided sign, :meth:`_settle` decides it exactly
    (:func:`rates.numeric.exact_sign.decide`) and takes the step. Run it under one BLAS thread
    (:func:`rates.numeric.engine.one_blas_thread`)."""

    def __init__(self, runs: Any, H: np.ndarray, y: np.ndarray, k: int):
        from rates.numeric.fused import kernels

        _compiled_group(self, runs, H, y, k)
        R, (n, d) = len(runs), self.X.shape
        self.column_max = np.abs(self.X).max(axis=0)
        self.column_total = float(self.column_max.sum())
        self.lit = kernels.lit_samples(self.X)
        self.scratch = self.scratch + (np.empty(R), np.empty((R, k, d), dtype=np.bool_), np.empty((R, k, d)),
                                       np.empty((R, k, n)))

    def advance_to(self, t_end: int, progress: Optional[Any] = None) -> None:
        """Advance every run to step ``t_end`` (>= the current step)."""
        from rates.numeric.fused import kernels

        while self.t < t_end:
            t1 = min(t_end, self.t + self.chunk)
            start = self.t
            while self.t < t1:
                stopped = int(kernels.gemm_sign_advance(self.W, self.t, t1, self.X, self.Xt, self.y, self.eta0,
                                                        self.a, self.column_max, self.column_total, *self.lit,
                                                        *self.tiles, *self.scratch))
                if stopped < t1:
                    self._settle(stopped)
                    stopped += 1
                self.t = stopped
            if progress is not None:
                progress(t1 - start)

    def _settle(self, t: int) -> None:
        """Step ``t`` of every run from the loop's signs, the undecided (NaN) ones decided exactly, with the loop's
        step sizes (the same float64 operations)."""
        from rates.numeric.exact_sign import decide

        signs = self.scratch[-2]
        for r in range(self.W.shape[0]):
            D = signs[r].copy()
            open_ = np.isnan(D)
            if open_.any() and np.isfinite(self.W[r]).all():  # a diverged iterate has no exact gradient
                entries = [tuple(e) for e in np.argwhere(open_).tolist()]
                for (c, l), sign in zip(entries, decide(self.W[r], self.X, self.y, entries, self.lit)):
                    D[c, l] = sign
            self.W[r] -= (self.eta0[r] * (t + 2.0) ** (-self.a[r])) * D


def compiled_steepest(recipe: Any, runs: Any) -> bool:
    """Whether the GEMM stepper's group runs in the compiled steepest-descent loop
    (:func:`rates.numeric.fused.kernels.gemm_steepest_advance`) rather than the torch program: plain full-batch
    steepest descent for a built-in norm other than the sign's (no momentum, no Adam: NGD, coordinate descent,
    l_p, the Schatten norms, Muon's polar factor) whose runs all follow the polynomial family ``eta0 (t + 2)^-a``;
    on the CPU (the caller's check)."""
    from rates.numeric.fused import kernels
    from rates.numeric.fused.group import direction_of, supports

    roles = {piece.role for piece in recipe.composition.pieces}
    if recipe.source != "full" or not roles <= {"source", "direction", "schedule"} or not supports(recipe):
        return False
    return direction_of(recipe)[0] != kernels.DIRECTION_SIGN and all(r.schedule.is_polynomial for r in runs)


class SteepestSteps:
    """Plain full-batch steepest descent of a group on the CPU (:func:`compiled_steepest`), the GEMM stepper's
    gradient in one compiled loop (:func:`rates.numeric.fused.kernels.gemm_steepest_advance`); the interface of
    :class:`SignSteps` (``W``, ``t``, :meth:`advance_to`). Run it under one BLAS thread."""

    def __init__(self, runs: Any, H: np.ndarray, y: np.ndarray, k: int):
        from rates.numeric.fused.group import direction_of

        _compiled_group(self, runs, H, y, k)
        self.direction, self.q = direction_of(runs[0].recipe)
        d = self.X.shape[1]
        self.scratch = self.scratch + (np.empty((k, d)), np.empty((k, d)), np.empty((0, k, self.X.shape[0])))

    def advance_to(self, t_end: int, progress: Optional[Any] = None) -> None:
        """Advance every run to step ``t_end`` (>= the current step)."""
        from rates.numeric.fused import kernels

        while self.t < t_end:
            t1 = min(t_end, self.t + self.chunk)
            start = self.t
            self.t = int(kernels.gemm_steepest_advance(self.W, self.t, t1, self.X, self.Xt, self.y, self.eta0,
                                                       self.a, self.direction, self.q, *self.tiles, *self.scratch))
            if progress is not None:
                progress(self.t - start)

