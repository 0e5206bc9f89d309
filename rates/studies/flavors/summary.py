"""Tables of measured FLAVORS quantities: mean +- standard deviation [min, max] over seeds, with sources."""

from __future__ import annotations

import numpy as np

from rates.numeric.homogeneous.train import History
from rates.output.tables import Cell, Table
from rates.symbolic.papers import FLAVORS as FLAVORS_REFERENCE

METRIC_SOURCES = {
    "log_loss": ("log L (summed loss)", "FLAVORS section 2"),
    "soft_margin": ("soft margin gamma~ (own norm)", "FLAVORS eq. 5 / App. A.3"),
    "norm": ("||theta|| (own norm)", "FLAVORS eq. 1"),
    "gamma_1": ("gamma_1 = min yf/||theta||_inf^L", "FLAVORS eq. 13"),
    "gamma_2": ("gamma_2 = min yf/||theta||_2^L", "FLAVORS eq. 13"),
    "gamma_inf": ("gamma_inf = min yf/||theta||_1^L", "FLAVORS eq. 13"),
    "gamma_spectral": ("gamma_sigma = min yf/(max_l sigma_max(W_l))^L", "FLAVORS eq. 15"),
    "train_acc": ("train accuracy", "measured"),
    "test_acc": ("test accuracy", "measured"),
}


def spread(values: np.ndarray, digits: int = 4) -> Cell:
    """``mean +- sd [min, max] (n=...)`` over the finite entries; the JSON value keeps all numbers."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Cell("n/a (no run)", value={"n": 0})
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    text = f"{v.mean():.{digits}g} ± {sd:.2g} [{v.min():.{digits}g}, {v.max():.{digits}g}] (n={v.size})"
    latex = (f"${v.mean():.{digits}g} \\pm {sd:.2g}$ $[{v.min():.{digits}g}, {v.max():.{digits}g}]$ "
             f"($n={v.size}$)")
    return Cell(text, latex=latex, value={"mean": float(v.mean()), "sd": sd, "min": float(v.min()),
                                          "max": float(v.max()), "n": int(v.size), "values": v.tolist()})


def history_table(history: History, caption: str = "") -> Table:
    """Final values of one training configuration over its seeds (diverged runs left out and counted)."""
    ok = ~history.diverged
    cfg = history.config
    table = Table(["quantity", "source", "end of run (mean ± sd [min, max] over seeds)"],
                  caption=caption or f"{cfg.algorithm} on {history.info.get('data')} at step {cfg.steps}",
                  notes=[f"Source: FLAVORS = {FLAVORS_REFERENCE.citation()}. Measured quantities, not predictions; "
                         f"{int(history.diverged.sum())} of {history.diverged.size} runs diverged and are left out.",
                         f"Own norm of {cfg.algorithm}: {history.geometry}; homogeneity degree L = {history.degree} "
                         f"(max relative error of f(c theta) = c^L f(theta): {history.homogeneity_error:.1e})."])
    for name, (label, source) in METRIC_SOURCES.items():
        table.add(label, source, spread(history.final(name)[ok]))
    t_sep = history.t_separated[ok].astype(float)
    table.add("first step with 100% train accuracy", "measured", spread(np.where(t_sep >= 0, t_sep, np.nan)))
    drops = np.where(history.t_below_level[ok] >= 0, history.max_soft_margin_drop[ok], np.nan)
    table.add("max drop of gamma~ after L < l(0) / max gamma~", "FLAVORS Thm 3.1 (flow: 0)", spread(drops, 3))
    return table
