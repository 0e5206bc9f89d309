"""``rates report signadam``: SIGNADAM's experiments (sec. 7) and corollary rates (Cor. 5.4, Cor. 6.4, Rem. 6.5).

Setting (SIGNADAM)
    * Sec. 7 [given in words]: Gaussian class centres, Gaussian spread, separable data; NGD, SignGD and
      Adam minimise CE with eta_t = (t+2)^(-a), a chosen by the theorems (1/2 for NGD and SignGD, 2/3 for
      Adam, the best a of Cor. 5.4 / 6.4); Adam's stability constant eps is varied over small values. Claims:
      (1) SignGD and Adam favour the max-norm margin over the 2-norm margin, NGD the reverse; (2) SignGD and
      Adam iterates correlate with the max-norm max-margin solution W*_max, NGD with W*_2; (3) results are
      consistent for different small eps. The seed's d, n and eps values were lost in the extraction: here
      the ``default`` preset (k = 3, d = 5, 10 per class, sigma = 0.3), eps in {0, 1e-8, 1e-6}.
    * Cor. 5.4 (SignGD; NGD by Rem. 5.5) and Cor. 6.4 (Adam with eps = 0, Thm 6.3): margin-gap rates per
      regime of a (Adam also at a = 1); Rem. 5.5 / App. E: the same rate for NSD in other norms (coordinate
      descent, l3); Rem. 6.5: Adam's best rate t^(-1/3) against SignGD's t^(-1/2), with constants that do
      not grow with the number of classes k -- checked as the level of the relative gap at a fixed t at
      k in {3, 5, 10} with n fixed (a k-dependent constant moves the intercept, not the slope); the descent
      lemmas' loss monotone after t0.

Algorithm
    All simulation goes through :func:`rates.studies.runner.run_tasks`; rates are judged by
    :func:`rates.studies.report.fit_group` (the comparator's verdict vocabulary flows through unchanged); Adam with
    eps > 0 is run and fitted but labelled outside Thm 6.3, whose hypothesis is eps = 0; sec. 7 (1) and (2)
    are one row each for eps = 0 and for eps > 0 (an eps > 0 run stops moving once its gradients fall below
    eps, so at long horizons the two differ). Sec. 7 (2) is judged by the max-norm margin ratio (1 exactly on
    the set of max-norm maximisers) and the cosine to the unique W*_2, never by a cosine to the LP's pick of
    a non-unique W*_max; sec. 7 (3) on the interval EPS_PLOT, with the crossover time after which the eps > 0
    and eps = 0 curves differ by more than 0.01 reported.

Guarantee
    ``claims.{md,tex,json}`` with every claim above and a verdict; figures: gap against t per a (NSD, Adam),
    SignGD's best rate against Adam's, margins and cosines in the max and 2 norms, Adam at k = 3, 5, 10.

Reference
    SIGNADAM Thm 5.3, Cor. 5.4, Rem. 5.5, Thm 6.3, Cor. 6.4, Rem. 6.5, sec. 7.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rates.io import write_text_atomic
from rates.numeric.trajectory import Trajectory
from rates.numeric.trajectory import save as save_trajectory
from rates.output.claims import (
    NO_VERDICT,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimsTable,
    claim_verdict_from_fit,
    combine,
    decide,
)
from rates.studies.figures import DPI, QUICK_DPI
from rates.studies.runner import StudyTask, fit_runs, result_data, simulate_study, study_seeds
from rates.symbolic.papers import SIGNADAM as SIGNADAM_REFERENCE

SEED = "SIGNADAM"
NSD_ALGORITHMS = ("signgd", "ngd")
DISPLAY = {"signgd": "SignGD", "ngd": "NGD", "adam": "Adam"}
NSD_AS = ("3/10", "1/2", "3/4", "1")
ADAM_AS = ("1/2", "2/3", "4/5")
ADAM_EPS = (0.0, 1e-8, 1e-6)  # eps > 0: outside Thm 6.3, sec. 7's "consistent for small eps"
RATE_EPS = (0.0, 1e-8)
BEST_A = {"signgd": "1/2", "ngd": "1/2", "adam": "2/3"}  # sec. 7's choice = the best a of Cor. 5.4 / 6.4
CLASSES = (3, 5, 10)


@dataclass(frozen=True)
class Size:
    data: str
    seeds: int
    nsd_steps: int
    adam_steps: int
    classes_steps: int
    margin_steps: int
    checkpoints: int = 60
    classes_draws: int = 3  # data draws per k for Rem. 6.5


# Steps [ours], measured with the fused engine: SignGD at a = 3/10 still bends at 5e5 steps and is tight
# from 1e6; Adam (eps = 0) on the default preset is loose from 1e6 at a = 2/3 and 4/5 but bends until
# ~1e7 at a = 1/2 (slopes -0.31 then -0.86 on the window's halves at 2e6, loose at 1e7); the k sweep at
# a = 2/3 is loose at k = 5 and 10 from 3e6 and at k = 3 only at 1e7. The sec. 7 margins are read at 1e5.
# Rem. 6.5 is read as the relative gap at a fixed t = 1e6 on 3 draws per k (n = 30 at every k), not as
# slopes: a k-dependent constant moves the intercept, not the slope.
FULL = Size("default", seeds=1, nsd_steps=2_000_000, adam_steps=10_000_000, classes_steps=1_000_000,
            margin_steps=100_000)
QUICK = replace(FULL, nsd_steps=1500, adam_steps=1500, classes_steps=1200, margin_steps=1000, checkpoints=16,
                classes_draws=1)


CLASSES_N = 30  # samples at every k (Rem. 6.5's constants may depend on n, so n is held fixed)
# Other geometries of Rem. 5.5 / App. E: coordinate descent (the sum norm) and NSD in the l3 norm, at a = 1/2.
OTHER_NORMS = (("cd", None), ("nsd", "lp:3"))
ADAM_A1 = "1"  # Cor. 6.4 at a = 1 (eps = 0 only)
# Relative-gap growth from k = 3 to k = 10 that a k-dependent constant would give: sqrt(k) (1.83) is the
# mildest dependence prior bounds carry (d k-dimensional reductions), k (3.33) the linear one.
K_RATIO_FREE = math.sqrt(10 / 3)
K_RATIO_LINEAR = 10 / 3
EPS_AGREE = 0.01  # relative max-norm margins "nearly overlap"
EPS_PLOT = (100, 10_000)  # [ours] the interval the eps claim is judged on: two decades from t = 100


def classes_data(k: int) -> str:
    """Rem. 6.5 datasets: Gaussian, d = 10, n = 30 at every k (30/k per class), sigma = 0.3 (sizes ours)."""
    return f"gaussian:k={k},d=10,per_class={CLASSES_N // k},sigma=0.3"


def _spec(algo: str, a: str, seed: int, eps: float = 0.0, norm=None):
    from rates.numeric.engine import RunSpec

    if algo == "adam":
        return RunSpec(algo, a, eta0=1.0, seed=seed, adam_eps=eps)
    return RunSpec(algo, a, seed=seed, norm=norm)


def tasks(size: Size, seed: int) -> list[StudyTask]:
    out = []
    for algo in NSD_ALGORITHMS:
        specs = tuple(_spec(algo, a, seed) for a in NSD_AS)
        out.append(StudyTask(f"rates/{algo}/seed{seed}", size.data, seed, specs, size.nsd_steps, size.checkpoints,
                             cost=len(specs) * size.nsd_steps))
    specs = tuple(_spec(algo, "1/2", seed, norm=norm) for algo, norm in OTHER_NORMS)
    out.append(StudyTask(f"rates/other-norms/seed{seed}", size.data, seed, specs, size.nsd_steps, size.checkpoints,
                         cost=len(specs) * size.nsd_steps))
    specs = tuple(_spec("adam", a, seed, eps) for eps in RATE_EPS for a in ADAM_AS) + (_spec("adam", ADAM_A1, seed),)
    out.append(StudyTask(f"rates/adam/seed{seed}", size.data, seed, specs, size.adam_steps, size.checkpoints,
                         cost=len(specs) * size.adam_steps))
    for k in CLASSES:
        for draw in range(size.classes_draws):
            data_seed = 100 * seed + draw
            out.append(StudyTask(f"classes/k{k}/draw{draw}/seed{seed}", classes_data(k), data_seed,
                                 (_spec("adam", "2/3", data_seed),), size.classes_steps, size.checkpoints,
                                 cost=size.classes_steps))
    specs = (_spec("signgd", BEST_A["signgd"], seed), _spec("ngd", BEST_A["ngd"], seed)) + tuple(
        _spec("adam", BEST_A["adam"], seed, eps) for eps in ADAM_EPS)
    out.append(StudyTask(f"margins/seed{seed}", size.data, seed, specs, size.margin_steps, size.checkpoints,
                         cost=len(specs) * size.margin_steps))
    return out


def _key(run) -> tuple:
    return run.config["algo"], run.config["a"], float(run.config.get("adam_eps", 0.0))


# --------------------------------------------------------------------------------------------- claims

def _fit_text(rec) -> str:
    v = rec.verdict
    if v.fit is None:
        return f"no fit ({v.label})"
    local = f"{v.predicted_local_slope:+.3f}" if v.predicted_local_slope is not None else "-"
    return (f"slope {v.fit.slope:+.3f} ± {v.fit.stderr:.3f} vs bound {local} over "
            f"[{v.window.t0:.3g}, {v.window.t1:.3g}]: {v.label}")


def rate_claims(table: ClaimsTable, records: dict[tuple, Any]) -> None:
    for a in NSD_AS:
        parts, measured = [], []
        rate = records[("signgd", a, 0.0)].prediction.rate.text
        for algo in NSD_ALGORITHMS:
            rec = records[(algo, a, 0.0)]
            measured.append(f"{DISPLAY[algo]} {_fit_text(rec)}")
            verdict, reason = claim_verdict_from_fit(rec.verdict.label, rec.verdict.reason)
            parts.append((verdict, f"{DISPLAY[algo]} {reason}" if reason else ""))
        table.add(Claim(f"SignGD (and NGD, Rem. 5.5) margin gap O({rate}) at a = {a}", f"{SEED} Cor. 5.4, Rem. 5.5",
                        "; ".join(measured), "comparator verdict tight or loose (one-sided bound)", *combine(parts),
                        values={algo: records[(algo, a, 0.0)].verdict.to_json() for algo in NSD_ALGORITHMS}))
    for a in ADAM_AS + (ADAM_A1,):
        rec = records[("adam", a, 0.0)]
        table.add(Claim(f"Adam (eps = 0) margin gap O({rec.prediction.rate.text}) at a = {a}",
                        f"{SEED} Thm 6.3, Cor. 6.4",
                        _fit_text(rec), "comparator verdict tight or loose (one-sided bound)",
                        *claim_verdict_from_fit(rec.verdict.label, rec.verdict.reason), values=rec.verdict.to_json()))


def best_rate_claim(table: ClaimsTable, records: dict[tuple, Any]) -> None:
    sign, adam = records[("signgd", "1/2", 0.0)], records[("adam", "2/3", 0.0)]
    parts = [claim_verdict_from_fit(sign.verdict.label, sign.verdict.reason),
             claim_verdict_from_fit(adam.verdict.label, adam.verdict.reason)]
    verdict, reason = combine(parts)
    table.add(Claim("Best rates: SignGD O(log t / t^(1/2)) at a = 1/2, Adam O(log t / t^(1/3)) at a = 2/3",
                    f"{SEED} Rem. 6.5, Cor. 5.4, Cor. 6.4",
                    f"SignGD {_fit_text(sign)}; Adam {_fit_text(adam)}",
                    "both bounds hold (tight or loose); figure best_rates compares them", verdict, reason))


def k_growth(relgaps: dict[int, list[float]]) -> tuple[str, str, str]:
    """Rem. 6.5 from the relative gaps ``(gamma - gamma(W_T))/gamma`` at one t per k (one per data draw, n
    fixed): ``(verdict, reason, measured)``.

    A constant free of k leaves the gap's level unchanged across k; a constant growing like sqrt(k) or k
    raises it by sqrt(k/3) or k/3 from k = 3. Reproduced when the geometric-mean gap grows from the smallest k
    by less than sqrt(k/k_min) at every k; not reproduced when it grows by k/k_min or more at the largest k
    with every draw there above every draw at the smallest k; otherwise more draws decide.
    """
    ks = sorted(relgaps)
    gm = {k: float(np.exp(np.mean(np.log(relgaps[k])))) for k in ks}
    growth = {k: gm[k] / gm[ks[0]] for k in ks}
    measured = "; ".join(f"k={k}: {gm[k]:.3g} [{min(relgaps[k]):.3g}, {max(relgaps[k]):.3g}] (x{growth[k]:.2f})"
                         for k in ks)
    low, high = ks[0], ks[-1]
    if all(growth[k] < math.sqrt(k / low) for k in ks[1:]):
        return REPRODUCED, "", measured
    if growth[high] >= high / low and min(relgaps[high]) > max(relgaps[low]):
        return NOT_REPRODUCED, (f"the gap at k = {high} is x{growth[high]:.2f} the gap at k = {low} (>= k ratio "
                                f"{high / low:.2f}, every draw above): a constant growing with k"), measured
    return NO_VERDICT, ("growth " + ", ".join(f"x{growth[k]:.2f} at k = {k}" for k in ks[1:]) + " lies between "
                        "sqrt(k) and k growth or the draws overlap; more draws per k decide"), measured


def classes_claim(table: ClaimsTable, class_runs: dict[int, list], steps: int) -> None:
    """Rem. 6.5: Adam's bound and its constants do not depend on k -- the gap's level at a fixed t, with n held
    fixed and the gap measured relative to gamma (:func:`k_growth`); the slopes are shown, not judged (a
    k-dependent constant moves the intercept, not the slope)."""
    relgaps = {k: [float(np.asarray(r.gap, float)[-1] / float(r.gamma["value"])) for r in runs]
               for k, runs in class_runs.items()}
    verdict, reason, measured = k_growth(relgaps)
    slopes = "; ".join(f"k={k}: {_fit_text(fit_runs(runs))}" for k, runs in class_runs.items())
    draws = len(next(iter(class_runs.values())))
    table.add(Claim("Adam's rate constants do not depend on the number of classes k", f"{SEED} Rem. 6.5",
                    f"relative gap (gamma - gamma(W_t))/gamma at t = {steps:g}, n = {CLASSES_N} at every k, "
                    f"{draws} draw(s) per k, geometric mean [range] (growth from k = {CLASSES[0]}): {measured}; "
                    f"slopes (context): {slopes}",
                    "gap level grows from k = 3 by less than sqrt(k/3) at every k (not reproduced: by k/3 or more "
                    "at k = 10, every draw above)", verdict, reason,
                    values={str(k): v for k, v in relgaps.items()}))


def _frozen_text(margin: dict[str, dict]) -> str:
    """Why eps > 0 runs differ at long horizons: they stop moving once their gradients fall below eps (the step
    m / (sqrt(v) + eps) shrinks with the gradient), which shows as a log-loss stuck near log eps."""
    losses = ", ".join(f"{name} {m['log_loss'][-1]:.3g}" for name, m in margin.items() if name.startswith("Adam"))
    return f"an eps > 0 run stops moving once its gradients fall below eps; final log L: {losses}"


def margin_claims(table: ClaimsTable, margin: dict[str, dict], steps: int) -> None:
    """Sec. 7 (1) and (2), once for Thm 6.3's Adam (eps = 0) and once for the eps > 0 runs (outside Thm 6.3)."""
    src = f"{SEED} sec. 7 (1), Figs. l2_margin / max_margin"
    rel = {name: (m["max"][-1], m["frobenius"][-1]) for name, m in margin.items()}
    sign, ngd = rel["SignGD"], rel["NGD"]
    adams = {"eps = 0": [name for name in rel if name == "Adam eps=0"],
             "eps > 0": [name for name in rel if name.startswith("Adam") and name != "Adam eps=0"]}
    for which, names in adams.items():
        shown = ["SignGD", "NGD"] + names
        measured = "; ".join(f"{name}: max-norm {rel[name][0]:.4f}, 2-norm {rel[name][1]:.4f}" for name in shown)
        parts = [decide(sign[0] > ngd[0] and ngd[1] > sign[1],
                        f"SignGD (max {sign[0]:.4f}, 2 {sign[1]:.4f}) vs NGD (max {ngd[0]:.4f}, 2 {ngd[1]:.4f})")]
        for name in names:
            parts.append(decide(rel[name][0] > ngd[0] and ngd[1] > rel[name][1],
                                f"{name} (max {rel[name][0]:.4f}, 2 {rel[name][1]:.4f}) vs NGD"))
        verdict, reason = combine(parts)
        if which == "eps > 0" and reason:
            reason += f" ({_frozen_text(margin)})"
        table.add(Claim(f"SignGD and Adam ({which}) favour the max-norm margin, NGD the 2-norm margin",
                        src + ("" if which == "eps = 0" else "; eps > 0 is outside Thm 6.3"),
                        f"margin / max margin at t = {steps:g}: " + measured,
                        f"SignGD and Adam ({which}) have a larger max-norm margin and a smaller 2-norm margin than NGD",
                        verdict, reason))

    cos = {name: (m["cos_max"][-1], m["cos_2"][-1]) for name, m in margin.items()}
    for which, names in adams.items():
        shown = ["SignGD", "NGD"] + names
        measured = "; ".join(f"{name}: max-norm margin ratio {rel[name][0]:.4f}, cos W*_2 {cos[name][1]:.4f} "
                             f"(cos to the LP's W*_max {cos[name][0]:.4f}, context only)" for name in shown)
        parts = []
        for name in ["SignGD"] + names:
            parts.append(decide(rel[name][0] > rel["NGD"][0] and cos["NGD"][1] > cos[name][1],
                                f"{name}: max-norm margin ratio {rel[name][0]:.4f} vs NGD {rel['NGD'][0]:.4f}, "
                                f"cos W*_2 {cos[name][1]:.4f} vs NGD {cos['NGD'][1]:.4f}"))
        verdict, reason = combine(parts)
        if which == "eps > 0" and reason:
            reason += f" ({_frozen_text(margin)})"
        table.add(Claim(f"SignGD and Adam ({which}) iterates correlate with the max-norm max-margin set, NGD with "
                        "W*_2", f"{SEED} sec. 7 (2), Figs. cor_inf / cor_v2"
                        + ("" if which == "eps = 0" else "; eps > 0 is outside Thm 6.3"),
                        f"at t = {steps:g}: " + measured,
                        "closer to the set of max-norm maximisers (a larger max-norm margin ratio, which is 1 exactly "
                        "on that set) than NGD, and a smaller cosine to the unique W*_2 than NGD; the LP's W*_max is "
                        "one point of a non-unique set, so cosines to it are not evidence", verdict, reason))


