"""mpmath reference implementation of the optimisers (docs/theory.md section 7), for small problems.

Setting: docs/theory.md sections 1-2; the same steps as :mod:`rates.numeric.optim` (signal -> [momentum] -> steepest
direction | Adam -> ``W <- W - eta_t * direction``), written the textbook way, one sample and one entry at
a time, in ``dps``-digit arithmetic. mpmath numbers have an unbounded exponent, so ``exp(-1000)`` is an
ordinary number: no log-domain trick is needed and none is used (only ``S_y - 1`` is formed as
``-sum_{c != y} S_c``, since 1 - S_y falls below 10^-dps long before the runs end). This is what makes it an independent
check of the engine's shifted log-domain weights and shared log-scales.

Algorithm: ``grad L(W) = (1/m) sum_i (S(W h_i) - e_{y_i}) h_i^T`` over the samples of the step's batch;
momentum ``M_t = beta M_{t-1} + (1-beta) Z_t``; SVRG ``grad_B(W_t) - grad_B(W~) + grad L(W~)``; steepest
directions of docs/theory.md section 2 (sign; one signed coordinate; Z/||Z||_F; entry-wise l_p; the polar
factor, the top singular pair and Schatten-p weights from mpmath's SVD; Muon's Newton-Schulz iteration);
bias-corrected Adam (SIGNADAM eq. 3) with or without eps; eta_t = eta0 (t+2)^-a, or ``eta0 f(t)`` for any
schedule (:class:`rates.schedule.Schedule`: its sympy expression evaluated by mpmath at the working precision).

Which of these steps a run takes is read from the composition of pieces that defines it
(:mod:`rates.numeric.optim.alias`, :func:`config_of`): a named optimiser is checked against this reference
by construction (tests/test_one_definition.py), while each step here is written from its formula.

Reference: Kingma & Ba (2014) for Adam; MINIBATCH section 3.1 and SIGNADAM eq. 3-5 for the framework.
It is slow (pure Python): meant for n, k, d of a few and a few thousand steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Optional, Sequence

import mpmath as mp

from rates.norms import NS_COEFFS, parse_norm

Matrix = list[list[mp.mpf]]


@dataclass(frozen=True)
class ReferenceConfig:
    """One run: ``norm`` (max, sum, frobenius, lp:P, spectral, nuclear, schatten:P) unless ``adam``; ``a`` as a
    fraction string, or ``schedule`` the text of any schedule ``eta0*f(t)`` (then ``a`` is not read); ``polar``
    ``exact`` or ``newton-schulz`` (Muon's iteration, spectral only)."""

    norm: str = "max"
    a: str = "1/2"
    eta0: float = 1.0
    momentum: float = 0.0
    adam: bool = False
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 0.0
    vr: bool = False
    polar: str = "exact"
    schedule: Optional[str] = None


def _mp_unit(text: str):
    """``f`` of the schedule ``text`` as a function of an mpf step, evaluated by mpmath at the working precision
    (the sympy expression of :attr:`rates.schedule.Schedule.unit_expr`, not the engines' float64 table)."""
    import sympy

    from rates.schedule import Schedule, t_sym

    return sympy.lambdify(t_sym, Schedule(text).unit_expr, modules=[{"Min": min, "Max": max}, "mpmath"])


def _zeros(k: int, d: int) -> Matrix:
    return [[mp.mpf(0) for _ in range(d)] for _ in range(k)]


def gradient(W: Matrix, H: Sequence[Sequence[mp.mpf]], y: Sequence[int], samples: Iterable[int]) -> Matrix:
    """Mean cross-entropy gradient over ``samples`` in full precision (no shifting needed)."""
    k, d = len(W), len(W[0])
    G = _zeros(k, d)
    samples = list(samples)
    for i in samples:
        z = [mp.fsum(W[c][j] * H[i][j] for j in range(d)) for c in range(k)]
        top = max(z)
        e = [mp.exp(zc - top) for zc in z]
        total = mp.fsum(e)
        for c in range(k):
            # S_y - 1 = -sum_{c != y} S_c: subtracting from 1 would cancel every digit once 1 - S_y < 10^-dps.
            coeff = e[c] / total if c != y[i] else -mp.fsum(e[o] for o in range(k) if o != c) / total
            for j in range(d):
                G[c][j] += coeff * H[i][j]
    m = len(samples)
    return [[g / m for g in row] for row in G]


def steepest(Z: Matrix, norm: str, polar: str = "exact") -> Matrix:
    """argmax_{||D|| <= 1} <Z, D> for the norms of docs/theory.md section 2: the norm's own mpmath direction
    (:meth:`rates.norms.Norm.steepest_mp`); ``polar="newton-schulz"`` is Muon's quintic iteration instead of
    the spectral norm's polar factor, with the coefficients of :func:`rates.norms.newton_schulz_polar`."""
    parsed = parse_norm(norm)
    if polar == "newton-schulz" and parsed.kind == "schatten" and mp.isinf(parsed.p):
        return _newton_schulz_mp(Z)
    return parsed.steepest_mp(Z)


def _newton_schulz_mp(Z: Matrix, steps: int = 5) -> Matrix:
    a, b, c = (mp.mpf(x) for x in NS_COEFFS)
    k, d = len(Z), len(Z[0])
    X = mp.matrix(Z).T if k > d else mp.matrix(Z)
    X = X / mp.norm(X, 2)  # mp.norm of a matrix with p = 2 is the Frobenius norm
    for _ in range(steps):
        A = X * X.T
        X = a * X + (b * A + c * A * A) * X
    X = X.T if k > d else X
    return [[X[i, j] for j in range(d)] for i in range(k)]


def run(H: Sequence[Sequence[float]], y: Sequence[int], k: int, config: ReferenceConfig, steps: int,
        batches: Optional[Sequence[Sequence[int]]] = None, epoch_length: Optional[int] = None,
        dps: int = 50) -> Matrix:
    """W after ``steps`` steps from W = 0 (mpf entries). ``batches[t]`` lists the samples of step t
    (full batch when None); ``epoch_length`` (steps per epoch) sets the VR snapshot times."""
    return trajectory(H, y, k, config, steps, (steps,), batches, epoch_length, dps)[steps]


def trajectory(H: Sequence[Sequence[float]], y: Sequence[int], k: int, config: ReferenceConfig, steps: int,
               record: Iterable[int], batches: Optional[Sequence[Sequence[int]]] = None,
               epoch_length: Optional[int] = None, dps: int = 50) -> dict[int, Matrix]:
    """``{t: W_t}`` (mpf entries) for the steps ``t`` in ``record`` (0 .. steps), as :func:`run`."""
    wanted = set(record)
    out: dict[int, Matrix] = {}
    with mp.workdps(dps):
        Hm = [[mp.mpf(v) for v in row] for row in H]
        n, d = len(Hm), len(Hm[0])
        if config.schedule is None:
            exponent = Fraction(str(config.a))
            a = mp.mpf(exponent.numerator) / exponent.denominator
        else:
            unit = _mp_unit(config.schedule)
        eta0 = mp.mpf(config.eta0)
        beta = mp.mpf(config.momentum)
        W = _zeros(k, d)
        M = _zeros(k, d)
        m1, v2 = _zeros(k, d), _zeros(k, d)
        b1, b2, eps = mp.mpf(config.beta1), mp.mpf(config.beta2), mp.mpf(config.eps)
        snapshot_W = None
        everyone = range(n)
        for t in range(steps + 1):
            if t in wanted:
                out[t] = [row[:] for row in W]
            if t == steps:
                break
            batch = everyone if batches is None else batches[t]
            Z = gradient(W, Hm, y, batch)
            if config.vr:
                if t % epoch_length == 0:
                    snapshot_W = [row[:] for row in W]
                    snapshot_full = gradient(snapshot_W, Hm, y, everyone)
                snap_batch = gradient(snapshot_W, Hm, y, batch)
                Z = [[Z[c][j] - snap_batch[c][j] + snapshot_full[c][j] for j in range(d)] for c in range(k)]
            eta = eta0 * (mp.power(t + 2, -a) if config.schedule is None else unit(mp.mpf(t)))
            if config.adam:
                m1 = [[b1 * m1[c][j] + (1 - b1) * Z[c][j] for j in range(d)] for c in range(k)]
                v2 = [[b2 * v2[c][j] + (1 - b2) * Z[c][j] ** 2 for j in range(d)] for c in range(k)]
                c1, c2 = 1 - b1 ** (t + 1), 1 - b2 ** (t + 1)
                for c in range(k):
                    for j in range(d):
                        denom = mp.sqrt(v2[c][j] / c2) + eps
                        W[c][j] -= eta * (m1[c][j] / c1 / denom if denom > 0 else 0)
                continue
            if beta > 0:
                M = [[beta * M[c][j] + (1 - beta) * Z[c][j] for j in range(d)] for c in range(k)]
                Z = M
            D = steepest(Z, config.norm, config.polar)
            W = [[W[c][j] - eta * D[c][j] for j in range(d)] for c in range(k)]
    return out


# What each piece of a composition (rates.numeric.optim.alias) sets in the reference, given the resolved run;
# a piece without an entry has no reference and config_of refuses it (a new kind of piece needs one here).
_PIECES = {
    "source": lambda piece, run: {"vr": piece.kind == "vr"},
    "momentum": lambda piece, run: {"momentum": run.algorithm.momentum},
    "adam": lambda piece, run: {"adam": True, "beta1": run.spec.adam_beta1, "beta2": run.spec.adam_beta2,
                                "eps": run.spec.adam_eps},
    "direction": lambda piece, run: {"norm": piece.kind, "polar": run.spec.polar},
    "schedule": lambda piece, run: {"eta0": run.spec.eta0, **({"a": str(run.schedule.a)} if run.schedule.is_polynomial
                                                              else {"schedule": run.schedule.text})},
}


def config_of(run: Any) -> ReferenceConfig:
    """The reference configuration of a resolved engine run (``rates.numeric.engine.ResolvedRun``), read piece
    by piece from the composition it executes (``run.recipe.composition``), never from its name."""
    keywords: dict[str, Any] = {}
    for piece in run.recipe.composition.pieces:
        if piece.role not in _PIECES:
            raise ValueError(f"the mpmath reference has no step for the piece {piece}")
        keywords.update(_PIECES[piece.role](piece, run))
    return ReferenceConfig(**keywords)


def batches_of(run: Any, n: int, steps: int) -> tuple[Optional[list[list[int]]], Optional[int]]:
    """The samples of every step and the steps per epoch of a resolved run: the epoch permutations its seed
    draws (:func:`rates.numeric.optim.sources.epoch_permutations`), cut into consecutive batches."""
    batch = run.recipe.batch
    if run.recipe.source == "full" or batch is None:
        return None, None
    from rates.numeric.optim.sources import epoch_permutations  # torch's generator: the engines' stream

    epoch_length = n // batch
    stream = epoch_permutations(run.spec.seed, n)
    out: list[list[int]] = []
    while len(out) < steps:
        perm = next(stream).tolist()
        out += [perm[j * batch:(j + 1) * batch] for j in range(epoch_length)]
    return out, epoch_length


def run_trajectory(run: Any, H: Sequence[Sequence[float]], y: Sequence[int], k: int, steps: int,
                   record: Iterable[int], dps: int = 50) -> dict[int, Matrix]:
    """``{t: W_t}`` of a resolved engine run in ``dps``-digit mpmath: its configuration and batches from
    :func:`config_of` and :func:`batches_of`."""
    batches, epoch_length = batches_of(run, len(y), steps)
    return trajectory(H, y, k, config_of(run), steps, record, batches, epoch_length, dps)


def to_float(W: Matrix) -> list[list[float]]:
    return [[float(v) for v in row] for row in W]


def exact_sign_run(H: Sequence[Sequence[float]], y: Sequence[int], k: int, a: Any, eta0: float, steps: int,
                   record: Sequence[int] = (), momentum: float = 0.0, batches: Optional[Sequence[Sequence[int]]] = None,
                   dps: int = 40) -> dict[int, list[list[float]]]:
    """SignGD (or Signum) with float64 iterates and exact signs: the float64 trajectory the engines must follow.

    Setting: ``W <- W - eta_t sign(Z_t)`` from W = 0, ``eta_t = eta0 (t+2)^-a`` evaluated in float64 as the
    engines do, ``Z_t`` the gradient (or, with ``momentum`` beta > 0, ``M_t = beta M_{t-1} + (1-beta) grad_t``
    from M = 0) of the float64 iterate ``W_t``. Only ``Z_t`` is computed in ``dps``-digit mpmath (unbounded
    exponent, so an entry 1e-400 below the largest keeps its sign); the update is float64 arithmetic, so a
    float64 engine whose directions have the exact signs reproduces these iterates up to the rounding of
    ``eta_t`` (sign steps add +-eta_t: the iterates then agree to ~1e-15 relative, not to 1e-3).

    ``a``: the polynomial family's exponent, or a :class:`rates.schedule.Schedule` (``eta_t = eta0 f(t)`` with the
    float64 ``f(t)`` the engines read). Returns ``{t: W_t}`` (float lists) for the steps ``t`` in ``record``
    (t = 0 .. steps).
    """
    from rates.schedule import Schedule

    schedule = a if isinstance(a, Schedule) else Schedule.polynomial(str(a))
    wanted = set(record)
    out: dict[int, list[list[float]]] = {}
    with mp.workdps(dps):
        Hm = [[mp.mpf(float(v)) for v in row] for row in H]
        n, d = len(Hm), len(Hm[0])
        W = [[0.0] * d for _ in range(k)]
        beta = mp.mpf(momentum)
        M = _zeros(k, d)
        everyone = range(n)
        for t in range(steps + 1):
            if t in wanted:
                out[t] = [row[:] for row in W]
            if t == steps:
                break
            Z = gradient([[mp.mpf(v) for v in row] for row in W], Hm, y,
                         everyone if batches is None else batches[t])
            if beta > 0:
                M = [[beta * M[c][j] + (1 - beta) * Z[c][j] for j in range(d)] for c in range(k)]
                Z = M
            eta = float(eta0) * schedule.unit_value(t)
            W = [[W[c][j] - eta * float(mp.sign(Z[c][j])) for j in range(d)] for c in range(k)]
    return out


def _integers_times_power_of_two(values: Any) -> tuple[Any, int]:
    """``(N, s)``: an object array of Python integers ``N`` and ``s`` with ``values = N / 2^s`` exactly."""
    import numpy as np

    ratios = [Fraction(float(v)) for v in np.asarray(values, dtype=np.float64).reshape(-1).tolist()]
    shift = max(r.denominator for r in ratios).bit_length() - 1
    out = np.array([r.numerator * ((1 << shift) // r.denominator) for r in ratios], dtype=object)
    return out.reshape(np.shape(values)), shift


def exact_signgd(H: Sequence[Sequence[float]], y: Sequence[int], k: int, a: Any, eta0: float, steps: int,
                 record: Sequence[int] = ()) -> dict[int, list[list[float]]]:
    """SignGD from W = 0 with float64 iterates and the signs of the gradient in real arithmetic, ties included.

    Setting: as :func:`exact_sign_run` (``W <- W - eta_t sign(grad L(W_t))``, ``eta_t`` in float64 as the engines
    take it), but every sign is that of the exact real number, 0 where the gradient entry is 0: the logits ``W h_i``
    are exact integers times a power of two (float64 iterates and samples are such numbers); a sample whose k logits
    are equal has the rational coefficients ``1/k - [y_i = c]``, summed exactly; the other samples' coefficients are
    computed in mpmath (``2^-p`` relative) and summed as integers in units of ``2^-P``, with the bound of both
    roundings. An entry within its bound is recomputed with p and P larger (never the case on the sets tested).
    For data sets of thousands of samples (digits: ~0.4 s per step).
    """
    import numpy as np

    from rates.schedule import Schedule

    schedule = a if isinstance(a, Schedule) else Schedule.polynomial(str(a))
    H = np.asarray(H, dtype=np.float64)
    labels = np.asarray(y, dtype=np.int64)
    n, d = H.shape
    H_int, h_shift = _integers_times_power_of_two(H)
    onehot = np.zeros((k, n), dtype=object)
    onehot[labels, np.arange(n)] = 1
    W = np.zeros((k, d))
    out: dict[int, list[list[float]]] = {}
    wanted = set(record)
    for t in range(steps + 1):
        if t in wanted:
            out[t] = W.tolist()
        if t == steps:
            break
        W_int, w_shift = _integers_times_power_of_two(W)
        logits = (W_int @ H_int.T)  # (k, n) exact, units 2^-(w_shift + h_shift)
        tied = np.array([len(set(logits[:, j].tolist())) == 1 for j in range(n)])
        # k times the tied samples' part: sum_j (1 - k [y_j = c]) h_jl, in units 2^-h_shift
        rational = (1 - k * onehot[:, tied]) @ H_int[tied]
        sign = np.zeros((k, d))
        undecided = np.ones((k, d), dtype=bool)
        bits, fixed = 96, None
        while undecided.any():
            loose = np.flatnonzero(~tied)
            coeff = np.zeros((k, loose.size), dtype=object)
            with mp.workprec(bits):
                for col, j in enumerate(loose.tolist()):
                    top = max(logits[:, j].tolist())
                    powers = [mp.exp(mp.ldexp(mp.mpf(int(z) - top), -(w_shift + h_shift))) for z in logits[:, j]]
                    whole = mp.fsum(powers)
                    for c in range(k):
                        value = powers[c] / whole if c != labels[j] else \
                            -mp.fsum(p for o, p in enumerate(powers) if o != c) / whole
                        coeff[c, col] = value
                smallest = min((abs(v) for v in coeff.reshape(-1).tolist() if v != 0), default=mp.mpf(1))
                fixed = fixed or 64 + min(2048, max(0, -int(mp.floor(mp.log(smallest, 2)))))
                scaled = np.array([int(mp.nint(mp.ldexp(v, fixed))) for v in coeff.reshape(-1).tolist()],
                                  dtype=object).reshape(coeff.shape)
            # k 2^(fixed + h_shift) times the entry: exact rational part + rounded transcendental part
            total = rational * (1 << fixed) + k * (scaled @ H_int[loose])
            # rounding of each coefficient: relative 2^(8 - bits) (arguments, k exponentials, sums, quotient), plus
            # half a unit of 2^-fixed; in the units of total, as integers, times 2 for safety
            slack = np.array([(abs(v) >> (bits - 8)) + 1 for v in scaled.reshape(-1).tolist()],
                             dtype=object).reshape(scaled.shape)
            error = 2 * k * (slack @ np.abs(H_int[loose]))
            for c, l in np.argwhere(undecided).tolist():
                value, bound = total[c, l], error[c, l]
                if abs(value) > bound or bound == 0:
                    sign[c, l] = (value > 0) - (value < 0)
                    undecided[c, l] = False
            bits, fixed = 4 * bits, 4 * fixed
        eta = float(eta0) * schedule.unit_value(t)
        W = W - eta * sign
    return out
