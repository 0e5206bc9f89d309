"""``rates report flavors``: FLAVORS Fig. 1-3 at CPU size, and a table of its claims measured over seeds.

Setting (FLAVORS, section 4 and App. D [given]; sizes [ours, CPU-sized]):

* Fig. 1 (section 4.1): teacher-student data (eq. 14), one-hidden-layer ReLU nets, exponential loss,
  full-batch GD, sign descent (SD) and coordinate descent (CD); margins gamma_1, gamma_2, gamma_inf (eq. 13).
* Fig. 2 (section 4.2): a digits pair (sklearn 8x8, 3 vs 6, stand-in for MNIST), logistic loss, GD, SD and
  Adam (eps = 1e-8, betas (0.9, 0.99) as App. D); accuracies and gamma_1, gamma_2.
* Fig. 3 (section 4.3): the same pair, output layer frozen, GD, Adam and per-layer spectral descent (Shampoo
  without accumulation); loss, spectral margin (eq. 15) and gamma_1.

Claims checked (each row of ``claims.*`` names its source and gives mean +- sd [min, max] over seeds):

1. Thm 3.1: after L < l(0) (which implies 100% train accuracy) each steepest descent's own soft margin is
   non-decreasing. Discrete steps allow an O(eta) drop; tolerance per run ``L * max_t rho_t``, the largest
   first-order change of ``L log ||theta||`` in one step (see :mod:`rates.homogeneous.train`).
2. Fig. 1 / section 4.1 (i): at the end SD has the largest gamma_1, GD the largest gamma_2, CD the largest
   gamma_inf.
3. Section 4.2: after separation Adam (small eps) raises gamma_1 like SD, i.e. its gamma_1 grows after the
   first separating step and ends above GD's.
4. Section 4.3: with a frozen output layer spectral descent ends with the largest spectral margin.

A claim is "reproduced" when it holds for the seed means *and* in every seed whose runs all separated;
"partly" when it holds for the means but not in every seed; otherwise "not reproduced". Runs that diverged
or never separated are counted and left out, never hidden.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from rates.homogeneous.data import load_dataset
from rates.homogeneous.models import relu_network
from rates.homogeneous.measures import homogeneity_error, measured_degree
from rates.homogeneous.summary import FLAVORS_REFERENCE, spread
from rates.homogeneous.train import History, TrainConfig, pick_device, train
from rates.io import atomic_path, write_text_atomic
from rates.studies import StudyOptions
from rates.tables import Cell, Table

DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class Experiment:
    """One training configuration of the study (trained for all seeds at once)."""

    key: str
    algorithm: str
    data: str
    width: int
    lr: float
    steps: int
    loss: str = "exp"
    init_scale: float = 0.1
    init: str = "fan-in"
    freeze_output: bool = False
    subgradient: str = "gradient"
    eps: float = 1e-8
    beta1: float = 0.9
    beta2: float = 0.99
    n_train: int | None = None
    dim: int = 8
    teacher_width: int = 16


# Learning rates [ours]: FLAVORS App. D uses one eta = 6e-3 for 1e5 epochs of m = 250 points; at CPU size we
# take per-algorithm rates at which no seed diverges and all separate within the step budget (eq. 1 steps
# scale with ||g||_*: ||g||_1 for SD is ~P times ||g||_inf, hence the much smaller SD rate). The frozen-output
# nets need large rates because f is linear in W with a tiny frozen u (FLAVORS App. D uses 10 and 20).
_LR = {
    ("gd", "teacher-student", False): 1e-1,
    ("sd", "teacher-student", False): 1e-3,
    ("cd", "teacher-student", False): 3e-1,
    ("spectral", "teacher-student", False): 1e-1,
    ("adam", "teacher-student", False): 3e-3,
    ("gd", "digits", False): 1e-2,
    ("sd", "digits", False): 3e-5,
    ("cd", "digits", False): 1e-2,
    ("spectral", "digits", False): 1e-2,
    ("adam", "digits", False): 3e-3,
    ("gd", "digits", True): 1.0,
    ("sd", "digits", True): 1e-3,
    ("cd", "digits", True): 1.0,
    ("spectral", "digits", True): 1.0,
    ("adam", "digits", True): 1e-2,
}


def default_lr(algorithm: str, data_kind: str, freeze_output: bool = False) -> float:
    """The study's learning rate for ``algorithm`` on ``data_kind`` (teacher-student | digits)."""
    key = (algorithm, data_kind, bool(freeze_output))
    return _LR.get(key, _LR[(algorithm, data_kind if data_kind in ("teacher-student", "digits") else "digits",
                             False)])


