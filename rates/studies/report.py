"""Predicted-vs-fitted verdict tables and the default study of ``rates report``.

Setting
    Runs of one configuration (algorithm, norm, a, eta_0, ...) over several seeds are grouped, judged by
    :func:`rates.judge.compare.judge` against the Prediction of ``rates.symbolic.theorems.predict`` (the bound's
    shape over
    the same window) and written as one table row: predicted rate with its source and status, the bound's
    local slope over the window, the fitted slope ± bootstrap error, the window, the seeds, the fitted log
    power, the three findings of :class:`rates.judge.compare.Assessment` (bound holds, dominant term, stated rate
    attained) and the verdict. The fitted gap is the one the theorem bounds (:func:`gap_target`). Per-sample
    runs covered by MINIBATCH Thm 4.9 are judged on their limit direction (:func:`fit_record_of`). Every
    table is a :class:`rates.output.tables.Table` (LaTeX booktabs / Markdown / JSON).

Default study (``rates report default --out DIR``)
    SignGD, NGD and Spectral-GD at a in {3/10, 1/2, 3/4, 1} and Adam (eps = 0, beta1 = 0.9, beta2 = 0.999)
    at a in {1/2, 2/3, 4/5} on the ``default`` Gaussian preset, eta_0 = 1, W_0 = 0, each for the steps of
    :data:`DEFAULT_STUDY_STEPS` (the shortest that decide its rows). Full-batch runs from
    W_0 = 0 are deterministic, so a *seed* is a fresh data draw of the preset (``parse_data("default",
    seed)``): seeds measure how the slope varies with the data, and each seed has its own max margin gamma.

Reference
    Rates: SIGNADAM Cor. 5.4 / C.5 (NSD) and Cor. 6.4 (Adam); docs/theory.md
    section 4 (one-sided verdicts, local slopes).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import sympy as sp

from rates.errors import InputError
from rates.io import write_text_atomic
from rates.judge.compare import DEFAULT_TOLERANCE, Verdict, fit_slope, judge, judged_window
from rates.numeric.run_config import UNRECORDED, RunConfig
from rates.numeric.trajectory import Run, Trajectory
from rates.numeric.trajectory import save as save_trajectory
from rates.output.tables import Cell, Table, latex_escape
from rates.symbolic.papers import references_note

FIT_SCHEMA = "rates.fit/1"


# --------------------------------------------------------------------------------------------- fitting


@dataclass
class FitRecord:
    """One configuration judged: its runs (independent replicates), the Prediction (None when no rate
    theorem covers it) and the Verdict; ``gate`` is the hypothesis gate's outcome, ``replicates`` says how many
    runs were given and how many are independent."""

    config: RunConfig  # the first run's; its configuration fields are the record's (RunConfig.configuration)
    seeds: list[Any]
    prediction: Any
    verdict: Verdict
    runs: list[Run]
    gate: Any = None
    replicates: Optional[dict[str, Any]] = None

    @property
    def title(self) -> str:
        if self.config.general_schedule:
            return f"{self.config.algo} ({self.config.norm}), schedule {self.config.schedule.text}"
        return f"{self.config.algo} ({self.config.norm}), a = {self.config.a}"

    def to_json(self) -> dict[str, Any]:
        return {"schema": FIT_SCHEMA, "config": self.config.configuration(), "seeds": self.seeds,
                "prediction": None if self.prediction is None else _prediction_json(self.prediction),
                "verdict": self.verdict.to_json(), "gate": None if self.gate is None else self.gate.to_json(),
                "replicates": self.replicates}


def config_key(config: RunConfig) -> str:
    return config.configuration_key()


def group_runs(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs that differ only by seed form one configuration; groups keep the order of first appearance."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(config_key(run.config), []).append(run)
    return list(groups.values())


def exact_a(config: RunConfig) -> sp.Rational:
    frac = config.exponent
    return sp.Rational(frac.numerator, frac.denominator)


# ----------------------------------------------------------------------------------------- hypotheses


def recorded_data_facts(config: RunConfig) -> Optional[dict[str, Any]]:
    """The data's constants of a run: recorded by the engine, or rebuilt from a preset / gaussian spec.

    Trajectories written before the engine recorded them name their data; presets and ``gaussian:`` specs
    are rebuilt from that name and the data seed. Anything else (files, synthetic runs) stays unknown.
    """
    facts = config.data_facts
    if isinstance(facts, dict):
        return facts
    name = config.data
    if not isinstance(name, str):
        return None
    from rates.numeric.data import PRESETS, parse_data
    from rates.symbolic.theorems.hypotheses import data_facts

    if name not in PRESETS and not name.startswith("gaussian:"):
        return None
    seed = config.draw_seed
    try:
        return data_facts(parse_data(name, seed=seed if isinstance(seed, int) and seed >= 0 else None))
    except Exception:  # an old or foreign name: the hypotheses stay "unknown", which the output says
        return None


def algorithm_of(config: RunConfig, n: Optional[int] = None):
    """The resolved algorithm of a run's configuration (``n`` from the data when known)."""
    from rates.numeric.algorithms import ALGORITHMS, resolve_algorithm

    name = str(config.algo)
    # The engine records momentum 0.0 for Adam, whose betas are its own (resolve_algorithm refuses both).
    momentum = None if name in ALGORITHMS and ALGORITHMS[name].adam else config.momentum
    return resolve_algorithm(name, norm=config.norm, n=n if n is not None else config.recorded("n"),
                             batch=config.batch, momentum=momentum, vr=bool(config.vr))


def facts_of(run: Run):
    """The gate's fact sheet for one run: configuration, schedule, Adam constants, the data's constants."""
    from rates.symbolic.theorems.hypotheses import Facts

    config = run.config
    data = recorded_data_facts(config) or {}
    n = data.get("n")
    a = None if config.general_schedule else config.exponent
    schedule = config.schedule if config.general_schedule else None  # the gate decides a general one's hypotheses
    counts = data.get("class_counts")
    scales = data.get("hardest_scales")
    return Facts(algorithm_of(config, n), a=a, eta0=_float(config.eta0), gamma=_float(run.gamma.get("value")),
                 B=_float(data.get("B")), n=n, d=data.get("d"), k=data.get("k"), orthogonal=data.get("orthogonal"),
                 class_counts=tuple(counts) if counts else None, hardest_scales=tuple(scales) if scales else None,
                 adam_eps=_float(config.adam_eps), adam_beta1=_float(config.adam_beta1),
                 adam_beta2=_float(config.adam_beta2), schedule=schedule)


def _schedule_cell(config: RunConfig) -> Cell:
    """The a column of a verdict table: ``a`` for the polynomial family, the expression for a general schedule."""
    if config.general_schedule:
        schedule = config.schedule
        return Cell(schedule.text, f"${sp.latex(schedule.expr)}$", value=schedule.text)
    return Cell(str(config.a), f"${sp.latex(exact_a(config))}$", value=str(config.a))


def _row_name(config: RunConfig) -> str:
    """``signgd a = 1/2``, or ``signgd schedule eta0/((t + 2)*log(t + 2))`` for a general schedule: how a note
    names its row."""
    if config.general_schedule:
        return f"{config.algo} schedule {_schedule_cell(config).text}"
    return f"{config.algo} a = {config.a}"


