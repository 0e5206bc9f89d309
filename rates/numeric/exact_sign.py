"""Exact signs of the full-batch gradient: an exact tie gets sign 0 and every other entry its true sign, on any data.

Setting: plain SignGD (docs/theory.md section 2, ``W <- W - eta_t sign(grad L(W_t))``, full batch) takes every
entry's sign whatever its size. An entry can be 0 in real arithmetic (at ``W = 0`` every probability is ``1/k``, and
on integer pixels a column's sum ``sum_i (1/k - [y_i = c]) x_il`` can cancel exactly), or lie far below the rest of
its class row (2^-1000 and less: a pixel that only samples with tiny probabilities light up). The engines compute
each entry in float64 from per-row scaled coefficients; that value's sign is the true one when it exceeds the
bound of its rounding error, and here is where the others are decided.

The bound (:func:`relative_error`): an entry ``sum_j coef_j x_jl`` is computed with an error of at most
``rho sum_j |coef_j x_jl|``, ``rho`` covering the logits' rounding (``(d + 2) eps sum_l |W_cl| |x_jl|``, entering the
exponentials as an absolute error of their arguments), the exponentials and the few products and quotients of a
coefficient (~(k + 10) eps), and the sum over the samples (``count eps``, in any order, with or without fused
multiply-adds: a GEMM's blocked sums obey the same bound), times a safety factor 4. The engines bound
``sum_j |coef_j x_jl|`` by ``(sum_j |coef_j|) max_j |x_jl|`` (one sum per class row, no second product), then, for
the entries that leaves open, by their own ``sum_j |coef_j x_jl|``, and add the coefficients they flush to 0 (below
2^-1000 of their row's largest). An entry whose computed value does not exceed that bound is *undecided*; only those
come here (measured on digits, a = 1/2, eta0 = 1, GEMM path: the ties at W = 0, then none before step 254, then up
to 8 entries at 361 of the first 600 steps, all but one decided in stage 1).

Algorithm (:func:`decide`, one run, its undecided entries):

1. Log domain, the entry's own scale, float64 (compiled: :func:`rates.numeric.fused.kernels.float_signs`, also
   called inside the compiled SignGD loop of the GEMM stepper, so that a step whose open entries it decides does
   not return to Python): every sample's ``log |coef_cj|``
   with a bound on its absolute error, every term ``coef_cj x_jl`` as ``exp(log|term| - m)`` with ``m`` the entry's
   largest log-term (so no term underflows against a row it does not belong to), the sum and the bound of its
   error. Decides every entry that is not a near-cancellation of its own terms.
2. Exact, for the rest: the logits as exact integers (float64 iterates and samples are integers times powers of
   two; one object-array product), so that a sample whose k logits are equal is recognised exactly; its coefficient
   ``1/k - [y = c]`` is a rational and enters a :class:`fractions.Fraction` sum. The other samples' terms are
   transcendental; they are summed in mpmath at 64, 256, 1024 ... bits with the bound of their rounding until the
   sum of both parts is decided. A sum of rationals only (``W = 0``, or all the samples that light up the pixel have
   tied logits) is decided exactly, 0 included. A transcendental sum that stays within its rounding at 2^16 bits is
   an error (:class:`UndecidedSign`), not a guess.

Guarantee: the signs returned are those of the real-arithmetic gradient at the float64 iterate ``W``
(tests/test_exact_sign.py compares whole SignGD trajectories with an exact mpmath reference).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable, Optional

import numpy as np

# the GEMM paths' check and stage 1, compiled beside the loop that calls them (one file per compiled entry point)
from rates.numeric.fused.kernels import float_signs, lit_samples, open_entries  # noqa: F401

EPS = 2.0**-53
# The engines flush a coefficient below 2^FLUSH_EXPONENT of its row's largest (rates.numeric.fused.kernels).
FLUSH_EXPONENT = -1000
# Precisions (bits) of the transcendental part of an exact decision, in turn.
PRECISIONS = (64, 256, 1024, 4096, 16384)


class UndecidedSign(ArithmeticError):
    """A gradient entry whose sign 16384-bit arithmetic could not settle (a transcendental near-tie)."""


def takes_exact_signs(recipe: Any) -> bool:
    """Whether a recipe is plain SignGD on the full batch (the sign of the fresh gradient, no momentum, no Adam):
    the steps whose signs the engines certify. Signum's and Adam's signs are those of averages of past gradients,
    computed in float64 with no such guarantee."""
    from rates.norms import parse_norm

    if recipe.source != "full" or recipe.adam or recipe.momentum:
        return False
    norm = parse_norm(recipe.norm)
    return norm.kind == "entrywise" and math.isinf(norm.p)


def relative_error(count: int, k: int, logit_error: Any) -> Any:
    """``rho``: an engine's error on an entry ``sum_j coef_j x_jl`` of the mean gradient is at most ``rho`` times
    ``sum_j |coef_j x_jl|`` (see the module docstring); ``logit_error`` bounds the logits' absolute rounding (a
    number or an array, one per run)."""
    return 4.0 * ((count + k + 16) * EPS + 4.0 * logit_error)


def logit_error(W: np.ndarray, column_max: np.ndarray) -> np.ndarray:
    """A bound on the absolute rounding of every logit ``sum_l W_cl x_jl`` of each run: ``(d + 2) eps`` times the
    largest ``sum_l |W_cl| max_j |x_jl|``. ``W`` (R, k, d), ``column_max`` (d,) ``max_j |x_jl|``; returns (R,)."""
    d = W.shape[-1]
    return (d + 2) * EPS * (np.abs(W) @ column_max).max(axis=-1)


def flush_error(k: int) -> float:
    """What the coefficients flushed to 0 (below 2^FLUSH_EXPONENT of their row's largest, each below ``2.2 k / count``
    of it) can add to an entry of the mean gradient, in row units, per unit of ``max_j |x_jl|``."""
    return 2.2 * k * 2.0**FLUSH_EXPONENT


def _shift_of(values: np.ndarray) -> int:
    """The least ``s >= 0`` with every float64 of ``values`` an integer times ``2^-s`` (53 past the smallest binary
    exponent of a nonzero entry)."""
    finite = values[values != 0]
    if finite.size == 0:
        return 0
    _, exponents = np.frexp(finite)
    return max(0, 53 - int(exponents.min()))


def _integers(values: Iterable[float], shift: int) -> list[int]:
    """``values`` times ``2^shift`` as exact Python integers (``shift`` from :func:`_shift_of`)."""
    out = []
    for v in values:
        numerator, denominator = float(v).as_integer_ratio()
        out.append(numerator * ((1 << shift) // denominator))
    return out


def _as_integers(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``(N, s)`` with ``values = N 2^-s`` exactly, ``N`` an object array of Python integers (float64 entries are
    integers times powers of two)."""
    shift = _shift_of(values)
    out = np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = _integers(values.reshape(-1).tolist(), shift) if values.size else []
    return out, shift


