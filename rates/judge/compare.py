"""The comparator: asymptotic window, slope fits with bootstrap uncertainty, one-sided verdicts.

Setting
    A :class:`~rates.numeric.trajectory.Run` holds the margin gap ``gap(t) = gamma - gamma(W_t)`` at log-spaced
    checkpoints; a Prediction (``rates.symbolic.theorems``) holds an upper bound ``gap(t) <= C_1/S_1 + sum_j C_j
    S_{p_j}/S_1``
    (``S_p = sum_{s<t} eta_s^p``) whose constants ``C >= 0`` are rebuilt worst-case values, i.e. unknown in
    practice; ``bound_members(t)`` gives the terms, ``bound_shape(t)`` their sum with unit constants. Which
    theorem may judge a run at all is decided before this module by the hypothesis gate
    (:mod:`rates.symbolic.theorems.registry`; ``no-theorem`` / ``not-applicable`` never reach :func:`judge`).

Algorithm
    1. *Window* (:func:`choose_window`): the first checkpoint after which every margin stays positive and
       the loss never increases (the observable counterpart of ``t_1`` in docs/theory.md section 3, step 3),
       intersected with the last ``decades`` decades of the usable run and with ``t >= MIN_WINDOW_START``,
       where "usable" stops at the first checkpoint whose gap is within ``100 x`` the margin solver's
       accuracy (``accuracy * gamma``, docs/theory.md section 7): below that floor the gap is solver noise.
    2. *Fit* (:func:`fit_slope`): least-squares slope of ``log gap`` on ``log t`` over the window, per run;
       the independent replicates of one configuration are averaged. The uncertainty is a seeded,
       deterministic bootstrap that resamples replicates and, inside each, the window's checkpoints. A second
       fit of ``log(gap * t^r)`` on ``log log t`` estimates the log power ``k`` (:func:`fit_log_power`).
    3. *Envelope* (:func:`slope_envelope`): the range ``[fastest, slowest]`` of the bound's least-squares
       log-log slope over the same checkpoints for every ratio of its unknown constants. It is computed from
       the members' secant slopes (exact: a positive combination's secant slope lies between its members'),
       and equals the single members' own slopes whenever their order does not cross inside the window.
    4. *Verdict* (:func:`judge`, :func:`classify`) against the envelope.

Phase rule (when a window may be judged at all)
    The theorems' guarantee starts at ``t_1`` (docs/theory.md section 3). The rebuilt ``t_0, t_1`` use worst-case
    constants and are often astronomically large (docs/findings.md), so they cannot gate real runs without making every
    run inconclusive. The rule is therefore observable: a window is judged only (a) after the empirical entry
    of step 1 (margins positive, loss non-increasing, and for full-batch NSD falling at least at the descent
    lemma's rate), and (b) if the gap has moved over it: a gap whose log varies by less than
    ``FROZEN_LOG_RANGE`` (e.g. SignGD whose sign pattern never changes, so ``W_t/||W_t||`` is constant) is
    ``inconclusive: pre-asymptotic``, never ``violated``. The rebuilt ``t_0, t_1`` with the data's numeric
    constants are reported beside every verdict (:func:`rates.studies.fitting.phase_of`), with a statement whether the
    run reached ``t_1``; they never turn a verdict into ``violated``.

Findings (:class:`Assessment`; docs/theory.md section 4), three, none inferred from another
    (i) *bound holds* (:func:`bound_finding`): the 95% upper limit of the fitted slope is at most the slowest
    bound term's slope plus the tolerance; *violated*: slower than it by more than the tolerance with the 95%
    interval excluding it. (ii) *dominant term* (:func:`dominant_term`): non-negative fit of the gap on the
    terms over the window. (iii) *stated rate attained* (:func:`stated_rate_finding`): slope and log power
    against the term that carries the paper's O(.) (exact partial sums over the window).

Target (``judge(..., target_margin=...)``)
    The fitted quantity is the one the theorem bounds: ``gamma - gamma(W_t)`` by default, ``target_margin -
    gamma(W_t)`` when given (``gamma_eff`` of MINIBATCH Thm 4.1/4.3; :func:`rates.studies.fitting.gap_target`
    computes it from the data's constants). A run whose margin ends above the target has a negative bounded quantity:
    the bound holds for every constant.

Guarantee (what a verdict means)
    Rates are upper bounds, so the judgement is one-sided (docs/theory.md section 4):

    * ``tight``: the bound holds and the stated rate is attained;
    * ``loose``: the bound holds and the gap decays faster than the stated rate (slope, or log power);
    * ``violated``: the bound fails (finding (i)) -- the only outcome that contradicts the theorem for every
      constant;
    * ``inconclusive``: not yet separated/monotone, window too short, gap at the solver floor, a frozen gap
      (pre-asymptotic), whether the bound holds still open (interval too wide, or a slope that still bends:
      :class:`Settling`, the two half-window slopes differ, beyond the bound's own bending, by more than the
      tolerance plus two standard errors), or the bound holds but attainment is open.

    :func:`classify` is the older envelope-position rule (inside / faster / slower than the slope envelope);
    it is kept for callers that ask only that question and never decides a verdict of :func:`judge`.

Reference
    Rates: SIGNADAM Cor. 5.4 / Cor. C.5 (NSD), Cor. 6.4 (Adam);
    MINIBATCH Cor. D.5/E.5/F.5. The comparison rule is docs/theory.md section 4;
    the bound model with unknown constants is docs/findings.md F8.

Why one module (about 1,100 lines): the window, the fit and the verdict are one decision. A verdict's
one-sidedness rests on how the window was chosen (entry, descent start, two decades), what the fit's interval
means (bootstrap over checkpoints, pooled over independent runs) and which envelope of the bound it is held
against; split apart, that rule would be read in three places. The sections follow the order of the decision.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np

from rates.errors import InputError
from rates.numeric.trajectory import Run

VERDICTS = ("tight", "loose", "violated", "inconclusive", "no-theorem", "not-applicable")
DEFAULT_TOLERANCE = 0.05
DEFAULT_DECADES = 2.0
MIN_DECADES = 1.0
# Earliest start of an automatic window. The envelope covers the constants' ratios but not t_1's shift of the
# sums; that shifts a log factor's local slope by about 1/(log t + C)^2 per unit of C (e.g. for 1/log t:
# d/dC of -1/(log t + C)), which is below the default tolerance 0.05 only from t ~ 1e3 on (1/log(1e3)^2 =
# 0.02; at t = 1e2 it is 0.047). Earlier checkpoints can fake a 'violated' or a 'tight'.
MIN_WINDOW_START = 1e3
MIN_POINTS = 6
# A gap whose log moves by less than this over the whole window has not left its starting value (e.g. SignGD
# with a tiny eta_0 whose sign pattern never changes: W_t/||W_t|| is then exactly constant). Float64 margins
# carry ~1e-15 relative noise, so 1e-6 separates "frozen" from any real decay (t^-0.01 over one decade: 0.023).
FROZEN_LOG_RANGE = 1e-6
FLOOR_FACTOR = 100.0
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20240611
# Relative slack when testing "loss non-increasing": log-domain losses carry float64 rounding.
_MONOTONE_SLACK = 1e-10


class BoundLike(Protocol):
    """What the comparator needs from a Prediction: the bound's shape at given t.

    A bound may also offer ``bound_members(t)``: the terms ``f_m(t)`` of ``bound = sum_m C_m f_m(t)`` whose
    constants ``C_m >= 0`` are unknown (:func:`slope_envelope`); without it the shape is the only member.
    """

    def bound_shape(self, t: np.ndarray) -> np.ndarray: ...


# --------------------------------------------------------------------------------------------- window


@dataclass(frozen=True)
class Window:
    """The checkpoints ``t0 <= t <= t1`` a fit uses, and how they were chosen.

    ``entry_t`` is the empirical entry into the separable, monotone-loss phase (None: never entered);
    ``floor`` is ``100 * accuracy * gamma``; ``floor_t`` the first checkpoint at or below it (None: never).
    ``problem`` is None for a usable window, otherwise the reason a verdict must be ``inconclusive``.
    """

    t0: float
    t1: float
    points: int
    source: str  # "auto" or "user"
    entry_t: Optional[float]
    floor: float
    floor_t: Optional[float]
    problem: Optional[str] = None

    @property
    def decades(self) -> float:
        return math.log10(self.t1 / self.t0) if self.t0 > 0 and self.t1 > self.t0 else 0.0

    def text(self) -> str:
        return (f"t in [{self.t0:.3g}, {self.t1:.3g}] ({self.decades:.2f} decades, {self.points} checkpoints, "
                f"{self.source})")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["decades"] = self.decades
        return out


def solver_floor(run: Run) -> float:
    """Smallest gap that is not solver noise: ``100 x`` the margin solver's absolute accuracy."""
    gamma = float(run.gamma["value"])
    accuracy = float(run.gamma["accuracy"])
    return FLOOR_FACTOR * abs(accuracy) * abs(gamma)