def _float(value: Any) -> Optional[float]:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def gate_runs(runs: Sequence[Run]):
    """The gate on every run of a configuration; the first that fails decides (data draws differ in gamma, B)."""
    from rates.symbolic.theorems.registry import COVERED, gate

    results = [gate(facts_of(run)) for run in runs]
    return next((result for result in results if result.outcome != COVERED), results[0])


def prediction_for(config: RunConfig):
    """The Prediction of ``rates.symbolic.theorems`` for a run's configuration."""
    from rates.symbolic.theorems import predict

    data = recorded_data_facts(config) or {}
    if config.general_schedule:
        return schedule_prediction_for(config, algorithm_of(config, data.get("n")))
    return predict(algorithm_of(config, data.get("n")), exact_a(config))


def schedule_prediction_for(config: RunConfig, algorithm, constants: Optional[dict] = None):
    """The derived Prediction for a run of a general schedule (:mod:`rates.symbolic.theorems.general`);
    raises ``NoRate`` where a schedule hypothesis fails or a class is undecided."""
    from rates.symbolic.theorems import template_for
    from rates.symbolic.theorems.general import predict_schedule

    return predict_schedule(algorithm, template_for(algorithm), config.schedule, constants)


# ------------------------------------------------------------------------------------------ replicates


def _deterministic(run: Run) -> bool:
    """Full-batch runs from W_0 = 0 use no random numbers: their reshuffling seed changes nothing."""
    return run.config.deterministic


def independent_replicates(runs: Sequence[Run]) -> tuple[list[Run], dict[str, Any]]:
    """Collapse runs that are copies of one another; returns the independent runs and what was done.

    Two runs are the same replicate when their recorded checkpoints are byte-identical, or when both are
    deterministic (full batch) on the same data draw (``data_seed``): then their reshuffling seeds vary
    nothing. The bootstrap and the seed count use the independent runs only (no pseudo-replication).
    """
    kept: list[Run] = []
    dropped: list[tuple[Any, Any]] = []
    for run in runs:
        twin = next((other for other in kept if _same_replicate(run, other)), None)
        if twin is None:
            kept.append(run)
        else:
            dropped.append((run.config.seed, twin.config.seed))
    info: dict[str, Any] = {"runs": len(runs), "independent": len(kept),
                            "varies": _what_varies(kept)}
    if dropped:
        info["collapsed"] = [{"seed": a, "copy_of_seed": b} for a, b in dropped]
        info["note"] = (f"{len(runs)} runs, {len(kept)} independent: " + ", ".join(
            f"seed {a} = seed {b}" for a, b in dropped) + " (identical checkpoints, or full-batch runs on one data "
            "draw: a reshuffling seed varies nothing there); the fit and its interval use the independent runs")
    return kept, info


def _same_replicate(run: Run, other: Run) -> bool:
    if _deterministic(run) and _deterministic(other):
        if run.config.data_seed is not UNRECORDED and run.config.data_seed == other.config.data_seed:
            return True
    arrays = ("t", "gap", "margin", "log_loss")
    return all(np.array_equal(np.asarray(getattr(run, name)), np.asarray(getattr(other, name))) for name in arrays)


def _what_varies(runs: Sequence[Run]) -> str:
    data = {run.config.recorded_data_seed for run in runs}
    shuffles = {run.config.seed for run in runs}
    parts = []
    if len(data) > 1:
        parts.append(f"{len(data)} data draws")
    if len(shuffles) > 1 and not all(_deterministic(run) for run in runs):
        parts.append(f"{len(shuffles)} reshuffling streams")
    return " x ".join(parts) if parts else ("one run" if len(runs) == 1 else "runs differ by recorded checkpoints")


# ------------------------------------------------------------------------------------------ the phase


def phase_of(run: Run, facts, prediction) -> dict[str, Any]:
    """The rebuilt thresholds t0/t1 with the data's constants, next to the run's length (docs/theory.md section 3)."""
    from rates.symbolic.theorems import predict

    constants = facts.constants()
    info: dict[str, Any] = {"steps": int(np.asarray(run.t)[-1]) if len(run.t) else 0,
                            "source": f"{prediction.source.seed} {prediction.source.theorem}, thresholds [rebuilt]"}
    if not {"gamma", "B", "n", "k"} <= set(constants):
        info["text"] = "t0/t1 need gamma, B, n and k (the data's constants are not recorded in this trajectory)"
        return info
    try:
        if facts.general_schedule:
            thresholds = schedule_prediction_for(run.config, facts.config, {**constants, "eta_0": facts.eta0 or 1.0}
                                                 ).thresholds
        else:
            thresholds = predict(facts.config, exact_a(run.config), constants).thresholds
    except ArithmeticError as err:
        # sympy's evalf can exhaust its precision on the worst-case constants (momentum runs reach ~1e259); the
        # phase note is context beside the verdict, never an input to it, so it says so instead of aborting
        info["text"] = f"t0/t1 not evaluated ({type(err).__name__} on constants of this size)"
        return info
    for name in ("t0", "t1"):
        entry = thresholds[name]
        info[name] = entry.get("numeric")
        if entry.get("numeric") is None:
            info[f"{name}_why"] = (entry.get("note") or entry.get("assumption_fails")
                                   or ("needs " + ", ".join(entry["missing"]) if entry.get("missing") else None)
                                   or "not computed")
        if entry.get("upper_bound") is not None:
            info[f"{name}_upper_bound"] = entry["upper_bound"]
    info["text"] = _phase_text(info)
    return info


def _phase_text(info: dict[str, Any]) -> str:
    def show(name: str) -> str:
        if info.get(name) is not None:
            return f"{name} = {float(info[name]):.3g}"
        bound = info.get(f"{name}_upper_bound")
        return f"{name} {'<= ' + bound if bound else 'unknown'} ({info.get(f'{name}_why')})"

    steps = info["steps"]
    start = info.get("t1")
    if start is not None and start <= steps:
        where = f"the guarantee applies from t1 = {float(start):.3g}, inside this run of {steps} steps"
    else:
        where = (f"the worst-case guarantee starts at t1, beyond this run's {steps} steps; the window is chosen by the "
                 "observable entry (margins positive, loss falling) instead")
    return f"{show('t0')}, {show('t1')} [{info['source']}]: {where}"


# ------------------------------------------------------------------------------------------- fitting