def crossover(t: np.ndarray, curve: np.ndarray, base: np.ndarray, start: float, tolerance: float = EPS_AGREE):
    """First checkpoint ``t >= start`` where ``|curve - base| > tolerance`` (None: they agree to the end)."""
    late = t >= start
    apart = np.flatnonzero(late & (np.abs(curve - base) > tolerance))
    return float(t[apart[0]]) if apart.size else None


def eps_claim(table: ClaimsTable, margin: dict[str, dict], records: dict[tuple, Any]) -> None:
    """Sec. 7 (3): the eps > 0 curves nearly overlap the eps = 0 ones, judged on the plotted interval EPS_PLOT;
    each eps's crossover (the first t where the relative max-norm margins differ by more than EPS_AGREE) is
    reported, so the horizon where they separate is visible whatever the interval."""
    base = margin["Adam eps=0"]
    t = base["t"]
    lo, hi = EPS_PLOT
    cross, diffs = {}, {}
    for name, m in margin.items():
        if name.startswith("Adam") and name != "Adam eps=0":
            cross[name] = crossover(t, m["max"], base["max"], lo)
            inside = (t >= lo) & (t <= hi)
            diffs[name] = float(np.max(np.abs(m["max"][inside] - base["max"][inside]))) if inside.any() else None
    slopes = []
    for a in ADAM_AS:
        r0, r1 = records[("adam", a, 0.0)], records[("adam", a, 1e-8)]
        if r0.verdict.fit and r1.verdict.fit:
            slopes.append(f"a={a}: {r0.verdict.fit.slope:+.3f} (eps=0) vs {r1.verdict.fit.slope:+.3f} (eps=1e-8)")
        else:
            slopes.append(f"a={a}: eps=0 {r0.verdict.label}, eps=1e-8 {r1.verdict.label}")
    measured = (f"max |relative max-norm margin(eps) - (eps=0)| over t in [{lo:g}, {hi:g}]: "
                + ", ".join(f"{n}: {v:.2e}" if v is not None else f"{n}: no checkpoint" for n, v in diffs.items())
                + "; crossover (first t >= 100 with a difference > 0.01): "
                + ", ".join(f"{n}: " + (f"none by t = {t[-1]:g}" if c is None else f"{c:.3g}")
                            for n, c in cross.items())
                + "; fitted slopes (context) " + "; ".join(slopes))
    covered = t[-1] >= hi
    worst = max((v for v in diffs.values() if v is not None), default=float("nan"))
    holds = None if not covered else worst <= EPS_AGREE
    table.add(Claim("Adam results are consistent for small eps > 0 (curves nearly overlap)",
                    f"{SEED} sec. 7 (3); eps > 0 is outside Thm 6.3 (eps = 0)", measured,
                    f"relative max-norm margins within {EPS_AGREE:g} of eps = 0 over t in [{lo:g}, {hi:g}] (the "
                    "paper's plotted horizon was lost in the text extraction; two decades from t = 100 [ours]); "
                    "later separation is reported as the crossover",
                    *decide(holds, f"largest difference {worst:.3g} inside the interval; {_frozen_text(margin)}",
                            f"the runs end at t = {t[-1]:g} before the interval's end {hi:g}; a run to {hi:g} "
                            "decides")))