class _ExactLogits:
    """Samples' logits as exact integers times ``2^-shift``, formed per sample when first asked for (an exact
    decision needs only the samples that light up its entry's column: on digits a few hundred of 1797, where all of
    them as one object-array product took most of a late step's time)."""

    def __init__(self, W: np.ndarray, X: np.ndarray):
        self.W_int, w_shift = _as_integers(W)
        self.X = X
        self.x_shift = _shift_of(X)
        self.shift = w_shift + self.x_shift
        self._rows: dict[int, list[int]] = {}

    def logits(self, j: int) -> list[int]:
        """Sample j's k logits ``sum_l W_cl x_jl`` times ``2^shift``, exact."""
        if j not in self._rows:
            row = self.X[j]
            present = np.flatnonzero(row).tolist()
            x = _integers(row[present].tolist(), self.x_shift)
            W = self.W_int
            self._rows[j] = [sum(W[c, l] * v for l, v in zip(present, x)) for c in range(W.shape[0])]
        return self._rows[j]


def _exact_sign(exact: _ExactLogits, X: np.ndarray, y: np.ndarray, c: int, l: int, k: int) -> float:
    """Stage 2 for entry (c, l): rational samples (tied logits) exactly, the others in mpmath to a decision."""
    import mpmath as mp

    lit = np.flatnonzero(X[:, l]).tolist()
    rational = Fraction(0)
    transcendental = []
    for j in lit:
        logits = exact.logits(j)
        x = Fraction(float(X[j, l]))
        if all(z == logits[0] for z in logits):
            rational += (Fraction(1, k) - (1 if y[j] == c else 0)) * x
        else:
            transcendental.append((j, logits))
    if not transcendental:
        return float((rational > 0) - (rational < 0))
    for bits in PRECISIONS:
        with mp.workprec(bits + 32):
            total, size, widest = mp.mpf(0), mp.mpf(0), 0
            terms = []
            for j, logits in transcendental:
                top = max(logits)
                shifted = [mp.ldexp(mp.mpf(z - top), -exact.shift) for z in logits]
                widest = max(widest, max(abs(s) for s in shifted))
                powers = [mp.exp(s) for s in shifted]
                whole = mp.fsum(powers)
                if y[j] == c:
                    coeff = -mp.fsum(p for o, p in enumerate(powers) if o != c) / whole
                else:
                    coeff = powers[c] / whole
                terms.append(coeff * mp.mpf(float(X[j, l])))
            total = mp.fsum(terms)
            size = mp.fsum(abs(t) for t in terms)
            # each term: its arguments rounded to bits + 32 (relative 2^-(bits+32), absolute |s| times that in the
            # exponent), k exponentials, a sum of k, a quotient and a product; then the sum of the terms
            bound = size * (widest + 4 * k + 16 + len(terms)) * mp.ldexp(1, -bits - 30)
            value = total + mp.mpf(rational.numerator) / rational.denominator
            bound += abs(value) * mp.ldexp(1, -bits - 30)
            if abs(value) > 2 * bound:
                return float(mp.sign(value))
    raise UndecidedSign(f"the sign of gradient entry ({c}, {l}) stays within its rounding at {PRECISIONS[-1]} bits")