def fit_group(runs: Sequence[Run], tolerance: float = DEFAULT_TOLERANCE,
              window: Optional[tuple[float, float]] = None, prediction: Any = None,
              target_margin: Optional[float | Sequence[float]] = None,
              observed_onset: Optional[float] = None) -> FitRecord:
    """Judge the seeds of one configuration: gate, replicates, then the slope against the bound's envelope.

    The fitted gap is the one the theorem bounds: ``prediction.gap_to - gamma(W_t)``, with ``gamma_eff`` computed
    per run from the data's constants (:func:`gap_target`); ``target_margin`` (one number, or one per
    independent run) replaces that computed value.

    Order (the rule of :mod:`rates.judge.compare`): (1) the hypothesis gate -- ``no-theorem`` or ``not-applicable``
    end the judgement, with the measured slope shown; (2) identical replicates collapse to one; (3) the
    comparator judges the independent runs on their observable window; (4) the rebuilt t0/t1 with the data's
    constants are reported beside the verdict (they never turn a verdict into 'violated'). ``observed_onset``, a
    step from which the runs were certified to meet every fact of the proof's chain
    (:func:`rates.studies.certificates.certified_onset`), counts as the descent start does: a ``violated`` on a
    window past it stands.
    """
    from rates.symbolic.theorems.registry import COVERED

    config = runs[0].config
    independent, replicates = independent_replicates(runs)
    seeds = [run.config.seed_or(i) for i, run in enumerate(independent)]
    gate_result = gate_runs(independent)
    family = gate_result.family
    undecided_rate = None
    if prediction is None and family is not None and family.template is not None:
        from rates.symbolic.theorems.general import NoRate

        try:
            prediction = prediction_for(runs[0].config)
        except NoRate as err:  # a general schedule: a failing hypothesis (the gate says no-theorem) or no class
            undecided_rate = str(err)
    context = {"gate": gate_result.to_json(), "replicates": replicates}
    if undecided_rate is not None and gate_result.outcome == COVERED:
        win, fitted, measured = _measured_slope(independent, window)
        verdict = Verdict("inconclusive", f"no verdict, because the rate for this schedule is not derived "
                                          f"({undecided_rate}); {measured}", tolerance, win, fitted, context=context)
        return FitRecord(config, seeds, None, verdict, independent, gate_result, replicates)
    if gate_result.outcome != COVERED or family is None or family.template is None:
        verdict = _ungated_verdict(independent, gate_result, tolerance, window, context)
        return FitRecord(config, seeds, prediction, verdict, independent, gate_result, replicates)
    exponent = float(prediction.rate.exponent)
    log_power = None
    if getattr(prediction.rate, "loglog_power", 0):
        # a (log log t)^m rate: the stated rate is carried by its bound term (exact partial sums of the schedule);
        # a log power fitted on log log t would not describe it, so only the slope is compared
        exponent = None
    target = gap_target(independent, prediction) if target_margin is None else {
        "name": prediction.gap_to, "values": _as_list(target_margin, len(independent)), "source": "given by the caller"}
    context["gap_target"] = target
    verdict = judge(independent, prediction, exponent=exponent, log_power=log_power, tolerance=tolerance,
                    window=window,
                    target_margin=None if target["name"] == "gamma" or target["values"] is None else target["values"],
                    target_name=target["name"])
    if target["name"] != "gamma" and target["values"] is None and verdict.label == "violated":
        # gamma - gamma(W_t) >= gamma_eff - gamma(W_t): a bound that the larger gap meets, the bounded one meets
        # too, but a larger gap breaking it says nothing about the bounded one
        verdict = replace(verdict, label="inconclusive", reason=(
            f"{target['name']} is unknown, so the recorded gamma - gamma(W_t) (an upper estimate of the bounded "
            f"{target['name']} - gamma(W_t)) was fitted; it breaks the bound, which does not refute it: "
            f"{verdict.reason}"))
    phase = phase_of(independent[0], facts_of(independent[0]), prediction)
    verdict = _plateau_before_t1(verdict, phase)
    if verdict.label == "violated":
        start = descent_start_of(independent, prediction)
        verdict = _violated_before_descent(verdict, start, observed_onset)
        if verdict.label != "violated":
            phase = {**phase, "descent_start": start.to_json()}
    notes = list(verdict.notes) + [f"gap fitted: {gap_target_text(target)}", f"phase: {phase['text']}"]
    if replicates.get("note"):
        notes.append(replicates["note"])
    unknown = gate_result.unknown()
    if unknown:
        notes.append("hypotheses not checked (unknown): " + "; ".join(f"{h.name} ({f.detail})" for h, f in unknown))
    verdict = replace(verdict, notes=notes, context={**context, "phase": phase})
    return FitRecord(config, seeds, prediction, verdict, independent, gate_result, replicates)


def _as_list(value: float | Sequence[float], count: int) -> list[float]:
    return [float(value)] * count if isinstance(value, (int, float)) else [float(v) for v in value]


def gap_target(runs: Sequence[Run], prediction: Any) -> dict[str, Any]:
    """The margin the theorem measures the gap to (``prediction.gap_to``), per run, with its source.

    ``gamma``: the recorded max margin (values None: the recorded gap is used as it is). ``gamma_eff``: the
    template's effective margin evaluated on each run's data constants (gamma, B, n, b, beta) [rebuilt];
    values None when a constant is not recorded.
    """
    from rates.symbolic.theorems.base import _subs

    name = getattr(prediction, "gap_to", "gamma")
    source = f"{prediction.source.seed} {prediction.source.theorem}"
    if name == "gamma":
        return {"name": name, "values": None, "source": f"{source}: the max margin (margin solver)"}
    template = prediction.template
    values = []
    for run in runs:
        constants = {"eta_0": 1.0, **facts_of(run).constants()}
        value = template.resolve(template.gamma_ref).subs(_subs(constants))
        if value.free_symbols:
            missing = ", ".join(sorted(str(s) for s in value.free_symbols))
            return {"name": name, "values": None, "source": f"{source} [rebuilt]; not evaluated: needs {missing}"}
        values.append(float(value))
    definition = template.constants.get(name, "")
    # the run's own setting the target was evaluated at (b: None for full batch; beta: None without momentum),
    # so that a reader names the target from this record, not from a configuration beside it
    config = facts_of(runs[0]).config
    setting = {"b": config.batch, "beta": config.momentum}
    return {"name": name, "values": values, "source": f"{source}, {name} = {definition}".rstrip(", ="),
            "setting": setting}


def gap_target_text(target: dict[str, Any]) -> str:
    """``gamma_eff - gamma(W_t), gamma_eff = 0.904, 0.911 [MINIBATCH Thm 4.1, ...]``: what was fitted."""
    name, values = target["name"], target.get("values")
    if name == "gamma":
        return f"gamma - gamma(W_t) [{target['source']}]"
    if values is None:
        return f"gamma - gamma(W_t) in place of {name} - gamma(W_t) ({target['source']})"
    shown = ", ".join(f"{v:.4g}" for v in values)
    return f"{name} - gamma(W_t), {name} = {shown} (one per run) [{target['source']}]"


def _plateau_before_t1(verdict: Any, phase: dict[str, Any]) -> Any:
    """``violated`` needs a decaying gap, or a run known to be past t1.

    Every bound here sends the gap to 0 only from t1 on. A gap that has not been shown to decrease at all (the
    95% interval of its slope reaches 0 or above) in a run that ends before t1, or whose t1 is unknown, is
    on its pre-asymptotic plateau (Adam leaves it late: at 1e5 steps on the default preset its slope is
    +0.05, at 1e7 it is loose), which says nothing against the theorem. A gap that decays, but too slowly,
    is still judged.
    """
    if verdict.label != "violated" or verdict.fit is None or verdict.fit.ci_high < 0.0:
        return verdict
    t1, steps = phase.get("t1"), phase.get("steps", 0)
    if t1 is not None and float(t1) <= steps:
        return verdict
    where = (f"t1 = {float(t1):.3g} is beyond this run's {steps} steps" if t1 is not None else
             f"t1 is unknown ({phase.get('t1_why') or 'not computed'})")
    return replace(verdict, label="inconclusive", reason=(
        f"pre-asymptotic plateau: the gap is not shown to decrease (slope {verdict.fit.slope:+.3f}, 95% interval "
        f"[{verdict.fit.ci_low:+.3f}, {verdict.fit.ci_high:+.3f}]) and {where}; the bound speaks from t1 on "
        f"(without this rule: {verdict.reason})"))


