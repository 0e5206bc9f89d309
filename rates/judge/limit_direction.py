"""The judge of MINIBATCH Thm 4.9: does a per-sample run converge in direction to ``M/||M||``?

Setting
    MINIBATCH section 4.4, Def. 4.8, Thm 4.9 [given in words; M rebuilt,
    :mod:`rates.symbolic.theorems.per_sample`]: per-sample (b = 1) SignSGD / N-SGD / Spectral-SGD on orthogonal
    scale-skewed data satisfy ``W_t/||W_t|| -> M/||M||``. The theorem states a limit, not a rate, so a
    per-sample run is judged on its limit direction, never on the decay of its margin gap (which does not
    vanish: it tends to ``gamma - margin(M/||M||)``).

Algorithm
    1. ``g_s(t) = 1 - cos(W_t, M)`` per seed from the Trajectory's ``cosines["M"]`` (:mod:`rates.numeric.measures`).
    2. Window: the last :data:`DECADES` decades of the run, from at least :data:`MIN_EPOCHS` epochs on
       (within an epoch the class mix of the steps taken so far is uneven by design), dropping points where
       ``g`` is at float64 rounding (``<= ROUNDING_FLOOR``); at least :data:`MIN_POINTS` checkpoints.
    3. Fit ``log g = c + s log t`` per seed over the window, averaged over seeds; a seeded bootstrap
       (resampling seeds, then checkpoints inside each seed) gives the 95% intervals of the slope ``s`` (the
       rate at which ``1 - cos`` approaches 0, measured, not predicted) and of the fitted level ``g(T)`` at the
       last checkpoint ``T``.
    4. Verdict, with ``tol`` the cosine tolerance (default 1e-3, i.e. cos >= 0.999):

       * ``converges to M`` (Thm 4.9 reproduced): the 95% interval of ``g(T)`` lies below ``tol`` and ``g`` is
         still falling (slope interval below 0) or already below ``tol/1000``; or ``g`` is at rounding level
         throughout the window's end.
       * ``does not converge`` (Thm 4.9 refuted, exit 1): the interval of ``g(T)`` lies above ``10 tol`` *and*
         the slope's interval lies above :data:`PLATEAU_SLOPE` (a decay slower than ``t^-0.05`` with 95%
         confidence: ``1 - cos`` would need ``10^20`` times more steps to fall tenfold).
       * ``inconclusive`` otherwise (still falling but not yet below ``tol``, or not clearly away from it),
         with the numbers and the extrapolated time to reach ``tol`` at the fitted slope.

    Reported alongside (descriptive, no verdict): cosines of ``W_T`` to each norm's ``W*`` and to ``M``, the
    relative margin errors and the margin gap at ``T``, each next to its limit implied by Thm 4.9
    (``cos(M, W*_N)``, ``(gamma_N - margin_N(M))/gamma_N``, ``gamma - margin(M)``); intervals are 95% t-intervals
    over seeds, or with one seed the range over the last :data:`TAIL` checkpoints (said so).

    :class:`PerSampleRecord` (from :func:`fit_record`) wraps a judged configuration for ``rates fit`` (and any
    table): ``title``, ``config``, ``seeds``, ``verdict`` (``label``, ``refuted``, ``reason``), ``describe()``,
    ``to_json()``; :func:`handles_runs` says which groups of runs Thm 4.9 covers.

Guarantee
    A verdict is never a rate verdict; ``does not converge`` only when the interval clearly excludes
    convergence. Cosines to a non-unique ``W*`` (max norm, spectral) carry the caveat of :mod:`rates.numeric.measures`.

Reference
    MINIBATCH Def. 4.8, Thm 4.9 (App. H.2/H.3) and App. J, Fig. 2 (the cosine to
    the bias direction "steadily approaches 1"); docs/theory.md section 5.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from rates.errors import InputError
from rates.numeric.measures import BIAS_KEY, MEASURED_NORMS
from rates.numeric.run_config import RunConfig
from rates.numeric.trajectory import Run
from rates.symbolic.theorems.per_sample import (
    NOT_PREDICTED,
    OTHER_DATA,
    SOURCE,
    LimitDirection,
    covers,
    limit_direction,
    orthogonal_structure,
)

THEOREM = SOURCE.text
STATUS = "given in words; M and the step directions rebuilt (docs/theory.md sec. 5)"
CONVERGES, DOES_NOT_CONVERGE, INCONCLUSIVE = "converges to M", "does not converge", "inconclusive"
DEFAULT_COSINE_TOLERANCE = 1e-3
PLATEAU_SLOPE = -0.05
CLEAR_FACTOR = 10.0
ROUNDING_FLOOR = 1e-13  # 1 - cos below this is float64 rounding of the cosine (entries ~1, k d <= 1e3 terms)
DECADES = 2.0
MIN_EPOCHS = 10
MIN_POINTS = 6
TAIL = 5
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20240611


@dataclass(frozen=True)
class Interval:
    """A value with a 95% interval and how the interval was obtained."""

    value: float
    low: float
    high: float
    method: str

    def text(self, digits: int = 4) -> str:
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class DecayFit:
    """``log(1 - cos) = c + s log t`` over the window: slope s and the fitted level at T, bootstrap 95%."""

    slope: float
    slope_low: float
    slope_high: float
    slope_stderr: float
    level: float  # fitted 1 - cos at t_end
    level_low: float
    level_high: float
    t_start: float
    t_end: float
    points: int
    seeds: int

    def window_text(self) -> str:
        decades = math.log10(self.t_end / self.t_start) if self.t_end > self.t_start > 0 else 0.0
        return (f"t in [{self.t_start:.3g}, {self.t_end:.3g}] ({decades:.2f} decades, {self.points} checkpoints, "
                f"{self.seeds} seed{'s' if self.seeds != 1 else ''}; bootstrap)")


@dataclass(frozen=True)
class DirectionVerdict:
    """The Thm 4.9 judgement of one per-sample configuration, with every number behind it."""

    label: str
    reason: str
    tolerance: float
    decay: Optional[DecayFit] = None
    cosines: dict = field(default_factory=dict)  # name -> (measured Interval, predicted limit or None)
    margin_errors: dict = field(default_factory=dict)  # norm -> (measured Interval, predicted limit or None)
    gap: Optional[tuple] = None  # (measured Interval, predicted limit) in the algorithm's norm
    notes: list = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return {CONVERGES: "reproduced", DOES_NOT_CONVERGE: "refuted"}.get(self.label, "inconclusive")

    @property
    def refuted(self) -> bool:
        return self.label == DOES_NOT_CONVERGE

    def to_json(self) -> dict[str, Any]:
        def pair(entry):
            measured, predicted = entry
            return {"measured": asdict(measured), "predicted_limit": predicted}

        return {"verdict": self.label, "outcome": self.outcome, "reason": self.reason, "tolerance": self.tolerance,
                "theorem": SOURCE.to_json(), "judged_on": "limit direction (1 - cos(W_t, M)), not a rate",
                "decay": asdict(self.decay) if self.decay else None,
                "cosines": {k: pair(v) for k, v in self.cosines.items()},
                "relative_margin_errors": {k: pair(v) for k, v in self.margin_errors.items()},
                "gap": pair(self.gap) if self.gap else None, "notes": list(self.notes)}


# ------------------------------------------------------------------------------------------ the core


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slopes and intercepts along the last axis."""
    xm, ym = x.mean(axis=-1, keepdims=True), y.mean(axis=-1, keepdims=True)
    sxx = ((x - xm) ** 2).sum(axis=-1)
    # one distinct x (a bootstrap replicate drawing one checkpoint throughout) has no slope; its sxx is the
    # rounding of its mean (~1e-32), not 0, so the test is on the spread itself
    distinct = np.ptp(x, axis=-1) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(distinct, ((x - xm) * (y - ym)).sum(axis=-1) / sxx, np.nan)
    return slope, ym[..., 0] - slope * xm[..., 0]


