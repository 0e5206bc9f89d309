"""One configuration judged: its runs grouped, gated, collapsed to independent replicates and fitted against the
bound of the theorem that covers them (:func:`fit_group`, the record :class:`FitRecord`).

Setting
    Runs of one configuration (algorithm, norm, a, eta_0, ...) over several seeds are grouped and judged by
    :func:`rates.judge.compare.judge` against the Prediction of ``rates.symbolic.theorems.predict`` (the bound's
    shape over the same window). The configuration arrives typed (:class:`rates.numeric.run_config.RunConfig`,
    its algorithm resolved where it entered); each run's fact sheet for the hypothesis gate is built once per
    judgement (:func:`fact_sheets`). The fitted gap is the one the theorem bounds (:func:`gap_target`). Per-sample
    runs covered by MINIBATCH Thm 4.9 are judged on their limit direction (:func:`fit_record_of`).

Order (the rule of :mod:`rates.judge.compare`): the hypothesis gate, identical replicates collapsed, the comparator
on the observable window, the rebuilt t0/t1 and the descent start t_d reported beside the verdict (before t_d a
slower gap is set aside, never a refutation).

Reference
    Rates: SIGNADAM Cor. 5.4 / C.5 (NSD) and Cor. 6.4 (Adam); docs/theory.md section 4 (one-sided verdicts, local
    slopes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np
import sympy as sp

from rates.errors import InputError
from rates.judge.compare import DEFAULT_TOLERANCE, Verdict, fit_slope, judge, judged_window
from rates.numeric.run_config import UNRECORDED, RunConfig
from rates.numeric.trajectory import Run, Trajectory

FIT_SCHEMA = "rates.fit/1"


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
    """The resolved algorithm of a run's configuration: the config's own (:attr:`RunConfig.algorithm`, resolved
    once at the edge), re-resolved only where the data's ``n`` was rebuilt here and differs from the recorded one."""
    return config.algorithm if n is None or n == config.recorded_n else config.algorithm_for(n)


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


def _float(value: Any) -> Optional[float]:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def fact_sheets(runs: Sequence[Run], facts: Optional[Sequence[Any]] = None) -> list[Any]:
    """Each run's :func:`facts_of`: ``facts`` where the caller has them (built once per judgement), else built."""
    return list(facts) if facts is not None else [facts_of(run) for run in runs]


def gate_runs(runs: Sequence[Run], facts: Optional[Sequence[Any]] = None):
    """The gate on every run of a configuration; the first that fails decides (data draws differ in gamma, B)."""
    from rates.symbolic.theorems.registry import COVERED, gate

    results = [gate(sheet) for sheet in fact_sheets(runs, facts)]
    return next((result for result in results if result.outcome != COVERED), results[0])


def prediction_for(config: RunConfig, algorithm: Any = None):
    """The Prediction of ``rates.symbolic.theorems`` for a run's configuration (``algorithm``: its resolved
    algorithm where the caller has it, e.g. from the run's fact sheet)."""
    from rates.symbolic.theorems import predict

    if algorithm is None:
        algorithm = algorithm_of(config, (recorded_data_facts(config) or {}).get("n"))
    if config.general_schedule:
        return schedule_prediction_for(config, algorithm)
    return predict(algorithm, exact_a(config))