def descent_start_of(runs: Sequence[Run], prediction: Any):
    """The latest descent start ``t_d`` over the runs' data draws (None: no template or no exponent ``a``).

    :mod:`rates.symbolic.theorems.descent_start`: the first ``t`` from which the descent lemma holds with the
    curvature of the step actually taken, on each draw's own ``gamma`` and ``B``.
    """
    from rates.symbolic.theorems.descent_start import descent_start

    template = getattr(prediction, "template", None)
    if template is None:
        return None
    starts = []
    for run in runs:
        if run.config.general_schedule:
            return None
        starts.append(descent_start(template, facts_of(run).constants(), run.config.exponent, float(run.config.eta0)))
    known = [s for s in starts if s.log10 is not None]
    if not known:
        return starts[0] if starts else None
    return max(known, key=lambda s: s.log10)


def past_descent_start(window_start: float, start: Any) -> bool:
    """Whether a window starting at ``window_start`` lies past a known descent start ``start`` (a
    :class:`rates.symbolic.theorems.descent_start.DescentStart` with ``log10`` set; ``t`` None means beyond any
    run)."""
    return start.t is not None and start.t <= window_start


def _violated_before_descent(verdict: Any, start: Any, observed_onset: Optional[float] = None) -> Any:
    """``violated`` needs a window that starts at or after the descent start ``t_d`` (or a certified onset
    ``observed_onset``, where the run itself was shown to meet the chain's facts from there on).

    Before ``t_d`` the descent inequality that every margin bound is built on is not established, even with
    the curvature of the steps actually taken; a gap slower than the bound there says nothing against the
    theorem (a set multiplied by 1e10 is the run with ``eta_0`` multiplied by 1e10: the same trajectory, far from
    its asymptotic phase). Unknown ``t_d`` (constants not recorded, e.g. synthetic runs) leaves the verdict as it is.
    """
    if verdict.label != "violated" or start is None or start.log10 is None:
        return verdict
    window_start = verdict.window.t0
    if past_descent_start(window_start, start) or (observed_onset is not None and window_start >= observed_onset):
        return verdict
    return replace(verdict, label="inconclusive", reason=(
        f"pre-asymptotic: the window starts at t = {window_start:.3g}, before the descent start "
        f"({start.text()}); no margin bound speaks before it (without this rule: {verdict.reason})"))


def _ungated_verdict(runs: Sequence[Run], gate_result: Any, tolerance: float,
                     window: Optional[tuple[float, float]], context: dict[str, Any]) -> Verdict:
    """``no-theorem`` / ``not-applicable`` (or the per-sample limit-direction note) with the measured slope."""
    from rates.symbolic.theorems.registry import COVERED, NO_THEOREM

    win, fitted, measured = _measured_slope(runs, window)
    if gate_result.outcome == COVERED:  # a covered family without a rate: the per-sample limit direction
        label = NO_THEOREM
        family = gate_result.family
        reason = (f"no rate theorem: the run meets the hypotheses of the {family.name} family "
                  f"({family.source.seed} {family.source.theorem}), which states {family.statement}"
                  + _limit_direction_text(runs) + f"; {measured}")
    else:
        label = gate_result.outcome
        reason = f"{gate_result.reason}; {measured}"
    notes = [context["replicates"]["note"]] if context["replicates"].get("note") else []
    return Verdict(label, reason, tolerance, win, fitted, notes=notes, context=context)


def _measured_slope(runs: Sequence[Run], window: Optional[tuple[float, float]]):
    """(window, fit or None, text) of the measured slope shown where no bound judges the runs."""
    win = judged_window(runs, window)
    caveat = ""
    if win.problem is not None and window is None:
        # No asymptotic window; the slope over the run's last two decades still tells the reader what happened.
        caveat = f" (not an asymptotic window: {win.problem})"
        win = _last_decades_window(runs) or win
    fitted = fit_slope(runs, win) if win.problem is None else None
    measured = (f"measured slope {fitted.slope:+.3f} ± {fitted.stderr:.3f} over {win.text()}{caveat}"
                if fitted is not None else f"no measured slope ({win.problem})")
    return win, fitted, measured


def _last_decades_window(runs: Sequence[Run], decades: float = 2.0):
    """The last ``decades`` decades of every run as a user window (None when too few checkpoints remain)."""
    from rates.judge.compare import choose_window, common_window

    end = min(float(np.asarray(run.t)[-1]) for run in runs)
    try:
        windows = [choose_window(run, (max(1.0, end / 10.0 ** decades), end)) for run in runs]
    except InputError:
        return None
    win = windows[0] if len(windows) == 1 else common_window(windows)
    return win if win.problem is None else None


def _limit_direction_text(runs: Sequence[Run]) -> str:
    """Margin of ``W_T`` against the margin of ``M/||M||`` (MINIBATCH Thm 4.9), from the recorded data facts."""
    from rates.symbolic.theorems import per_sample

    facts = facts_of(runs[0])
    algorithm = {"max": "signsgd", "frobenius": "nsgd", "spectral": "spectral-sgd"}.get(facts.config.norm)
    if algorithm is None or not facts.class_counts or not facts.hardest_scales:
        return ""
    M = per_sample.bias_matrix(facts.class_counts, algorithm)
    scales = np.asarray(facts.hardest_scales, dtype=float)
    own = np.diag(M)
    rival = np.where(np.eye(len(own), dtype=bool), -np.inf, M).max(axis=0)
    limit_margin = float(np.min(scales * (own - rival)) / per_sample.algorithm_norm(M, algorithm))
    final = [float(np.asarray(run.margin)[-1]) for run in runs]
    return (f"; margin of W_T = {min(final):.4g} at t = {int(np.asarray(runs[0].t)[-1])} against {limit_margin:.4g} "
            f"for the predicted limit M/||M|| (max margin gamma = {float(runs[0].gamma['value']):.4g})")


def fit_trajectory(trajectory: Trajectory, tolerance: float = DEFAULT_TOLERANCE,
                   window: Optional[tuple[float, float]] = None) -> list[FitRecord]:
    return [fit_record_of(group, tolerance, window) for group in group_runs(trajectory.runs)]


# ---------------------------------------------------------------------------------------------- tables


def _prediction_json(prediction: Any) -> Any:
    to_json = getattr(prediction, "to_json", None)
    return to_json() if callable(to_json) else str(prediction)


def source_text(prediction: Any) -> str:
    """``SIGNADAM 003_... Cor. 5.4 [given]``: where a predicted rate comes from and how firm it is."""
    source = getattr(prediction, "source", "")
    if hasattr(source, "to_json"):
        source = source.to_json()
    if isinstance(source, dict):
        source = " ".join(str(source[k]) for k in ("seed", "theorem") if source.get(k))
    status = getattr(prediction, "status", "")
    status = f" [{status}]" if status and not str(status).startswith("[") else (f" {status}" if status else "")
    return f"{source}{status}".strip()


