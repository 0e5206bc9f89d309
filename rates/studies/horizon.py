"""Rate rows planned from the descent start: how long a run must be, and which window decides it.

Setting: a rate row decides only on a fit window that lies past the descent start ``t_d``
(:func:`undecided_before_descent`). The comparator's own window is the run's last two decades
from ``t = 1e3``, so a run of a fixed length decides only the rows whose ``t_d`` happens to lie before it.

Rule [ours, declared in each study's protocol]: a row is decided on the window from
``t_from = max(t_d, first separation, 1e3)`` to the run's end, which must span at least ``DECIDING_DECADES``
(1.5) decades from its first checkpoint, so the run needs ``t_from 10^1.65`` steps (0.15 decades for the
checkpoint grid). A study runs each configuration for ``max(its default, that)`` steps when that is within
``STEP_BUDGET`` and ``CPU_BUDGET_S``; a row beyond the budget stays open and its reason says how many steps would
decide it. Where the comparator's window already starts past ``t_d`` it is kept.

Algorithm: ``t_d`` from :func:`rates.studies.fitting.descent_start_of` on a two-step run of the same configuration
(the data's ``gamma`` and ``B`` as the judged runs record them), the window from the judged runs' checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

DECIDING_DECADES = 1.5  # the shortest window past t_d that decides a rate row [ours]
STEP_BUDGET = 10**9  # the longest run a study plans for one row [ours]
CPU_BUDGET_S = 600.0  # and at most this many CPU seconds for it, at the probed cost per step [ours]
PROBE_STEPS = 20_000  # steps of the probe that prices a configuration's step
MIN_START = 1e3  # the comparator's earliest window start (rates.judge.compare.MIN_WINDOW_START)
# a run planned this much longer still spans DECIDING_DECADES from its first checkpoint past t_d: one gap of a
# 60-checkpoint log grid up to 1e9 steps (10^(9/59) = 1.42)
CHECKPOINT_SLACK_DECADES = 0.15


def steps_to_decide(t_from: float) -> int:
    """Steps of a run whose window from its first checkpoint past ``t_from`` spans ``DECIDING_DECADES`` (plus
    ``CHECKPOINT_SLACK_DECADES``), rounded up to two significant digits.

    >>> steps_to_decide(3.26e4)
    1500000
    """
    exact = max(t_from, MIN_START) * 10.0 ** (DECIDING_DECADES + CHECKPOINT_SLACK_DECADES)
    unit = 10 ** max(math.floor(math.log10(exact)) - 1, 0)
    return int(math.ceil(exact / unit) * unit)


@dataclass(frozen=True)
class HorizonPlan:
    """The steps one rate configuration runs: its study's default, or what its ``t_d`` needs within the budget."""

    steps: int
    needed: Optional[int]  # steps that would decide it (None: t_d unknown; float('inf'): beyond any run)
    descent_start: Any  # rates.symbolic.theorems.descent_start.DescentStart or None
    seconds_per_step: Optional[float] = None  # probed CPU cost of one step (None: not probed)

    @property
    def budget(self) -> float:
        """The most steps this configuration may run: ``STEP_BUDGET`` and ``CPU_BUDGET_S`` at its probed cost."""
        by_time = CPU_BUDGET_S / self.seconds_per_step if self.seconds_per_step else math.inf
        return min(STEP_BUDGET, by_time)

    @property
    def within_budget(self) -> bool:
        return self.needed is not None and self.needed <= self.budget

    def text(self) -> str:
        start = self.descent_start
        if self.needed is None:
            why = start.missing() if start is not None else "no theorem template"
            return f"{self.steps:.3g} steps (t_d unknown: {why})"
        needed = f"{self.needed:.2g} steps decide it" if math.isfinite(self.needed) else "no run reaches it"
        return (f"{self.steps:.3g} steps (t_d ~ 10^{start.log10:.3g}; {needed}"
                + ("" if self.within_budget else f", beyond the budget of {self.budget:.2g} steps") + ")")


def plan(spec: Any, data: Any, default_steps: int, probe: bool = True) -> HorizonPlan:
    """The horizon of one configuration ``spec`` (a ``RunSpec``) on ``data``: ``t_d`` from a two-step run; a
    configuration that needs more than ``default_steps`` is priced by a ``PROBE_STEPS`` run (``probe``)."""
    from rates.numeric.engine import simulate
    from rates.studies.fitting import descent_start_of, prediction_for

    run = simulate([spec], data, 2, checkpoints=2).runs[0]
    try:
        prediction = prediction_for(run.config)
    except Exception:  # no theorem for this configuration: nothing to plan
        return HorizonPlan(default_steps, None, None)
    start = descent_start_of([run], prediction)
    if start is None or not start.complete:
        return HorizonPlan(default_steps, None, start)
    if start.t is None:  # beyond every float
        return HorizonPlan(default_steps, math.inf, start)
    needed = steps_to_decide(start.t)
    if needed <= default_steps:
        return HorizonPlan(default_steps, needed, start)
    cost = probed_cost(spec, data) if probe and needed <= STEP_BUDGET else None
    planned = HorizonPlan(default_steps, needed, start, cost)
    return replace(planned, steps=needed) if planned.within_budget else planned


