"""Figures of the seed studies: each drawing saved as a 300 dpi PNG and a PDF, written atomically.

matplotlib's object API with the Agg canvas is used directly (as :mod:`rates.plots`), so importing this
module never changes a user's global backend. Helpers draw curves over log-spaced checkpoints on log-log
axes where rates are shown and on log-x axes for cosines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rates.io import atomic_path

DPI = 300
QUICK_DPI = 72  # --quick renders a smoke-test PNG: at 300 dpi an 8-panel figure costs seconds of CPU


def new_figure(rows: int, cols: int, width: float = 4.0, height: float = 3.2):
    fig = Figure(figsize=(width * cols, height * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    # fixed margins: bbox_inches="tight" renders every figure twice
    inches = height * rows  # margins in inches, so tick labels, axis labels and the title fit at any size
    fig.subplots_adjust(left=0.8 / (width * cols), right=0.98, bottom=0.6 / inches, top=1 - 0.55 / inches,
                        wspace=0.38, hspace=0.6)
    return fig, axes


def save(fig: Figure, out_dir: Path, stem: str, dpi: int = DPI) -> list[Path]:
    """``stem.png`` (``dpi``, 300 by default) and ``stem.pdf`` under ``out_dir/figures``."""
    paths = []
    for ext in (".png", ".pdf"):
        target = Path(out_dir) / "figures" / f"{stem}{ext}"
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=ext.lstrip("."), dpi=dpi)
        paths.append(target)
    return paths


def curve(ax, t: np.ndarray, values: np.ndarray, label: str, log_y: bool = True, spread: Optional[np.ndarray] = None,
          **style) -> None:
    """Mean curve over seeds (rows of ``values``), min-max band when several; non-positive values hidden
    on a log axis (a margin error at or below 0 has no logarithm)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    if log_y:
        values = np.where(values > 0, values, np.nan)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, low, high = np.nanmean(values, 0), np.nanmin(values, 0), np.nanmax(values, 0)
    line, = ax.plot(t, mean, label=label, **style)
    if values.shape[0] > 1:
        ax.fill_between(t, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    low, high = ax.get_xlim() if ax.get_lines()[:-1] else (np.inf, 0.0)
    ax.set_xlim(min(low, float(np.min(t))), max(high, float(np.max(t))))  # an all-NaN curve sets no limits
    if log_y and any(np.any(np.isfinite(np.asarray(ln.get_ydata(), float)) & (np.asarray(ln.get_ydata(), float) > 0))
                     for ln in ax.get_lines()):
        ax.set_yscale("log")  # a panel with no positive value stays linear (log of nothing is an error)


def finish(ax, xlabel: str, ylabel: str, title: str, legend: bool = True, fontsize: int = 7) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=fontsize)