def _pm(value: Optional[float], err: Optional[float], digits: int = 3, narrow: bool = False) -> tuple[str, str]:
    """``-0.613 ± 0.054`` as text and LaTeX; ``narrow``: LaTeX that may break before the ``±``."""
    if value is None:
        return "-", "--"
    text = f"{value:+.{digits}f} ± {err:.{digits}f}"
    if narrow:
        return text, f"${value:+.{digits}f}$ $\\pm {err:.{digits}f}$"
    return text, f"${value:+.{digits}f} \\pm {err:.{digits}f}$"


def _window_cells(verdict: Verdict) -> Cell:
    w = verdict.window
    if verdict.fit is None:
        return Cell("-", "--")
    return Cell(f"[{w.t0:.3g}, {w.t1:.3g}] ({w.points} pts)", f"$[{_sci(w.t0)},$ ${_sci(w.t1)}]$ ({w.points})",
                value={"t0": w.t0, "t1": w.t1, "points": w.points, "source": w.source})


def _sci(x: float) -> str:
    mantissa, _, exponent = f"{x:.2e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = int(exponent)
    return f"{mantissa}\\cdot 10^{{{power}}}" if mantissa != "1" else f"10^{{{power}}}"


def verdict_table(records: Sequence[FitRecord], caption: str = "Predicted vs fitted margin-gap rates",
                  label: str = "tab:fits", seeds_note: str = "", columns: Sequence[str] = ()) -> Table:
    """One row per configuration: prediction (with source), bound's slope envelope, fit, window, verdict.

    ``columns`` names further config keys shown after ``a`` (``rates sweep``: the options its grid varies).
    """
    table = Table(["algorithm", "a", *columns, "predicted rate", "source", "bound slope envelope",
                   "fitted slope ± s.e.", "window t", "replicates", "log power k", "bound holds", "dominant term",
                   "stated rate", "verdict"], caption=caption, label=label)
    tolerances = set()
    for rec in records:
        if _is_direction_record(rec):
            table.add(*_direction_row(rec, columns))
            continue
        v = rec.verdict
        tolerances.add(v.tolerance)
        fit_text, fit_latex = _pm(v.fit.slope if v.fit else None, v.fit.stderr if v.fit else None)
        k_text, k_latex = _pm(v.log_power.slope if v.log_power else None,
                              v.log_power.stderr if v.log_power else None, 2, narrow=True)
        env = v.envelope
        replicates = rec.replicates or {"runs": len(rec.seeds), "independent": len(rec.seeds)}
        found = v.assessment
        table.add(
            Cell(str(rec.config.algo), value=rec.config.algo),
            _schedule_cell(rec.config),
            *_column_cells(rec.config, columns),
            _rate_cell(rec.prediction),
            Cell(_source_cell_text(rec)),  # Table.to_latex wraps it (the file name may break)
            Cell("-" if env is None else env.text(),
                 "--" if env is None else f"$[{env.fastest:+.3f},$ ${env.slowest:+.3f}]$",
                 value=None if env is None else env.to_json()),
            Cell(fit_text, fit_latex, value=None if v.fit is None else
                 {"slope": v.fit.slope, "stderr": v.fit.stderr, "ci95": [v.fit.ci_low, v.fit.ci_high]}),
            _window_cells(v),
            Cell(f"{replicates['independent']} of {replicates['runs']}",
                 value={**replicates, "seeds": list(rec.seeds)}),
            Cell(k_text, k_latex, value=None if v.log_power is None else
                 {"k": v.log_power.slope, "stderr": v.log_power.stderr}),
            *_finding_cells(found),
            Cell(v.label, value={"verdict": v.label, "reason": v.reason}),
        )
    table.notes.append(
        "Fitted slope: least squares of log gap on log t over the window, mean over the independent replicates; "
        "± is the bootstrap standard error (resampling replicates and checkpoints, seeded). Replicates: "
        "independent runs of all given (full-batch runs on one data draw, or byte-identical runs, count once). "
        "Window: after the observable entry into the separable, monotone-loss phase (full-batch NSD: loss falling "
        "at least at the descent lemma's rate (gamma/4) sum eta), the last two decades of the run, t >= 1e3, "
        "above 100x the margin solver's accuracy; several replicates share the intersection of their windows.")
    table.notes.append(
        "Bound slope envelope: the bound is C1/S1 + C2 S2/S1 (+ C3 S_{3/2}/S1 for Adam), S_p = sum eta^p, with "
        "unknown constants C >= 0; the envelope is the range of its least-squares log-log slope over the window "
        "for every ratio of the constants (exact partial sums). Verdicts are one-sided (docs/theory.md sec. 4): "
        "tight = inside the envelope widened by the tolerance "
        f"{', '.join(f'{t:g}' for t in sorted(tolerances)) or DEFAULT_TOLERANCE}; loose = faster than the fastest "
        "member; violated = slower than the slowest member with the 95% interval excluding it; inconclusive = "
        "too short, at the floor, not separated, a gap that has not moved (pre-asymptotic), too uncertain, or a "
        "slope that still bends; no-theorem = no family's hypotheses cover the run; not-applicable = a hypothesis "
        "fails on the data's constants (e.g. gamma_eff <= 0).")
    table.notes.append("Log power k: slope of log(gap t^r) on log log t with r the predicted exponent.")
    table.notes.append(
        "Three separate findings, none inferred from another. Bound holds: the 95% upper limit of the fitted slope "
        "is at most the slowest bound term's slope over the window plus the tolerance (violated: the fitted slope "
        "is slower than it by more than the tolerance and the 95% interval excludes it). Dominant term: the "
        "non-negative least-squares fit of the gap on the bound's terms over the window (relative residuals), "
        "with the leading term's share of the fitted sum at the window's start and end [fitted]; 'none' when the "
        "gap decays faster than every term. Stated rate: the paper's O(t^-r (log t)^k) (predicted rate and source "
        "columns) is attained when the fitted slope is within the tolerance of that rate's own slope over the "
        "window and the fitted log power within 1/2 of k; not attained when either 95% interval lies outside "
        "its band. Verdict: violated = the bound fails; tight = the bound holds and the stated rate is attained; "
        "loose = the bound holds and the gap decays faster than the stated rate; inconclusive otherwise.")
    for rec in records:
        if _is_direction_record(rec):
            continue
        target = rec.verdict.context.get("gap_target")
        if target is not None and target["name"] != "gamma":
            table.notes.append(f"{_row_name(rec.config)}, gap fitted: {gap_target_text(target)}.")
        if rec.verdict.label not in ("tight", "loose"):
            table.notes.append(f"{_row_name(rec.config)}, {rec.verdict.label}: {rec.verdict.reason}.")
    if seeds_note:
        table.notes.append(seeds_note)
    table.notes += _plugin_notes(records)
    references = references_note(source_text(rec.prediction) for rec in records if not _is_direction_record(rec))
    table.latex_tables = _paper_tables(_schedules_as_notes(table, records), 2 + len(columns), references)
    table.notes.append(references)
    return table


# The columns a paper prints as the result; the rest of a row is its provenance, in a table of its own.
RESULT_COLUMNS = ("predicted rate", "source", "fitted slope ± s.e.", "bound holds", "stated rate", "verdict")
PROVENANCE_COLUMNS = ("window t", "bound slope envelope", "log power k", "replicates", "bound holds",
                      "dominant term", "stated rate")


