"""Measurements of ``rates report signadam`` taken from the runs: sec. 7's normalised margins and cosines, the
crossover of two eps curves, and Ass. 3.2's constant rho on the study's data."""

from __future__ import annotations

import numpy as np

from rates.studies.runner import result_data
from rates.studies.signadam.protocols import DISPLAY, EPS_AGREE
from rates.studies.signadam.runs import _key


def crossover(t: np.ndarray, curve: np.ndarray, base: np.ndarray, start: float, tolerance: float = EPS_AGREE):
    """First checkpoint ``t >= start`` where ``|curve - base| > tolerance`` (None: they agree to the end)."""
    late = t >= start
    apart = np.flatnonzero(late & (np.abs(curve - base) > tolerance))
    return float(t[apart[0]]) if apart.size else None


def initial_rho(data: str, seed: int) -> float:
    """SIGNADAM Ass. 3.2's constant on the study's data: the smallest entry of ``g_0^2``, ``g_0`` the gradient of
    the cross-entropy at ``W_0 = 0`` (``(1/n) sum_i (1/k - e_{y_i}) h_i^T``), which is Adam's first bias-corrected
    second-moment estimate from ``v_0 = 0``."""
    from rates.numeric.data import parse_data

    dataset = parse_data(data, seed=seed)
    H, y, k = np.asarray(dataset.H, float), np.asarray(dataset.y), int(dataset.k)
    residual = np.full((k, len(y)), 1.0 / k)
    residual[y, np.arange(len(y))] -= 1.0
    gradient = residual @ H / len(y)
    return float(np.min(gradient ** 2))


def margin_measures(result) -> dict[str, dict]:
    """Normalised margins in the max and 2 norms and cosines to W*_max and W*_2 of the sec. 7 runs."""
    from rates.numeric.margins import max_margin

    data = result_data(result)
    solution = {norm: max_margin(data, norm) for norm in ("max", "frobenius")}
    out = {}
    for run in result.runs:
        algo, _, eps = _key(run)
        name = DISPLAY[algo] if algo != "adam" else f"Adam eps={eps:g}"
        out[name] = {"t": np.asarray(run.t, float),
                     "max": np.asarray(run.margins["max"]) / solution["max"].gamma,
                     "frobenius": np.asarray(run.margins["frobenius"]) / solution["frobenius"].gamma,
                     "cos_max": np.asarray(run.cosines["max"], float),
                     "cos_2": np.asarray(run.cosines["frobenius"], float),
                     "log_loss": np.asarray(run.log_loss, float)}
    return out
