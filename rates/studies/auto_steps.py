"""Run lengths chosen for the user (``--steps auto``): run until the comparator's window is there, within a budget.

What the comparator needs (:func:`rates.judge.compare.choose_window`): a window that starts after the run's
observable entry into the separable, monotone-loss phase (margins positive, loss falling at least at the descent
lemma's rate for full-batch NSD) and at ``t >= MIN_WINDOW_START``, spans ``MIN_DECADES`` with ``MIN_POINTS``
checkpoints, and ends before the gap reaches the solver floor. When a run enters that phase is not known in advance:
the rebuilt descent start ``t_d`` (:mod:`rates.symbolic.theorems.descent_start`, the first ``t`` from which the
descent lemma holds with the step actually taken) is a worst-case sufficient condition, and on real data it lies far
beyond any run (sklearn's digits, SignGD at a = 1/2: ``t_d`` ~ 10^10). So the plan is measured, and says so:

1. stages of :data:`GROWTH` times more steps, from :data:`FIRST_STAGE` (the shortest run whose window can span a
   decade from ``MIN_WINDOW_START``), each run afresh from ``W_0`` -- runs are deterministic given their seeds, so a
   longer stage repeats the shorter one's iterates and the total is at most ``GROWTH / (GROWTH - 1)`` times the
   last stage;
2. once a stage shows the entry ``t_e``, the next one is the shortest run whose window from ``max(t_e,
   MIN_WINDOW_START)`` spans ``MIN_DECADES`` (with two checkpoint gaps to spare, as the comparator's own hint);
3. it stops when every run has its window, when more steps cannot help (the gap is at the solver floor), or when
   the next stage would pass the budget: ``--budget-steps``, or ``--budget-seconds`` estimated from the last
   stage's own time (steps cost the same each, so time is proportional to steps).

A window that starts before ``t_d`` can confirm a bound but never refute it (:func:`rates.studies.fitting.fit_group`),
which the plan states beside ``t_d``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from rates.errors import InputError

AUTO = "auto"
GROWTH = 10
FIRST_STAGE = 10_000  # MIN_WINDOW_START (1e3) times 10^MIN_DECADES: no shorter run has a window
DEFAULT_BUDGET_STEPS = 1_000_000
DEFAULT_BUDGET_SECONDS = 900.0
FLOOR_PROBLEM = "gap at the solver floor"


def parse_steps(text: Any, auto: bool = True) -> Optional[int]:
    """``--steps``: an integer >= 1, or ``auto`` (returned as None) where ``auto`` is allowed."""
    value = str(text).strip()
    if value.lower() == AUTO:
        if not auto:
            raise InputError("steps", "must be an integer >= 1 here; auto is for rates run and rates fit")
        return None
    try:
        steps = int(value)
    except ValueError:
        raise InputError("steps", f"must be an integer >= 1 or 'auto', got {value!r}") from None
    from rates.numeric.run_parameters import FLOAT_EXACT_MAX

    if not 1 <= steps <= FLOAT_EXACT_MAX:  # the words of every command's --steps check (run_parameters)
        raise InputError("steps", f"must be an integer in [1, 2^53], got {steps}")
    return steps


def check_budget(budget_steps: int, budget_seconds: float) -> None:
    """The budget options: at least :data:`FIRST_STAGE` steps and a positive finite time."""
    if not (isinstance(budget_steps, int) and budget_steps >= FIRST_STAGE):
        raise InputError("budget_steps", f"must be an integer >= {FIRST_STAGE} (the shortest run with a window), "
                                           f"got {budget_steps!r}")
    if not (math.isfinite(budget_seconds) and budget_seconds > 0):
        raise InputError("budget_seconds", f"must be a finite number > 0, got {budget_seconds!r}")


def shortest_with_window(entry_t: float, checkpoints: int) -> int:
    """The fewest steps whose automatic window, starting at ``max(entry_t, MIN_WINDOW_START)``, spans
    ``MIN_DECADES`` plus two gaps of a log-spaced grid of ``checkpoints`` (the comparator's own hint)."""
    from rates.judge.compare import MIN_DECADES, MIN_WINDOW_START

    end = max(MIN_WINDOW_START, entry_t) * 10.0 ** MIN_DECADES
    spacing = math.log10(end) / max(checkpoints - 1, 1)
    return int(math.ceil(end * 10.0 ** (2 * spacing)))


@dataclass
class Stage:
    steps: int
    seconds: float
    windows: list  # one rates.judge.compare.Window per run

    def problems(self) -> list[str]:
        return [w.problem for w in self.windows if w.problem is not None]


@dataclass
class Outcome:
    """The stages run and why they stopped; ``reached`` when every run has its window."""

    stages: list[Stage] = field(default_factory=list)
    reached: bool = False
    why: str = ""

    def text(self) -> str:
        last = self.stages[-1] if self.stages else None
        steps = f"{last.steps} steps" if last else "no stage"
        total = sum(stage.seconds for stage in self.stages)
        if self.reached:
            spans = "; ".join(w.text() for w in last.windows)
            return (f"steps auto: window reached at {steps} ({len(self.stages)} stage(s), {total:.1f} s): {spans}")
        return f"steps auto: no window within the budget after {steps} ({len(self.stages)} stage(s), {total:.1f} s): " \
               f"{self.why}"


def descent_start_of_runs(runs: Sequence[Any]):
    """The rebuilt descent start of the runs (the latest over their data draws), or None (no prediction)."""
    from rates.studies.fitting import descent_start_of, prediction_for

    try:
        prediction = prediction_for(runs[0].config)
    except Exception:  # noqa: BLE001 - a schedule without a derived rate: the plan goes on without t_d
        return None
    return descent_start_of(runs, prediction)


def past_descent_steps(t_d: float, checkpoints: int) -> int:
    """The fewest steps whose automatic window (the last ``DEFAULT_DECADES`` of the run) starts at or after ``t_d``."""
    from rates.judge.compare import DEFAULT_DECADES

    end = max(t_d, 1.0) * 10.0 ** DEFAULT_DECADES
    spacing = math.log10(end) / max(checkpoints - 1, 1)
    return int(math.ceil(end * 10.0 ** spacing))


def descent_target(start: Any, budget_steps: int, checkpoints: int) -> tuple[Optional[float], str]:
    """``(t_d to put the window past, or None, the plan's sentence about it)``: t_d is a target only when a run
    within the budget can have its window past it."""
    if start is None or start.log10 is None:
        return None, "descent start t_d unknown" + (f" ({start.why})" if start is not None and start.why else "") + \
            ": the plan follows the measurable entry"
    if start.t is not None and past_descent_steps(start.t, checkpoints) <= budget_steps:
        return float(start.t), (f"{start.text()}; a window past it needs {past_descent_steps(start.t, checkpoints)} "
                                "steps, within the budget: the plan puts the window past t_d")
    needed = (f"about {past_descent_steps(start.t, checkpoints):.3g} steps" if start.t is not None
              else "more steps than any run")
    return None, (f"{start.text()}; a window past it needs {needed}, beyond --budget-steps {budget_steps}, so the "
                  "plan follows the measurable entry instead, and a window before t_d can confirm the bound but "
                  "not refute it")


def plan_text(budget_steps: int, budget_seconds: float, checkpoints: int, first: int, descent: str) -> str:
    from rates.judge.compare import MIN_DECADES, MIN_POINTS, MIN_WINDOW_START

    return (f"steps auto: stages of {GROWTH}x more steps from {first}, each from W_0, until every run has the "
            f"comparator's window (after the observable entry: margins positive and the loss falling; t >= "
            f"{MIN_WINDOW_START:g}; >= {MIN_DECADES:g} decade and {MIN_POINTS} of {checkpoints} log-spaced "
            f"checkpoints; gap above the solver floor); once the entry t_e is seen, the next stage is the shortest run "
            f"with a decade past max(t_e, {MIN_WINDOW_START:g}); budget {budget_steps} steps and {budget_seconds:g} s "
            f"(--budget-steps, --budget-seconds). {descent}")


def _entry_text(stage: Stage) -> str:
    """Where the runs entered the phase the comparator judges (the latest over the runs)."""
    entries = [w.entry_t for w in stage.windows]
    if any(entry is None for entry in entries):
        return "not entered (margins not all positive, or the loss not falling, at the end)"
    latest = max(entries)
    if latest >= stage.steps:
        return f"entered only at the last checkpoint t = {latest:.6g} (the loss fell too slowly or rose before it)"
    return f"entered at t = {latest:.6g}"


ESTIMATE_DECADES = 1.0  # the extrapolated entry is fitted on the stage's last decade of checkpoints
ESTIMATE_MIN_POINTS = 4
# ... and only where the gap falls by at least this fraction over that decade: a gap that barely moves is its
# level gamma plus a small margin, and its slope then says little about where the margin crosses 0 (SignGD on raw
# digits: the gap fell 1.2% over a decade, the extrapolation said t = 2.6e5, and the margin was still -0.003 at 1e6)
ESTIMATE_MIN_FALL = 0.1


def separation_estimate(run: Any) -> Optional[tuple[float, float, float, float]]:
    """Where a run whose margin is not yet positive would separate, if its gap kept its current slope:
    ``(t_cross, slope, t_from, t_to)`` or None (no estimate: the margin is positive at the end already, the gap is
    not falling by :data:`ESTIMATE_MIN_FALL` over the fitted decade, or too few checkpoints).

    The normalised margin is ``gamma - gap``, so the margins turn positive where the gap falls below ``gamma``. The
    estimate fits ``log gap`` against ``log t`` (least squares) over the last :data:`ESTIMATE_DECADES` of
    checkpoints and follows that line down to ``gamma``: an extrapolation of the measured slope, not a bound (a
    gap that slows down separates later)."""
    t = np.asarray(run.t, dtype=float)
    gap = np.asarray(run.gap, dtype=float)
    margin = np.asarray(run.margin, dtype=float)
    try:
        gamma = float(run.gamma["value"])
    except (KeyError, TypeError, ValueError):
        return None
    if len(t) == 0 or not (gamma > 0) or margin[-1] > 0:
        return None
    keep = (t >= t[-1] * 10.0 ** -ESTIMATE_DECADES) & (t >= 1) & np.isfinite(gap) & (gap > 0)
    if keep.sum() < ESTIMATE_MIN_POINTS:
        return None
    kept = gap[keep]
    if not (kept[0] - kept[-1]) >= ESTIMATE_MIN_FALL * kept[0]:
        return None
    slope, intercept = np.polyfit(np.log10(t[keep]), np.log10(kept), 1)
    if not slope < 0:
        return None
    t_cross = 10.0 ** ((math.log10(gamma) - intercept) / slope)
    return float(t_cross), float(slope), float(t[keep][0]), float(t[keep][-1])


def _separation_text(trajectory: Any, stage: Stage, checkpoints: int) -> str:
    """The extrapolated separation of the latest run that has not separated, and the run a window past it needs
    (steps and, at the stage's own speed, seconds); empty when every run's margin is positive."""
    unseparated = [run for run in trajectory.runs if len(run.margin) and not np.asarray(run.margin)[-1] > 0]
    estimates = [(e, run) for run in unseparated if (e := separation_estimate(run)) is not None]
    if unseparated and not estimates:
        run = unseparated[0]
        t, margin = np.asarray(run.t, dtype=float), np.asarray(run.margin, dtype=float)
        before = int(np.searchsorted(t, t[-1] * 10.0 ** -ESTIMATE_DECADES))
        return (f"; the margin is {margin[-1]:.3g} at t = {stage.steps} ({margin[before]:.3g} at t = {t[before]:.3g}); "
                "no extrapolation of where it turns positive: the gap moved too little over the last decade for its "
                "slope to say")
    if not estimates:
        return ""
    (t_cross, slope, t_from, t_to), run = max(estimates, key=lambda item: item[0][0])
    needed = shortest_with_window(t_cross, checkpoints)
    seconds = stage.seconds * needed / stage.steps
    margin, gamma = float(np.asarray(run.margin)[-1]), float(run.gamma["value"])
    return (f"; the margin is {margin:.3g} at t = {stage.steps} (gamma {gamma:.3g}); "
            f"if the gap kept its slope {slope:.3f} (fitted on t in [{t_from:.3g}, {t_to:.3g}]; an extrapolation, "
            f"not a bound) the margins would turn positive near t = {t_cross:.2g}, and a window past that needs about "
            f"{needed:.2g} steps, about {seconds:.2g} s at this stage's speed")


def _next_steps(stage: Stage, t_d: Optional[float], checkpoints: int) -> int:
    """The next stage's length: past the entry by a decade (and past t_d when it is a target), else 10x."""
    entries = [w.entry_t for w in stage.windows]
    if not all(entry is not None for entry in entries):
        return GROWTH * stage.steps
    following = shortest_with_window(max(entries), checkpoints)
    if t_d is not None:
        following = max(following, past_descent_steps(t_d, checkpoints))
    return max(following, 2 * stage.steps)


def run_until_window(simulate: Callable[[int], Any], budget_steps: int, budget_seconds: float, checkpoints: int,
                     echo: Callable[[str], None]) -> tuple[Any, Outcome]:
    """Run ``simulate(steps)`` (a Trajectory) in stages (module docstring) and return the last one with the
    :class:`Outcome`. ``echo`` gets the plan before the first stage and one line per stage."""
    from rates.judge.compare import choose_window

    check_budget(budget_steps, budget_seconds)
    outcome = Outcome()
    started = time.perf_counter()
    # one step first: it solves the data's max margins (which every stage needs, and which stay in memory), so that
    # the plan can state the descent start on the data's own gamma and B before the first stage
    probe = simulate(1)
    t_d, descent = descent_target(descent_start_of_runs(probe.runs), budget_steps, checkpoints)
    steps = min(shortest_with_window(0.0, checkpoints), budget_steps)
    echo(plan_text(budget_steps, budget_seconds, checkpoints, steps, descent))
    while True:
        stage_started = time.perf_counter()
        trajectory = simulate(steps)
        stage = Stage(steps, time.perf_counter() - stage_started, [choose_window(run) for run in trajectory.runs])
        outcome.stages.append(stage)
        problems = stage.problems()
        if not problems and t_d is not None and not all(w.t0 >= t_d for w in stage.windows):
            problems = [f"the window starts at t = {min(w.t0 for w in stage.windows):.3g}, before t_d = {t_d:.3g}"]
        echo(f"steps auto: stage {len(outcome.stages)}: {steps} steps in {stage.seconds:.1f} s; {_entry_text(stage)}; "
             + ("window reached" if not problems else f"no window yet ({problems[0]})"))
        if not problems:
            outcome.reached = True
            return trajectory, outcome
        if any(FLOOR_PROBLEM in problem for problem in problems):
            outcome.why = f"{FLOOR_PROBLEM}: more steps only lower the gap further into solver noise"
            return trajectory, outcome
        following = _next_steps(stage, t_d, checkpoints)
        entered = all(w.entry_t is not None for w in stage.windows)
        if steps >= budget_steps:
            outcome.why = (f"the budget of {budget_steps} steps is spent ({problems[0]})"
                           + _separation_text(trajectory, stage, checkpoints))
            return trajectory, outcome
        if following > budget_steps:
            if entered:
                outcome.why = (f"the window needs about {following} steps, more than --budget-steps {budget_steps} "
                               f"({problems[0]})")
                return trajectory, outcome
            following = budget_steps  # the entry may still come within the budget: its last stage
        spent = time.perf_counter() - started
        expected = stage.seconds * following / steps
        if spent + expected > budget_seconds:
            outcome.why = (f"the next stage ({following} steps) would take about {expected:.0f} s, past "
                           f"--budget-seconds {budget_seconds:g} ({spent:.0f} s spent; {problems[0]})"
                           + _separation_text(trajectory, stage, checkpoints))
            return trajectory, outcome
        steps = following