def experiments(quick: bool) -> list[Experiment]:
    """The study's configurations; ``quick`` shrinks steps and sizes to a few seconds for tests."""
    ts = dict(data="teacher-student", width=32, loss="logistic", init_scale=1.0, n_train=32, dim=8)
    dg = dict(data="digits:3,6", width=32, loss="logistic", init_scale=0.1)
    fz = dict(data="digits:3,6", width=32, loss="logistic", init_scale=1.0, freeze_output=True)
    lr = lambda algo, kind, frozen=False: _LR[(algo, kind, frozen)]  # noqa: E731
    full = [
        Experiment("fig1-gd", "gd", lr=lr("gd", "teacher-student"), steps=3000, **ts),
        Experiment("fig1-sd", "sd", lr=lr("sd", "teacher-student"), steps=3000, **ts),
        Experiment("fig1-cd", "cd", lr=lr("cd", "teacher-student"), steps=5000, init="width",
                   subgradient="two-point", **ts),
        Experiment("fig2-gd", "gd", lr=lr("gd", "digits"), steps=2000, **dg),
        Experiment("fig2-sd", "sd", lr=lr("sd", "digits"), steps=2000, **dg),
        Experiment("fig2-adam", "adam", lr=lr("adam", "digits"), steps=2000, **dg),
        Experiment("fig3-gd", "gd", lr=lr("gd", "digits", True), steps=2000, **fz),
        # FLAVORS section 4.3 compares the three "all without momentum"
        Experiment("fig3-adam", "adam", lr=lr("adam", "digits", True), steps=2000, beta1=0.0, beta2=0.0, **fz),
        Experiment("fig3-spectral", "spectral", lr=lr("spectral", "digits", True), steps=2000, **fz),
    ]
    if not quick:
        return full
    return [replace(e, steps=max(40, e.steps // 50), width=8, n_train=24 if e.data != "teacher-student" else 12)
            for e in full]


def run_experiment(exp: Experiment, seeds: list[int], device) -> History:
    teacher = {} if exp.data.startswith("digits") else {"d": exp.dim, "teacher_width": exp.teacher_width}
    data = load_dataset(exp.data, seeds, n_train=exp.n_train, **teacher).to(device)
    net = relu_network(data.input_dim, [exp.width], seeds, exp.init_scale, init=exp.init,
                       freeze_output=exp.freeze_output, device=device)
    config = TrainConfig(exp.algorithm, exp.lr, exp.steps, loss=exp.loss, eps=exp.eps, beta1=exp.beta1,
                         beta2=exp.beta2, subgradient=exp.subgradient)
    history = train(net, data, config)
    history.info["experiment"] = asdict(exp)
    return history


# ----------------------------------------------------------------------------------------------- claims

def _valid(*histories: History) -> np.ndarray:
    """Seeds in which every given run separated the training data and did not diverge."""
    ok = np.ones_like(histories[0].diverged, dtype=bool)
    for h in histories:
        ok &= ~h.diverged & (h.t_separated >= 0) & (h.final("train_acc") == 1.0)
    return ok


def _verdict(mean_holds: bool, seeds_hold: int, seeds_valid: int) -> str:
    if seeds_valid == 0:
        return "not testable (no seed separated in every run)"
    if mean_holds and seeds_hold == seeds_valid:
        return "reproduced"
    if mean_holds:
        return f"partly ({seeds_hold}/{seeds_valid} seeds)"
    return "not reproduced"


def _monotonicity_row(table: Table, label: str, h: History) -> None:
    reached = ~h.diverged & (h.t_below_level >= 0)
    drop, tol = h.max_soft_margin_drop[reached], h.degree * h.max_relative_step[reached]
    passed = int(np.sum(drop <= tol))
    verdict = _verdict(passed == drop.size, passed, int(drop.size))
    table.add(f"{label}: own soft margin ({h.geometry}) non-decreasing after L < l(0)",
              "FLAVORS Thm 3.1 [given]",
              spread(drop, 3), Cell(f"max drop <= L*max rho = {spread(tol, 3).text}; "
                                    f"{int(reached.sum())}/{reached.size} runs reached L < l(0)"),
              verdict)


def _ordering_row(table: Table, metric: str, winner: str, runs: dict[str, History], claim: str, source: str):
    ok = _valid(*runs.values())
    finals = {name: h.final(metric) for name, h in runs.items()}
    others = [name for name in runs if name != winner]
    seeds_hold = int(np.sum(ok & np.all([finals[winner] > finals[o] for o in others], axis=0)))
    means = {name: float(np.mean(v[ok])) if ok.any() else float("nan") for name, v in finals.items()}
    mean_holds = all(means[winner] > means[o] for o in others)
    measured = "; ".join(f"{name.upper()} {spread(v[ok], 3).text}" for name, v in finals.items())
    table.add(claim, source, Cell(measured, value={n: spread(v[ok]).value for n, v in finals.items()}),
              Cell(f"{winner.upper()} largest {metric} at the end: seed means and per seed "
                   f"({seeds_hold}/{int(ok.sum())} seeds)"),
              _verdict(mean_holds, seeds_hold, int(ok.sum())))


def _adam_row(table: Table, adam: History, sd: History, gd: History) -> None:
    ok = _valid(adam, sd, gd)
    g1 = adam.metrics["gamma_1"]
    at_sep, later_max = np.full(g1.shape[0], np.nan), np.full(g1.shape[0], np.nan)
    for r in range(g1.shape[0]):
        if adam.t_separated[r] < 0:
            continue
        after = np.nonzero(adam.t >= adam.t_separated[r])[0]
        at_sep[r], later_max[r] = g1[r, after[0]], g1[r, after].max()
    rises = later_max > at_sep
    above_gd = adam.final("gamma_1") > gd.final("gamma_1")
    seeds_hold = int(np.sum(ok & rises & above_gd))
    mean_holds = bool(ok.any() and np.mean(later_max[ok]) > np.mean(at_sep[ok])
                      and np.mean(adam.final("gamma_1")[ok]) > np.mean(gd.final("gamma_1")[ok]))
    measured = (f"Adam gamma_1 at separation {spread(at_sep[ok], 3).text}, max after {spread(later_max[ok], 3).text}, "
                f"end {spread(adam.final('gamma_1')[ok], 3).text}; SD end {spread(sd.final('gamma_1')[ok], 3).text}; "
                f"GD end {spread(gd.final('gamma_1')[ok], 3).text}")
    table.add("Adam (eps=1e-8) raises gamma_1 after separation like SD", "FLAVORS section 4.2, Fig. 2 [given]",
              Cell(measured), Cell(f"gamma_1 grows after the separating step and ends above GD's "
                                   f"({seeds_hold}/{int(ok.sum())} seeds)"),
              _verdict(mean_holds, seeds_hold, int(ok.sum())))


def _homogeneity_row(table: Table, seeds: list[int], device) -> None:
    data = load_dataset("digits:3,6", seeds[:1], n_train=20).to(device)
    nets = {"1 hidden layer (L=2)": relu_network(data.input_dim, [16], seeds[:1], 1.0, device=device),
            "3 hidden layers (L=4)": relu_network(data.input_dim, [16, 16, 16], seeds[:1], 1.0, device=device),
            "frozen output (L=1)": relu_network(data.input_dim, [16], seeds[:1], 1.0, freeze_output=True,
                                                device=device)}
    parts, worst = [], 0.0
    for name, net in nets.items():
        err = homogeneity_error(net, data.X_train)
        worst = max(worst, err)
        parts.append(f"{name}: degree {measured_degree(net, data.X_train):.6f}, rel. error {err:.1e}")
    table.add("f(x; c theta) = c^L f(x; theta), c in {0.5, 2, 3.7}", "FLAVORS (A2) [given]", Cell("; ".join(parts)),
              "max relative error <= 1e-12", "reproduced" if worst <= 1e-12 else "not reproduced")


def claims_table(h: dict[str, History], seeds: list[int], device) -> Table:
    table = Table(["claim", "source", "measured (mean ± sd [min, max] over seeds)", "criterion", "verdict"],
                  caption=f"FLAVORS claims measured at CPU size over {len(seeds)} seeds",
                  label="tab:flavors-claims")
    for key, label in (("fig1-gd", "GD (l2)"), ("fig1-sd", "SD (l_inf)"), ("fig1-cd", "CD (l1)"),
                       ("fig3-spectral", "spectral (frozen output)")):
        _monotonicity_row(table, label, h[key])
    fig1 = {"sd": h["fig1-sd"], "gd": h["fig1-gd"], "cd": h["fig1-cd"]}
    _ordering_row(table, "gamma_1", "sd", fig1, "SD ends with the largest gamma_1", "FLAVORS section 4.1 (i), Fig. 1 [given]")
    _ordering_row(table, "gamma_2", "gd", fig1, "GD ends with the largest gamma_2", "FLAVORS section 4.1 (i), Fig. 1 [given]")
    _ordering_row(table, "gamma_inf", "cd", fig1, "CD ends with the largest gamma_inf",
                  "FLAVORS section 4.1 (i), Fig. 1 [given]")
    _adam_row(table, h["fig2-adam"], h["fig2-sd"], h["fig2-gd"])
    fig3 = {"spectral": h["fig3-spectral"], "gd": h["fig3-gd"], "adam": h["fig3-adam"]}
    _ordering_row(table, "gamma_spectral", "spectral", fig3, "spectral descent ends with the largest spectral margin",
                  "FLAVORS section 4.3, Fig. 3, eq. 15 [given]")
    _homogeneity_row(table, seeds, device)
    configs = "; ".join(f"{k}: {e['algorithm']} eta={e['lr']:g}, {e['steps']} steps, width {e['width']}, "
                        f"alpha={e['init_scale']:g}, {e['loss']} loss"
                        + (f", subgradient {e['subgradient']}" if e["subgradient"] != "gradient" else "")
                        + (f", eps={e['eps']:g}, betas=({e['beta1']:g}, {e['beta2']:g})" if e["algorithm"] == "adam" else "")
                        for k, e in ((k, v.info["experiment"]) for k, v in h.items()))
    table.notes += [
        f"Source: FLAVORS = {FLAVORS_REFERENCE.citation()}. Every number is measured by rates.homogeneous; the "
        "claims are [given] by the paper, the sizes and learning rates are ours (CPU-sized).",
        "O(eta) tolerance of the monotonicity rows: a run passes when the largest drop of its soft margin below "
        "the running maximum after L < l(0), divided by the run's largest soft margin, is at most "
        "L * max_t rho_t, rho_t = "
        "||theta_{t+1} - theta_t|| / ||theta_t|| in the algorithm's own norm (rho is proportional to eta).",
        "Orderings use seeds where every compared run separated and did not diverge; 'partly' = holds for "
        "the seed means but not in every seed.",
        f"Configurations: {configs}.",
    ]
    return table


# ---------------------------------------------------------------------------------------------- figures

_COLORS = {"gd": "tab:blue", "sd": "tab:green", "cd": "tab:red", "adam": "tab:purple", "spectral": "tab:orange"}
_LABELS = {"gamma_1": r"$\gamma_1$ (eq. 13)", "gamma_2": r"$\gamma_2$ (eq. 13)", "gamma_inf": r"$\gamma_\infty$ (eq. 13)",
           "gamma_spectral": r"$\gamma_\sigma$ (eq. 15)", "log_loss": r"$\log \mathcal{L}$",
           "train_acc": "train accuracy", "test_acc": "test accuracy"}


def _plot_curves(ax, runs: dict[str, History], metric: str, log_y: bool) -> None:
    for name, h in runs.items():
        values = h.metrics[metric][~h.diverged]
        t = np.maximum(h.t, 0.5)  # step 0 on a log axis
        if log_y:
            values = np.where(values > 0, values, np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns before separation
            mean, lo, hi = np.nanmean(values, 0), np.nanmin(values, 0), np.nanmax(values, 0)
        ax.plot(t, mean, color=_COLORS[name], label=name.upper())
        ax.fill_between(t, lo, hi, color=_COLORS[name], alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_title(_LABELS[metric])


def _save(fig, path: Path) -> list[Path]:
    """A 300-dpi PNG and a PDF of the same figure (rates.plots.figure_targets)."""
    from rates.plots import FIGURE_DPI, figure_targets

    targets = figure_targets([path])
    for target in targets:
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=target.suffix.lstrip("."), dpi=FIGURE_DPI, bbox_inches="tight")
    return targets


def _curve_figure(plt, runs: dict[str, History], panels: list[tuple[str, bool]], title: str, extra: int = 0):
    """One row of panels (metric, log_y) with the curves of ``runs``, plus ``extra`` empty panels."""
    fig, axes = plt.subplots(1, len(panels) + extra, figsize=(4.3 * (len(panels) + extra), 3.8))
    for ax, (metric, log_y) in zip(axes, panels):
        _plot_curves(ax, runs, metric, log_y)
    axes[0].legend()
    fig.suptitle(title)
    return fig, axes


def figures(h: dict[str, History], out_dir: Path, n_seeds: int) -> list[Path]:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig1 = {"gd": h["fig1-gd"], "sd": h["fig1-sd"], "cd": h["fig1-cd"]}
    fig, axes = _curve_figure(plt, fig1, [("gamma_1", True), ("gamma_2", True), ("gamma_inf", True)],
                              f"FLAVORS Fig. 1 at CPU size: teacher-student (eq. 14), mean and min-max over {n_seeds} "
                              f"seeds (margins <= 0 not drawn)", extra=1)
    for name, run in fig1.items():
        ok = ~run.diverged
        axes[3].scatter(run.final("gamma_inf")[ok], run.final("test_acc")[ok], color=_COLORS[name], label=name.upper())
    axes[3].set_xscale("symlog", linthresh=1e-6)
    # one label every second decade, slanted: a label per decade overlapped its neighbours
    axes[3].xaxis.set_major_locator(matplotlib.ticker.SymmetricalLogLocator(base=100, linthresh=1e-6))
    axes[3].tick_params(axis="x", labelrotation=30)
    axes[3].legend(title="one point per seed", fontsize=8, title_fontsize=8)
    axes[3].set(xlabel=r"final $\gamma_\infty$", ylabel="final test accuracy", title="test accuracy vs $\\gamma_\\infty$")
    figs = [(fig, "fig1_teacher_student.png")]
    fig2 = {"gd": h["fig2-gd"], "sd": h["fig2-sd"], "adam": h["fig2-adam"]}
    figs.append((_curve_figure(plt, fig2, [("train_acc", False), ("test_acc", False), ("gamma_1", True),
                                           ("gamma_2", True)],
                               f"FLAVORS Fig. 2 at CPU size: digits 3 vs 6 (sklearn 8x8), logistic loss, Adam "
                               f"eps=1e-8, {n_seeds} seeds")[0], "fig2_digits_adam.png"))
    fig3 = {"gd": h["fig3-gd"], "adam": h["fig3-adam"], "spectral": h["fig3-spectral"]}
    figs.append((_curve_figure(plt, fig3, [("log_loss", False), ("gamma_spectral", True), ("gamma_1", True)],
                               f"FLAVORS Fig. 3 at CPU size: digits 3 vs 6, frozen output layer, {n_seeds} seeds")[0],
                 "fig3_digits_spectral.png"))
    written = []
    for fig, name in figs:
        written += _save(fig, out_dir / name)
        plt.close(fig)
    return written


# ------------------------------------------------------------------------------------------------ study

def run_flavors_study(out_dir: Path, options: StudyOptions) -> list[Path]:
    """Train every configuration of :func:`experiments`, write figures, the claims table and histories."""
    import sys
    import time

    out_dir = Path(out_dir)
    seeds = list(range(options.seeds or DEFAULT_SEEDS))
    device = pick_device(options.device)
    histories: dict[str, History] = {}
    for exp in experiments(options.quick):
        start = time.perf_counter()
        histories[exp.key] = run_experiment(exp, seeds, device)
        if options.progress:
            print(f"flavors: {exp.key} ({len(seeds)} seeds, {exp.steps} steps) {time.perf_counter() - start:.1f}s",
                  file=sys.stderr)
    table = claims_table(histories, seeds, device)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = figures(histories, out_dir, len(seeds))
    written.append(write_text_atomic(out_dir / "table.md", table.to_markdown()))
    written.append(write_text_atomic(out_dir / "claims.tex", table.to_latex()))
    written.append(write_text_atomic(out_dir / "claims.json", table.to_json()))
    record = {key: h.to_dict() for key, h in histories.items()}
    written.append(write_text_atomic(out_dir / "histories.json", json.dumps(record) + "\n"))
    return written
