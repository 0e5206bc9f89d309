"""The figures of ``rates report signadam``: gap against t per a (NSD, Adam), SignGD's best rate against Adam's,
margins and cosines in the max and 2 norms (draw 0), Adam at k = 3, 5, 10."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rates.studies.signadam.protocols import ADAM_AS, DISPLAY, NSD_ALGORITHMS, NSD_AS, RATE_EPS


def _gaps(rec):
    return np.asarray(rec.runs[0].t, float), [np.asarray(r.gap, float) for r in rec.runs]


def figures(out_dir: Path, records: dict, class_records: dict, margin: dict, dpi: int) -> list[Path]:
    from rates.studies import figures as sf

    written = []
    fig, axes = sf.new_figure(1, 3)
    for col, algo in enumerate(NSD_ALGORITHMS):
        for a in NSD_AS:
            rec = records[(algo, a, 0.0)]
            sf.curve(axes[0, col], *_gaps(rec), f"a={a}: {rec.verdict.label}")
        sf.finish(axes[0, col], sf.T_LABEL, sf.GAP_LABEL, f"{DISPLAY[algo]} (Cor. 5.4)")
    for a, color in zip(ADAM_AS, ("tab:blue", "tab:orange", "tab:green")):
        for eps in RATE_EPS:
            rec = records[("adam", a, eps)]
            label = f"a={a}, eps={eps:g}: {rec.verdict.label}" + (" (outside Thm 6.3)" if eps else "")
            sf.curve(axes[0, 2], *_gaps(rec), label, color=color, ls="--" if eps else "-")
    sf.finish(axes[0, 2], sf.T_LABEL, sf.GAP_LABEL, "Adam (Cor. 6.4)")
    fig.suptitle("SIGNADAM rates: margin gap against t (log-log)", fontsize=10)
    written += sf.save(fig, out_dir, "rates", dpi)

    fig, axes = sf.new_figure(1, 1, width=5.5, height=4.2)
    ax = axes[0, 0]
    for algo, a, slope, color in (("signgd", "1/2", 0.5, "tab:blue"), ("adam", "2/3", 1 / 3, "tab:red")):
        rec = records[(algo, a, 0.0)]
        t, gaps = _gaps(rec)
        sf.curve(ax, t, gaps, f"{DISPLAY[algo]} a={a}", color=color)
        anchor = np.nanmean([g[-1] for g in gaps])
        if anchor > 0:
            ax.plot(t[t >= 10], anchor * (t[t >= 10] / t[-1]) ** -slope, ":", color=color,
                    label=f"slope -{'1/2' if slope == 0.5 else '1/3'} reference")
    sf.finish(ax, sf.T_LABEL, sf.GAP_LABEL, "Best rates (Rem. 6.5): SignGD 1/2 vs Adam 1/3")
    written += sf.save(fig, out_dir, "best_rates", dpi)

    fig, axes = sf.new_figure(1, 4)
    for name, m in margin.items():
        style = dict(ls="--" if "eps=1e" in name else "-")
        sf.curve(axes[0, 0], m["t"], [m["max"]], name, log_y=False, **style)
        sf.curve(axes[0, 1], m["t"], [m["frobenius"]], name, log_y=False, **style)
        sf.curve(axes[0, 2], m["t"], [m["cos_max"]], name, log_y=False, **style)
        sf.curve(axes[0, 3], m["t"], [m["cos_2"]], name, log_y=False, **style)
    ylabels = (r"$\gamma_{\max}(W_t) / \gamma_{\max}$", r"$\gamma_2(W_t) / \gamma_2$",
               r"$\cos(W_t, W^*_{\max})$", r"$\cos(W_t, W^*_2)$")
    titles = ("max-norm margin", "2-norm margin", r"correlation with $W^*_{\max}$", r"correlation with $W^*_2$")
    for ax, ylabel, title in zip(axes[0], ylabels, titles):
        sf.finish(ax, sf.T_LABEL, ylabel, title, legend=ax is axes[0, 0])
    fig.suptitle("SIGNADAM sec. 7 analogue: NGD, SignGD (a = 1/2), Adam (a = 2/3, eps = 0 / 1e-8 / 1e-6)", fontsize=10)
    written += sf.save(fig, out_dir, "margins", dpi)

    fig, axes = sf.new_figure(1, 1, width=5.5, height=4.2)
    for k, rec in class_records.items():
        sf.curve(axes[0, 0], *_gaps(rec), f"k={k}: {rec.verdict.label}")
    sf.finish(axes[0, 0], sf.T_LABEL, sf.GAP_LABEL, "Adam a = 2/3 at k = 3, 5, 10 (Rem. 6.5)")
    written += sf.save(fig, out_dir, "classes", dpi)
    return written