def entry_index(run: Run) -> Optional[int]:
    """First checkpoint from which all margins stay positive and the loss never increases; None if none.

    This is the observable counterpart of ``t_1`` (docs/theory.md section 3): the theorems' margin bound holds
    once the data are separated and the loss decreases monotonically. For full-batch NSD the loss must
    also fall at least as fast as the descent lemma guarantees past ``t_0`` (:func:`_descent_shortfall`).
    """
    margin = np.asarray(run.margin, dtype=float)
    log_loss = np.asarray(run.log_loss, dtype=float)
    n = len(margin)
    if n == 0:
        return None
    slack = _MONOTONE_SLACK * np.maximum(1.0, np.abs(log_loss[:-1]))
    rises = np.zeros(n, dtype=bool)
    rises[:-1] = ~(log_loss[1:] <= log_loss[:-1] + slack)  # NaN counts as a rise
    rises[:-1] |= _descent_shortfall(run, log_loss)
    bad = ~(margin > 0) | rises
    if bad[-1]:
        return None
    bad_idx = np.flatnonzero(bad)
    return 0 if len(bad_idx) == 0 else int(bad_idx[-1]) + 1


def _descent_shortfall(run: Run, log_loss: np.ndarray) -> np.ndarray:
    """Checkpoint intervals where log L fell by less than the descent lemma's guarantee (full-batch NSD only).

    For normalised steepest descent past ``t_0`` (noise ``alpha eta_t <= gamma/2``) and ``t_1`` (``L <= 2G``),
    docs/theory.md section 3 steps 1-3 give
    ``L(W_{s+1}) <= L(W_s) - eta_s (gamma/2) G(W_s) <= L(W_s)(1 - eta_s gamma/4)``,
    hence ``log L(t') - log L(t) <= -(gamma/4) sum_{s=t}^{t'-1} eta_s`` (SIGNADAM
    Thm 5.3). A run whose loss falls slower than that -- e.g. a plateau with margins barely positive and
    the gap still near gamma -- has not reached the phase the rate speaks about. Other families (Adam,
    mini-batch, momentum, VR) have other constants (``gamma_eff``); for them only monotonicity is checked.
    """
    shortfall = np.zeros(max(len(log_loss) - 1, 0), dtype=bool)
    config = run.config
    if config.family != "nsd" or config.batch is not None or len(log_loss) < 2 or config.general_schedule:
        return shortfall
    try:
        a = config.exponent
        eta0 = float(config.eta0)
        gamma = float(run.gamma["value"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return shortfall
    if not (eta0 > 0 and gamma > 0):  # a is in (0, 1]: a RunConfig's schedule is checked when it is made
        return shortfall
    t = np.asarray(run.t, dtype=float)
    # sum_{s=t}^{t'-1} (s+2)^-a >= int_t^{t'} (x+2)^-a dx (decreasing terms): the integral under-states the
    # guaranteed decrease, so this test can only err towards admitting a checkpoint.
    x = t + 2.0
    integral = np.log(x) if a == 1 else x ** (1 - float(a)) / (1 - float(a))
    guaranteed = (gamma / 4.0) * eta0 * np.diff(integral)
    slack = _MONOTONE_SLACK * np.maximum(1.0, np.abs(log_loss[:-1]))
    return ~(np.diff(log_loss) <= -guaranteed + slack)


def _usable_mask(run: Run) -> np.ndarray:
    t = np.asarray(run.t, dtype=float)
    gap = np.asarray(run.gap, dtype=float)
    return (t >= 1) & np.isfinite(gap) & (gap > 0)


def choose_window(run: Run, override: Optional[tuple[float, float]] = None, decades: float = DEFAULT_DECADES,
                  min_decades: float = MIN_DECADES, min_points: int = MIN_POINTS,
                  min_start: float = MIN_WINDOW_START) -> Window:
    """Pick the asymptotic window of one run (module docstring, step 1), or validate a user window.

    A user window (``--window T0:T1``) must satisfy ``1 <= T0 < T1`` and lie inside the run's checkpoints;
    otherwise :class:`InputError` naming ``--window``. Floor points inside a user window are still left out
    (their logarithm is noise), and the window is reported as ``user``.
    """
    t = np.asarray(run.t, dtype=float)
    gap = np.asarray(run.gap, dtype=float)
    floor = solver_floor(run)
    entry = entry_index(run)
    entry_t = float(t[entry]) if entry is not None else None
    at_floor = np.flatnonzero((t >= 1) & ~(gap > floor))
    if entry is not None:
        at_floor = at_floor[at_floor >= entry]
    floor_idx = int(at_floor[0]) if len(at_floor) else None
    floor_t = float(t[floor_idx]) if floor_idx is not None else None
    usable = _usable_mask(run) & (gap > floor)

    if override is not None:
        t0, t1 = override
        positive = t[t >= 1]
        if not (1 <= t0 < t1):
            raise InputError("window", f"needs 1 <= T0 < T1, got {t0:g}:{t1:g}")
        if len(positive) == 0 or t0 < positive[0] or t1 > positive[-1]:
            lo, hi = (positive[0], positive[-1]) if len(positive) else (float("nan"), float("nan"))
            raise InputError("window", f"{t0:g}:{t1:g} lies outside the run's checkpoints [{lo:g}, {hi:g}]")
        inside = (t >= t0) & (t <= t1)
        if inside.sum() < 3:
            raise InputError("window", f"{t0:g}:{t1:g} holds {int(inside.sum())} checkpoints; at least 3 are needed")
        # The user's window is honoured even before the empirical entry; judge() notes it.
        return _window(t, inside & usable, "user", entry_t, floor, floor_t, None, min_decades, min_points,
                       bounds=(t0, t1))

    if entry is None:
        return Window(float("nan"), float("nan"), 0, "auto", None, floor, floor_t,
                      "not yet separated: margins not all positive or loss still rising at the end of the run")
    end = len(t) if floor_idx is None else floor_idx
    idx = np.arange(len(t))
    candidates = (idx >= entry) & (idx < end) & usable
    if not candidates.any():
        reason = "gap at the solver floor" if floor_idx is not None else "no checkpoint with a positive gap after entry"
        return Window(float("nan"), float("nan"), 0, "auto", entry_t, floor, floor_t, reason)
    t_end = float(t[candidates][-1])
    chosen = candidates & (t >= max(t_end / 10.0 ** decades, min_start))
    if floor_idx is not None and floor_idx < len(t) - 1:
        problem_if_short = "gap at the solver floor"
    elif t_end < min_start * 10.0 ** min_decades:
        # a decade from the window's start, plus two checkpoint gaps (log-spaced, as many as this run has)
        start = max(min_start, entry_t or 0.0) * 10.0 ** min_decades
        gap = math.log10(start) / max(len(t) - 1, 1)
        exact = start * 10.0 ** (2 * gap)
        unit = 10 ** max(math.floor(math.log10(exact)) - 1, 0)  # rounded up to two significant digits
        needed = math.ceil(exact / unit) * unit
        problem_if_short = (f"run too short for an asymptotic window (t >= {min_start:g}); a run of {needed} steps "
                            f"or more would give one")
    else:
        problem_if_short = None
    return _window(t, chosen, "auto", entry_t, floor, floor_t, None, min_decades, min_points,
                   short_reason=problem_if_short)


def _window(t: np.ndarray, chosen: np.ndarray, source: str, entry_t: Optional[float], floor: float,
            floor_t: Optional[float], problem: Optional[str], min_decades: float, min_points: int,
            bounds: Optional[tuple[float, float]] = None, short_reason: Optional[str] = None) -> Window:
    ts = t[chosen]
    if bounds is not None:
        t0, t1 = bounds
    elif len(ts):
        t0, t1 = float(ts[0]), float(ts[-1])
    else:
        t0 = t1 = float("nan")
    span = math.log10(ts[-1] / ts[0]) if len(ts) >= 2 else 0.0
    if problem is None and (len(ts) < min_points or span < min_decades):
        problem = (f"{short_reason}: " if short_reason else "") + (
            f"window too short ({len(ts)} checkpoints over {span:.2f} decades; "
            f"need {min_points} over {min_decades:g})")
    return Window(float(t0), float(t1), int(len(ts)), source, entry_t, floor, floor_t, problem)


def window_mask(run: Run, window: Window) -> np.ndarray:
    """Checkpoints of ``run`` inside ``window`` with a gap above the run's own solver floor.

    The floor is the run's (``solver_floor(run)``), not ``window.floor``: a seeds' common window carries the
    largest of their floors, and one seed's less accurate margin solver says nothing about another's gap.
    """
    t = np.asarray(run.t, dtype=float)
    gap = np.asarray(run.gap, dtype=float)
    return (t >= window.t0) & (t <= window.t1) & _usable_mask(run) & (gap > solver_floor(run))


def parse_window(text: str, option: str = "window") -> tuple[float, float]:
    """``T0:T1`` (numbers such as ``1e3:1e5``) -> (T0, T1); the run-dependent range is checked later."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        t0, t1 = float(parts[0]), float(parts[1])
    except ValueError:
        raise InputError(option, f"expected T0:T1 such as 1e3:1e5, got {text!r}") from None
    if not (math.isfinite(t0) and math.isfinite(t1) and 1 <= t0 < t1):
        raise InputError(option, f"needs 1 <= T0 < T1, got {text!r}")
    return t0, t1


def common_window(windows: Sequence[Window]) -> Window:
    """Intersection of per-seed windows, so every seed is fitted over the same checkpoints."""
    problems = [w.problem for w in windows if w.problem]
    t0 = max(w.t0 for w in windows)
    t1 = min(w.t1 for w in windows)
    entries = [w.entry_t for w in windows]
    floors_t = [w.floor_t for w in windows if w.floor_t is not None]
    problem = problems[0] if problems else None
    if problem is None and not t0 < t1:
        problem = "the seeds' windows do not overlap"
    return Window(t0, t1, min(w.points for w in windows), windows[0].source,
                  None if any(e is None for e in entries) else max(entries),  # type: ignore[type-var]
                  max(w.floor for w in windows), min(floors_t) if floors_t else None, problem)


def _checked_overlap(runs: Sequence[Run], win: Window, min_decades: float = MIN_DECADES,
                     min_points: int = MIN_POINTS) -> Window:
    """The seeds' common window with its real size: each seed's window passed the length test, but their
    intersection can be a sliver (one seed's late entry, another's early floor) that must not be judged."""
    if win.problem is not None:
        return win
    spans, counts = [], []
    for run in runs:
        ts = np.asarray(run.t, dtype=float)[window_mask(run, win)]
        counts.append(len(ts))
        spans.append(math.log10(ts[-1] / ts[0]) if len(ts) >= 2 else 0.0)
    problem = None
    if min(counts) < min_points or min(spans) < min_decades:
        problem = (f"the seeds' windows overlap on too short a window ({min(counts)} checkpoints over "
                   f"{min(spans):.2f} decades; need {min_points} over {min_decades:g})")
    return replace(win, points=min(counts), problem=problem)


# ------------------------------------------------------------------------------------------------ fits


@dataclass(frozen=True)
class SlopeFit:
    """A fitted log-log slope with its bootstrap uncertainty, window and sample sizes."""

    slope: float
    stderr: float  # bootstrap standard deviation
    ci_low: float  # 95% percentile interval
    ci_high: float
    seeds: int
    points: int  # checkpoints per seed in the window (minimum over seeds)
    window: Window
    intercept: float = float("nan")  # mean over seeds of the fitted intercept (log scale)

    def text(self, digits: int = 3) -> str:
        return (f"{self.slope:+.{digits}f} ± {self.stderr:.{digits}f} "
                f"(95% CI [{self.ci_low:+.{digits}f}, {self.ci_high:+.{digits}f}]; {self.window.text()}; "
                f"{self.seeds} seed{'s' if self.seeds != 1 else ''}; bootstrap)")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["window"] = self.window.to_json()
        return out


def _ols_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes along the last axis (NaN where x does not vary)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    sxx = (xc * xc).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sxx > 0, (xc * yc).sum(axis=-1) / sxx, np.nan)


def _bootstrap(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], samples: int, seed: int) -> np.ndarray:
    """Replicates of the seed-averaged slope: resample seeds, then checkpoints inside each seed."""
    rng = np.random.default_rng(seed)
    per_seed = np.empty((len(xs), samples))
    for j, (x, y) in enumerate(zip(xs, ys)):
        idx = rng.integers(0, len(x), size=(samples, len(x)))
        per_seed[j] = _ols_slopes(x[idx], y[idx])
    if len(xs) == 1:
        return per_seed[0]
    pick = rng.integers(0, len(xs), size=(samples, len(xs)))
    return per_seed[pick, np.arange(samples)[:, None]].mean(axis=1)


def _fit(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], window: Window, samples: int, seed: int) -> SlopeFit:
    slopes = np.array([_ols_slopes(x, y) for x, y in zip(xs, ys)], dtype=float)
    intercepts = np.array([y.mean() - s * x.mean() for x, y, s in zip(xs, ys, slopes)])
    reps = _bootstrap(xs, ys, samples, seed)
    reps = reps[np.isfinite(reps)]
    if len(reps) < 2:
        stderr = lo = hi = float("nan")
    else:
        stderr = float(np.std(reps, ddof=1))
        lo, hi = (float(v) for v in np.percentile(reps, [2.5, 97.5]))
    return SlopeFit(float(slopes.mean()), stderr, lo, hi, len(xs), min(len(x) for x in xs), window,
                    float(intercepts.mean()))


def _window_points(runs: Sequence[Run], window: Window) -> list[np.ndarray]:
    masks = [window_mask(run, window) for run in runs]
    if any(m.sum() < 2 for m in masks):
        raise ValueError("each run needs at least two checkpoints in the window")
    return masks


def fit_slope(runs: Sequence[Run], window: Window, samples: int = BOOTSTRAP_SAMPLES,
              seed: int = BOOTSTRAP_SEED) -> SlopeFit:
    """Slope of ``log gap`` on ``log t`` over ``window``, averaged over runs (seeds), with bootstrap error."""
    masks = _window_points(runs, window)
    xs = [np.log(np.asarray(r.t, dtype=float)[m]) for r, m in zip(runs, masks)]
    ys = [np.log(np.asarray(r.gap, dtype=float)[m]) for r, m in zip(runs, masks)]
    return _fit(xs, ys, window, samples, seed)


def fit_log_power(runs: Sequence[Run], window: Window, exponent: float, samples: int = BOOTSTRAP_SAMPLES,
                  seed: int = BOOTSTRAP_SEED) -> SlopeFit:
    """Log power ``k`` in ``gap ~ t^{-r} (log t)^k``: slope of ``log(gap t^r)`` on ``log log t``.

    ``r`` is the predicted exponent; needs ``t > 1`` throughout the window (points at t = 1 are dropped).
    """
    masks = [m & (np.asarray(r.t, dtype=float) > 1) for r, m in zip(runs, _window_points(runs, window))]
    xs = [np.log(np.log(np.asarray(r.t, dtype=float)[m])) for r, m in zip(runs, masks)]
    ys = [np.log(np.asarray(r.gap, dtype=float)[m]) + exponent * np.log(np.asarray(r.t, dtype=float)[m])
          for r, m in zip(runs, masks)]
    return _fit(xs, ys, window, samples, seed)


def local_slope(shape: Callable[[np.ndarray], np.ndarray], t: np.ndarray) -> float:
    """Least-squares slope of ``log shape(t)`` on ``log t`` at the given checkpoints (the bound's local slope)."""
    t = np.asarray(t, dtype=float)
    return _loglog_slope(t, np.asarray(shape(t), dtype=float))


def _loglog_slope(t: np.ndarray, values: np.ndarray) -> float:
    if np.any(~(values > 0)):
        raise ValueError("bound shape must be positive on the window")
    return float(_ols_slopes(np.log(t), np.log(values)))


def secant_weights(x: np.ndarray) -> np.ndarray:
    """Weights ``w_j >= 0`` (sum 1) with ``OLS slope of y on x = sum_j w_j (y_{j+1} - y_j)/(x_{j+1} - x_j)``.

    Summation by parts: ``sum_i (x_i - xbar) y_i = sum_j (y_{j+1} - y_j) C_j`` with the tail sums
    ``C_j = sum_{i > j} (x_i - xbar) >= 0`` for increasing ``x``; so ``w_j = (x_{j+1} - x_j) C_j / S_xx``.
    """
    x = np.asarray(x, dtype=float)
    centred = x - x.mean()
    tails = np.cumsum(centred[::-1])[::-1][1:]
    return np.diff(x) * tails / float(np.sum(centred ** 2))


@dataclass(frozen=True)
class Envelope:
    """Range of the bound's least-squares log-log slope over every choice of its unknown constants.

    ``slowest`` is the largest (least negative) slope any ``bound = sum_m C_m f_m`` with ``C_m >= 0`` can have on
    the window, ``fastest`` the smallest; ``members`` are the slopes of each term alone (``C`` one-hot).
    """

    slowest: float
    fastest: float
    members: tuple[float, ...]
    labels: tuple[str, ...] = ()

    def text(self) -> str:
        return f"[{self.fastest:+.3f}, {self.slowest:+.3f}]"

    def to_json(self) -> dict[str, Any]:
        return {"slowest": self.slowest, "fastest": self.fastest, "members": list(self.members),
                "labels": list(self.labels)}


def slope_envelope(t: np.ndarray, members: Sequence[np.ndarray], labels: Sequence[str] = ()) -> Envelope:
    """Envelope of the OLS slope of ``log sum_m C_m f_m(t)`` on ``log t`` over all ``C_m >= 0`` (not all 0).

    On each checkpoint interval the combination's secant slope lies between its members' secant slopes:
    ``g(t_{j+1})/g(t_j) = sum_m C_m f_m(t_{j+1}) / sum_m C_m f_m(t_j)`` is a mediant of the members' ratios. The
    OLS slope is a positive average of secant slopes (:func:`secant_weights`), so it lies in
    ``[sum_j w_j min_m s_mj, sum_j w_j max_m s_mj]``. When the members' secant slopes keep their order across
    the window (the usual case), these ends are the single members' own slopes and are attained by them.
    """
    t = np.asarray(t, dtype=float)
    x = np.log(t)
    logs = []
    for values in members:
        values = np.asarray(values, dtype=float)
        if np.any(~(values > 0)):
            raise ValueError("bound members must be positive on the window")
        logs.append(np.log(values))
    secants = np.diff(np.array(logs), axis=1) / np.diff(x)[None, :]
    weights = secant_weights(x)
    own = tuple(float(_ols_slopes(x, y)) for y in logs)
    return Envelope(float(weights @ secants.max(axis=0)), float(weights @ secants.min(axis=0)), own, tuple(labels))


@dataclass(frozen=True)
class Settling:
    """Slopes over the two halves of the window (split at its geometric middle): data and bound.

    ``bend`` is how much more the data's slope changes across the window than the bound's own shape
    does; a gap that is still leaving a plateau or still bending has not reached the asymptotic regime
    the theorem speaks about, whatever its average slope.
    """

    data: tuple[float, float]
    bound: tuple[float, float]
    split_t: float
    bend_stderr: float = 0.0  # from the half-window fits' residuals (noise must not pass for bending)
    fastest: Optional[tuple[float, float]] = None  # the envelope's fastest slope on each half (None: = bound)
    slowest: Optional[tuple[float, float]] = None  # the envelope's slowest slope on each half (None: = bound)

    @property
    def faster_by(self) -> tuple[float, float]:
        """How much faster than the envelope's fastest member the data decay on each half (negative: faster)."""
        fast = self.fastest if self.fastest is not None else self.bound
        return self.data[0] - fast[0], self.data[1] - fast[1]

    @property
    def differences(self) -> tuple[float, float]:
        return self.data[0] - self.bound[0], self.data[1] - self.bound[1]

    @property
    def bend(self) -> float:
        d1, d2 = self.differences
        return d2 - d1

    def to_json(self) -> dict[str, Any]:
        return {"data": list(self.data), "bound": list(self.bound), "split_t": self.split_t, "bend": self.bend,
                "bend_stderr": self.bend_stderr, "fastest": None if self.fastest is None else list(self.fastest),
                "slowest": None if self.slowest is None else list(self.slowest)}

    def unsettled(self, tolerance: float) -> bool:
        """The bend exceeds the tolerance by more than two standard errors."""
        return abs(self.bend) - 2 * self.bend_stderr > tolerance


def settling(runs: Sequence[Run], window: Window, t_window: np.ndarray, bound_values: np.ndarray,
             min_points: int = 3, members: Optional[Sequence[np.ndarray]] = None) -> Optional[Settling]:
    """Half-window slopes of the data (mean over seeds) and of the bound; None if a half is too thin.

    With ``members`` the envelope's fastest slope on each half is kept too (a gap is ``loose`` while bending
    only if it beats every constant ratio on both halves).
    """
    split = math.sqrt(window.t0 * window.t1)
    halves = (t_window <= split, t_window >= split)
    if any(h.sum() < min_points for h in halves):
        return None
    bound = tuple(_loglog_slope(t_window[h], bound_values[h]) for h in halves)
    fastest = slowest = None
    if members is not None:
        envelopes = [slope_envelope(t_window[h], [np.asarray(m)[h] for m in members]) for h in halves]
        fastest = tuple(e.fastest for e in envelopes)
        slowest = tuple(e.slowest for e in envelopes)
    data, variances = [], []
    for lower in (True, False):
        slopes, errors = [], []
        for run in runs:
            mask = window_mask(run, window)
            t = np.asarray(run.t, dtype=float)
            mask &= (t <= split) if lower else (t >= split)
            if mask.sum() < min_points:
                return None
            slope, stderr = _ols_slope_stderr(np.log(t[mask]), np.log(np.asarray(run.gap, dtype=float)[mask]))
            slopes.append(slope)
            errors.append(stderr)
        data.append(float(np.mean(slopes)))
        variances.append(float(np.sum(np.square(errors))) / len(runs) ** 2)
    return Settling((data[0], data[1]), (bound[0], bound[1]), split, math.sqrt(sum(variances)), fastest, slowest)


def _ols_slope_stderr(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and its textbook standard error (residual variance over n - 2)."""
    slope = float(_ols_slopes(x, y))
    residuals = (y - y.mean()) - slope * (x - x.mean())
    sxx = float(np.sum((x - x.mean()) ** 2))
    return slope, math.sqrt(float(np.sum(residuals ** 2)) / max(len(x) - 2, 1) / sxx)


# -------------------------------------------------------------------------------- the three findings

HOLDS, VIOLATED, UNDECIDED = "holds", "violated", "undecided"
ATTAINED, NOT_ATTAINED = "attained", "not attained"
# The log power k of O(t^-r (log t)^k) is an integer; a fitted k within 1/2 of it is that integer, and one
# whose 95% interval stays more than 1/2 away is another. Over two decades log log t moves by ~0.5, so k's
# bootstrap error is ~10x the slope's: k is decided only where its error is below this too.
LOG_POWER_TOLERANCE = 0.5
# A non-negative combination of the bound's terms whose rms relative misfit to the gap exceeds this follows
# none of them (the gap bends in a way no sum of the terms does): no term is named as dominant.
MAX_TERM_MISFIT = 0.2


@dataclass(frozen=True)
class Finding:
    """One separate finding: an outcome word and the numbers behind it (with their window and uncertainty)."""

    outcome: str
    text: str
    faster: bool = False  # (iii) not attained because the gap decays faster than stated
    short: str = ""  # a table cell: the outcome and its deciding numbers

    def cell(self) -> str:
        return self.short or self.outcome

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "text": self.text, "short": self.cell()}


@dataclass(frozen=True)
class StatedRate:
    """The paper's ``O(t^-exponent (log t)^log_power)`` and what it looks like over the window.

    Over a finite window the O(.) is carried by the bound's term of that order with its exact partial sums
    (e.g. ``1/S_1 = 1/(4 t^(1/4) - c)`` at a = 3/4, whose slope at t ~ 1e4 is -0.28, not -0.25), so
    ``local_slope`` is that term's least-squares log-log slope over the window and ``reference_log_power`` its
    fitted log power (``log(term t^exponent)`` on ``log log t``); ``pure_slope`` is ``t^-r (log t)^k``'s own.
    Without an exponent the rate is the bound's shape with unit constants (log power unchecked, ``None``).
    """

    exponent: Optional[float]
    log_power: Optional[int]
    local_slope: float
    pure_slope: float
    reference_log_power: Optional[float] = None
    term: str = ""

    @classmethod
    def of(cls, exponent: Optional[float], log_power: Optional[int], t: np.ndarray, shape: np.ndarray,
           term: Optional[np.ndarray] = None, term_label: str = "") -> StatedRate:
        if exponent is None:
            slope = _loglog_slope(t, shape)
            return cls(None, None, slope, slope)
        k = int(log_power or 0)
        pure = _loglog_slope(t, t ** -float(exponent) * (np.log(t) ** k if k else 1.0))
        if term is None:
            return cls(float(exponent), k, pure, pure, float(k))
        reference_k = float(_ols_slopes(np.log(np.log(t)), np.log(term) + float(exponent) * np.log(t)))
        return cls(float(exponent), k, _loglog_slope(t, term), pure, reference_k, term_label)

    def text(self) -> str:
        if self.exponent is None:
            return f"the bound's shape (slope {self.local_slope:+.3f} over the window)"
        log = "" if not self.log_power else f" (log t)^{self.log_power}"
        if not self.term:
            return f"t^-{self.exponent:.4g}{log} (slope {self.local_slope:+.3f} over the window)"
        return (f"t^-{self.exponent:.4g}{log}, carried by its term C {self.term} (slope {self.local_slope:+.3f} and "
                f"log power {self.reference_log_power:+.2f} over the window; t^-{self.exponent:.4g}{log} alone: "
                f"{self.pure_slope:+.3f})")


@dataclass(frozen=True)
class Assessment:
    """(i) whether the bound holds, (ii) which of its terms dominates the data over the window, (iii) whether
    the paper's stated rate is attained -- three findings, none inferred from another."""

    bound: Finding
    dominant: Finding
    stated_rate: Finding

    def label(self) -> tuple[str, str]:
        """The verdict word: ``violated`` from (i) alone; ``tight`` needs (i) holds and (iii) attained; ``loose``
        needs (i) holds and (iii) not attained because the gap decays faster; anything else is ``inconclusive``."""
        b, r = self.bound, self.stated_rate
        if b.outcome == VIOLATED:
            return "violated", f"bound violated: {b.text}"
        if b.outcome == HOLDS and r.outcome == ATTAINED:
            return "tight", f"bound holds ({b.cell()}); stated rate attained ({r.cell()})"
        if b.outcome == HOLDS and r.outcome == NOT_ATTAINED and r.faster:
            return "loose", f"bound holds ({b.cell()}); stated rate not attained ({r.cell()})"
        if b.outcome == HOLDS:
            return "inconclusive", f"bound holds ({b.cell()}); whether the stated rate is attained is open: {r.text}"
        return "inconclusive", f"whether the bound holds is open: {b.text}"

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound.to_json(), "dominant_term": self.dominant.to_json(),
                "stated_rate": self.stated_rate.to_json()}


def bound_finding(fitted: SlopeFit, envelope: Envelope, tolerance: float,
                  settled: Optional[Settling] = None) -> Finding:
    """(i) The bound holds when the data decay at least as fast as its slowest member: the 95% upper limit
    of the fitted slope is at most the envelope's slowest slope plus the tolerance (and, if the slope still
    bends, the later half's slope too). Violated as in :func:`classify`: slower than the slowest member by
    more than the tolerance with the 95% interval excluding it."""
    slowest = envelope.slowest
    short = f"95% CI [{fitted.ci_low:+.3f}, {fitted.ci_high:+.3f}] vs slowest term {slowest:+.3f}"
    numbers = (f"fitted slope {fitted.slope:+.3f} ± {fitted.stderr:.3f}, 95% CI [{fitted.ci_low:+.3f}, "
               f"{fitted.ci_high:+.3f}] over {fitted.window.text()}; slowest bound term {slowest:+.3f}")
    if not math.isfinite(fitted.stderr):
        return Finding(UNDECIDED, f"no uncertainty ({numbers})", short=f"{UNDECIDED}: {short}")
    bending = settled is not None and settled.unsettled(tolerance)
    if bending:
        late_slowest = settled.slowest[1] if settled.slowest is not None else slowest
        late = settled.data[1]
        numbers += (f"; still bending: {settled.data[0]:+.3f} then {late:+.3f} on the two halves split at t = "
                    f"{settled.split_t:.3g}")
        if fitted.ci_high <= slowest + tolerance and late <= late_slowest + tolerance:
            return Finding(HOLDS, f"decays at least as fast as the slowest term, on both halves ({numbers})",
                           short=f"{HOLDS}: {short}")
        return Finding(UNDECIDED, f"the slope has not settled ({numbers}); run longer", short=f"{UNDECIDED}: {short}")
    if fitted.ci_high <= slowest + tolerance:
        return Finding(HOLDS, f"upper 95% limit {fitted.ci_high:+.3f} <= {slowest:+.3f} + {tolerance:g} ({numbers})",
                       short=f"{HOLDS}: {short}")
    if fitted.slope - slowest > tolerance and fitted.ci_low > slowest:
        return Finding(VIOLATED, f"slower than the slowest term by {fitted.slope - slowest:.3f} > {tolerance:g}, "
                                 f"the 95% interval excluding it ({numbers})", short=f"{VIOLATED}: {short}")
    return Finding(UNDECIDED, f"the 95% interval reaches above {slowest:+.3f} + {tolerance:g} ({numbers})",
                   short=f"{UNDECIDED}: {short}")


def dominant_term(runs: Sequence[Run], window: Window, members: Sequence[np.ndarray], labels: Sequence[str],
                  fitted: SlopeFit, envelope: Envelope, tolerance: float) -> Finding:
    """(ii) Which of the bound's terms dominates over the window: the non-negative least-squares fit of the
    gap on the terms (relative residuals, per run), each term's share of the fitted sum at the window's two
    ends (mean over runs). A gap faster than every term by more than the tolerance follows none of them."""
    from scipy.optimize import nnls

    names = [f"C {label}" if label != "shape" else "the bound's shape" for label in labels]
    own = ", ".join(f"{name} {slope:+.3f}" for name, slope in zip(names, envelope.members))
    if fitted.ci_high < envelope.fastest - tolerance:
        return Finding("none", f"the gap (slope {fitted.slope:+.3f}, 95% CI up to {fitted.ci_high:+.3f}) decays "
                               f"faster than every term alone ({own}) over {window.text()}",
                       short=f"none: faster than every term ({own})")
    t_ref = np.asarray(runs[0].t, dtype=float)[window_mask(runs[0], window)]
    shares_start, shares_end, misfits = [], [], []
    for run in runs:
        mask = window_mask(run, window)
        t = np.asarray(run.t, dtype=float)[mask]
        gap = np.asarray(run.gap, dtype=float)[mask]
        # the members were evaluated on the first run's checkpoints; others share them unless their floor differs
        columns = np.array([np.interp(np.log(t), np.log(t_ref), np.log(m)) for m in members])
        design = np.exp(columns).T / gap[:, None]
        coefficients, _ = nnls(design, np.ones(len(gap)))
        fitted_terms = np.exp(columns).T * coefficients[None, :]
        total = fitted_terms.sum(axis=1)
        if not np.all(total > 0):
            continue
        shares_start.append(fitted_terms[0] / total[0])
        shares_end.append(fitted_terms[-1] / total[-1])
        misfits.append(float(np.sqrt(np.mean((total / gap - 1.0) ** 2))))
    if not shares_start:
        return Finding(UNDECIDED, "no non-negative combination of the terms fits the gap",
                       short="undecided: no non-negative fit")
    start, end = np.mean(shares_start, axis=0), np.mean(shares_end, axis=0)
    lead = int(np.argmax(start + end))
    # terms whose slopes over the window agree within the tolerance have one shape there (e.g. 1/S_1 and
    # S_2/S_1 once S_2 converges, a > 1/2): the fit's split between them is arbitrary, so they are named together
    alike = [m for m, slope in enumerate(envelope.members) if abs(slope - envelope.members[lead]) <= tolerance]
    name = " ~ ".join(names[m] for m in alike)
    share_start, share_end = float(start[alike].sum()), float(end[alike].sum())
    split = "; ".join(f"{n} {100 * s:.0f}% -> {100 * e:.0f}%" for n, s, e in zip(names, start, end))
    misfit = max(misfits)
    text = (f"{name} ({split} of the fitted sum from t = {window.t0:.3g} to {window.t1:.3g}; "
            f"non-negative fit of the gap on the terms, relative misfit {100 * misfit:.1f}%; "
            f"each term alone has slope {own})")
    if len(alike) > 1:
        text += f"; {' and '.join(names[m] for m in alike)} have the same slope within {tolerance:g} here"
    if misfit > MAX_TERM_MISFIT:
        return Finding("none", f"no non-negative combination of the terms follows the gap (misfit "
                               f"{100 * misfit:.0f}% > {100 * MAX_TERM_MISFIT:.0f}%): {text}",
                       short=f"none fits (misfit {100 * misfit:.0f}%)")
    return Finding(name, text, short=f"{name} ({100 * share_start:.0f}% -> {100 * share_end:.0f}% of the fitted sum)")


def stated_rate_finding(fitted: SlopeFit, log_power: Optional[SlopeFit], stated: StatedRate, tolerance: float,
                        settled: Optional[Settling] = None) -> Finding:
    """(iii) Is the paper's stated O(.) attained over the window? Attained: the fitted slope is within the
    tolerance of the slope of the term carrying the stated order (:class:`StatedRate`; error below the
    tolerance, settled) and the fitted log power within :data:`LOG_POWER_TOLERANCE` of that term's (error below
    it too). Not attained: the slope's 95% interval lies outside that band, or the log power's outside its band.
    Never inferred from (i): a gap inside the bound's slope envelope may still decay faster than stated."""
    target = stated.local_slope
    slope_text = (f"slope {fitted.slope:+.3f} ± {fitted.stderr:.3f} (95% CI [{fitted.ci_low:+.3f}, "
                  f"{fitted.ci_high:+.3f}]) vs {stated.text()}")
    k_text = ""
    k_match = k_miss = None
    if stated.log_power is not None and log_power is not None and math.isfinite(log_power.stderr):
        k = stated.reference_log_power if stated.reference_log_power is not None else float(stated.log_power)
        k_text = (f"; log power {log_power.slope:+.2f} ± {log_power.stderr:.2f} (95% CI [{log_power.ci_low:+.2f}, "
                  f"{log_power.ci_high:+.2f}]) vs {k:+.2f}")
        k_match = abs(log_power.slope - k) <= LOG_POWER_TOLERANCE and log_power.stderr <= LOG_POWER_TOLERANCE
        k_miss = log_power.ci_low > k + LOG_POWER_TOLERANCE or log_power.ci_high < k - LOG_POWER_TOLERANCE
    where = f"; {fitted.window.text()}"
    short = f"slope {fitted.slope:+.3f} vs {target:+.3f}" + (
        f", k {log_power.slope:+.2f} ± {log_power.stderr:.2f} vs {k:+.2f}" if k_text else "")
    bending = settled is not None and settled.unsettled(tolerance)
    faster = fitted.ci_high < target - tolerance
    slower = fitted.ci_low > target + tolerance
    if bending:
        s1, s2 = settled.data
        if max(s1, s2) < target - tolerance:
            return Finding(NOT_ATTAINED, f"decays faster than stated on both halves of the window ({s1:+.3f}, "
                                         f"{s2:+.3f}; {slope_text}){where}", faster=True,
                           short=f"{NOT_ATTAINED} (faster on both halves of the window): {short}")
        return Finding(UNDECIDED, f"the slope has not settled ({s1:+.3f} then {s2:+.3f} on the two halves; "
                                  f"{slope_text}){where}; run longer",
                       short=f"{UNDECIDED} (bending): {short}")
    if faster or slower:
        side = "faster" if faster else "slower"
        return Finding(NOT_ATTAINED, f"decays {side} than stated: {slope_text}{k_text}{where}", faster=faster,
                       short=f"{NOT_ATTAINED} ({side}): {short}")
    if k_miss:
        side = "faster" if log_power.slope < k else "slower"
        return Finding(NOT_ATTAINED, f"the log power is not the stated one (decays {side} by a log factor): "
                                     f"{slope_text}{k_text}{where}", faster=side == "faster",
                       short=f"{NOT_ATTAINED} ({side}, log power): {short}")
    precise = fitted.stderr <= tolerance and abs(fitted.slope - target) <= tolerance
    if precise and (k_match or stated.log_power is None):
        return Finding(ATTAINED, f"{slope_text}{k_text}{where}", short=f"{ATTAINED}: {short}")
    if precise and log_power is None:
        return Finding(ATTAINED, f"{slope_text} (log power not fitted){where}", short=f"{ATTAINED}: {short}")
    return Finding(UNDECIDED, f"not separated from the stated rate: {slope_text}{k_text}{where}",
                   short=f"{UNDECIDED}: {short}")


# --------------------------------------------------------------------------------------------- verdict


@dataclass(frozen=True)
class Verdict:
    """The judgement of one configuration: label, the numbers behind it, and why.

    ``envelope`` is the bound's slope range over its unknown constants (:func:`slope_envelope`);
    ``predicted_local_slope`` is its slowest end (the shape with unit constants is ``unit_local_slope``).
    ``context`` carries what the caller adds (hypothesis gate, phase t0/t1, replicates) for the JSON record.
    """

    label: str
    reason: str
    tolerance: float
    window: Window
    fit: Optional[SlopeFit] = None
    predicted_local_slope: Optional[float] = None
    log_power: Optional[SlopeFit] = None
    notes: list[str] = field(default_factory=list)
    settling: Optional[Settling] = None
    envelope: Optional[Envelope] = None
    unit_local_slope: Optional[float] = None
    context: dict[str, Any] = field(default_factory=dict)
    assessment: Optional[Assessment] = None

    @property
    def difference(self) -> Optional[float]:
        if self.fit is None or self.predicted_local_slope is None:
            return None
        return self.fit.slope - self.predicted_local_slope

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.label, "reason": self.reason, "tolerance": self.tolerance,
                "window": self.window.to_json(), "fit": self.fit.to_json() if self.fit else None,
                "predicted_local_slope": self.predicted_local_slope, "difference": self.difference,
                "unit_local_slope": self.unit_local_slope,
                "envelope": self.envelope.to_json() if self.envelope else None,
                "log_power": self.log_power.to_json() if self.log_power else None, "notes": list(self.notes),
                "settling": self.settling.to_json() if self.settling else None,
                "assessment": self.assessment.to_json() if self.assessment else None, **self.context}


def classify(fitted: SlopeFit, predicted_local: float, tolerance: float,
             settled: Optional[Settling] = None, fastest: Optional[float] = None) -> tuple[str, str]:
    """The one-sided rule of the module docstring applied to one fitted slope; returns (label, reason).

    ``predicted_local`` is the slowest slope the bound can have on the window, ``fastest`` the fastest
    (default: the same, a bound with known constants). When the data's slope bends across the window by more
    than the tolerance (beyond the bound's own bending, and by more than two standard errors of noise), only
    ``loose`` survives -- and only if the gap is faster than the fastest member in *both* halves; otherwise the
    window is not yet asymptotic and the verdict is ``inconclusive``.
    """
    slowest = predicted_local
    fastest = slowest if fastest is None else fastest
    span = (f"the bound's slope {slowest:+.3f}" if fastest == slowest else
            f"the bound's slope envelope [{fastest:+.3f}, {slowest:+.3f}] (all ratios of its unknown constants)")
    if not math.isfinite(fitted.stderr):
        return "inconclusive", f"uncertainty {fitted.stderr:.3g} exceeds the tolerance {tolerance:g}"
    # 'tight' claims closeness and needs an error below the tolerance; 'loose' and 'violated' claim a side,
    # which the 95% interval alone can establish however wide it is (e.g. seeds that differ by 0.2 but all
    # decay much faster than the bound).
    precise = fitted.stderr <= tolerance
    faster = fitted.ci_high < fastest - tolerance
    slower = fitted.slope - slowest > tolerance and fitted.ci_low > slowest
    if not precise and not (faster or slower):
        return "inconclusive", f"uncertainty {fitted.stderr:.3g} exceeds the tolerance {tolerance:g}"
    if settled is not None and settled.unsettled(tolerance):
        (s1, s2), (b1, b2) = settled.data, settled.bound
        halves = (f"slopes {s1:+.3f} then {s2:+.3f} on the two halves of the window split at t = "
                  f"{settled.split_t:.3g} (bound {b1:+.3f}, {b2:+.3f})")
        if max(settled.faster_by) < -tolerance:
            return "loose", f"gap decays faster than every bound member in both halves of the window ({halves})"
        return "inconclusive", f"the gap's slope has not settled: {halves}; run longer"
    if not precise and faster:
        return "loose", (f"gap decays faster than {span}: the 95% interval [{fitted.ci_low:+.3f}, "
                         f"{fitted.ci_high:+.3f}] lies more than {tolerance:g} below {fastest:+.3f} "
                         f"(uncertainty {fitted.stderr:.3g} is above the tolerance, so nothing closer is claimed)")
    if fastest - tolerance <= fitted.slope <= slowest + tolerance and precise:
        where = (f"difference {fitted.slope - slowest:+.3f}" if fastest == slowest else
                 f"fitted {fitted.slope:+.3f}")
        return "tight", f"fitted slope within {tolerance:g} of {span} ({where})"
    if fitted.slope < fastest - tolerance:
        return "loose", (f"gap decays faster than {span} by {fastest - fitted.slope:.3f} > {tolerance:g} "
                         "(no ratio of the constants attains it)")
    if fitted.ci_low > slowest:
        return "violated", (f"gap decays slower than {span} by {fitted.slope - slowest:.3f} > {tolerance:g} and the "
                            f"95% interval [{fitted.ci_low:+.3f}, {fitted.ci_high:+.3f}] excludes {slowest:+.3f}")
    return "inconclusive", (f"slower than {span} by {fitted.slope - slowest:.3f} but the 95% interval "
                            f"[{fitted.ci_low:+.3f}, {fitted.ci_high:+.3f}] does not exclude it")


def frozen_gap(runs: Sequence[Run], window: Window) -> Optional[str]:
    """Why the window is pre-asymptotic because some run's gap has not moved over it (None: it moved)."""
    for run in runs:
        mask = window_mask(run, window)
        gaps = np.asarray(run.gap, dtype=float)[mask]
        if len(gaps) < 2:
            continue
        spread = float(np.log(gaps).max() - np.log(gaps).min())
        if spread < FROZEN_LOG_RANGE:
            t = np.asarray(run.t, dtype=float)[mask]
            return (f"pre-asymptotic: the gap has not moved over the window (gap = {gaps[0]:.6g} from t = "
                    f"{t[0]:.3g} to {t[-1]:.3g}, log-range {spread:.1e} < {FROZEN_LOG_RANGE:g}; the direction "
                    f"W_t/||W_t|| has not yet started to turn towards the max-margin solution)")
    return None


def bound_members(bound: BoundLike, t: np.ndarray) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """The bound's unknown-constant terms at ``t`` (its shape alone when it offers none)."""
    members = getattr(bound, "bound_members", None)
    if callable(members):
        values, labels = members(t)
        return [np.asarray(v, dtype=float) for v in values], tuple(labels)
    return [np.asarray(bound.bound_shape(t), dtype=float)], ("shape",)


def retarget(run: Run, target_margin: float, name: str = "gamma_eff") -> Run:
    """The run with ``gap = target_margin - margin``: the quantity a theorem bounds when it measures the margin
    against an effective margin (MINIBATCH Thm 4.1/4.3: ``gamma_eff - gamma(W_t)``) instead of ``gamma``.

    The solver floor stays the max margin solver's (``solver_floor``): the margins are computed to that accuracy.
    """
    margin = np.asarray(run.margin, dtype=float)
    gamma = {**run.gamma, "target": {"name": name, "value": float(target_margin)}}
    return replace(run, gap=float(target_margin) - margin, gamma=gamma)


def _targets(runs: Sequence[Run], target_margin: Any) -> list[float]:
    if isinstance(target_margin, (int, float)):
        return [float(target_margin)] * len(runs)
    values = [float(v) for v in target_margin]
    if len(values) != len(runs):
        raise ValueError(f"target_margin has {len(values)} values for {len(runs)} runs")
    return values


def judge(runs: Sequence[Run], bound: BoundLike, exponent: Optional[float] = None,
          tolerance: float = DEFAULT_TOLERANCE, window: Optional[tuple[float, float]] = None,
          decades: float = DEFAULT_DECADES, samples: int = BOOTSTRAP_SAMPLES,
          seed: int = BOOTSTRAP_SEED, log_power: Optional[int] = None,
          target_margin: Optional[float | Sequence[float]] = None, target_name: str = "gamma_eff") -> Verdict:
    """Window, fit and the three findings (:class:`Assessment`) for the runs (seeds) of one configuration.

    ``exponent`` and ``log_power`` are the stated rate ``O(t^-exponent (log t)^log_power)`` (the paper's
    O(.)); ``log_power`` defaults to ``bound.rate.log_power`` when the bound has one, else 0. Without
    ``exponent`` the stated rate is the bound's shape with unit constants and its log power is not checked.
    ``target_margin`` (one number, or one per run) is the margin the theorem measures the gap to
    (``gamma_eff`` of MINIBATCH Thm 4.1/4.3, named ``target_name``): the fitted quantity is then
    ``target_margin - margin(W_t)`` instead of the recorded ``gamma - margin(W_t)``; ``None`` fits the recorded
    gap. ``window`` overrides the automatic choice (``--window``). ``tolerance`` must lie in (0, 1)
    (``--tolerance``).
    """
    if not runs:
        raise ValueError("judge needs at least one run")
    if not (0 < tolerance < 1):
        raise InputError("tolerance", f"must be in (0, 1), got {tolerance:g}")
    target_note = None
    if target_margin is not None:
        targets = _targets(runs, target_margin)
        moved = [retarget(run, value, target_name) for run, value in zip(runs, targets)]
        above = [run for run in moved if not (float(np.asarray(run.gap)[-1]) > 0)]
        below = [run for run in moved if float(np.asarray(run.gap)[-1]) > 0]
        if not below:
            return _beyond_target(moved, target_name, tolerance)
        if above:
            target_note = (f"{len(above)} of {len(moved)} runs end with a margin above {target_name} (their "
                           f"{target_name} - gamma(W_t) <= 0, below any bound); the fit uses the other {len(below)}")
        runs = below
    if exponent is not None and log_power is None:
        rate = getattr(bound, "rate", None)
        log_power = int(getattr(rate, "log_power", 0)) if rate is not None else 0
    win = judged_window(runs, window, decades)
    if win.problem is not None:
        undecided = Finding(UNDECIDED, win.problem, short=f"{UNDECIDED}: no window")
        return Verdict("inconclusive", win.problem, tolerance, win, notes=[target_note] if target_note else [],
                       assessment=Assessment(undecided, undecided, undecided))
    fitted = fit_slope(runs, win, samples, seed)
    t_window = np.asarray(runs[0].t, dtype=float)[window_mask(runs[0], win)]
    bound_values = np.asarray(bound.bound_shape(t_window), dtype=float)
    unit = _loglog_slope(t_window, bound_values)
    members, labels = bound_members(bound, t_window)
    envelope = slope_envelope(t_window, members, labels)
    fitted_log_power = None
    if exponent is not None and np.all(t_window > 1) and len(t_window) >= 3:
        fitted_log_power = fit_log_power(runs, win, exponent, samples, seed)
    notes = [target_note] if target_note else []
    frozen = frozen_gap(runs, win)
    if frozen is not None:
        undecided = Finding(UNDECIDED, frozen)
        assessment = Assessment(undecided, Finding(UNDECIDED, "the gap has not moved"), undecided)
        return Verdict("inconclusive", frozen, tolerance, win, fitted, envelope.slowest, fitted_log_power, notes,
                       None, envelope, unit, assessment=assessment)
    settled = settling(runs, win, t_window, bound_values, members=members)
    carrier = int(np.argmax(envelope.members))  # the slowest term sets the O(.) (its order is the stated rate)
    stated = StatedRate.of(exponent, log_power, t_window, bound_values,
                           members[carrier] if labels[carrier] != "shape" else None, labels[carrier])
    holds = bound_finding(fitted, envelope, tolerance, settled)
    dominant = dominant_term(runs, win, members, labels, fitted, envelope, tolerance)
    attained = stated_rate_finding(fitted, fitted_log_power, stated, tolerance, settled)
    assessment = Assessment(holds, dominant, attained)
    label, reason = assessment.label()
    if win.source == "user" and (win.entry_t is None or win.t0 < win.entry_t):
        entry = "never observed" if win.entry_t is None else f"t = {win.entry_t:g}"
        notes.append(f"user window starts before the empirical separable, monotone-loss phase ({entry})")
    if win.source == "user" and win.t0 < MIN_WINDOW_START:
        notes.append(f"user window starts before t = {MIN_WINDOW_START:g}, where the bound's unknown constants can "
                     f"move its local slope by more than the tolerance (a 'violated' or 'tight' there is not firm)")
    return Verdict(label, reason, tolerance, win, fitted, envelope.slowest, fitted_log_power, notes, settled,
                   envelope, unit, assessment=assessment)


def measurement_lines(v: Verdict, exponent: Any = None) -> list[str]:
    """What a verdict's text shows of its measurement (``rates fit``, a user bound alike): the window's problem
    when nothing was fitted, else the bound's slope envelope, the fitted slope (``measured slope`` where no bound
    judged it), the half windows, and the log power ``k`` of ``gap t^exponent`` when a stated ``exponent`` is given."""
    lines = []
    if v.fit is None:
        if v.window.problem is not None:
            lines.append(f"  window         : {v.window.problem}")
        return lines
    if v.envelope is not None:
        members = ", ".join(f"{label} {slope:+.3f}" for label, slope in zip(v.envelope.labels, v.envelope.members))
        lines.append(f"  bound slope envelope over the window : {v.envelope.text()} (each term alone: {members}; "
                     f"unit constants {v.unit_local_slope:+.3f})")
    lines.append(f"  {'fitted slope  ' if v.envelope is not None else 'measured slope'} : {v.fit.text()}")
    if v.settling is not None:
        (s1, s2), (b1, b2) = v.settling.data, v.settling.bound
        lines.append(f"  half windows   : data {s1:+.3f} then {s2:+.3f}, bound {b1:+.3f} then {b2:+.3f} "
                     f"(split at t = {v.settling.split_t:.3g})")
    if v.log_power is not None and exponent is not None:
        lines.append(f"  log power k    : {v.log_power.slope:+.2f} ± {v.log_power.stderr:.2f} "
                     f"(fit of log(gap t^{exponent}) on log log t, same window)")
    return lines


def _beyond_target(runs: Sequence[Run], target_name: str, tolerance: float) -> Verdict:
    """Every run ends with its margin above the target: the bounded quantity is negative, below any bound."""
    crossings = []
    for run in runs:
        gap = np.asarray(run.gap, dtype=float)
        positive = np.flatnonzero(gap > 0)
        t = np.asarray(run.t)
        crossings.append(int(t[positive[-1] + 1]) if len(positive) else int(t[0]))
    value = runs[0].gamma["target"]["value"]
    text = (f"the margin exceeds {target_name} = {value:.4g} from t = {max(crossings)} on in every run: "
            f"{target_name} - gamma(W_t) < 0 there, below the bound for every choice of its constants")
    holds = Finding(HOLDS, text)
    assessment = Assessment(holds, Finding("none", "no positive gap to decompose"),
                            Finding(NOT_ATTAINED, "the bounded quantity is negative: no rate to attain", faster=True))
    window = Window(float("nan"), float("nan"), 0, "auto", None, 0.0, None, None)
    return Verdict("loose", f"bound holds: {text}", tolerance, window, assessment=assessment)


def judged_window(runs: Sequence[Run], window: Optional[tuple[float, float]] = None,
                  decades: float = DEFAULT_DECADES) -> Window:
    """The window every run of a configuration is fitted on (per-run choice, then their checked overlap)."""
    windows = [choose_window(run, window, decades=decades) for run in runs]
    return windows[0] if len(windows) == 1 else _checked_overlap(runs, common_window(windows))