def probed_cost(spec: Any, data: Any) -> Optional[float]:
    """CPU seconds of one step of ``spec`` on ``data``, from a ``PROBE_STEPS`` run after a warm-up (None where the
    engine reports no CPU time)."""
    from rates.numeric.engine import simulate

    simulate([spec], data, PROBE_STEPS // 10, checkpoints=2)  # warm-up: the kernels' load
    return simulate([spec], data, PROBE_STEPS, checkpoints=2).meta.get("cpu_s", 0.0) / PROBE_STEPS or None


def steps_past_onset(record: Any, seconds_per_step: Optional[float]) -> Optional[int]:
    """The steps of a longer run that would decide ``record``, a rate row open only because its window starts
    before the certified onset ``s0`` of its runs: ``steps_to_decide(s0)`` where that is past the runs' end and
    within ``STEP_BUDGET`` and ``CPU_BUDGET_S`` at ``seconds_per_step``; None otherwise (decided already, no
    certified onset, or over the budget -- the row then says how many steps would decide it).

    Rule [ours, as for t_d]: where t_d is unknown (Adam's c_adam) the certified onset is the only start a horizon
    can be planned from, and it is known only after a first run; the longer run is certified anew, so an onset that
    moves later leaves the row open with its new number."""
    from rates.studies.certificates import certified_onset

    if undecided_past_onset(record) is None:
        return None
    s0 = certified_onset(record.runs).s0
    if s0 is None:
        return None
    needed = steps_to_decide(s0)
    t_end = max(float(run.t[-1]) for run in record.runs)
    by_time = CPU_BUDGET_S / seconds_per_step if seconds_per_step else math.inf
    if needed <= t_end or needed > min(STEP_BUDGET, by_time):
        return None
    return needed


def window_past(runs: Sequence[Any], onset: float, entry: Optional[float],
                t_end: float) -> Optional[tuple[float, float]]:
    """The window from the first checkpoint at or past ``max(onset, entry, 1e3)`` to ``t_end``, when it spans
    ``DECIDING_DECADES`` (None otherwise)."""
    t_from = max(float(onset), entry or 0.0, MIN_START)
    first = max(float(next((t for t in run.t if t >= t_from), math.inf)) for run in runs)
    if t_end < first * 10.0**DECIDING_DECADES:
        return None
    return first, t_end


def _known_descent_start(record: Any) -> Optional[float]:
    """The rebuilt ``t_d`` of ``record`` where it is known and finite (None otherwise)."""
    from rates.studies.fitting import descent_start_of

    start = descent_start_of(record.runs, record.prediction)
    if start is None or not start.complete or start.t is None:
        return None
    return float(start.t)


def _refit_past(runs: Sequence[Any], record: Any, certified_s0: Optional[int]) -> Any:
    """``record`` (the comparator's window), or its runs refitted from the earliest onset -- the rebuilt ``t_d``
    or the certified ``s0`` -- where the window starts before both and the run reaches ``DECIDING_DECADES`` past
    it."""
    from rates.studies.fitting import fit_group

    v = record.verdict
    if record.prediction is None or v.fit is None or not math.isfinite(v.window.t0):
        return record
    onsets = [t for t in (_known_descent_start(record), certified_s0) if t is not None]
    if not onsets or any(v.window.t0 >= t for t in onsets):
        return record
    window = window_past(record.runs, min(onsets), v.window.entry_t, v.window.t1)
    return record if window is None else fit_group(runs, window=window, observed_onset=certified_s0)


def fit_past_descent(runs: Sequence[Any], fit: Any = None) -> Any:
    """``fit(runs)`` (:func:`rates.studies.fitting.fit_group`), refitted on :func:`window_past` from a known ``t_d``
    where the comparator's window starts before it and the run reaches ``DECIDING_DECADES`` past it."""
    from rates.studies.fitting import fit_group

    return _refit_past(runs, (fit or fit_group)(runs), None)


def fit_past_onset(runs: Sequence[Any]) -> Any:
    """:func:`rates.studies.fitting.fit_group` of ``runs`` with the certified onset ``s0``
    (:func:`rates.studies.certificates.certified_onset`) beside ``t_d``: a window past either decides, and a
    window that starts before both is refitted from the earlier one where the run reaches ``DECIDING_DECADES``
    past it. Without a certified onset this is :func:`fit_past_descent`."""
    from rates.studies.certificates import certified_onset
    from rates.studies.fitting import fit_group

    record = fit_group(runs)
    if undecided_before_descent(record) is None:  # past t_d already (or nothing to gate): no stepper pass needed
        return record
    s0 = certified_onset(record.runs).s0
    if s0 is None:
        return _refit_past(runs, record, None)
    return _refit_past(runs, fit_group(runs, observed_onset=s0), s0)


def undecided_before_descent(record: Any, observed_onset: Optional[float] = None, onset_why: str = "") -> Optional[str]:
    """Why a verdict on ``record``'s window -- confirming (``tight``, ``loose``, the bound holding) or refuting
    (``violated``) -- does not decide a claim, or None where it does.

    A claim is decided only on a window that starts at or after the descent start: past it a gap slower than the
    bound refutes and one as fast confirms; before it neither counts (before ``t_d`` a slower gap is set aside,
    :func:`rates.studies.fitting._violated_before_descent`, so a faster one is no more evidence). The rule is the
    same whatever is known: an unknown ``t_d`` -- not computable, or computed with a noise term left out because its
    constant is unknown (Adam's ``c_adam``: then it is only a lower bound) -- is one the window is not known to be
    past, and the reason names the missing quantity. ``observed_onset``, a step from which the run itself was
    certified to meet the descent facts through its horizon, counts as ``t_d`` does: a window past either decides
    (an unknown ``t_d`` never does). ``onset_why``: why there is no certified onset, added to the reason.
    """
    verdict = record.verdict
    if getattr(record, "prediction", None) is None or verdict.fit is None or not math.isfinite(verdict.window.t0):
        return None
    window_start = verdict.window.t0
    if observed_onset is not None and window_start >= observed_onset:
        return None
    if observed_onset is not None:
        certified = (f"; it starts before the certified descent onset s0 = {observed_onset:.3g} too, and a run whose "
                     f"window starts past s0 decides (about {steps_to_decide(observed_onset):.2g} steps, "
                     f"{DECIDING_DECADES:g} decades past s0, if s0 stays where it is)")
    else:
        certified = f"; {onset_why}" if onset_why else ""
    from rates.studies.fitting import descent_start_of, past_descent_start

    start = descent_start_of(record.runs, record.prediction)
    if start is None:
        return ("the descent start t_d is unknown (the runs record no schedule exponent a or eta_0), so the window "
                f"from t = {window_start:.3g} is not known to lie past it"
                + (certified or "; a certified descent onset on the run decides"))
    if not start.complete:
        return (f"the descent start t_d is unknown ({start.missing()}), so the window from t = {window_start:.3g} "
                "is not known to lie past it"
                + (certified or "; a certified descent onset on the run, or the missing constant, decides"))
    if past_descent_start(window_start, start):
        return None
    needed = steps_to_decide(start.t) if start.t is not None else None
    decides = (f"a run of {needed:.2g} steps ({DECIDING_DECADES:g} decades past t_d) decides it"
               + ("" if needed <= STEP_BUDGET else f", beyond the study budget of {STEP_BUDGET:.0e} steps")
               if needed is not None else "t_d is beyond any run")
    return (f"the window starts at t = {window_start:.3g}, before the descent start ({start.text()}): a gap "
            "slower than the bound would have been set aside there, so one as fast as the bound does not confirm "
            f"the rate either; {decides}{certified}")


def undecided_past_onset(record: Any) -> Optional[str]:
    """:func:`undecided_before_descent` with the record's certified onset
    (:func:`rates.studies.certificates.certified_onset`, each run certified once): a rate row's gate."""
    from rates.studies.certificates import certified_onset

    if undecided_before_descent(record) is None:  # decided past t_d, or nothing to gate: no stepper pass needed
        return None
    onset = certified_onset(record.runs)
    return undecided_before_descent(record, observed_onset=onset.s0, onset_why=onset.text() if onset.why else "")


def onset_text(record: Any) -> str:
    """Which onset a rate row's window was judged against: the certified ``s0`` (with its source), the rebuilt
    ``t_d``, or neither -- for the row's measured column."""
    from rates.studies.certificates import certified_already, certified_onset
    from rates.studies.fitting import descent_start_of

    verdict = record.verdict
    start = descent_start_of(record.runs, record.prediction) if getattr(record, "prediction", None) else None
    if start is None or start.log10 is None:
        t_d = "rebuilt t_d unknown" + (f" ({start.why})" if start is not None and start.why else "")
    elif not start.complete:
        t_d = f"rebuilt t_d unknown ({start.missing()})"
    else:
        t_d = "rebuilt " + (f"t_d = {start.t:.3g}" if start.t is not None else f"t_d ~ 10^{start.log10:.3g}")
    if verdict.fit is None or not math.isfinite(verdict.window.t0):
        return f"no window; {t_d}"
    window_start = verdict.window.t0
    past_t_d = start is not None and start.complete and start.t is not None and float(start.t) <= window_start
    if past_t_d and not all(certified_already(run) for run in record.runs):
        return f"window from t = {window_start:.3g} past the {t_d}"  # decided: no stepper pass for the text alone
    onset = certified_onset(record.runs)
    past_s0 = onset.s0 is not None and window_start >= onset.s0
    if past_s0 and past_t_d:
        return f"window from t = {window_start:.3g} past the {t_d} and the {onset.text()}"
    if past_s0:
        return f"window from t = {window_start:.3g} past the {onset.text()}, not past the {t_d}"
    if past_t_d:
        return f"window from t = {window_start:.3g} past the {t_d}; {onset.text()}"
    return f"window from t = {window_start:.3g} past no onset ({t_d}; {onset.text()})"
