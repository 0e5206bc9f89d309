"""Figures of a fit: log-log margin gap against t, the fitted line, the bound's shape, the window.

The figure is what a reader checks a verdict against (docs/theory.md section 4): the data of every seed, the
least-squares line over the window (slope ± bootstrap error), the bound's shape ``bound_shape(t)`` scaled
to the fitted line at the window start (so only its *slope* is compared, constants are not), the window
shaded and the solver floor drawn. matplotlib's object API with the Agg canvas is used directly so that
importing this module never changes a user's global backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rates.errors import InputError
from rates.io import atomic_path
from rates.judge.compare import BoundLike, Verdict
from rates.numeric.trajectory import Run

FIGURE_FORMATS = (".png", ".pdf")
FIGURE_DPI = 300


def check_figure_path(path: str | os.PathLike, option: str = "plot") -> Path:
    """Refuse a figure name whose format matplotlib would have to guess."""
    p = Path(path)
    if p.suffix.lower() not in FIGURE_FORMATS:
        raise InputError(option, f"figure must end in {' or '.join(FIGURE_FORMATS)}, got {p.name!r}")
    return p


def _draw_phase(ax, verdict: Verdict, t_last: float) -> None:
    """The rebuilt thresholds t0/t1 (data's constants): a line inside the run, a legend entry beyond it."""
    phase = (verdict.context or {}).get("phase") or {}
    for name, style in (("t0", ":"), ("t1", "-.")):
        value = phase.get(name)
        if value is None:
            continue
        if 1 <= float(value) <= t_last:
            ax.axvline(float(value), color="tab:green", lw=1.0, ls=style,
                       label=f"${name[0]}_{name[1]}$ = {_sci(float(value))} [rebuilt]")
        elif float(value) > t_last:
            ax.plot([], [], " ", label=f"${name[0]}_{name[1]}$ = {_sci(float(value))} [rebuilt], beyond the run")


def _sci(value: float) -> str:
    """``1.07e+10`` as mathtext ``$1.07 \\times 10^{10}$``; plain ``%g`` where no exponent is needed."""
    text = f"{value:.3g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return rf"${mantissa} \times 10^{{{int(exponent)}}}$"


def _bound_math(bound: Optional[BoundLike], bound_label: str) -> str:
    """The bound's rate in mathtext (``bound $t^{-1/4}$``) when the prediction carries one."""
    rate = getattr(bound, "rate", None)
    latex = getattr(rate, "latex", None)
    return f"bound ${latex}$" if isinstance(latex, str) and latex else bound_label


def _shape_where_defined(bound, window, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bound's shape at ``window.t0`` and at ``ts``; a user's bound needs only be positive on its window
    (``C/log(log(t))`` is negative at ``t = 2``), so where it is not defined before the window the curve starts
    at the window."""
    from rates.errors import InputError

    try:
        return ts, np.asarray(bound.bound_shape(np.concatenate([[window.t0], ts])), dtype=float)
    except InputError:
        inside = np.logspace(np.log10(window.t0), np.log10(window.t1), 40)
        return inside, np.asarray(bound.bound_shape(np.concatenate([[window.t0], inside])), dtype=float)


def plot_fit(runs: Sequence[Run], verdict: Verdict, bound: Optional[BoundLike],
             path: str | os.PathLike | Sequence[str | os.PathLike], title: str,
             bound_label: str = "bound shape") -> Path:
    """Draw one configuration's fit to ``path`` (PNG or PDF, written atomically); returns the first path.

    Several paths (``[fig.png, fig.pdf]``) save one drawing in several formats: the bound's shape comes
    from exact partial sums and is worth evaluating once.
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    targets = figure_targets([check_figure_path(p) for p in paths])
    fig = fit_figure(runs, verdict, bound, title, bound_label)
    for target in targets:
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=target.suffix.lower().lstrip("."), dpi=FIGURE_DPI)
    return targets[0]


def fit_figure(runs: Sequence[Run], verdict: Verdict, bound: Optional[BoundLike], title: str,
               bound_label: str = "bound shape") -> Figure:
    """The drawing :func:`plot_fit` saves. The legend sits below the axes, outside them, so it hides no data;
    constrained layout sizes the axes so that labels and legend lie inside the figure's own box, which is
    the saved image (no ``bbox_inches="tight"``: what is drawn is what is saved)."""
    fig = Figure(figsize=(6.4, 5.2), dpi=FIGURE_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    shown = []
    data_seeds = {run.config.recorded_data_seed for run in runs}
    for i, run in enumerate(runs):
        t = np.asarray(run.t, dtype=float)
        gap = np.asarray(run.gap, dtype=float)
        keep = (t >= 1) & (gap > 0) & np.isfinite(gap)
        shown.append(gap[keep])
        seed = f"seed {run.config.seed_or(i)}"
        if len(data_seeds) > 1:  # runs on several generated datasets: name the draw as well
            seed += f", data seed {run.config.recorded_data_seed}"
        ax.loglog(t[keep], gap[keep], ".-", lw=0.8, ms=3, alpha=0.8, label=f"gap, {seed}")
    values = np.concatenate(shown) if shown else np.array([])
    low, high = (values.min(), values.max()) if len(values) else (1e-12, 1.0)

    window = verdict.window
    if np.isfinite(window.t0) and np.isfinite(window.t1):
        ax.axvspan(window.t0, window.t1, color="tab:gray", alpha=0.15, label=f"fit window ({window.source})")
    # The floor is drawn only when it is near the data; otherwise it would squash the plot to 1e-10.
    if window.floor > low / 100:
        ax.axhline(window.floor, color="tab:red", lw=0.8, ls=":", label="solver floor (100 × accuracy)")
        low = min(low, window.floor)
    fit = verdict.fit
    if fit is not None:
        tw = np.logspace(np.log10(window.t0), np.log10(window.t1), 50)
        line = np.exp(fit.intercept) * tw ** fit.slope
        ax.loglog(tw, line, "k-", lw=2, label=f"fit: slope ${fit.slope:+.3f} \\pm {fit.stderr:.3f}$")
        if bound is not None and verdict.predicted_local_slope is not None:
            # From two decades before the window: earlier, before t_1, the bound's shape says nothing.
            t_last = float(np.asarray(runs[0].t, dtype=float)[-1])
            ts = np.logspace(np.log10(max(2.0, window.t0 / 100)), np.log10(t_last), 40)
            ts, values = _shape_where_defined(bound, window, ts)
            anchor, shape = values[0], values[1:]
            scale = np.exp(fit.intercept) * window.t0 ** fit.slope / anchor
            envelope = verdict.envelope.text() if verdict.envelope else f"{verdict.predicted_local_slope:.3f}"
            # two short lines: one long entry would run past the figure
            ax.loglog(ts, scale * shape, "--", color="tab:purple", lw=1.8, zorder=5,
                      label=f"shape of the {_bound_math(bound, bound_label)}, unit constants,\n"
                            f"scaled to the fit at the window start; slope envelope {envelope}")
    _draw_phase(ax, verdict, float(np.asarray(runs[0].t, dtype=float)[-1]) if runs else 1.0)
    ax.set_ylim(low / 2, high * 2)
    ax.set_xlabel(r"iteration $t$")
    ax.set_ylabel(r"margin gap $\gamma - \gamma(W_t)$")
    ax.set_title(f"{title}: {verdict.label}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    return fig


def figure_targets(paths: Sequence[Path]) -> list[Path]:
    """Every figure as a 300-dpi PNG (to look at) and a PDF (to print): ``fit.png`` also writes ``fit.pdf``."""
    targets = list(paths)
    for p in paths:
        for suffix in FIGURE_FORMATS:
            sibling = p.with_suffix(suffix)
            if sibling not in targets:
                targets.append(sibling)
    return targets


def plot_certificate(cert, path: str | os.PathLike, title: str) -> Path:
    """The gap and the proof chain's explicit bound ``B(t)`` (:mod:`rates.symbolic.theorems.proof_chain`) against t,
    from the anchor ``s0`` on, as the stepper recorded them (:mod:`rates.numeric.certificate`)."""
    targets = figure_targets([check_figure_path(path)])
    fig = Figure(figsize=(6.4, 4.8), dpi=FIGURE_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    keep = (cert.t > cert.s0) & (cert.gap > 0) & np.isfinite(cert.bound)
    ax.loglog(cert.t[keep], cert.bound[keep], "-", color="tab:purple", lw=1.8,
              label="$B(t)$: proof chain, local curvature, anchored at $s_0$")
    ax.loglog(cert.t[keep], cert.gap[keep], ".-", lw=0.8, ms=3, label=r"gap $\gamma - \gamma(W_t)$ (stepper)")
    ax.axvline(max(cert.s0, 1), color="tab:gray", ls=":", lw=1, label=f"$s_0$ = {cert.s0}")
    ax.set_xlabel(r"iteration $t$")
    ax.set_ylabel("margin gap and its bound")
    state = "certified" if cert.certified and not cert.broken else "BROKEN"
    ax.set_title(f"{title}: {state}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    for target in targets:
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=target.suffix.lower().lstrip("."), dpi=FIGURE_DPI)
    return targets[0]
