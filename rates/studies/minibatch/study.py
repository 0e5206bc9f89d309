"""``rates report minibatch``: run the tasks, measure, decide the rows and write the claims, tables, figures and
trajectories."""

from __future__ import annotations

import json
from pathlib import Path

from rates.io import write_text_atomic
from rates.numeric.trajectory import Trajectory
from rates.numeric.trajectory import save as save_trajectory
from rates.output.claims import ClaimsTable
from rates.studies.figures import DPI, QUICK_DPI
from rates.studies.minibatch.figures import fig1_figure, persample_figure, rates_figure
from rates.studies.minibatch.measures import fig1_measures, judge_rate_runs, persample_measures
from rates.studies.minibatch.protocols import ALGORITHMS, DISPLAY, FIG1_A, FULL, QUICK, RATE_AS, RATE_FAMILIES, TREND_Z
from rates.studies.minibatch.rows import (
    derived_claims,
    fig1_claims,
    monotone_loss_claims,
    persample_claims,
    rate_claims,
)
from rates.studies.minibatch.runs import (
    FOLLOW_BY,
    fig1_tasks,
    persample_datasets,
    persample_tasks,
    rate_runs,
    rate_tasks,
)
from rates.studies.runner import simulate_study, study_seeds
from rates.symbolic.papers import MINIBATCH as MINIBATCH_REFERENCE


