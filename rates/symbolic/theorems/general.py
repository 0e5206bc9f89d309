"""What a theorem family predicts for a general schedule ``eta_t = eta_0 f(t)`` (docs/theory.md "General
schedules"; section 4b).

Setting: the family's bound template (:class:`rates.symbolic.theorems.base.BoundTemplate`) is proved for any
schedule meeting MINIBATCH Assumption 3.3 (and 3.4 for momentum and Adam); its corollaries substitute
``(t+2)^(-a)``. Here the substitution is the schedule given.

Algorithm
    1. The schedule hypotheses (:mod:`rates.symbolic.schedule_hypotheses`); a failing one means no rate.
    2. The class of every power sum of the template: ``S_1`` (denominator), each ``S_{p_j}`` (numerator) and the
       constant term, by :mod:`rates.symbolic.growth` (integral test on the eventual branch; each divergent class
       verified by ``lim f^p / G' = 1`` in sympy).
    3. The dominant numerator class over ``S_1``'s: the rate ``t^-r (log t)^k (log log t)^m``.
    4. ``t_0`` = first ``t`` from which every noise term ``c_j eta_t^{q_j} <= gamma_ref/(2J)`` holds for good:
       doubling and bisection on ``f`` itself (every piece of a Piecewise/Min/Max, 50-digit values) from the
       point where ``f`` is proved non-increasing; the steps before it are scanned (up to
       :data:`PREFIX_LIMIT`, float64 with each near-tie confirmed exactly) only when ``f`` is already below the
       level there. ``t_1`` = first ``t > t_0`` with ``eta_0 sum_{s=t_0}^{t-1} f(s) >= R`` (``R`` as in
       :mod:`rates.symbolic.theorems.base`): the partial sums are increasing, so doubling and bisection bracket
       it; they are summed one by one up to :data:`PREFIX_LIMIT` and beyond by Euler-Maclaurin on the smooth
       last branch, checked against the integral bracket of a non-increasing ``f``; ``T_LIMIT f(t_0) < R``
       proves ``t_1`` beyond :data:`T_LIMIT`. Either is "not computed, because ..." when no such proof is at
       hand or the search exceeds :data:`THRESHOLD_SECONDS`.

Guarantee: the rate is *derived* (status ``derived``) from the family's template whose own status
(``given``/``rebuilt``) is kept in ``template_status``; for ``eta_0 (t+2)^(-a)`` the classes are those of
:func:`rates.symbolic.schedules.power_sum_order` (tests compare them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import mpmath
import numpy as np
import sympy as sp

from rates.symbolic import asymptotics
from rates.symbolic.budget import OutOfTime, answer_within, spent
from rates.symbolic.growth import (
    BOUNDED,
    Growth,
    Undecided,
    growth_of,
    power_growth,
    power_sum_growth,
    verify_primitive,
    x,
)
from rates.symbolic.power_sums import partial_sums
from rates.symbolic.schedule_hypotheses import ASSUMPTION_34, HOLDS, ScheduleHypotheses, decide, exact_function
from rates.symbolic.theorems.base import BoundTemplate, first_true_after, reference_margin
from rates.symbolic.theorems.hypotheses import uses_assumption_34
from rates.symbolic.theorems.sources import Source

GENERAL_REGIME = "general schedule"
T_LIMIT = 10**15  # thresholds beyond this are reported as such
# time budgets (rates.symbolic.budget): the power sums' classes and the numeric search of t0/t1, each cut to what
# is left of PREDICTION_SECONDS after the hypotheses (themselves within ~11 s), so that a prediction ends in
# about 17 s whatever the schedule
CLASSES_SECONDS = 4.0
THRESHOLD_SECONDS = 6.0
PREDICTION_SECONDS = 16.0
MIN_SECONDS = 0.5


def required_hypotheses(config) -> tuple[str, ...]:
    from rates.symbolic.schedule_hypotheses import DIVERGES, NON_INCREASING, VANISHES

    names = (NON_INCREASING, DIVERGES, VANISHES)
    return names + ((ASSUMPTION_34,) if uses_assumption_34(config) else ())


@dataclass(frozen=True)
class SumClass:
    """The class of one power sum of the template, and its sympy check."""

    label: str  # "S_1", "S_2", "constant"
    p: Optional[sp.Rational]
    growth: Growth
    check: Optional[str]  # "lim f^p / G' = 1" or None

    def to_json(self) -> dict:
        return {"label": self.label, "p": None if self.p is None else str(self.p),
                "order": {"e": str(self.growth.e), "k": str(self.growth.k), "m": str(self.growth.m)},
                "text": self.growth.text, "check": self.check}


@dataclass
class SchedulePrediction:
    """A family's prediction for a general schedule; the same interface as
    :class:`rates.symbolic.theorems.base.Prediction` where the judge and the CLI read it."""

    family: str
    algorithm: str
    norm: str
    schedule: Any  # rates.schedule.Schedule
    hypotheses: ScheduleHypotheses
    rate: asymptotics.Rate
    sums: tuple[SumClass, ...]
    dominant: str
    gap_to: str
    thresholds: dict[str, dict[str, Any]]
    source: Source
    template_status: str
    template: BoundTemplate
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: str = "derived"
    a = None
    best_a = None
    regime = GENERAL_REGIME

    def to_json(self) -> dict:
        return {
            "family": self.family, "algorithm": self.algorithm, "norm": self.norm, "a": None,
            "regime": self.regime,
            "rate": {"exponent": str(self.rate.exponent), "log_power": str(self.rate.log_power)
                     if not sp.Rational(self.rate.log_power).is_Integer else int(self.rate.log_power),
                     "loglog_power": int(self.rate.loglog_power) if sp.Rational(self.rate.loglog_power).is_Integer
                     else str(self.rate.loglog_power),
                     "text": self.rate.text, "latex": self.rate.latex},
            "best_a": None, "gap_to": self.gap_to, "thresholds": self.thresholds,
            "source": self.source.to_json(),
            "reference": self.source.reference.to_json() if self.source.reference else None,
            "status": self.status, "template_status": self.template_status,
            "assumptions": self.assumptions, "notes": self.notes,
            "schedule": self.schedule.to_json(),
            "schedule_hypotheses": self.hypotheses.to_json(),
            "power_sums": [s.to_json() for s in self.sums], "dominant_term": self.dominant,
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)

    # -- the judge's view (rates.judge.compare.BoundLike) -----------------------------------------------------
    def bound_members(self, t: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
        """``1/S_1`` and ``S_p/S_1`` per numerator term, from exact partial sums of this schedule
        (:func:`rates.symbolic.power_sums.partial_sums`; ``eta_0 = 1``, constants unknown, as for the polynomial
        family in :meth:`rates.symbolic.theorems.base.Prediction.bound_members`)."""
        t = np.asarray(t, dtype=np.int64)
        if np.any(t < 1):
            raise ValueError("bound_members needs t >= 1")
        s1 = partial_sums(self.schedule, 1, t)
        members = [1.0 / s1] + [partial_sums(self.schedule, term.p, t) / s1 for term in self.template.numerator]
        labels = ["1/S_1"] + [f"S_{term.p}/S_1" for term in self.template.numerator]
        return members, labels

    def bound_shape(self, t: np.ndarray) -> np.ndarray:
        """``(1 + sum_j S_{p_j}) / S_1`` with unit constants (exact partial sums)."""
        members, _ = self.bound_members(t)
        return np.sum(members, axis=0)


def sum_classes(template: BoundTemplate, branch) -> tuple[SumClass, ...]:
    """Classes of ``S_1`` and of every numerator power sum (module docstring, step 2)."""
    term = growth_of(branch)
    out = []
    for label, p in [("S_1", sp.Integer(1))] + [(f"S_{t.p}", t.p) for t in template.numerator]:
        total = power_sum_growth(power_growth(term, p))
        check = None
        if total.grows and not isinstance(total.constant, tuple):
            value = verify_primitive(branch**p, total)
            if value != 1:
                raise Undecided(f"{label}: lim f^p / G' = {value}, not 1")
            check = f"lim f^{p} / G' = 1 with G = {total.constant} {total.text} (sympy)"
        out.append(SumClass(label, sp.Rational(p), total, check))
    out.append(SumClass("constant", None, BOUNDED, None))
    return tuple(out)


def rate_from_classes(sums: tuple[SumClass, ...]) -> tuple[asymptotics.Rate, str]:
    """The dominant numerator class over ``S_1``'s (module docstring, step 3)."""
    denominator = next(s for s in sums if s.label == "S_1")
    numerator = [s for s in sums if s.label != "S_1"]
    # on a tie the constant term names the dominant one (a bounded S_p is a constant too)
    best = max(numerator, key=lambda s: (s.growth.key(), s.label == "constant"))
    ratio = best.growth / denominator.growth
    return asymptotics.Rate(-ratio.e, _plain(ratio.k), _plain(ratio.m)), best.label


