"""MINIBATCH's figures: Fig. 1 per algorithm (error and cosine against t for each b and beta, VR against no VR),
Fig. 2's per-sample panels and the rate fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rates.studies.minibatch.measures import Fig1Config, gaps_to_target, name_of_target
from rates.studies.minibatch.protocols import (
    ALGORITHMS,
    BETAS,
    DISPLAY,
    FIG1_A,
    MOMENTUM_NAME,
    NORM,
    PERSAMPLE_A,
    RATE_AS,
    Size,
)

_BATCH_STYLE = ("tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown")


def fig1_figure(out_dir: Path, cfgs: dict[tuple, Fig1Config], algo: str, size: Size, dpi: int = 300) -> list[Path]:
    from rates.studies import figures as sf

    fig, axes = sf.new_figure(2, len(BETAS))
    own = NORM[algo]
    for col, beta in enumerate(BETAS):
        for j, b in enumerate(size.batches):
            for vr in (False, True):
                c = cfgs.get((algo, b, beta, vr))
                if c is None:
                    continue
                style = dict(color=_BATCH_STYLE[j % len(_BATCH_STYLE)], ls="--" if vr else "-", lw=1.1)
                label = f"b={b}" + (" VR" if vr else "")
                sf.curve(axes[0, col], c.t, c.rel[own], label, log_y=True, **style)
                sf.curve(axes[1, col], c.t, c.cos[own], label, log_y=False, **style)
        name = DISPLAY[algo] if beta == 0 else f"{MOMENTUM_NAME[algo]} beta={beta:g}"
        sf.finish(axes[0, col], sf.T_LABEL, f"relative error ({own} norm)", f"{name}: {sf.RELATIVE_GAP}",
                  legend=col == 0)
        sf.finish(axes[1, col], sf.T_LABEL, rf"$\cos(W_t, W^*_{{\mathrm{{{own}}}}})$",
                  f"{name}: cosine to max-margin $W^*$",
                  legend=False)
    fig.suptitle(f"MINIBATCH Fig. 1 / App. K analogue: {DISPLAY[algo]} ({own} norm), a = {FIG1_A}, "
                 "solid: no VR, dashed: VR", fontsize=10)
    return sf.save(fig, out_dir, f"fig1_{algo}", dpi)


def persample_figure(out_dir: Path, ps: dict[tuple, dict], name: str, seeds: list[int], dpi: int = 300) -> list[Path]:
    from rates.studies import figures as sf

    fig, axes = sf.new_figure(len(ALGORITHMS), 2)
    for row, algo in enumerate(ALGORITHMS):
        runs = [ps[(name, algo, s)] for s in seeds]
        t = runs[0]["t"]
        for norm, color in zip(("max", "frobenius", "spectral"), ("tab:red", "tab:blue", "tab:orange")):
            sf.curve(axes[row, 0], t, [r["rel"][norm] for r in runs], f"{norm} norm", color=color)
            sf.curve(axes[row, 1], t, [r["cos_W"][norm] for r in runs], rf"cos to $W^*_{{\mathrm{{{norm}}}}}$",
                     log_y=False, color=color, ls=":")
        sf.curve(axes[row, 1], t, [r["cos_M"] for r in runs], "cos to M/||M|| (Def. 4.8)", log_y=False,
                 color="tab:green", lw=2)
        sf.finish(axes[row, 0], sf.T_LABEL, "relative margin error", f"per-sample {DISPLAY[algo]}: {sf.RELATIVE_GAP}")
        sf.finish(axes[row, 1], sf.T_LABEL, "cosine similarity", f"per-sample {DISPLAY[algo]}: direction")
    fig.suptitle(f"MINIBATCH App. J Fig. 2 analogue: b = 1 on {name}, a = {PERSAMPLE_A}", fontsize=10)
    return sf.save(fig, out_dir, f"fig2_persample_{name}", dpi)


def rates_figure(out_dir: Path, records: dict[tuple, Any], family: str, dpi: int = 300) -> list[Path]:
    from rates.studies import figures as sf

    fig, axes = sf.new_figure(1, len(ALGORITHMS))
    for col, algo in enumerate(ALGORITHMS):
        for a in RATE_AS:
            rec = records[(family, algo, a)][0]
            t = np.asarray(rec.runs[0].t, float)
            gaps = gaps_to_target(rec)
            slope = f"{rec.verdict.fit.slope:+.2f}" if rec.verdict.fit else "n/a"
            sf.curve(axes[0, col], t, gaps, f"a={a}: slope {slope}, {rec.verdict.label}")
        target = name_of_target(records[(family, algo, RATE_AS[0])][0])
        gap_label = (r"margin gap $\gamma_{\mathrm{eff}} - \gamma(W_t)$" if target.startswith("gamma_eff")
                     else sf.GAP_LABEL)
        sf.finish(axes[0, col], sf.T_LABEL, gap_label, f"{DISPLAY[algo]}: {family}")
    return sf.save(fig, out_dir, f"rates_{family.replace(' ', '').replace('.', '_')}", dpi)
