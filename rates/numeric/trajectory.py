"""The Trajectory file: what ``rates run`` writes and ``rates fit`` / ``rates report`` read.

docs/design.md ("Interfaces"): config, gamma with its solver and accuracy, and arrays over log-spaced
checkpoints. One file holds one or more runs (several seeds or configurations advanced together), so
``{"schema": SCHEMA, "meta": {...}, "runs": [run, ...]}`` with each run::

    {"config":  {"algo", "norm", "family", "a", "eta0", "steps", "data", "seed", "batch", "momentum",
                 "vr", "device", "dtype", ...},          # a as an exact string ("1/2"), the rest JSON scalars;
                                                         # a schedule outside eta0 (t+2)^-a: "a": null and
                                                         # "schedule": its text (rates.schedule.Schedule)
     "gamma":   {"value", "norm", "solver", "accuracy"}, # the max margin the gap is measured to
     "checkpoints": {"t": [...], "gap": [...], "margin": [...], "log_loss": [...], "norm": [...],
                     "margins": {"max": [...], "frobenius": [...], "spectral": [...]},
                     "margin_errors": {"max": [...], ...},      # optional: (gamma_N - margin_N) / gamma_N
                     "cosines": {"max": [...], ..., "M": [...]}}, # optional: cosine of W_t to W*_N and to M
     "references": {"max": {"matrix", "gamma", "solver", "unique", "note", ...}, ..., "M": {...}}}  # optional

The optional entries (:mod:`rates.numeric.measures`) were added after the first files were written; files without
them still load (empty dicts).

``gap = gamma - margin`` with ``margin`` the margin of W_t in the algorithm's norm. Loading validates
the schema and raises :class:`InputError` (option ``--from``) with a one-line reason. A run's ``config`` is read
into a :class:`rates.numeric.run_config.RunConfig` (its layout and version there) and written back from it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from rates.errors import InputError
from rates.io import write_text_atomic
from rates.numeric.run_config import CONFIG_REQUIRED, RunConfig, config_from_json, config_to_json

SCHEMA = "rates.trajectory/1"
CHECKPOINT_ARRAYS = ("t", "gap", "margin", "log_loss", "norm")
GAMMA_FIELDS = ("value", "norm", "solver", "accuracy")
OPTIONAL_SERIES = ("margins", "margin_errors", "cosines")  # dicts of per-checkpoint arrays, absent in old files


@dataclass
class Run:
    """One optimiser run: its configuration, the max margin it is measured to, and its checkpoints."""

    config: RunConfig
    gamma: dict[str, Any]
    t: np.ndarray
    gap: np.ndarray
    margin: np.ndarray
    log_loss: np.ndarray
    norm: np.ndarray
    margins: dict[str, np.ndarray] = field(default_factory=dict)
    margin_errors: dict[str, np.ndarray] = field(default_factory=dict)
    cosines: dict[str, np.ndarray] = field(default_factory=dict)
    references: dict[str, Any] = field(default_factory=dict)
    # the iterates W_t (T, k, d) at the checkpoints ``t`` (the engine fills it, the last one is W at t = steps);
    # written only as ``keep_weights`` says: "none" (default), "final" (W at the last checkpoint) or "checkpoints"
    weights: Optional[np.ndarray] = field(default=None, repr=False, compare=False)
    keep_weights: str = field(default="none", compare=False)

    def to_json(self) -> dict[str, Any]:
        checkpoints = {name: _floats(getattr(self, name)) for name in CHECKPOINT_ARRAYS}
        checkpoints["t"] = [int(v) for v in self.t]
        for name in OPTIONAL_SERIES:
            checkpoints[name] = {k: _floats(v) for k, v in getattr(self, name).items()}
        out = {"config": config_to_json(self.config), "gamma": self.gamma, "checkpoints": checkpoints}
        if self.references:
            out["references"] = self.references
        if self.keep_weights != "none" and self.weights is not None:
            kept = slice(-1, None) if self.keep_weights == "final" else slice(None)
            out["weights"] = {"kept": self.keep_weights, "t": [int(v) for v in self.t[kept]],
                              "W": np.asarray(self.weights[kept], dtype=np.float64).tolist()}
        return out

    @property
    def final_W(self) -> Optional[np.ndarray]:
        """W at the last checkpoint (t = steps), when the weights were kept or are in memory."""
        return None if self.weights is None else np.asarray(self.weights[-1])


@dataclass
class Trajectory:
    runs: list[Run]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "meta": self.meta, "runs": [run.to_json() for run in self.runs]}


def _floats(values: Any) -> list[Any]:
    # JSON has no inf/nan; keep them representable and round-trippable as strings.
    out: list[Any] = []
    for v in np.asarray(values, dtype=float).ravel():
        out.append(float(v) if math.isfinite(v) else str(float(v)))
    return out


def require_finite(runs: list[Run], option: str = "eta0") -> None:
    """Stop a diverged run before it is saved or fitted: float64 overflow (``--eta0 1e308``) gives NaN gaps
    that no rate describes; exit 2 names the option to change, and no file is written."""
    for run in runs:
        bad = ~(np.isfinite(run.gap) & np.isfinite(run.margin))
        if bad.any():
            first = int(np.argmax(bad))
            raise InputError(option, f"the run diverged: margin gap {run.gap[first]} at t = {int(run.t[first])} "
                                     f"(seed {run.config.seed}, eta0 = {run.config.eta0}); float64 "
                                     f"overflowed, choose a smaller {option}")


def save(trajectory: Trajectory, path: str | os.PathLike) -> Path:
    """Write atomically: a failure leaves no partial file."""
    return write_text_atomic(path, json.dumps(trajectory.to_json(), indent=1) + "\n")


def _array(raw: Any, where: str, path: str) -> np.ndarray:
    if not isinstance(raw, list):
        raise InputError("from", f"{path}: {where} must be a list of numbers")
    try:
        return np.array([float(v) for v in raw], dtype=float)
    except (TypeError, ValueError):
        raise InputError("from", f"{path}: {where} holds a non-number") from None


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _check_values(raw_config: dict, gamma: dict, arrays: dict[str, np.ndarray], where: str) -> RunConfig:
    """Refuse what no run of ``rates run`` can produce, so ``fit`` never judges nonsense; returns the run's config.

    ``gamma`` is a max margin (> 0 on separable data, docs/theory.md section 1); ``gap = gamma - margin`` is
    >= 0 up to the solver's certified accuracy (a margin above the max margin is impossible); a diverged
    run (NaN, infinite gap) has no rate to fit; ``a`` and ``eta0`` must be a valid schedule
    (:func:`rates.numeric.run_config.config_from_json`).
    """
    config = config_from_json(raw_config, f"{where}.config")
    value, accuracy = _number(gamma["value"]), _number(gamma["accuracy"])
    if not (math.isfinite(value) and value > 0):
        raise InputError("from", f"{where}.gamma.value must be a finite max margin > 0, got {gamma['value']!r}")
    if not (math.isfinite(accuracy) and accuracy >= 0):
        raise InputError("from", f"{where}.gamma.accuracy must be a finite number >= 0, got {gamma['accuracy']!r}")
    for name in ("gap", "margin"):
        bad = ~np.isfinite(arrays[name])
        if bad.any():
            first = int(np.argmax(bad))
            raise InputError("from", f"{where}.checkpoints.{name}[{first}] is {arrays[name][first]} "
                                       f"(at t = {arrays['t'][first]:.0f}): the run diverged; nothing to fit")
    slack = 100 * accuracy + 1e-9 * value
    if len(arrays["gap"]) and arrays["gap"].min() < -slack:
        first = int(np.argmax(arrays["gap"] < -slack))
        raise InputError("from", f"{where}.checkpoints.gap[{first}] = {arrays['gap'][first]:.3g} < 0: a margin above "
                                   f"the max margin gamma = {value:.6g} (beyond its accuracy {accuracy:.1e})")
    return config


KEEP_WEIGHTS = ("none", "final", "checkpoints")


def _weights(raw: Any, t: np.ndarray, where: str) -> tuple[Optional[np.ndarray], str]:
    """The kept iterates of a run (``{"kept", "t", "W"}``), or ``(None, "none")`` when the file has none."""
    if raw is None:
        return None, "none"
    try:
        kept, times = raw["kept"], np.asarray(raw["t"], dtype=np.int64)
        W = np.asarray(raw["W"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        raise InputError("from", f"{where} needs kept, t and W (W a list of k x d matrices)") from None
    if kept not in KEEP_WEIGHTS[1:] or W.ndim != 3 or len(W) != len(times) or not np.all(np.isin(times, t)):
        raise InputError("from", f"{where}: kept must be final or checkpoints, W one k x d matrix per listed t "
                                 "(checkpoint steps)")
    return W, kept


def parse(data: Any, path: str = "<trajectory>") -> Trajectory:
    """Validate a decoded JSON object and build a Trajectory."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError("from", f"{path}: not a rates trajectory (schema {found!r}, expected {SCHEMA!r})")
    runs_raw = data.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise InputError("from", f"{path}: 'runs' must be a non-empty list")
    runs = []
    for i, raw in enumerate(runs_raw):
        where = f"runs[{i}]"
        if not isinstance(raw, dict):
            raise InputError("from", f"{path}: {where} must be an object")
        config, gamma, cps = raw.get("config"), raw.get("gamma"), raw.get("checkpoints")
        if not isinstance(config, dict) or any(k not in config for k in CONFIG_REQUIRED):
            raise InputError("from", f"{path}: {where}.config needs {', '.join(CONFIG_REQUIRED)}")
        if not isinstance(gamma, dict) or any(k not in gamma for k in GAMMA_FIELDS):
            raise InputError("from", f"{path}: {where}.gamma needs {', '.join(GAMMA_FIELDS)}")
        if not isinstance(cps, dict):
            raise InputError("from", f"{path}: {where}.checkpoints missing")
        arrays = {}
        for name in CHECKPOINT_ARRAYS:
            arrays[name] = _array(cps.get(name), f"{where}.checkpoints.{name}", path)
        lengths = {len(v) for v in arrays.values()}
        if len(lengths) != 1:
            raise InputError("from", f"{path}: {where}.checkpoints arrays differ in length")
        t = arrays["t"]
        if len(t) and not (np.all(np.isfinite(t)) and np.all(t == np.round(t)) and t.max() < 2**62):
            raise InputError("from", f"{path}: {where}.checkpoints.t must hold step numbers (integers below 2^62)")
        if len(t) and (np.any(t < 0) or np.any(np.diff(t) <= 0)):
            raise InputError("from", f"{path}: {where}.checkpoints.t must be increasing and non-negative")
        config = _check_values(config, gamma, arrays, f"{path}: {where}")
        series = {}
        for name in OPTIONAL_SERIES:
            raw_series = cps.get(name, {})
            if not isinstance(raw_series, dict):
                raise InputError("from", f"{path}: {where}.checkpoints.{name} must be an object")
            series[name] = {k: _array(v, f"{where}.checkpoints.{name}.{k}", path) for k, v in raw_series.items()}
            if any(len(v) != len(t) for v in series[name].values()):
                raise InputError("from", f"{path}: {where}.checkpoints.{name} arrays differ in length from t")
        references = raw.get("references", {})
        if not isinstance(references, dict):
            raise InputError("from", f"{path}: {where}.references must be an object")
        weights, kept = _weights(raw.get("weights"), t, f"{path}: {where}.weights")
        runs.append(Run(config=config, gamma=gamma, t=t.astype(np.int64), references=references, **series,
                        **{k: arrays[k] for k in CHECKPOINT_ARRAYS if k != "t"}, weights=weights, keep_weights=kept))
    meta = data.get("meta", {})
    return Trajectory(runs=runs, meta=meta if isinstance(meta, dict) else {})


def load(path: str | os.PathLike) -> Trajectory:
    """Read and validate a Trajectory file; bad files raise InputError naming ``--from``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError("from", f"cannot read {p}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise InputError("from", f"{p}: not UTF-8 text (byte {err.start}); a Trajectory is JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError("from", f"{p}: not JSON ({err.msg} at line {err.lineno})") from None
    except RecursionError:
        raise InputError("from", f"{p}: JSON nested deeper than any Trajectory (lists inside lists "
                                 "thousands deep)") from None
    try:
        return parse(data, str(p))
    except RecursionError:
        raise InputError("from", f"{p}: JSON nested deeper than any Trajectory") from None
