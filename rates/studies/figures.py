"""Figures of the seed studies: each drawing saved as a 300 dpi PNG and a PDF, written atomically.

matplotlib's object API with the Agg canvas is used directly (as :mod:`rates.output.plots`), so importing this
module never changes a user's global backend. Helpers draw curves over log-spaced checkpoints on log-log
axes where rates are shown and on log-x axes for cosines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import ScaledTranslation

from rates.io import atomic_path

DPI = 300
T_LABEL = r"iteration $t$"
GAP_LABEL = r"margin gap $\gamma - \gamma(W_t)$"
RELATIVE_GAP = r"$(\gamma - \gamma(W_t))/\gamma$"
LEGEND_CHARS = 44  # a legend entry longer than this wraps: two columns of them fit a 4-inch panel
QUICK_DPI = 72  # --quick renders a smoke-test PNG: at 300 dpi an 8-panel figure costs seconds of CPU


def new_figure(rows: int, cols: int, width: float = 4.0, height: float = 3.2):
    # Constrained layout shrinks the axes until titles, labels and the legends below them lie inside the
    # figure, which is the saved image (no bbox_inches="tight", which would render every figure twice).
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def save(fig: Figure, out_dir: Path, stem: str, dpi: int = DPI) -> list[Path]:
    """``stem.png`` (``dpi``, 300 by default) and ``stem.pdf`` under ``out_dir/figures``."""
    _arrange_legends(fig)
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
    """Labels in mathtext (``$\\gamma(W_t)$``: a bare ``W_t`` would print its underscore) and the legend below
    the axes."""
    for text in (xlabel, ylabel, title):
        check_label(text)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        legend_below(ax, fontsize=fontsize)


def legend_below(ax, fontsize: float = 7, ncol: int = 2, **options):
    """The axes' legend outside them, under the x-axis, where it hides no data; :func:`save` places it under
    the tick labels and makes the figure taller by its height, so the panels keep their size."""
    handles, labels = ax.get_legend_handles_labels()
    labels = [_wrap(check_label(label)) for label in labels]
    legend = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), fontsize=fontsize,
                       frameon=False, ncol=min(ncol, max(len(labels), 1)), **options)
    legend.below = dict(fontsize=fontsize, **options)
    legend.below_columns = min(ncol, max(len(labels), 1))
    return legend


def _wrap(label: str, width: int = LEGEND_CHARS) -> str:
    """Break a long legend entry at spaces outside ``$...$`` into lines of about ``width`` characters."""
    lines, line, math = [], "", False
    for word in label.split(" "):
        if line and not math and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
        math ^= word.count("$") % 2 == 1
    return "\n".join(lines + [line])


def _arrange_legends(fig: Figure) -> None:
    """Each legend of :func:`legend_below` in one column when two would be wider than its panel, just under
    the panel's tick labels and x-label, with the figure grown by the tallest legend of each row."""
    below = [ax for ax in fig.axes if getattr(ax.get_legend(), "below", None) is not None]
    if not below:
        return
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()  # the layout's axes sizes, tick labels and legend sizes
    for ax in below:
        legend = ax.get_legend()
        if legend.below_columns > 1 and legend.get_window_extent(renderer).width > ax.bbox.width:
            handles, labels = ax.get_legend_handles_labels()
            texts = [t.get_text() for t in legend.get_texts()]
            single = ax.legend(handles, texts, loc="upper center", bbox_to_anchor=(0.5, 0), frameon=False, ncol=1,
                               **legend.below)
            single.below, single.below_columns = legend.below, 1
    grow: dict[int, float] = {}
    for ax in below:
        legend = ax.get_legend()
        axis_depth = (ax.bbox.y0 - ax.xaxis.get_tightbbox(renderer).y0) / fig.dpi  # inches under the axes
        gap = axis_depth + 4 / 72
        legend.set_bbox_to_anchor((0.5, 0), transform=ax.transAxes + ScaledTranslation(0, -gap, fig.dpi_scale_trans))
        height = legend.get_window_extent(renderer).height / fig.dpi
        row = ax.get_subplotspec().rowspan.start if ax.get_subplotspec() else 0
        grow[row] = max(grow.get(row, 0.0), height)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + sum(grow.values()))


_OUTSIDE_MATH = re.compile(r"\$[^$]*\$")


def check_label(text: str) -> str:
    """Refuse a label with ``_`` or ``^`` outside ``$...$``: matplotlib prints them literally (``γ(W_t)``)."""
    plain = _OUTSIDE_MATH.sub("", text)
    if "_" in plain or "^" in plain:
        raise ValueError(f"figure label {text!r} has a sub- or superscript outside mathtext ($...$)")
    return text