def _plain(value):
    value = sp.Rational(value)
    return int(value) if value.is_Integer else value


# ------------------------------------------------------------------------------------------------ thresholds


PREFIX_LIMIT = 10**7  # steps summed / scanned one by one (float64, each near-tie confirmed in mpmath)
EXACT_DPS = 50
# the step functions and branches that Euler-Maclaurin cannot sum across (it needs a smooth summand)
_NOT_SMOOTH = (sp.floor, sp.ceiling, sp.Abs, sp.sign, sp.Piecewise, sp.Min, sp.Max)


class _NotComputed(Exception):
    """A threshold that this module cannot give with a proof; the message says why."""


def _first_at_most(f_at, level: mpmath.mpf, start: int) -> Optional[int]:
    """First ``t >= start`` with ``f(t) <= level`` for ``f`` non-increasing on ``[start, inf)`` (proved by the
    hypothesis): doubling, then bisection, every comparison on ``f``'s exact value (:data:`EXACT_DPS` digits).
    None beyond :data:`T_LIMIT`."""
    def below(t: int) -> bool:
        return f_at(mpmath.mpf(t)) <= level

    return start if below(start) else first_true_after(below, start, T_LIMIT)


def _last_above(schedule, f_at, level: mpmath.mpf, stop: int) -> Optional[int]:
    """The last ``s < stop`` with ``f(s) > level`` (None: none): float64 values first, then each candidate near
    the level confirmed on the exact value (float64 is off by far less than the 1e-9 margin used here)."""
    if stop > PREFIX_LIMIT:
        raise _NotComputed(f"f is non-increasing only from t = {stop}; the {stop} steps before it exceed the "
                           f"{PREFIX_LIMIT:.0e} that are scanned")
    values = schedule.unit_values(0, stop)
    candidates = np.flatnonzero(values > float(level) * (1 - 1e-9))
    for s in candidates[::-1]:
        if f_at(mpmath.mpf(int(s))) > level:
            return int(s)
    return None