def _latex_of(cell: Cell) -> str:
    return cell.latex if cell.latex is not None else latex_escape(cell.text)


def _numbers_behind(cell: Cell, outcome: str) -> Cell:
    """``holds: 95% CI [...] vs ...`` -> ``95% CI [...] vs ...``; ``not attained (faster): slope ...`` ->
    ``faster: slope ...``: a finding's cell without the outcome the results table already prints."""
    text = cell.text
    if not text.startswith(outcome):
        return cell
    rest = text[len(outcome):].strip()
    qualifier = re.match(r"\((.*?)\):\s*", rest)
    rest = f"{qualifier.group(1)}: {rest[qualifier.end():]}" if qualifier else rest.lstrip(": ")
    return Cell(rest or text, value=cell.value)


def _schedules_as_notes(table: Table, records: Sequence[Any]) -> Table:
    """The verdict table as a paper prints it: a general schedule's row names it ``schedule 1``, ``schedule 2``, ...
    in the ``a`` column (then headed ``a or schedule``) and a note defines each as a formula, so that one column
    of short keys keeps the results one table (a formula in a key column would split it into column parts)."""
    column = list(table.columns).index("a")
    numbers: dict[str, int] = {}
    formulas: dict[str, str] = {}
    rows = []
    for rec, row in zip(records, table.rows):
        row = list(row)
        config = rec.config
        if config.general_schedule:
            schedule = row[column]
            number = numbers.setdefault(schedule.text, len(numbers) + 1)
            formulas[schedule.text] = schedule.latex
            row[column] = Cell(f"schedule {number}", value=schedule.value)
        rows.append(row)
    if not numbers:
        return table
    note = Cell("Schedules: " + "; ".join(f"schedule {n}: eta_t = {text}" for text, n in numbers.items()) + ".",
                "Schedules: " + "; ".join(rf"\emph{{schedule {n}}}: $\eta_t = {formulas[text].strip('$')}$"
                                          for text, n in numbers.items()) + ".")
    columns = ["a or schedule" if i == column else name for i, name in enumerate(table.columns)]
    return replace(table, columns=columns, rows=rows, notes=[note, *table.notes], latex_tables=())


def _paper_tables(table: Table, keys: int, references: str) -> list[Table]:
    """What ``table.tex`` prints for a verdict table: a compact results table (prediction with its source as a
    lettered note, fitted slope, each finding's outcome, verdict) and a provenance table keyed the same way
    (window, slope envelope, log power, replicates, each finding with its numbers) with the notes on how
    every number is measured. Markdown and JSON keep the one wide table."""
    columns = list(table.columns)
    key_names = columns[:keys]
    label = table.label or "tab:fits"
    provenance_label = f"{label}-provenance"

    def pick(names: Sequence[str], outcome_only: bool) -> list[list[Cell]]:
        rows = []
        for row in table.rows:
            cells = []
            for name in names:
                cell = row[columns.index(name)]
                if name in ("bound holds", "stated rate") and isinstance(cell.value, dict):
                    # the results table shows the outcome; its provenance, the numbers behind it
                    cell = Cell(cell.value["outcome"]) if outcome_only else _numbers_behind(cell, cell.value["outcome"])
                cells.append(cell)
            rows.append(cells)
        return rows

    result_names = key_names + list(RESULT_COLUMNS)
    schedules = [note for note in table.notes if _cell_text(note).startswith("Schedules: ")]
    result = Table(result_names, pick(result_names, True), caption=table.caption, label=label,
                   notes=[*schedules,
                          Cell("Windows, slope envelopes, log powers, replicates and the numbers behind each finding: "
                               "the provenance table below.",
                               rf"Windows, slope envelopes, log powers, replicates and the numbers behind each "
                               rf"finding: Table~\ref{{{provenance_label}}}."), references],
                   footnoted={"source": "predicted rate"}, grouped=1)
    # one paragraph per row, each number named: a paper's provenance table reads as text, and six narrow
    # columns of wrapped findings would take three times the height
    details = pick([name for name in PROVENANCE_COLUMNS if name in columns], False)
    replicates = {row[columns.index("replicates")].text for row in table.rows}
    shown = [name for name in PROVENANCE_COLUMNS if not (name == "replicates" and len(replicates) == 1)]
    rows = []
    for keys_of_row, cells in zip(pick(key_names, False), details):
        named = [(name, cell) for name, cell in zip(PROVENANCE_COLUMNS, cells) if name in shown]
        rows.append(keys_of_row + [Cell("; ".join(f"{name}: {cell.text}" for name, cell in named),
                                        "; ".join(rf"\emph{{{latex_escape(name)}}}: {_latex_of(cell)}"
                                                  for name, cell in named))])
    notes = list(table.notes)
    if len(replicates) == 1:
        notes.insert(0, f"Replicates: {replicates.pop()} independent in every row.")
    provenance = Table(key_names + ["provenance: " + ", ".join(shown)], rows,
                       caption=f"{table.caption}: provenance of each row", label=provenance_label,
                       notes=notes, grouped=1, small=True)
    return [result, provenance]


def _plugin_notes(records: Sequence[Any]) -> list[str]:
    """``Answers from plug-ins: optimiser l3-gd, family lp-nsd and paper GLSS2018 from file /x.py.``: which rows'
    predictions plug-ins gave (none: the built-ins gave every one)."""
    from rates.symbolic.theorems.provenance import provenance, provenance_lines

    entries = []
    for rec in records:
        family = getattr(getattr(rec, "gate", None), "family", None)
        source = getattr(getattr(rec, "prediction", None), "source", None)
        for entry in provenance(rec.config.algo, getattr(family, "name", None), getattr(source, "seed", None)):
            if entry not in entries:
                entries.append(entry)
    return [line + "." for line in provenance_lines(entries, label="Answers from plug-ins: ")]


def _cell_text(cell: Any) -> str:
    return cell.text if isinstance(cell, Cell) else str(cell)


def _is_direction_record(rec: Any) -> bool:
    """A per-sample run judged on its limit direction (MINIBATCH Thm 4.9), not on a rate."""
    from rates.judge.limit_direction import PerSampleRecord

    return isinstance(rec, PerSampleRecord)


def _finding_cells(found: Any) -> tuple[Cell, Cell, Cell]:
    if found is None:
        return Cell("-"), Cell("-"), Cell("-")
    return tuple(Cell(f.cell(), value=f.to_json()) for f in (found.bound, found.dominant, found.stated_rate))


def _direction_row(rec: Any, columns: Sequence[str]) -> list[Cell]:
    """A Thm 4.9 row: no rate, no slope envelope; the decay of 1 - cos(W_t, M) in the fit columns."""
    from rates.judge.limit_direction import THEOREM

    v, d = rec.verdict, rec.verdict.decay
    fit_text, fit_latex = _pm(d.slope if d else None, d.slope_stderr if d else None)
    window = Cell("-", "--") if d is None else Cell(
        f"[{d.t_start:.3g}, {d.t_end:.3g}] ({d.points} pts)", f"$[{_sci(d.t_start)},$ ${_sci(d.t_end)}]$ ({d.points})")
    return [Cell(str(rec.config.algo), value=rec.config.algo),
            _schedule_cell(rec.config),
            *_column_cells(rec.config, columns),
            Cell("W_t/||W_t|| -> M/||M|| (a limit, no rate)", value=None), Cell(THEOREM),
            Cell("-", "--"), Cell(f"1 - cos(W_t, M): {fit_text}", f"$1-\\cos$: {fit_latex}", value=None if d is None
                                  else {"slope": d.slope, "stderr": d.slope_stderr}),
            window, Cell(f"{len(rec.seeds)} of {len(rec.seeds)}", value={"seeds": list(rec.seeds)}),
            Cell("-", "--"), Cell("-"), Cell("-"), Cell(f"limit direction: {v.outcome}"),
            Cell(v.label, value={"verdict": v.label, "reason": v.reason})]