def run_minibatch_study(out_dir: Path, options) -> list[Path]:
    """``rates report minibatch``: simulate, judge, write claims, figures and trajectories into ``out_dir``."""
    from rates.numeric.data import parse_data

    out_dir = Path(out_dir)
    size = QUICK if options.quick else FULL
    seeds = study_seeds(options, size.seeds)
    fig1_seeds = seeds if options.seeds is not None else list(range(size.fig1_seeds))
    n = parse_data(size.data, seed=0).n
    tasks = [t for s in fig1_seeds for t in fig1_tasks(size, s, n)]
    tasks += [t for s in seeds for t in rate_tasks(size, s, n) + persample_tasks(size, s)]
    results, simulated = simulate_study("minibatch", tasks, options)

    cfgs = fig1_measures(results, fig1_seeds)
    records = {}
    for family in RATE_FAMILIES:
        for algo in ALGORITHMS:
            runs = rate_runs(results, family, algo, seeds)
            for a in RATE_AS:
                records[(family, algo, a)] = judge_rate_runs([r for r in runs if r.config.a == a])
    ps = persample_measures(results, seeds)

    table = ClaimsTable(f"MINIBATCH claims (Fig. 1: {len(fig1_seeds)} seed(s), rates and per-sample: {len(seeds)}; "
                        f"{'quick' if options.quick else 'full'} mode)",
                        "tab:minibatch-claims",
                        short_run=(f"quick mode ({size.fig1_steps}-{size.persample_steps} steps)"
                                   if options.quick else ""))
    fig1_claims(table, cfgs, size, n, size.fig1_steps, fig1_seeds)
    rate_claims(table, records, size, n)
    monotone_loss_claims(table, results, records, seeds)
    derived_claims(table, records, n)
    persample_claims(table, ps, seeds, size.persample_steps)
    table.notes += [
        f"Source: MINIBATCH = {MINIBATCH_REFERENCE.citation()}; "
        "its numbers were lost in the text extraction, so sizes are ours: data "
        f"'{size.data}' (k = 4, d = 8, n = {n}, sigma = 0.5), a = {FIG1_A}, eta_0 = 0.2 (max norm) / 1 (l2, "
        f"spectral), {size.fig1_steps} steps for Fig. 1, {size.rate_steps} for rates"
        + "".join(f" ({steps} for {fam}" + ("" if alg == "*" else f", {DISPLAY[alg]}")
                  + ("" if a == "*" else f", a = {a}") + ")" for (fam, alg, a), steps in size.rate_horizons)
        + f", {size.persample_steps} per-sample; Fig. 1 on seeds 0..{len(fig1_seeds) - 1}, the rest on seeds "
        f"0..{len(seeds) - 1}; a seed is a data draw and a reshuffling stream together.",
        "Relative error (gamma - gamma(W_t))/gamma and cosine <W_t, W*>/(||W_t||_F ||W*||_F) in the algorithm's own "
        "norm, as rates.numeric.measures records them; all three norms are in the trajectories. The max-norm and "
        "spectral max-margin solutions W* need not be unique; the cosine uses the solver's W* (each trajectory's "
        "'references' says which), the relative error does not depend on it.",
        "Rate claims are one-sided (upper bounds): tight or loose reproduce them; comparator reasons are quoted "
        "verbatim for the others.",
        f"'x f ± e/decade': the factor by which the error changed over the last decade (means over the quarter "
        f"decades at its ends) and {TREND_Z:g} standard errors of it, from the checkpoint-to-checkpoint scatter of "
        "the log error about a straight line in log t; 'stalled' needs the whole band at or above x0.9.",
        "Thm 4.1 rows run at b = n: with the rebuilt gamma_eff(b) = gamma - 4 B c(n, b), c(n, b) >= 1 for every "
        "b < n and gamma <= 2B on any data, so gamma_eff(b) <= -2B < 0 for every b < n (the row prints this "
        "data's numbers); Thm 4.3 runs at b = 32, beta = 0.999, the first (b, beta) of the sweep where "
        "gamma_eff(beta, b) > 0 for all three algorithms; its rows fit gamma_eff - gamma(W_t), the quantity the "
        "theorem bounds, on the checkpoints before the margin passes gamma_eff for good: past it that quantity is "
        "<= 0, below the bound for every constant, which does not test the rate.",
        "Thm 4.3 at a = 3/10 and 1/2 runs with Fig. 1's eta_0 times 1/100 and 1/10: the largest powers of ten at "
        f"which the momentum buffer follows the gradient by t = {FOLLOW_BY:g}, i.e. (gamma eta_0/(1 - beta))^(1/a) "
        f"<= {FOLLOW_BY:g} (each row prints it). Past separation a step raises the margins by about gamma eta_t; "
        "while that exceeds 1 - beta the buffer's oldest gradients outweigh the new ones and the step keeps their "
        "direction: with Fig. 1's eta_0 the margins froze (N-MSGD at 0.288 from t = 10 to 1e6 at a = 3/10) on a "
        "plateau the theorem allows before its t0 (3e17-1e40 here). The theorem holds for every eta_0 > 0.",
        "Not tested: App. I (the same theorems for the exponential loss): the simulation engine minimises the "
        "cross-entropy loss only; an engine loss option would decide it with the same rows.",
        f"Simulation took {simulated:.0f} s on {options.device}.",
    ]
    written = table.write(out_dir)
    written.append(write_text_atomic(out_dir / "table.md", table.table().to_markdown()))
    written.append(write_text_atomic(out_dir / "fits.json", json.dumps(
        [{"family": f, "algo": al, "a": a, **rec.to_json(), "margin_above_target_from": crossed}
         for (f, al, a), (rec, crossed) in records.items()],
        indent=1, default=str) + "\n"))
    if options.figures:
        dpi = QUICK_DPI if options.quick else DPI
        for algo in ALGORITHMS:
            written += fig1_figure(out_dir, cfgs, algo, size, dpi)
        for name in persample_datasets(seeds[0]):
            written += persample_figure(out_dir, ps, name, seeds, dpi)
        for family in RATE_FAMILIES:
            written += rates_figure(out_dir, records, family, dpi)
    meta = {"study": "minibatch", "quick": bool(options.quick), "seeds": seeds, "fig1_seeds": fig1_seeds,
            "simulation_wall_s": simulated}
    for key, res in results.items():
        stem = key.replace("/", "_").replace(" ", "").replace(".", "_")
        written.append(save_trajectory(Trajectory(res.runs, {**meta, "task": key, "task_wall_s": res.wall_s,
                                                                   **res.meta}),
                                       out_dir / "trajectories" / f"{stem}.json"))
    return written