def _bootstrap(xs, ys, x_end: float, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Replicates of the seed-averaged (slope, level at x_end): resample seeds, then points in each seed."""
    rng = np.random.default_rng(seed)
    slopes = np.empty((len(xs), samples))
    levels = np.empty((len(xs), samples))
    for j, (x, y) in enumerate(zip(xs, ys)):
        idx = rng.integers(0, len(x), size=(samples, len(x)))
        s, c = _ols(x[idx], y[idx])
        slopes[j], levels[j] = s, c + s * x_end
    if len(xs) > 1:
        pick = rng.integers(0, len(xs), size=(samples, len(xs)))
        cols = np.arange(samples)[:, None]
        return slopes[pick, cols].mean(axis=1), levels[pick, cols].mean(axis=1)
    return slopes[0], levels[0]


def fit_decay(ts: Sequence[np.ndarray], gs: Sequence[np.ndarray], t_start: float,
              samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> Optional[DecayFit]:
    """Fit ``log g`` on ``log t`` for ``t >= t_start`` and ``g > ROUNDING_FLOOR`` (None: too few points)."""
    xs, ys = [], []
    for t, g in zip(ts, gs):
        keep = (np.asarray(t, float) >= t_start) & (np.asarray(g, float) > ROUNDING_FLOOR)
        if keep.sum() < MIN_POINTS:
            return None
        xs.append(np.log(np.asarray(t, float)[keep]))
        ys.append(np.log(np.asarray(g, float)[keep]))
    t_end = float(min(np.max(np.asarray(t, float)) for t in ts))
    slopes, intercepts = zip(*(_ols(x, y) for x, y in zip(xs, ys)))
    slope = float(np.mean(slopes))
    level = float(np.mean([c + s * math.log(t_end) for s, c in zip(slopes, intercepts)]))
    rep_slopes, rep_levels = _bootstrap(xs, ys, math.log(t_end), samples, seed)
    ok = np.isfinite(rep_slopes) & np.isfinite(rep_levels)
    s_lo, s_hi = np.percentile(rep_slopes[ok], [2.5, 97.5])
    l_lo, l_hi = np.percentile(rep_levels[ok], [2.5, 97.5])
    return DecayFit(slope, float(s_lo), float(s_hi), float(np.std(rep_slopes[ok], ddof=1)), math.exp(level),
                    math.exp(l_lo), math.exp(l_hi), float(t_start), t_end, min(len(x) for x in xs), len(xs))


def classify(ts: Sequence[np.ndarray], gs: Sequence[np.ndarray], t_start: float,
             tolerance: float = DEFAULT_COSINE_TOLERANCE) -> tuple[str, str, Optional[DecayFit]]:
    """The rule of the module docstring on ``g = 1 - cos`` series (one per seed); returns (label, reason, fit)."""
    in_window = [np.asarray(g, float)[np.asarray(t, float) >= t_start] for t, g in zip(ts, gs)]
    tails = [values[-TAIL:] for values in in_window]
    if any(len(values) < MIN_POINTS for values in in_window):
        return INCONCLUSIVE, (f"no verdict, because the run is too short: fewer than {MIN_POINTS} checkpoints "
                              f"in the window from t = {t_start:.3g}; run longer or with more --checkpoints"), None
    if all(np.all(tail <= ROUNDING_FLOOR) for tail in tails):
        return CONVERGES, (f"1 - cos(W_t, M) <= {ROUNDING_FLOOR:g} (float64 rounding) over the last {TAIL} "
                           f"checkpoints of every seed"), None
    fit = fit_decay(ts, gs, t_start)
    if fit is None:
        return INCONCLUSIVE, (f"no verdict, because fewer than {MIN_POINTS} checkpoints after t = {t_start:.3g} lie "
                              f"above the rounding floor {ROUNDING_FLOOR:g}"), None
    numbers = (f"1 - cos(W_T, M) = {fit.level:.3g} (95% CI [{fit.level_low:.3g}, {fit.level_high:.3g}]) at "
               f"T = {fit.t_end:.3g}, slope {fit.slope:+.3f} (95% CI [{fit.slope_low:+.3f}, {fit.slope_high:+.3f}])")
    if fit.level_high <= tolerance and (fit.slope_high < 0 or fit.level_high <= tolerance * 1e-3):
        return CONVERGES, f"{numbers}: below the tolerance {tolerance:g} and still falling", fit
    if fit.level_low > CLEAR_FACTOR * tolerance and fit.slope_low > PLATEAU_SLOPE:
        return DOES_NOT_CONVERGE, (f"{numbers}: stays above {CLEAR_FACTOR:g} x the tolerance {tolerance:g} and "
                                   f"decays slower than t^{PLATEAU_SLOPE:g} with 95% confidence"), fit
    if fit.slope < 0 and fit.level > tolerance:
        # in logs: a slope within rounding of 0 (a flat series) puts the time past float64's range
        log_reach = math.log(fit.t_end) + math.log(tolerance / fit.level) / fit.slope
        reach = f"near t = {math.exp(log_reach):.3g}" if log_reach < math.log(1e300) else "beyond t = 1e300"
        return INCONCLUSIVE, (f"no verdict, because {numbers}: still falling but not yet below the tolerance "
                              f"{tolerance:g} (at the fitted slope it would be {reach})"), fit
    return INCONCLUSIVE, f"no verdict, because {numbers}: not clearly below {tolerance:g} nor clearly away from it", fit


# ------------------------------------------------------------------------------------------- runs


def _final(runs: Sequence[Run], series, upper: float = math.inf) -> Interval:
    """Value at the last checkpoint: mean and 95% t-interval over seeds, or one seed's range over its tail.

    ``upper`` caps the interval where the quantity cannot exceed it (a cosine is at most 1).
    """
    from scipy import stats

    if len(runs) >= 2:
        values = np.array([series(run)[-1] for run in runs], dtype=float)
        mean = float(values.mean())
        half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
        return Interval(mean, mean - half, min(mean + half, upper), f"95% t-interval over {len(values)} seeds")
    tail = np.asarray(series(runs[0]), dtype=float)[-TAIL:]
    return Interval(float(tail[-1]), float(tail.min()), float(tail.max()),
                    f"1 seed: range over the last {len(tail)} checkpoints (no replicate interval)")


def _window_start(runs: Sequence[Run]) -> float:
    """The last DECADES decades, and no earlier than MIN_EPOCHS epochs of n = sum of the class counts."""
    t_end = min(float(np.max(run.t)) for run in runs)
    n = max(int(sum(run.references[BIAS_KEY].get("class_counts") or [1])) for run in runs)
    return max(t_end / 10 ** DECADES, MIN_EPOCHS * n, 1.0)


def judge_runs(runs: Sequence[Run], tolerance: float = DEFAULT_COSINE_TOLERANCE,
               window: Optional[tuple[float, float]] = None) -> DirectionVerdict:
    """Judge the seeds of one per-sample configuration against Thm 4.9 (see the module docstring).

    ``window`` (the user's ``--window T0:T1``) replaces the automatic window: the fit uses ``T0 <= t <= T1``.
    """
    if not (0 < tolerance < 1):
        raise ValueError("tolerance must be in (0, 1)")
    if not all(BIAS_KEY in run.cosines and BIAS_KEY in run.references for run in runs):
        return DirectionVerdict(INCONCLUSIVE, "no verdict, because the trajectory records no cosine to M (written "
                                "before rates.numeric.measures existed, or the data are not orthogonal scale-skewed)",
                                tolerance)
    t_start, t_stop = (_window_start(runs), math.inf) if window is None else window
    keep = [np.asarray(run.t, dtype=float) <= t_stop for run in runs]
    label, reason, fit = classify([run.t[m] for run, m in zip(runs, keep)],
                                  [1.0 - run.cosines[BIAS_KEY][m] for run, m in zip(runs, keep)], t_start, tolerance)
    cosines, errors, notes = {}, {}, []
    for name in MEASURED_NORMS:
        if not all(name in run.references and name in run.cosines for run in runs):
            skipped = [run.references[name]["skipped"] for run in runs if "skipped" in run.references.get(name, {})]
            if skipped:
                notes.append(f"W*_{name}: {skipped[0]}")
            continue
        # each seed against its own data's limit (seeds may be data draws); the limit shown is their mean
        cosines[name] = (_final(runs, lambda run, n=name: run.cosines[n], 1.0),
                         float(np.mean([_limit_cosine(run, name) for run in runs])))
        first = runs[0].references[name]
        if first.get("unique") is not True:
            notes.append(f"W*_{name}: {first.get('note', 'possibly non-unique')}"
                         + (" (not unique: tested)" if first.get("unique") is False else ""))
        if all(name in run.margin_errors and "margins" in run.references[BIAS_KEY] for run in runs):
            limit = np.mean([1 - run.references[BIAS_KEY]["margins"][name] / run.references[name]["gamma"]
                             for run in runs])
            errors[name] = (_final(runs, lambda run, n=name: run.margin_errors[n]), float(limit))
    cosines[BIAS_KEY] = (_final(runs, lambda run: run.cosines[BIAS_KEY], 1.0), 1.0)
    gap = None
    norm = runs[0].config.norm
    if all(norm in run.references[BIAS_KEY].get("margins", {}) for run in runs):
        # margins are scale invariant, so margin(M) is margin(M/||M||)
        limit = np.mean([float(run.gamma["value"]) - run.references[BIAS_KEY]["margins"][norm] for run in runs])
        gap = (_final(runs, lambda run: run.gap), float(limit))
    return DirectionVerdict(label, reason, tolerance, fit, cosines, errors, gap, notes)


def _limit_cosine(run: Run, name: str) -> float:
    """cos(M, W*_name) of the run's own data: where cos(W_t, W*) goes if W_t/||W_t|| -> M/||M||."""
    M = np.asarray(run.references[BIAS_KEY]["matrix"], dtype=float)
    W_star = np.asarray(run.references[name]["matrix"], dtype=float)
    return float(np.sum(M * W_star) / (np.linalg.norm(M) * np.linalg.norm(W_star)))


# ------------------------------------------------------------------------------ fit records


def handles_runs(runs: Sequence[Run]) -> bool:
    """A group of runs is judged here when Thm 4.9 covers the optimiser and the data.

    The data are orthogonal when the engine recorded M; a file written before the measures existed has no
    references, so its dataset is rebuilt from the config (then the judge says why it cannot decide).
    """
    config = runs[0].config
    ok, _ = covers(str(config.algo), config.batch, float(config.momentum or 0.0), bool(config.vr))
    if not ok:
        return False
    if all(BIAS_KEY in run.references for run in runs):
        return True
    return not any(run.references for run in runs) and _orthogonal_by_name(config)


def _orthogonal_by_name(config: RunConfig) -> bool:
    from rates.errors import RatesError
    from rates.numeric.data import parse_data

    try:
        return orthogonal_structure(parse_data(str(config.data), seed=config.recorded_data_seed))[0]
    except (RatesError, OSError, ValueError):
        return False


@dataclass
class PerSampleRecord:
    """One per-sample configuration judged on its limit direction (the counterpart of report.FitRecord)."""

    config: RunConfig  # the first run's; its configuration fields are the record's
    seeds: list[Any]
    verdict: DirectionVerdict
    runs: list[Run]

    @property
    def title(self) -> str:
        return f"{self.config.algo} ({self.config.norm}), batch 1, a = {self.config.a}"

    def to_json(self) -> dict[str, Any]:
        bias = self.runs[0].references[BIAS_KEY]
        return {"schema": "rates.fit/1", "config": self.config.configuration(), "seeds": self.seeds,
                "prediction": {"family": "per-sample", "limit_direction": bias["matrix"],
                               "class_counts": bias.get("class_counts"), "source": SOURCE.to_json(),
                               "status": STATUS, "rate": None},
                "verdict": self.verdict.to_json()}

    def describe(self) -> str:
        v = self.verdict
        seeds = ", ".join(str(s) for s in self.seeds)
        lines = [f"{self.title}  (seeds {seeds})",
                 f"  predicted      : W_t/||W_t|| -> M/||M||, a limit direction, not a rate  [{THEOREM}; {STATUS}]"]
        if v.decay is not None:
            d = v.decay
            lines.append(f"  1 - cos(W_t,M) : {d.level:.3g} at T = {d.t_end:.3g} (95% CI [{d.level_low:.3g}, "
                         f"{d.level_high:.3g}]; fitted level)")
            lines.append(f"  its decay      : slope {d.slope:+.3f} ± {d.slope_stderr:.3f} "
                         f"(95% CI [{d.slope_low:+.3f}, "
                         f"{d.slope_high:+.3f}]; {d.window_text()})  [measured; Thm 4.9 gives no rate]")
        lines.append("  at T           : measured [95% interval]  vs  limit implied by Thm 4.9")
        for name, (measured, limit) in v.cosines.items():
            target = "M" if name == BIAS_KEY else f"W*_{name}"
            label = f"cos(W_T, {target})"
            lines.append(f"    {label:<32}: {measured.text(6)}  vs  {_limit_text(limit)}")
        for name, (measured, limit) in v.margin_errors.items():
            label = f"rel. margin error ({name})"
            lines.append(f"    {label:<32}: {measured.text(6)}  vs  {_limit_text(limit)}")
        if v.gap is not None:
            measured, limit = v.gap
            label = f"margin gap ({self.config.norm})"
            lines.append(f"    {label:<32}: {measured.text(6)}  vs  {_limit_text(limit)} = gamma - margin(M/||M||)")
        methods = sorted({m.method for m, _ in list(v.cosines.values()) + list(v.margin_errors.values())})
        lines.append(f"    intervals    : {'; '.join(methods)}")
        lines.append(f"  verdict        : {v.label} (Thm 4.9 {v.outcome}; cosine tolerance {v.tolerance:g}) "
                     f"- {v.reason}")
        lines += [f"  note           : {note}" for note in v.notes]
        return "\n".join(lines)


def _limit_text(limit) -> str:
    return "-" if limit is None else f"{limit:.6f}"


def fit_record(runs: Sequence[Run], window: Optional[tuple[float, float]] = None,
               tolerance: float = DEFAULT_COSINE_TOLERANCE) -> PerSampleRecord:
    seeds = [run.config.seed_or(i) for i, run in enumerate(runs)]
    return PerSampleRecord(runs[0].config, seeds, judge_runs(runs, tolerance, window), list(runs))


@dataclass(frozen=True)
class MarginRow:
    """``M``'s margin in one norm next to that norm's max margin and max-margin solution."""

    norm: str
    margin_of_M: float
    gamma: float
    cosine_M_to_W_star: float
    W_star_unique: object  # True / False / None (not tested)

    @property
    def gap_limit(self) -> float:
        return self.gamma - self.margin_of_M

    def to_json(self) -> dict:
        return {"norm": self.norm, "margin_of_M": self.margin_of_M, "gamma": self.gamma, "gap_limit": self.gap_limit,
                "relative_margin_error_limit": self.gap_limit / self.gamma,
                "cosine_M_to_W_star": self.cosine_M_to_W_star, "W_star_unique": self.W_star_unique}


@dataclass(frozen=True)
class DataPrediction:
    """Thm 4.9 on one dataset: ``M/||M||`` and what it implies per norm (margins, gap limits, cosines)."""

    limit: LimitDirection
    data_name: str
    structure: str
    rows: tuple

    def to_json(self) -> dict:
        return {**self.limit.to_json(), "data": self.data_name, "structure": self.structure,
                "margins": [row.to_json() for row in self.rows],
                "margin_status": "computed from M and the certified max margins (rates.numeric.margins)",
                "not_predicted": list(NOT_PREDICTED), "other_data": OTHER_DATA}


def predict_on(data, algorithm: str) -> DataPrediction:
    """The limit direction for ``data`` (must be orthogonal scale-skewed) and its margins in the measured norms."""
    from rates.numeric.margins import margin_of
    from rates.numeric.measures import cosine, max_margin_references

    ok, structure = orthogonal_structure(data)
    if not ok:
        raise InputError("data", f"Thm 4.9 needs orthogonal scale-skewed data: {structure}")
    counts = data.class_counts()
    limit = limit_direction(counts, algorithm)
    rows = tuple(MarginRow(name, margin_of(limit.direction, data, name), ref.gamma,
                           float(cosine(limit.direction, ref.matrix)), ref.unique)
                 for name, ref in max_margin_references(data, MEASURED_NORMS)[0].items())
    return DataPrediction(limit, data.name, structure, rows)