def _column_cells(config: RunConfig, columns: Sequence[str]) -> list[Cell]:
    """The cells of the further ``columns`` of a row (options a sweep varies), as the configuration records them."""
    return [Cell(str(value), value=value) for value in map(config.configuration_value, columns)]


def bound_label(rec: FitRecord) -> str:
    return "no rate theorem" if rec.prediction is None else f"bound {rec.prediction.rate.text}"


def _rate_cell(prediction: Any) -> Cell:
    if prediction is None:
        return Cell("none (no rate theorem)", "--", value=None)
    rate = prediction.rate
    return Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent),
                                                     "log_power": int(rate.log_power), "text": rate.text})


def _source_cell_text(rec: FitRecord) -> str:
    if rec.prediction is not None:
        return source_text(rec.prediction)
    family = getattr(rec.gate, "family", None)
    return "-" if family is None else f"{family.source.seed} {family.source.theorem}"


def load_fit_inputs(paths: Sequence[str | os.PathLike], tolerance: float = DEFAULT_TOLERANCE,
                    option: str = "fits") -> list[FitRecord]:
    """Fit every configuration found in the Trajectory files (``rates run --out`` / ``rates report``).

    Runs are pooled across files before grouping, so seeds saved in separate files form one row.
    """
    from rates.numeric.trajectory import load

    runs: list[Run] = []
    for path in paths:
        try:
            runs += load(path).runs
        except InputError as err:
            raise InputError(option, err.message) from None
    return [fit_record_of(group, tolerance) for group in group_runs(runs)]


def fit_record_of(runs: Sequence[Run], tolerance: float = DEFAULT_TOLERANCE,
                  window: Optional[tuple[float, float]] = None) -> Any:
    """One configuration judged as ``rates fit`` does: per-sample runs covered by MINIBATCH Thm 4.9 on their
    limit direction (:mod:`rates.judge.limit_direction`), every other run on its rate (:func:`fit_group`)."""
    from rates.judge import limit_direction

    if limit_direction.handles_runs(runs):
        return limit_direction.fit_record(runs, window)
    return fit_group(runs, tolerance, window)


def fits_table(paths: Sequence[str | os.PathLike], tolerance: float = DEFAULT_TOLERANCE) -> Table:
    """Predicted vs fitted table of ``rates table --fits FILES...``."""
    return verdict_table(load_fit_inputs(paths, tolerance))


# ------------------------------------------------------------------------------------------ the study

# (algorithm, a) of the default study; a as exact strings so file names and tables stay exact.
DEFAULT_STUDY_CONFIGS: tuple[tuple[str, str], ...] = tuple(
    [(algo, a) for algo in ("signgd", "ngd", "spectral-gd") for a in ("3/10", "1/2", "3/4", "1")]
    + [("adam", a) for a in ("1/2", "2/3", "4/5")])
DEFAULT_STUDY_DATA = "default"
DEFAULT_STUDY_ETA0 = 1.0
DEFAULT_STUDY_SEEDS = 3
# Steps per algorithm (or per algorithm and a), each the shortest that decides its rows on 3 data draws
# (measured with the fused engine): SignGD and NGD are decided at 2.5e5; Spectral-GD at a = 3/4 needs a
# narrower interval (95% upper limit of its slope against the slowest term's -0.27 + 0.05: -0.208 at 2.5e5,
# -0.218 at 5e5, only just, -0.228 at 1e6); Adam leaves its plateau late: at 2.5e5 every a still bends, at 1e6
# a = 2/3 and 4/5 are decided and a = 1/2 still bends (-0.53 +- 0.1), at 2e6 it is decided.
DEFAULT_STUDY_STEPS: dict[str, Any] = {
    "signgd": 250_000, "ngd": 250_000,
    "spectral-gd": {"3/10": 250_000, "1/2": 250_000, "3/4": 1_000_000, "1": 250_000},
    "adam": {"1/2": 2_000_000, "2/3": 1_000_000, "4/5": 1_000_000}}
QUICK_STUDY_STEPS = 400
QUICK_STUDY_SEEDS = 1
STUDY_CHECKPOINTS = 60


def run_slug(config: RunConfig) -> str:
    """File-name stem of a configuration: ``signgd_a3-4`` (a written exactly, '/' -> '-'); a general schedule is
    named by a digest of its text (``signgd_schedule-1a2b3c4d``)."""
    if config.general_schedule:
        import hashlib

        return f"{config.algo}_schedule-{hashlib.sha1(config.schedule.text.encode()).hexdigest()[:8]}"
    return f"{config.algo}_a{str(config.a).replace('/', '-')}"


def write_outputs(records: Sequence[FitRecord], out_dir: Path, seeds_note: str, caption: str,
                  figures: bool = True, meta: Optional[dict[str, Any]] = None, trajectories: bool = True,
                  slug: Callable[[RunConfig], str] = run_slug, columns: Sequence[str] = ()) -> list[Path]:
    """Per-configuration trajectories, the verdict table (Markdown, LaTeX document, JSON), figures.

    ``rates sweep`` keeps its own per-task trajectories (``trajectories=False``), names figures by a
    ``slug`` unique over its configurations and shows the ``columns`` its grid varies.
    """
    from rates.output.plots import plot_fit

    written: list[Path] = []
    for rec in records:
        name = slug(rec.config)
        if trajectories:
            written.append(save_trajectory(Trajectory(rec.runs, dict(meta or {})),
                                           out_dir / "trajectories" / f"{name}.json"))
        if figures and not _is_direction_record(rec):  # a limit direction has no rate to draw
            paths = [out_dir / "figures" / f"{name}{ext}" for ext in (".png", ".pdf")]
            plot_fit(rec.runs, rec.verdict, rec.prediction, paths, title=rec.title,
                     bound_label=bound_label(rec))
            written += paths
    table = verdict_table(records, caption=caption, seeds_note=seeds_note, columns=columns)
    written.append(write_text_atomic(out_dir / "table.md", table.to_markdown()))
    written.append(write_text_atomic(out_dir / "table.tex", table.to_latex()))  # to \\input into a paper
    written.append(write_text_atomic(out_dir / "table.json", table.to_json()))
    written.append(write_text_atomic(out_dir / "fits.json",
                                     json.dumps([rec.to_json() for rec in records], indent=1, default=str) + "\n"))
    return written


# Cost order of the study's algorithms per step on CPU (measured: NGD > Adam > Spectral-GD > SignGD);
# submitting the dearest tasks first keeps both cores busy until the end.
_COST_ORDER = ("ngd", "adam", "spectral-gd", "signgd")