class _StepSums:
    """``sum_{s<t} f(s)`` at any ``t``: float64 one by one below :data:`PREFIX_LIMIT` (one cumulative sum), and
    beyond it Euler-Maclaurin on the eventual branch ``g``, which is ``f`` there:
    ``sum_{s=a}^{b-1} g(s) = int_a^b g + (g(a) - g(b))/2 + (g'(b) - g'(a))/12 - (g^(3)(b) - g^(3)(a))/720 + R``
    with ``|R|`` of the order of ``|g^(5)|`` on ``[a, b]`` (``a >= 10^4``: far below 30 digits for these tails);
    the integral from sympy's antiderivative (``manualintegrate``) when it has one, else mpmath ``quad``; the
    result is checked against the integral bracket at the end of the search. Refused where the branch is
    not smooth or holds only beyond the directly summed steps."""

    def __init__(self, schedule, branch, stop_hint: int):
        self.direct_stop = int(min(max(stop_hint, branch.switch_t + 1, 10**4), PREFIX_LIMIT))
        self.cumulative = np.concatenate([[0.0], np.cumsum(schedule.unit_values(0, self.direct_stop))])
        self.branch = branch
        self.g = exact_function(branch.expr)
        self._tail = None
        self._cells: dict = {}  # int_{a 2^k}^{a 2^(k+1)} g, reused by every sum that starts at a

    def _tail_terms(self):
        if self.branch.switch_t > self.direct_stop:
            raise _NotComputed(f"the schedule's last branch holds from t = {self.branch.switch_t}, beyond the "
                               f"{PREFIX_LIMIT:.0e} steps summed one by one")
        if self.branch.expr.has(*_NOT_SMOOTH):
            raise _NotComputed(f"sums beyond {self.direct_stop:.0e} steps need a smooth last branch for "
                               f"Euler-Maclaurin; {self.branch.expr} is not")
        if self._tail is None:
            g = self.branch.expr
            try:
                from sympy.integrals.manualintegrate import manualintegrate  # by rules: seconds faster than risch

                primitive = answer_within(1.5, manualintegrate, g, x, what="sympy's antiderivative")
            except (OutOfTime, NotImplementedError, ValueError, TypeError):
                primitive = None
            if primitive is not None and primitive.has(sp.Integral):
                primitive = None
            self._tail = (None if primitive is None else exact_function(primitive),
                          exact_function(sp.diff(g, x)), exact_function(sp.diff(g, x, 3)))
        return self._tail

    def tail(self, a: int, b: int) -> mpmath.mpf:
        """``sum_{s=a}^{b-1} g(s)`` by the formula of the class docstring."""
        primitive, d1, d3 = self._tail_terms()
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        integral = primitive(b) - primitive(a) if primitive is not None else self._quad(a, b)
        return integral + (self.g(a) - self.g(b)) / 2 + (d1(b) - d1(a)) / 12 - (d3(b) - d3(a)) / 720

    def _quad(self, a: mpmath.mpf, b: mpmath.mpf) -> mpmath.mpf:
        """``int_a^b g`` by mpmath ``quad`` over the cells ``[a 2^k, a 2^(k+1)]`` (cached) and the last part."""
        total, k = mpmath.mpf(0), 0
        while a * 2 ** (k + 1) < b:
            if (a, k) not in self._cells:
                self._cells[(a, k)] = mpmath.quad(self.g, [a * 2**k, a * 2 ** (k + 1)])
            total += self._cells[(a, k)]
            k += 1
        return total + mpmath.quad(self.g, [a * 2**k, b])

    def __call__(self, t: int) -> mpmath.mpf:
        if t <= self.direct_stop:
            return mpmath.mpf(float(self.cumulative[t]))
        with mpmath.workdps(30):
            return mpmath.mpf(float(self.cumulative[-1])) + self.tail(self.direct_stop, t)