def loss_monotone_claim(table: ClaimsTable, records: dict[tuple, Any]) -> None:
    """Thm 5.3 / Lemma 5.2 descent: from some t0 on the loss decreases at every step (seen here at checkpoints)."""
    parts, measured = [], []
    for key in (("signgd", "1/2", 0.0), ("ngd", "1/2", 0.0), ("adam", "2/3", 0.0)):
        for run in records[key].runs:
            t, log_loss = np.asarray(run.t, float), np.asarray(run.log_loss, float)
            rises = np.flatnonzero(np.diff(log_loss) > 0)
            since = float(t[rises[-1] + 1]) if rises.size else float(t[0])
            measured.append(f"{DISPLAY[key[0]]} a={key[1]}: non-increasing from t = {since:.3g} (end {t[-1]:.3g})")
            parts.append(decide(since <= t[-1] / 100, f"{DISPLAY[key[0]]}: the loss rose at t = {since:.3g}, within "
                                                      "the last two decades"))
    table.add(Claim("The loss decreases monotonically after t0", f"{SEED} Lemma 5.2, Thm 5.3, Thm 6.3 (descent)",
                    "; ".join(measured) + " (log-spaced checkpoints: a rise between two checkpoints is not seen)",
                    "log L non-increasing over the checkpoints of the last two decades of every run", *combine(parts)))