def schedule_prediction_for(config: RunConfig, algorithm, constants: Optional[dict] = None):
    """The derived Prediction for a run of a general schedule (:mod:`rates.symbolic.theorems.general`);
    raises ``NoRate`` where a schedule hypothesis fails or a class is undecided."""
    from rates.symbolic.theorems import template_for
    from rates.symbolic.theorems.general import predict_schedule

    return predict_schedule(algorithm, template_for(algorithm), config.schedule, constants)


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
    facts = fact_sheets(independent)  # once per run: the gate, the target, the phase and t_d all read these
    gate_result = gate_runs(independent, facts)
    family = gate_result.family
    undecided_rate = None
    if prediction is None and family is not None and family.template is not None:
        from rates.symbolic.theorems.general import NoRate

        try:
            prediction = prediction_for(runs[0].config, facts[0].config)
        except NoRate as err:  # a general schedule: a failing hypothesis (the gate says no-theorem) or no class
            undecided_rate = str(err)
    context = {"gate": gate_result.to_json(), "replicates": replicates}
    if undecided_rate is not None and gate_result.outcome == COVERED:
        win, fitted, measured = _measured_slope(independent, window)
        verdict = Verdict("inconclusive", f"no verdict, because the rate for this schedule is not derived "
                                          f"({undecided_rate}); {measured}", tolerance, win, fitted, context=context)
        return FitRecord(config, seeds, None, verdict, independent, gate_result, replicates)
    if gate_result.outcome != COVERED or family is None or family.template is None:
        verdict = _ungated_verdict(independent, gate_result, tolerance, window, context, facts)
        return FitRecord(config, seeds, prediction, verdict, independent, gate_result, replicates)
    exponent = float(prediction.rate.exponent)
    log_power = None
    if getattr(prediction.rate, "loglog_power", 0):
        # a (log log t)^m rate: the stated rate is carried by its bound term (exact partial sums of the schedule);
        # a log power fitted on log log t would not describe it, so only the slope is compared
        exponent = None
    target = gap_target(independent, prediction, facts) if target_margin is None else {
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
    phase = phase_of(independent[0], facts[0], prediction)
    verdict = _plateau_before_t1(verdict, phase)
    if verdict.label == "violated":
        start = descent_start_of(independent, prediction, facts)
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


def gap_target(runs: Sequence[Run], prediction: Any, facts: Optional[Sequence[Any]] = None) -> dict[str, Any]:
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
    sheets = fact_sheets(runs, facts)
    for sheet in sheets:
        constants = {"eta_0": 1.0, **sheet.constants()}
        value = template.resolve(template.gamma_ref).subs(_subs(constants))
        if value.free_symbols:
            missing = ", ".join(sorted(str(s) for s in value.free_symbols))
            return {"name": name, "values": None, "source": f"{source} [rebuilt]; not evaluated: needs {missing}"}
        values.append(float(value))
    definition = template.constants.get(name, "")
    # the run's own setting the target was evaluated at (b: None for full batch; beta: None without momentum),
    # so that a reader names the target from this record, not from a configuration beside it
    config = sheets[0].config
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


def descent_start_of(runs: Sequence[Run], prediction: Any, facts: Optional[Sequence[Any]] = None):
    """The latest descent start ``t_d`` over the runs' data draws (None: no template or no exponent ``a``).

    :mod:`rates.symbolic.theorems.descent_start`: the first ``t`` from which the descent lemma holds with the
    curvature of the step actually taken, on each draw's own ``gamma`` and ``B``.
    """
    from rates.symbolic.theorems.descent_start import descent_start

    template = getattr(prediction, "template", None)
    if template is None:
        return None
    if any(run.config.general_schedule for run in runs):
        return None
    starts = [descent_start(template, sheet.constants(), run.config.exponent, float(run.config.eta0))
              for run, sheet in zip(runs, fact_sheets(runs, facts))]
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
                     window: Optional[tuple[float, float]], context: dict[str, Any],
                     facts: Optional[Sequence[Any]] = None) -> Verdict:
    """``no-theorem`` / ``not-applicable`` (or the per-sample limit-direction note) with the measured slope."""
    from rates.symbolic.theorems.registry import COVERED, NO_THEOREM

    win, fitted, measured = _measured_slope(runs, window)
    if gate_result.outcome == COVERED:  # a covered family without a rate: the per-sample limit direction
        label = NO_THEOREM
        family = gate_result.family
        reason = (f"no rate theorem: the run meets the hypotheses of the {family.name} family "
                  f"({family.source.seed} {family.source.theorem}), which states {family.statement}"
                  + _limit_direction_text(runs, facts) + f"; {measured}")
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


def _limit_direction_text(runs: Sequence[Run], facts: Optional[Sequence[Any]] = None) -> str:
    """Margin of ``W_T`` against the margin of ``M/||M||`` (MINIBATCH Thm 4.9), from the recorded data facts."""
    from rates.symbolic.theorems import per_sample

    facts = facts[0] if facts is not None else facts_of(runs[0])
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


def _prediction_json(prediction: Any) -> Any:
    to_json = getattr(prediction, "to_json", None)
    return to_json() if callable(to_json) else str(prediction)


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