def _integral(f_at, lo, hi) -> mpmath.mpf:
    """``int_lo^hi f`` by mpmath ``quad`` on geometric cells (the tails here vary by decades over the range)."""
    points = [mpmath.mpf(lo)]
    while points[-1] * 2 < hi:
        points.append(points[-1] * 2)
    return mpmath.quad(f_at, points + [mpmath.mpf(hi)])


def _integral_bracket(f_at, lo: int, hi: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """For ``f`` non-increasing on ``[lo, hi]``: ``int_lo^hi f <= sum_{s=lo}^{hi-1} f(s) <= int_lo^hi f + f(lo)
    - f(hi)`` (each term between the integral over its unit cell and the previous one's)."""
    with mpmath.workdps(30):
        integral = _integral(f_at, max(lo, 1), hi)
        return integral, integral + f_at(mpmath.mpf(lo)) - f_at(mpmath.mpf(hi))


def schedule_thresholds(template: BoundTemplate, schedule, hypotheses: ScheduleHypotheses,
                        constants: Optional[dict], seconds: float = THRESHOLD_SECONDS) -> dict[str, dict[str, Any]]:
    """``t0``/``t1`` for a general schedule: the defining inequalities always, numbers when constants are given
    and the work fits in ``seconds`` (:mod:`rates.symbolic.budget`)."""
    out = {"t0": {"symbolic": template.t0_defining() + " (for good)", "closed_form": False,
                  "defining": template.t0_defining(), "numeric": None},
           "t1": {"symbolic": template.t1_defining(), "closed_form": False, "defining": template.t1_defining(),
                  "numeric": None}}
    reference = reference_margin(template, constants, out) if constants else None
    if reference is None:
        return out
    if hypotheses.findings[0].status != HOLDS:
        out["t0"]["note"] = "needs eta_t eventually non-increasing"
        return out
    try:
        return answer_within(seconds, _numeric_thresholds, template, schedule, hypotheses, reference, out,
                             what="the threshold search")
    except OutOfTime as late:
        key = "t1" if out["t0"].get("numeric") is not None else "t0"
        out[key]["note"] = f"not computed: {late}"
        return out


def _numeric_thresholds(template, schedule, hypotheses, reference, out):
    """The numbers of :func:`schedule_thresholds` (module docstring, step 4), computed in a budgeted worker."""
    values, subs, g_ref = reference
    monotone = hypotheses.findings[0]
    f_at = exact_function(hypotheses.unit)
    J = len(template.noise)
    t0 = 0
    with mpmath.workdps(EXACT_DPS):
        for term in template.noise:
            coefficient = template.resolve(term.coefficient).subs(subs)
            if coefficient.free_symbols:
                out["t0"]["missing"] = sorted(str(s) for s in coefficient.free_symbols)
                return out
            # c eta0^q f^q <= g_ref / (2J)  <=>  f <= (g_ref / (2 J c eta0^q))^(1/q)
            q = mpmath.mpf(sp.Rational(term.q).p) / sp.Rational(term.q).q
            level = (mpmath.mpf(str(sp.N(g_ref, EXACT_DPS))) / (2 * J * mpmath.mpf(str(sp.N(coefficient, EXACT_DPS)))
                     * mpmath.mpf(values["eta_0"]) ** q)) ** (1 / q)
            tail = _first_at_most(f_at, level, monotone.from_t)
            if tail is None:
                out["t0"]["note"] = f"beyond {T_LIMIT:.0e} steps"
                return out
            if tail == monotone.from_t:  # f(from_t) <= level already: the last step above it lies before from_t
                try:
                    last = _last_above(schedule, f_at, level, monotone.from_t)
                except _NotComputed as why:
                    out["t0"]["note"] = f"not computed: {why}"
                    return out
                tail = 0 if last is None else last + 1
            t0 = max(t0, tail)
    out["t0"]["numeric"] = t0
    if any(key not in values for key in ("n", "k", "B")):
        out["t1"]["missing"] = [key for key in ("n", "k", "B") if key not in values]
        return out
    eta0 = mpmath.mpf(values["eta_0"])
    try:
        smooth = not hypotheses.branch.expr.has(*_NOT_SMOOTH)
        # a step function is summed one by one as far as PREFIX_LIMIT: Euler-Maclaurin cannot cross its steps
        sums = _StepSums(schedule, hypotheses.branch, t0 + 10**4 if smooth else PREFIX_LIMIT)
        drift = eta0 * sums(t0)
        requirement = 4 * values["n"] / mpmath.mpf(str(sp.N(g_ref, 30))) * (mpmath.log(values["k"])
                                                                            + 2 * values["B"] * drift)
        out["t1"]["requirement"] = float(requirement)
        base = sums(t0)
        beyond = _beyond_limit(sums, f_at, hypotheses, t0, monotone.from_t, requirement / eta0)
        if beyond is not None:
            out["t1"]["note"] = f"beyond {T_LIMIT:.0e} steps (requirement R = {float(requirement):.4g}; {beyond})"
            return out

        def reached(t: int) -> bool:
            return eta0 * (sums(t) - base) >= requirement

        hi = first_true_after(reached, t0, T_LIMIT)
        if hi is None:
            out["t1"]["note"] = f"beyond {T_LIMIT:.0e} steps (requirement R = {float(requirement):.4g})"
            return out
        # the sums used lie inside the integral bracket of a non-increasing f (a check on Euler-Maclaurin)
        start = max(sums.direct_stop, monotone.from_t)  # f is non-increasing from here on
        if hi > start:
            low, high = _integral_bracket(f_at, start, hi)
            if not (low - 1e-9 * high <= sums(hi) - sums(start) <= high * (1 + 1e-9)):
                raise _NotComputed(f"the sum to t = {hi} left its integral bracket "
                                   f"[{float(low):.6g}, {float(high):.6g}]")
    except _NotComputed as why:
        out["t1"]["note"] = f"not computed: {why}"
        return out
    out["t1"]["numeric"] = hi
    return out


def _beyond_limit(sums, f_at, hypotheses, t0: int, from_t: int, needed) -> Optional[str]:
    """Why ``sum_{s=t0}^{T_LIMIT-1} f(s) < needed`` (so ``t1`` lies beyond :data:`T_LIMIT`), or None when no
    bound below shows it: the steps up to the monotone start ``m`` summed, then ``T_LIMIT f(m)`` (``f`` is
    non-increasing from ``m``), or for a step function the smooth non-increasing majorant of
    :func:`step_majorant` from the end of the direct sums (``m(a) + int_a^T m`` bounds its sum)."""
    start = max(t0, from_t)
    with mpmath.workdps(EXACT_DPS):
        head = sums(start) - sums(t0)
        if head + T_LIMIT * f_at(mpmath.mpf(start)) < needed:
            return (f"{T_LIMIT:.0e} steps from t = {start}, where eta is non-increasing, sum to at most "
                    f"{T_LIMIT:.0e} eta_t")
        majorant = step_majorant(hypotheses.branch.expr)
        a = max(sums.direct_stop, start)
        if majorant is None or hypotheses.branch.switch_t > a:
            return None
        m_at = exact_function(majorant)
        inner = [step.args[0] for step in hypotheses.branch.expr.atoms(sp.floor)]
        if not m_at(mpmath.mpf(a)) > 0 or any(exact_function(u)(mpmath.mpf(a)) < 1 for u in inner):
            return None  # the majorant holds where every floor's argument is >= 1
        with mpmath.workdps(30):
            bound = sums(a) - sums(t0) + m_at(mpmath.mpf(a)) + _integral(m_at, a, T_LIMIT)
        if bound < needed:
            return (f"the steps lie below the smooth non-increasing majorant {majorant} from t = {a}, whose sum "
                    f"to {T_LIMIT:.0e} is smaller")
    return None


def step_majorant(g) -> Optional[sp.Expr]:
    """A smooth ``m >= g`` for ``g = h(x, floor(u_1), ceiling(u_2), ...)`` non-increasing in every ``y_i``
    (the rule of :func:`rates.symbolic.schedule_hypotheses.decide_non_increasing`): ``floor(u) >= u - 1`` and
    ``ceiling(u) >= u`` give ``m = h(x, u_1 - 1, u_2, ...)``, valid (and non-increasing) where every
    ``u_i - 1 >= 0``; None for any other ``g``."""
    from rates.symbolic.schedule_hypotheses import _monotone_through_steps

    steps = g.atoms(sp.floor, sp.ceiling)
    if not steps or _monotone_through_steps(g) is None:
        return None
    return g.xreplace({step: step.args[0] - 1 if isinstance(step, sp.floor) else step.args[0] for step in steps})


# ------------------------------------------------------------------------------------------------ entry point


def _share(seconds: float, deadline: float) -> float:
    return max(min(seconds, deadline - spent()), MIN_SECONDS)


class NoRate(Exception):
    """A schedule hypothesis fails (``no-theorem``) or the classes are undecided; the message says which."""

    def __init__(self, message: str, hypotheses: Optional[ScheduleHypotheses] = None, failing=()):
        super().__init__(message)
        self.hypotheses = hypotheses
        self.failing = tuple(failing)


def predict_schedule(config, template: BoundTemplate, schedule, constants: Optional[dict] = None) -> SchedulePrediction:
    """The family's rate for ``schedule`` (module docstring); :class:`NoRate` names a failing hypothesis."""
    deadline = spent() + PREDICTION_SECONDS
    hypotheses = decide(schedule.expr)
    needed = required_hypotheses(config)
    failing = hypotheses.failing(needed)
    if failing:
        raise NoRate("no-theorem: " + "; ".join(f"{f.name} fails ({f.detail})" for f in failing), hypotheses, failing)
    try:
        sums = answer_within(_share(CLASSES_SECONDS, deadline), sum_classes, template, hypotheses.branch.expr,
                             what="the power sums' classes (sympy)")
    except Undecided as err:
        raise NoRate(f"rate undecided: {err}", hypotheses) from None
    except OutOfTime as late:
        raise NoRate(f"rate undecided: {late} (time budget per question)", hypotheses) from None
    except (NotImplementedError, ValueError, TypeError, RecursionError) as err:
        raise NoRate(f"rate undecided: sympy failed on the power sums' classes ({type(err).__name__})",
                     hypotheses) from None
    rate, dominant = rate_from_classes(sums)
    undecided = [f for f in hypotheses.findings if f.name in needed and f.status != HOLDS]
    notes = [f"schedule hypothesis {f.name} undecided: {f.detail}" for f in undecided]
    return SchedulePrediction(
        family=template.family, algorithm=config.name, norm=config.norm, schedule=schedule, hypotheses=hypotheses,
        rate=rate, sums=sums, dominant=dominant, gap_to=template.gap_to,
        thresholds=schedule_thresholds(template, schedule, hypotheses, constants,
                                       _share(THRESHOLD_SECONDS, deadline)), source=template.source,
        template_status=template.status, template=template, notes=notes,
        assumptions=[text for text in template.assumptions if "a in (0, 1]" not in text]
        + ["the schedule meets " + ", ".join(needed) + " (decided above)"])


def free_exponent_regimes(template: BoundTemplate, expr) -> tuple[sp.Symbol, list, sp.Rational]:
    """The regime table of ``eta0 (t+2)^(-b)`` with ``b`` a free symbol: the polynomial family's regimes and best
    exponent (:mod:`rates.symbolic.asymptotics`) written in ``b``. Raises ``ValueError`` for any other shape.

    >>> from rates.symbolic.theorems.nsd import template as nsd_template
    >>> b = sp.Symbol("b", positive=True)
    >>> symbol, rows, best = free_exponent_regimes(nsd_template(), sp.Symbol("eta0") * (sp.Symbol("t") + 2)**(-b))
    >>> symbol, [rate.text for _, rate in rows], best
    (b, ['t^(-b)', 'log t / t^(1/2)', 't^(-(1 - b))', '1 / log t'], 1/2)
    """
    from rates.symbolic.schedule_hypotheses import unit_function
    from rates.symbolic.schedules import a_symbol

    unit = unit_function(expr)
    free = sorted(unit.free_symbols - {x}, key=str)
    w = sp.Wild("w", exclude=[x])
    match = unit.match((x + 2) ** (-w))
    if len(free) != 1 or not match or match[w] != free[0]:
        raise ValueError(f"not eta0*(t+2)**(-b) with one free exponent symbol: {expr}")
    symbol = free[0]
    rows = [(regime, asymptotics.Rate(sp.sympify(rate.exponent).subs(a_symbol, symbol), rate.log_power))
            for regime, rate in asymptotics.regime_rates(template.powers)]
    return symbol, rows, asymptotics.best_a(template.powers)