def other_norms_claim(table: ClaimsTable, records: dict[tuple, Any]) -> None:
    """Rem. 5.5 / App. E: Cor. 5.4's rate for NSD in other entry-wise norms (coordinate descent, l3) at a = 1/2."""
    parts, measured = [], []
    for algo, norm in OTHER_NORMS:
        name = "coordinate descent (sum norm)" if algo == "cd" else f"NSD ({norm})"
        rec = records[("other-norm", algo)]
        measured.append(f"{name} {_fit_text(rec)}")
        verdict, reason = claim_verdict_from_fit(rec.verdict.label, rec.verdict.reason)
        parts.append((verdict, f"{name} {reason}" if reason else ""))
    rate = records[("other-norm", OTHER_NORMS[0][0])].prediction
    table.add(Claim(f"NSD in other p-norms: margin gap O({rate.rate.text if rate else 'log t / t^(1/2)'}) at a = 1/2",
                    f"{SEED} Rem. 5.5, App. E (Lemmas E.1, E.3)", "; ".join(measured),
                    "comparator verdict tight or loose (one-sided bound)", *combine(parts)))


# -------------------------------------------------------------------------------------------- figures

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


# ---------------------------------------------------------------------------------------------- study

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


def run_signadam_study(out_dir: Path, options) -> list[Path]:
    """``rates report signadam``: simulate, judge, write claims, figures and trajectories into ``out_dir``."""
    from rates.studies.report import group_runs

    out_dir = Path(out_dir)
    size = QUICK if options.quick else FULL
    seeds = study_seeds(options, size.seeds)
    all_tasks = [t for s in seeds for t in tasks(size, s)]
    results, simulated = simulate_study("signadam", all_tasks, options)

    rate_runs = [r for s in seeds for key in ("rates/signgd", "rates/ngd", "rates/adam")
                 for r in results[f"{key}/seed{s}"].runs]
    records = {_key(group[0]): fit_runs(group) for group in group_runs(rate_runs)}
    other_runs = [r for s in seeds for r in results[f"rates/other-norms/seed{s}"].runs]
    records.update({("other-norm", group[0].config["algo"]): fit_runs(group) for group in group_runs(other_runs)})
    class_runs = {k: [r for s in seeds for draw in range(size.classes_draws)
                      for r in results[f"classes/k{k}/draw{draw}/seed{s}"].runs] for k in CLASSES}
    class_records = {k: fit_runs(runs[:1]) for k, runs in class_runs.items()}
    margin = margin_measures(results[f"margins/seed{seeds[0]}"])

    table = ClaimsTable(f"SIGNADAM claims ({len(seeds)} data draw(s); {'quick' if options.quick else 'full'} mode)",
                        "tab:signadam-claims",
                        short_run=f"quick mode ({size.margin_steps}-{size.adam_steps} steps)" if options.quick else "")
    rate_claims(table, records)
    best_rate_claim(table, records)
    other_norms_claim(table, records)
    classes_claim(table, class_runs, size.classes_steps)
    loss_monotone_claim(table, records)
    margin_claims(table, margin, size.margin_steps)
    eps_claim(table, margin, records)
    table.notes += [
        f"Source: SIGNADAM = {SIGNADAM_REFERENCE.citation()}; "
        "its sizes were lost in the text extraction, so they are ours: data "
        f"'{size.data}' (k = 3, d = 5, 10 per class, sigma = 0.3), eta_0 = 1, W_0 = 0, Adam beta1 = 0.9, "
        f"beta2 = 0.999; {size.nsd_steps} steps (SignGD, NGD), {size.adam_steps} (Adam), {size.classes_steps} "
        f"(k sweep: Gaussian, d = 10, n = {CLASSES_N} at every k, sigma = 0.3, {size.classes_draws} draw(s) per k), "
        f"{size.margin_steps} (sec. 7 margins); "
        "seeds are data draws.",
        "Rate claims are one-sided upper bounds: tight or loose reproduce them; other comparator labels are "
        "'no verdict' with the comparator's reason quoted.",
        "Not tested: App. F (other losses than cross-entropy): the simulation engine minimises the cross-entropy "
        "loss only; an engine loss option would decide it with the rate rows above.",
        f"Simulation took {simulated:.0f} s on {options.device}.",
    ]
    written = table.write(out_dir)
    written.append(write_text_atomic(out_dir / "table.md", table.table().to_markdown()))
    fits = [{"algo": k[0], "a": k[1], "adam_eps": k[2], **rec.to_json()} for k, rec in records.items()
            if len(k) == 3 and k[2] == 0.0]
    fits += [{"algo": k[1], "a": "1/2", "norm": rec.config.get("norm"), **rec.to_json()} for k, rec in records.items()
             if k[0] == "other-norm"]
    fits += [{"k": k, **rec.to_json()} for k, rec in class_records.items()]
    written.append(write_text_atomic(out_dir / "fits.json", json.dumps(fits, indent=1, default=str) + "\n"))
    if options.figures:
        written += figures(out_dir, records, class_records, margin, QUICK_DPI if options.quick else DPI)
    meta = {"study": "signadam", "quick": bool(options.quick), "seeds": seeds, "simulation_wall_s": simulated}
    for key, res in results.items():
        written.append(save_trajectory(Trajectory(res.runs, {**meta, "task": key, "task_wall_s": res.wall_s,
                                                                   **res.meta}),
                                       out_dir / "trajectories" / f"{key.replace('/', '_')}.json"))
    return written