def decide(W: np.ndarray, X: np.ndarray, y: np.ndarray, entries: Iterable[tuple[int, int]],
           lit: Optional[tuple[np.ndarray, np.ndarray]] = None) -> list[float]:
    """The exact signs (-1, 0, +1) of the entries ``(c, l)`` of the mean cross-entropy gradient of one run at the
    float64 iterate ``W`` (k, d) on samples ``X`` (n, d) with labels ``y`` (n,), in the order given; ``lit`` the
    columns' nonzero rows (:func:`rates.numeric.fused.kernels.lit_samples`, made here when not given)."""
    W = np.asarray(W, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    k = W.shape[0]
    entries = list(entries)
    classes = np.array([c for c, _ in entries], dtype=np.int64)
    features = np.array([l for _, l in entries], dtype=np.int64)
    signs = np.empty(len(entries))
    starts, rows = lit if lit is not None else lit_samples(X)
    float_signs(W, X, y, classes, features, starts, rows, signs)
    exact: Optional[_ExactLogits] = None
    out = []
    for (c, l), decided in zip(entries, signs.tolist()):
        decided = None if math.isnan(decided) else decided
        if decided is None:
            exact = exact if exact is not None else _ExactLogits(W, X)
            decided = _exact_sign(exact, X, y, c, l, k)
        out.append(decided)
    return out


def settle(W: np.ndarray, X: np.ndarray, y: np.ndarray, G: np.ndarray, undecided: np.ndarray) -> None:
    """Replace, in place, the undecided entries of ``G`` (R, k, d; ``undecided`` a boolean mask of that shape) by
    their exact signs (-1, 0, +1), run by run; the other entries keep their computed values (whose signs are
    exact). Only for directions that read the signs of ``G``."""
    for r in np.flatnonzero(undecided.any(axis=(1, 2))).tolist():
        if not np.isfinite(W[r]).all():  # a diverged iterate has no exact gradient; the engine reports it diverged
            continue
        entries = [tuple(e) for e in np.argwhere(undecided[r]).tolist()]
        for (c, l), s in zip(entries, decide(W[r], X, y, entries)):
            G[r, c, l] = s


class CertifiedSigns:
    """A full-batch torch source (the protocol of :class:`rates.numeric.optim.sources.FullGradient`) whose signal
    has exact signs: its undecided entries are settled by :func:`settle` (on the host; the rest stays on the
    signal's device). For signals whose coefficients are at most 1 in their row's units and whose samples carry the
    mean's ``1/n`` (:func:`rates.numeric.losses.coefficients` with one scale per row), so that
    ``sum_j |coef_j x_jl| <= sum_j |x_jl| / n`` in the units of the signal; coefficients that underflow (below
    2^-1022 of their row's largest) are counted as the flushed ones of the kernels."""

    def __init__(self, source: Any, H: Any, y: Any, k: int):
        self.source, self.k = source, k
        self.X = np.ascontiguousarray(H.detach().cpu().numpy(), dtype=np.float64)
        self.y = np.ascontiguousarray(y.detach().cpu().numpy(), dtype=np.int64)
        n = self.X.shape[0]
        self.column_max = H.abs().amax(dim=0)
        self.column_mass = H.abs().sum(dim=0) / n
        self.count = n

    def init(self, W: Any) -> Any:
        return self.source.init(W)

    def __call__(self, W: Any, state: Any, t: int) -> tuple[Any, Any]:
        import torch

        from rates.numeric.optim.base import Signal

        signal, state = self.source(W, state, t)
        d = W.shape[-1]
        logits = (d + 2) * EPS * (W.abs() @ self.column_max).amax(dim=-1)  # (R,)
        rho = relative_error(self.count, self.k, logits)
        bound = (rho[:, None, None] + 2.0 ** (FLUSH_EXPONENT + 1)) * self.column_mass
        undecided = ~(signal.value.abs() > bound) & (self.column_mass > 0)
        if not bool(undecided.any()):
            return signal, state
        G = signal.value.detach().cpu().numpy().copy()
        settle(W.detach().cpu().numpy(), self.X, self.y, G, undecided.cpu().numpy())
        return Signal(torch.from_numpy(G).to(signal.value.device), signal.log_scale), state
