"""The figures of ``rates report flavors``: FLAVORS Fig. 1-3 and 6, the init-scale and Adam-phase panels and the
Thm 3.4 KKT residual, as curves of mean and min-max over seeds against log t.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from rates.numeric.homogeneous.train import KKT_WINDOW, History
from rates.studies.flavors.protocols import _OWN_MARGIN, ADAM_EPS_VALUES, INIT_SCALES, ORDERING_SCALE, PHASE_TWO_LEVEL
from rates.studies.flavors.runs import fig1_key

_COLORS = {"gd": "tab:blue", "sd": "tab:green", "cd": "tab:red", "adam": "tab:purple", "spectral": "tab:orange",
           "shampoo": "tab:brown", "shampoo-no-acc": "tab:pink"}
_LABELS = {"gamma_1": r"$\gamma_1$ (eq. 13)", "gamma_2": r"$\gamma_2$ (eq. 13)",
           "gamma_inf": r"$\gamma_\infty$ (eq. 13)",
           "gamma_spectral": r"$\gamma_\sigma$ (eq. 15)", "log_loss": r"$\log \mathcal{L}$",
           "train_acc": "train accuracy", "test_acc": "test accuracy",
           "kkt_residual": r"$1 - \langle\theta, -g\rangle / (\|\theta\| \|g\|_*)$",
           "kkt_residual_window": r"same with $g$ averaged over the last steps"}


def _plot_curves(ax, runs: dict[str, History], metric: str, log_y: bool, colors: dict | None = None) -> None:
    for name, h in runs.items():
        values = h.metrics[metric][~h.diverged]
        t = np.maximum(h.t, 0.5)  # step 0 on a log axis
        color = (colors or _COLORS).get(name)
        label = name.upper() if name in _COLORS else name
        if values.shape[0] == 0:  # every seed diverged: no curve, but the legend says so
            ax.plot([], [], color=color, label=f"{label} (all seeds diverged)")
            continue
        if log_y:
            values = np.where(values > 0, values, np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns before separation
            mean, lo, hi = np.nanmean(values, 0), np.nanmin(values, 0), np.nanmax(values, 0)
        ax.plot(t, mean, color=color, label=label)
        ax.fill_between(t, lo, hi, color=color, alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    # lines that are NaN throughout add nothing to the data limits; pin x so a log axis always has a range
    ax.set_xlim(0.5, max(float(np.max(h.t)) for h in runs.values()) * 1.1)
    if log_y and any(np.any(np.isfinite(line.get_ydata()) & (line.get_ydata() > 0)) for line in ax.get_lines()):
        ax.set_yscale("log")  # a panel with no positive value (nothing separated yet) stays linear
    ax.set_xlabel(r"step $t$")
    ax.set_ylabel(_LABELS[metric])
    ax.set_title(_LABELS[metric], fontsize=9)
    ax.grid(True, which="major", alpha=0.3)


def _curve_figure(runs: dict[str, History], panels: list[tuple[str, bool]], title: str, extra: int = 0,
                  colors: dict | None = None):
    """One row of panels (metric, log_y) with the curves of ``runs``, plus ``extra`` empty panels."""
    from rates.studies import figures as sf

    fig, axes = sf.new_figure(1, len(panels) + extra, width=4.3, height=3.8)
    axes = axes[0]
    for ax, (metric, log_y) in zip(axes, panels):
        _plot_curves(ax, runs, metric, log_y, colors)
    sf.legend_below(axes[0])
    fig.suptitle(title, fontsize=10)
    return fig, axes


def figures(h: dict[str, History], out_dir: Path, n_seeds: int, dpi: int = 300) -> list[Path]:
    from rates.studies import figures as sf

    o = ORDERING_SCALE
    fig1 = {"gd": h[fig1_key("gd", o)], "sd": h[fig1_key("sd", o)], "cd": h[fig1_key("cd", o)]}
    fig, axes = _curve_figure(fig1, [("gamma_1", True), ("gamma_2", True), ("gamma_inf", True)],
                              f"FLAVORS Fig. 1 at CPU size: teacher-student (eq. 14), exponential loss, alpha = {o:g}, "
                              f"mean and min-max over {n_seeds} seeds (margins <= 0 not drawn)", extra=1)
    markers = {scale: m for scale, m in zip(INIT_SCALES, ("o", "s", "^"))}
    for algo in ("gd", "sd", "cd"):
        for scale in INIT_SCALES:
            run = h[fig1_key(algo, scale)]
            ok = ~run.diverged
            axes[3].scatter(run.final("gamma_inf")[ok], run.final("test_acc")[ok], color=_COLORS[algo],
                            marker=markers[scale], label=f"{algo.upper()} alpha={scale:g}")
    axes[3].set_xscale("symlog", linthresh=1e-6)
    axes[3].set(xlabel=r"final $\gamma_\infty$", ylabel="final test accuracy",
                title=r"test accuracy vs $\gamma_\infty$")
    # one label every second decade, slanted: a label per decade overlapped its neighbours
    import matplotlib.ticker

    axes[3].xaxis.set_major_locator(matplotlib.ticker.SymmetricalLogLocator(base=100, linthresh=1e-6))
    axes[3].tick_params(axis="x", labelrotation=30)
    sf.legend_below(axes[3], fontsize=5, ncol=3, title="one point per seed", title_fontsize=6)
    figs = [(fig, "fig1_teacher_student")]

    scale_colors = {f"alpha={a:g}": c for a, c in zip(INIT_SCALES, ("tab:red", "tab:orange", "tab:green"))}
    fig, axes = sf.new_figure(1, 3, width=4.3, height=3.8)
    for ax, (algo, metric) in zip(axes[0], _OWN_MARGIN.items()):
        _plot_curves(ax, {f"alpha={a:g}": h[fig1_key(algo, a)] for a in INIT_SCALES}, metric, True, scale_colors)
        ax.set_title(f"{algo.upper()}: {_LABELS[metric]}", fontsize=9)
        sf.legend_below(ax)
    fig.suptitle("FLAVORS sec. 4.1 (ii): init scale alpha and the final margin (exponential loss)", fontsize=10)
    figs.append((fig, "fig1_init_scales"))

    fig2 = {"gd": h["fig2-gd"], "sd": h["fig2-sd"], "adam": h["fig2-adam"]}
    figs.append((_curve_figure(fig2, [("train_acc", False), ("test_acc", False), ("gamma_1", True), ("gamma_2", True)],
                               f"FLAVORS Fig. 2 at CPU size: digits 3 vs 6 (sklearn 8x8), logistic loss, Adam "
                               f"eps=1e-8, {n_seeds} seeds")[0], "fig2_digits_adam"))
    fig6 = {"gd": h["fig6-gd"], "sd": h["fig6-sd"], "adam": h["fig6-adam"]}
    figs.append((_curve_figure(fig6, [("train_acc", False), ("test_acc", False), ("gamma_1", True), ("gamma_2", True)],
                               f"FLAVORS Fig. 6 at CPU size: digits 2 vs 7 (sklearn 8x8), logistic loss, Adam "
                               f"eps=1e-8, {n_seeds} seeds")[0], "fig6_digits_2_7"))
    long_runs = {f"eps={eps:g}": h[f"fig2-adam-long-eps{eps:g}"] for eps in ADAM_EPS_VALUES}
    eps_colors = {f"eps={eps:g}": c for eps, c in zip(ADAM_EPS_VALUES, ("tab:purple", "tab:olive"))}
    fig, axes = _curve_figure(long_runs, [("log_loss", False), ("gamma_1", True), ("gamma_2", True)],
                              "FLAVORS sec. 4.2: Adam's two phases (the second once L < 1e-7)", colors=eps_colors)
    axes[0].axhline(PHASE_TWO_LEVEL, color="k", ls=":", lw=0.8, label=r"$\mathcal{L} = 10^{-7}$")
    sf.legend_below(axes[0])
    figs.append((fig, "fig2_adam_phases"))
    fig3 = {"gd": h["fig3-gd"], "adam": h["fig3-adam"], "spectral": h["fig3-spectral"], "shampoo": h["fig3-shampoo"],
            "shampoo-no-acc": h["fig3-shampoo-no-acc"]}
    figs.append((_curve_figure(fig3, [("log_loss", False), ("gamma_spectral", True), ("gamma_1", True)],
                               f"FLAVORS Fig. 3 at CPU size: digits 3 vs 6, frozen output layer, {n_seeds} seeds")[0],
                 "fig3_digits_spectral"))
    kkt = {algo: h[f"thm34-{algo}"] for algo in ("gd", "sd", "cd", "spectral")}
    figs.append((_curve_figure(kkt, [("kkt_residual", True), ("kkt_residual_window", True), ("log_loss", False)],
                               "FLAVORS Thm 3.4: KKT alignment residual, one step and averaged over "
                               f"{KKT_WINDOW} steps (loss-scaled rate, exponential loss)")[0],
                 "thm34_kkt_residual"))
    written = []
    for fig, name in figs:
        written += sf.save(fig, out_dir, name, dpi)
    return written