def steps_of(steps: Any, algo: str, a: str) -> int:
    """The number of steps of ``(algo, a)``: one number, one per algorithm, or one per algorithm and a."""
    if isinstance(steps, Mapping):
        steps = steps[algo]
    if isinstance(steps, Mapping):
        steps = steps[a]
    return int(steps)


def steps_text(steps: Any) -> str:
    if not isinstance(steps, Mapping):
        return f"{int(steps)} steps"
    parts = []
    for algo, value in steps.items():
        if isinstance(value, Mapping):
            parts += [f"{algo} a = {a}: {int(n):.3g}" for a, n in value.items()]
        else:
            parts.append(f"{algo} {int(value):.3g}")
    return "steps " + ", ".join(parts)


def study_tasks(seeds: Sequence[int], steps: Any, device: str, eta0: float = DEFAULT_STUDY_ETA0) -> list:
    """The default study's engine tasks: one per (seed, algorithm, number of steps), its values of a on one runs
    axis, on a fresh data draw of the ``default`` preset; the dearest algorithms first (:data:`_COST_ORDER`).
    ``steps`` is one number, one per algorithm or one per algorithm and a (:data:`DEFAULT_STUDY_STEPS`)."""
    from rates.numeric.engine import RunSpec
    from rates.numeric.tasks import EngineTask

    groups: dict[tuple[int, str, int], list[str]] = {}
    for seed in seeds:
        for algo, a in DEFAULT_STUDY_CONFIGS:
            groups.setdefault((seed, algo, steps_of(steps, algo, a)), []).append(a)
    order = sorted(groups, key=lambda key: (_COST_ORDER.index(key[1]) if key[1] in _COST_ORDER else -1,
                                            -key[2], key[0]))
    return [EngineTask(specs=tuple(RunSpec(algo, a, eta0=eta0, seed=seed, adam_eps=0.0) for a in groups[key]),
                       data=DEFAULT_STUDY_DATA, data_seed=seed, steps=n, checkpoints=STUDY_CHECKPOINTS,
                       device=device, label=f"seed {seed}, {algo}, {n:.3g} steps")
            for key in order for seed, algo, n in [key]]


def simulate_study_seeds(seeds: Sequence[int], steps: Any, device: str, progress: bool,
                         eta0: float = DEFAULT_STUDY_ETA0, parallel: bool = True,
                         scheduler: Optional[str] = None, workers: Optional[int] = None) -> list[Run]:
    """All runs of the study, ordered by seed then configuration.

    Each (seed, algorithm) pair is one task of :func:`rates.sweep.run_tasks` (full-batch runs are
    independent, and the engine's results do not depend on which runs share a batch): ``scheduler``
    ``None`` runs them on an embedded Dask LocalCluster with one worker per core (in this process when
    ``parallel`` is False), ``"serial"``/``"local"`` choose explicitly, an address uses a running cluster.
    """
    from rates.numeric.tasks import executor_name, run_tasks

    seeds = list(seeds)
    tasks = study_tasks(seeds, steps, device, eta0)
    trajectories = run_tasks(tasks, executor_name(scheduler, parallel), workers=workers, progress=progress)
    done = {(task.data_seed, spec.algo, str(spec.a)): run for task, trajectory in zip(tasks, trajectories)
            for spec, run in zip(task.specs, trajectory.runs)}
    return [done[(seed, algo, a)] for seed in seeds for algo, a in DEFAULT_STUDY_CONFIGS]


def run_default_study(out_dir: Path, options) -> list[Path]:
    """``rates report default``: the configurations of :data:`DEFAULT_STUDY_CONFIGS`, several data draws.

    Each (data draw, algorithm) is one batched ``simulate`` call (the algorithm's values of a on one runs
    axis) on a fresh draw of the ``default`` preset, in parallel processes; the runs are then regrouped per
    configuration, judged and written. ``options.data_seeds`` are the draws (``--data-seeds``); every run is
    full batch, so more than one reshuffling stream (``--seeds``) is refused: it would copy each run.
    ``options.quick`` shrinks steps and draws for tests: a quick run never reaches the asymptotic window, so its
    verdicts are ``inconclusive`` and the table says why.
    """
    if options.shuffle_seeds is not None and len(options.shuffle_seeds) > 1:
        raise InputError("seeds", f"the default study is full batch, deterministic given the data: "
                                    f"{len(options.shuffle_seeds)} reshuffling streams would be identical runs; "
                                    "vary the data with --data-seeds")
    default = QUICK_STUDY_SEEDS if options.quick else DEFAULT_STUDY_SEEDS
    draws = list(options.data_seeds) if options.data_seeds is not None else list(range(default))
    steps = QUICK_STUDY_STEPS if options.quick else DEFAULT_STUDY_STEPS
    return run_study_plan(Path(out_dir), draws, steps, DEFAULT_STUDY_ETA0, options)


def _device_of(config: RunConfig, default: str) -> Any:
    return default if config.device is None else config.device


def run_study_plan(out_dir: Path, data_seeds: Sequence[int], steps: Any, eta0: float, options) -> list[Path]:
    """The default study's configurations on the given data draws (``run_default_study`` fixes the size)."""
    if not data_seeds:
        raise InputError("data_seeds", "needs at least one data draw")
    from rates import budget

    budget.check_count(len(data_seeds), "data_seeds", runs_per_seed=len(DEFAULT_STUDY_CONFIGS),
                       checkpoints=STUDY_CHECKPOINTS, what="data draw(s)")  # before the tasks are built
    started = time.perf_counter()
    # quick runs stay in-process: starting worker processes would cost more than the runs
    runs = simulate_study_seeds(list(data_seeds), steps, options.device, options.progress, eta0,
                                parallel=not options.quick, scheduler=getattr(options, "scheduler", None))
    simulated = time.perf_counter() - started
    records = [fit_record_of(group) for group in group_runs(runs)]
    draws = ", ".join(str(s) for s in data_seeds)
    seeds_note = (f"Replicates: data draws {draws} of the '{DEFAULT_STUDY_DATA}' preset (--data-seeds); every run "
                  f"is full batch from W_0 = 0, deterministic given the data, so each draw is one independent "
                  f"replicate; "
                  f"{steps_text(steps)}, eta_0 = {eta0:g}, Adam with beta1 = 0.9, beta2 = 0.999, eps = 0; "
                  f"{simulated:.0f} s of simulation on {_device_of(runs[0].config, options.device)}.")
    meta = {"study": "default", "data": DEFAULT_STUDY_DATA, "data_seeds": list(data_seeds),
            "steps": steps,
            "eta0": eta0, "seed_meaning": "data draws of the preset; the runs are full batch (no reshuffling)",
            "simulation_wall_s": simulated}
    return write_outputs(records, out_dir, seeds_note, caption="Default study: predicted vs fitted margin-gap rates",
                         meta=meta)


def fits_records_for_cli(fits: bool, files: Optional[Sequence[Path]]) -> list[FitRecord]:
    """``rates table --fits FILES...``: the flag and its files are checked here, in one place."""
    if not files:
        raise InputError("fits", "give one or more Trajectory files after --fits (rates run --out / rates report)")
    if not fits:
        raise InputError("fits", f"file arguments need --fits (got {files[0]})")
    return load_fit_inputs(files)


def fits_table_for_cli(fits: bool, files: Optional[Sequence[Path]]) -> Table:
    return verdict_table(fits_records_for_cli(fits, files))
