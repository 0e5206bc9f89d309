"""The schedule hypotheses of the linear-model theorems, decided for any ``eta_t = eta_0 f(t)`` with reasons.

Setting: MINIBATCH Assumption 3.3 (the schedule is non-increasing, ``sum eta_t = inf``, ``eta_t -> 0``) [given
in words] and Assumption 3.4 [rebuilt, docs/theory.md "General schedules"; proofs/schedule.py]:

    for every ``c_1 > 0`` and ``beta in (0, 1)`` there are ``t_*`` and ``C`` with
    ``sum_{tau=0}^{t} beta^tau (exp(c_1 sum_{tau'=1}^{tau} eta_{t-tau'}) - 1) <= C eta_t`` for all ``t >= t_*``

(Zhang et al. 2024, the implicit bias of Adam, Ass. 4.3; MINIBATCH uses it for momentum, Thm 4.3/4.6, and
SIGNADAM for Adam, Thm 6.3). Asymptotic statements need each from some ``t`` on: a finite prefix moves
``t_0``, not the rate (docs/theory.md section 4b).

Algorithm (each decision prints ``holds`` / ``fails (why)`` / ``undecided (why)``)
    * *Eventual branch*: ``Min``/``Max``/``Piecewise`` are reduced to the branch that holds for large ``t``
      (``lim`` of the branches' ratio; the piece whose region -- its condition where no earlier condition
      holds, as sympy reads a Piecewise -- is unbounded above); a Piecewise switches at the first integer of
      that region, a Min/Max where interval arithmetic (mpmath.iv) on ``[0, 10^12]``, refined by halving to
      unit cells, shows the other branch on the far side for good; then the start is moved down while ``f``
      and the branch agree (at most :data:`WALK_LIMIT` steps, exact values).
    * *Eventually non-increasing*: the sign of ``f'`` at infinity from ``lim x f'/f`` (then with ``log x`` and
      ``log x log log x`` factors when that limit is 0); the set where ``f' > 0`` by sympy ``solveset`` (or,
      where it cannot, interval arithmetic on ``[0, 10^12]``); then the integer start is moved down while
      ``f(t-1) >= f(t)`` (50-digit mpmath, at most :data:`WALK_LIMIT` steps). An ``x f'/f`` without a limit
      (sympy ``AccumBounds``) fails when integer witnesses ``f(t+1) > f(t)`` are found at every scale
      ``10^3 .. 10^12``. A function of ``t`` and of steps ``floor(u(t))``/``ceiling(u(t))`` holds from 0 when
      it is non-increasing in each argument and each ``u`` is non-decreasing and ``>= 0``.
    * ``eta_t -> 0``: ``lim f`` (``oo`` fails).
    * ``sum eta_t = inf``: ``lim log f / log x = -oo`` fails (``f < x^-2`` eventually), ``+oo`` holds; else the
      growth class of ``f`` (:mod:`rates.symbolic.growth`) and the integral / limit-comparison test.
    * *Assumption 3.4*: sufficient -- non-increasing, ``eta -> 0``, ``K = lim f(x/2)/f(x) < inf`` (head
      ``tau <= t/2``: ``sum_{tau' <= tau} eta_{t-tau'} <= tau K eta_t``, then ``e^y - 1 <= y e^y``) and
      ``log f(x) / x -> 0`` (tail ``tau > t/2``: ``beta^(t/2) exp(c_1 S_1(t)) / eta_t -> 0`` because
      ``S_1(t) = o(t)`` and ``log(1/eta_t) = o(t)``); fails when ``eta_t`` stays above a positive constant
      (the ``tau``-th term grows once ``c_1 lim eta > log(1/beta)``) or ``eta_{t-1}/eta_t`` is unbounded (the
      ``tau = 1`` term alone exceeds ``C eta_t``); undecided otherwise.

Each question (the branch, then each hypothesis) runs under a time budget (:mod:`rates.symbolic.budget`,
:data:`QUESTION_SECONDS` each, :data:`DECISION_SECONDS` together): one that does not answer in time is
``undecided`` with that reason instead of holding the caller for minutes.

Guarantee: ``holds`` and ``fails`` are proofs up to sympy's limits and, where said, the interval-arithmetic
range ``[0, 10^12]``; anything else is ``undecided`` with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import mpmath
import sympy as sp

from rates.symbolic.budget import OutOfTime, answer_within, spent
from rates.symbolic.growth import Undecided, growth_of, power_sum_growth, x

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
SOURCE_33 = "MINIBATCH Assumption 3.3 (SIGNADAM's schedule assumption) [given]"
SOURCE_34 = "MINIBATCH Assumption 3.4, Lemma C.15; Zhang et al. 2024 Ass. 4.3 [rebuilt]"
NON_INCREASING, DIVERGES, VANISHES, ASSUMPTION_34 = ("eventually non-increasing", "sum eta_t = inf", "eta_t -> 0",
                                                     "Assumption 3.4")
STATEMENTS = {
    NON_INCREASING: "eta_{t+1} <= eta_t for all t from some t on",
    DIVERGES: "sum_t eta_t = inf",
    VANISHES: "lim_t eta_t = 0",
    ASSUMPTION_34: "for all c1 > 0, beta in (0, 1): sum_{tau=0}^{t} beta^tau (exp(c1 sum_{tau'=1}^{tau} "
                   "eta_{t-tau'}) - 1) <= C eta_t for all t >= t_*",
}
INTERVAL_RANGE = 10**12  # interval arithmetic covers [0, INTERVAL_RANGE]
_DENSE = 10**3  # unit intervals up to here, then geometric ones
_RATIO = 1.01
# Each hypothesis is one question with its own time budget; all of them together at most DECISION_SECONDS (a
# question asked late still gets MIN_QUESTION_SECONDS), so a schedule's
# decisions end within ~12 s.
QUESTION_SECONDS = 6.0
DECISION_SECONDS = 10.0
MIN_QUESTION_SECONDS = 1.0
WALK_LIMIT = 10**4  # integer steps checked one by one when a start point is moved down


@dataclass(frozen=True)
class ScheduleFinding:
    """One hypothesis decided for one schedule: ``status`` holds / fails / undecided, with the reason."""

    name: str
    status: str
    detail: str
    source: str
    from_t: Optional[int] = None  # eventually non-increasing: the first t from which eta_{s+1} <= eta_s

    @property
    def statement(self) -> str:
        return STATEMENTS[self.name]

    def line(self) -> str:
        return f"{self.status} ({self.detail})" if self.status != HOLDS else f"holds ({self.detail})"

    def to_json(self) -> dict:
        out = {"name": self.name, "statement": self.statement, "status": self.status, "detail": self.detail,
               "source": self.source}
        if self.from_t is not None:
            out["from_t"] = self.from_t
        return out


@dataclass(frozen=True)
class EventualBranch:
    """The branch ``g`` of ``f`` that holds for all ``t >= switch_t`` (``f`` itself when it has no branches)."""

    expr: sp.Expr
    switch_t: int
    detail: str = ""


@dataclass(frozen=True)
class ScheduleHypotheses:
    """The four decisions for one schedule."""

    unit: sp.Expr  # f(x)
    branch: EventualBranch
    findings: tuple[ScheduleFinding, ...] = field(default_factory=tuple)

    def get(self, name: str) -> ScheduleFinding:
        return next(f for f in self.findings if f.name == name)

    def failing(self, names=None) -> list[ScheduleFinding]:
        return [f for f in self.findings if f.status == FAILS and (names is None or f.name in names)]

    def to_json(self) -> list[dict]:
        return [f.to_json() for f in self.findings]


# ----------------------------------------------------------------------------------------------- helpers


def unit_function(expr) -> sp.Expr:
    """``f(x)`` from ``eta_0 f(t)``: the step symbol (named ``t``) becomes the positive real ``x``, ``eta0`` is 1."""
    expr = sp.sympify(expr)
    subs = {}
    for symbol in expr.free_symbols:
        if symbol.name == "t":
            subs[symbol] = x
        elif symbol.name in ("eta0", "eta_0"):
            subs[symbol] = sp.Integer(1)
    return expr.xreplace(subs)


_IV_FUNCTIONS = {sp.log: mpmath.iv.log, sp.exp: mpmath.iv.exp, sp.sin: mpmath.iv.sin, sp.cos: mpmath.iv.cos}


def _iv_eval(expr, cell):
    """An enclosure of ``expr`` over the interval ``cell`` (mpmath.iv), evaluated on sympy's tree so that
    rational constants stay exact intervals."""
    if expr == x:
        return cell
    if expr.is_Rational:
        return mpmath.iv.mpf(expr.p) / expr.q
    if expr is sp.pi:
        return mpmath.iv.pi
    if expr is sp.E:
        return mpmath.iv.e
    if expr.is_Number:
        return mpmath.iv.mpf(float(expr))
    if expr.is_Add:
        total = _iv_eval(expr.args[0], cell)
        for arg in expr.args[1:]:
            total = total + _iv_eval(arg, cell)
        return total
    if expr.is_Mul:
        total = _iv_eval(expr.args[0], cell)
        for arg in expr.args[1:]:
            total = total * _iv_eval(arg, cell)
        return total
    if expr.is_Pow:
        base, exponent = expr.args
        if exponent.is_Integer:
            return _iv_eval(base, cell) ** int(exponent)
        if exponent == sp.Rational(1, 2):
            return mpmath.iv.sqrt(_iv_eval(base, cell))
        if exponent == sp.Rational(-1, 2):
            return 1 / mpmath.iv.sqrt(_iv_eval(base, cell))
        return mpmath.iv.exp(_iv_eval(exponent, cell) * mpmath.iv.log(_iv_eval(base, cell)))
    if expr.func in _IV_FUNCTIONS:
        return _IV_FUNCTIONS[expr.func](_iv_eval(expr.args[0], cell))
    raise ValueError(f"no interval rule for {expr.func}")


def _cells(lo: float, hi: float):
    """Cover ``[lo, hi]``: unit cells below :data:`_DENSE`, geometric cells (ratio :data:`_RATIO`) above."""
    a = lo
    while a < hi:
        b = a + 1 if a < _DENSE else a * _RATIO
        yield a, min(b, hi)
        a = b


def last_not_negative(expr, lo: float = 0.0, hi: float = INTERVAL_RANGE) -> Optional[float]:
    """Right end of the last cell of ``[lo, hi]`` where interval arithmetic cannot show ``expr < 0``
    (None: ``expr < 0`` on all of ``[lo, hi]``)."""
    expr = sp.sympify(expr)
    last = None
    saved, mpmath.iv.prec = mpmath.iv.prec, 80
    try:
        for a, b in _cells(lo, hi):
            try:
                value = _iv_eval(expr, mpmath.iv.mpf([a, b]))
                certain = value.b < 0
            except (ValueError, ZeroDivisionError, TypeError):
                certain = False
            if not certain:
                last = a, b
        if last is not None and last[1] - last[0] > 1:
            return _last_uncertain(expr, *last)
    finally:
        mpmath.iv.prec = saved
    return None if last is None else last[1]


def _certain_negative(expr, a: float, b: float) -> bool:
    try:
        return _iv_eval(expr, mpmath.iv.mpf([a, b])).b < 0
    except (ValueError, ZeroDivisionError, TypeError):
        return False


def _last_uncertain(expr, a: float, b: float) -> Optional[float]:
    """Within ``[a, b]``: the right end of the last sub-interval (width <= 1, by halving) where ``expr < 0`` is
    not certain; None when it is certain on all of ``[a, b]``."""
    if _certain_negative(expr, a, b):
        return None
    if b - a <= 1:
        return b
    middle = (a + b) / 2
    right = _last_uncertain(expr, middle, b)
    return right if right is not None else _last_uncertain(expr, a, middle)


@lru_cache(maxsize=256)
def exact_function(expr):
    """``expr`` as an mpmath function of ``x`` (Piecewise, Min/Max, floor, Abs included): evaluated in the
    caller's working precision, so two values compare exactly up to that many digits."""
    return sp.lambdify(x, expr, modules="mpmath")


def value_at(expr, t: int, dps: int = 50) -> mpmath.mpf:
    with mpmath.workdps(dps):
        return mpmath.mpf(sp.N(expr.subs(x, t), dps))


def _values(expr, start: int, count: int, dps: int = 30) -> list:
    fn = sp.lambdify(x, expr, modules="mpmath")
    with mpmath.workdps(dps):
        return [fn(mpmath.mpf(start + i)) for i in range(count)]


# ----------------------------------------------------------------------------------------- eventual branch


def _piecewise_tail(expr: sp.Piecewise) -> tuple[sp.Expr, int]:
    """The piece that holds for all large ``t`` and the first integer from which it holds for good.

    A piece holds where its condition holds and no earlier condition does (sympy's reading of Piecewise), so
    ``Piecewise((a, t < 10**6), (b, True))`` is ``b`` from ``t = 10**6`` on, not from 0."""
    taken = sp.EmptySet
    for piece, condition in expr.args:
        try:
            region = (sp.Interval(0, sp.oo) if condition is sp.true else condition.as_set()) - taken
            taken = taken | (sp.Interval(-sp.oo, sp.oo) if condition is sp.true else condition.as_set())
        except (NotImplementedError, TypeError, ValueError) as err:
            raise Undecided(f"Piecewise: the region of the condition {condition} is not decided "
                            f"({type(err).__name__})") from None
        region = region & sp.Interval(0, sp.oo)
        if region.sup is sp.oo:
            last = region.args[-1] if isinstance(region, sp.Union) else region
            if not isinstance(last, sp.Interval):
                raise Undecided(f"Piecewise: the region {region} of the piece {piece} is not an interval near oo")
            start = last.inf
            first = int(math.floor(start)) + 1 if (last.left_open and start.is_integer) else int(math.ceil(start))
            return piece, max(first, 0)
    raise Undecided("no piece of the Piecewise holds for all large t")


def _reduce(expr):
    """(eventual branch, list of (switch point expression or None, description))."""
    if isinstance(expr, sp.Piecewise):
        piece, start = _piecewise_tail(expr)
        inner, notes = _reduce(piece)
        return inner, [(start, f"Piecewise: the piece {piece} holds from t = {start}")] + notes
    if isinstance(expr, (sp.Min, sp.Max)):
        reduced = [_reduce(arg) for arg in expr.args]
        best, best_notes = reduced[0]
        for other, notes in reduced[1:]:
            ratio = sp.limit(best / other, x, sp.oo)
            if ratio.has(sp.AccumBounds) or ratio == 1:
                raise Undecided(f"{type(expr).__name__}: the branches {best} and {other} do not separate "
                                f"(lim ratio {ratio})")
            keep_best = (ratio < 1) if isinstance(expr, sp.Min) else (ratio > 1)
            if not keep_best:
                best, best_notes = other, notes
        others = [r[0] for r in reduced if r[0] != best]
        kind = type(expr).__name__
        return best, [((kind, best, o), f"{kind}: {best} for large t") for o in others] + best_notes
    if expr.args and expr.has(sp.Min, sp.Max, sp.Piecewise):
        parts = [_reduce(arg) for arg in expr.args]
        return expr.func(*[p[0] for p in parts]), [n for p in parts for n in p[1]]
    return expr, []


def eventual_branch(f) -> EventualBranch:
    """The branch of ``f`` valid for large ``t`` and the integer from which it is ``f`` (module docstring)."""
    g, notes = _reduce(f)
    if not notes:
        return EventualBranch(f, 0)
    switch = 0
    texts = []
    for where, text in notes:
        if isinstance(where, tuple):  # Min/Max: g stays the active branch once (other - g) keeps its sign
            kind, chosen, other = where
            # Min is the chosen branch where chosen <= other: certify chosen - other < 0 (Max: the reverse)
            end = last_not_negative(chosen - other if kind == "Min" else other - chosen)
            point = 0 if end is None else math.ceil(end)
            texts.append(f"{text} (from t = {point}, interval arithmetic on [0, 1e12])")
        else:
            point = int(where)
            texts.append(text)
        switch = max(switch, point)
    # the branch may take over earlier than the certified point: walk down while f(t) equals g(t), a bounded
    # number of steps (the switch stays a valid, if later, point when the walk stops there)
    f_at, g_at = exact_function(f), exact_function(g)
    with mpmath.workdps(50):
        for _ in range(WALK_LIMIT):
            if switch == 0 or f_at(mpmath.mpf(switch - 1)) != g_at(mpmath.mpf(switch - 1)):
                break
            switch -= 1
    return EventualBranch(g, switch, "; ".join(texts))


# -------------------------------------------------------------------------------------------- decisions


def _sign_at_infinity(g, d) -> tuple[Optional[int], str]:
    """Sign of ``g'`` for large ``x`` (+1, -1, 0 for identically 0) or None with the reason."""
    if d == 0 or d.is_zero or sp.expand(d) == 0:  # simplify would cost seconds on |sin x| and tell no more here
        return 0, "f' = 0 (constant)"
    for weight, name in ((x, "x f'/f"), (x * sp.log(x), "x log x f'/f"),
                         (x * sp.log(x) * sp.log(sp.log(x)), "x log x log log x f'/f")):
        try:
            value = sp.limit(weight * d / g, x, sp.oo)
        except (NotImplementedError, ValueError, TypeError) as err:
            return None, f"sympy cannot take lim {name} ({type(err).__name__})"
        if value.has(sp.AccumBounds) or value is sp.nan:
            return None, f"lim {name} = {value}: no limit, f' oscillates"
        if value.is_extended_positive:  # oo counts: -exp(-x/1e15) has lim x f'/f = -oo
            return 1, f"lim {name} = {value} > 0"
        if value.is_extended_negative:
            return -1, f"lim {name} = {value} < 0"
    return None, "lim x f'/f = 0 and the log-weighted limits too: the sign of f' is not decided"


def _increase_witnesses(f) -> list[int]:
    """Integers ``t`` with ``f(t+1) > f(t)`` (30 digits) near ``10^3, 10^6, 10^9, 10^12`` (first one per scale)."""
    found = []
    for scale in (10**3, 10**6, 10**9, 10**12):
        values = _values(f, scale, 64)
        hit = next((scale + i for i in range(63) if values[i + 1] > values[i]), None)
        if hit is not None:
            found.append(hit)
    return found


def _monotone_through_steps(g) -> Optional[str]:
    """Why ``g`` is non-increasing on all of ``t >= 0`` when it is a function ``h(x, y_1, ...)`` of ``x`` and of
    step functions ``y_i = floor(u_i(x))`` / ``ceiling(u_i(x))``: each ``u_i`` non-decreasing with ``u_i(0) >= 0``
    (so ``y_i >= 0`` and non-decreasing in ``x``) and ``h`` non-increasing in ``x`` and in every ``y_i`` there
    (sympy's sign of each partial derivative under these assumptions); None when that is not shown."""
    steps = sorted(g.atoms(sp.floor, sp.ceiling), key=sp.default_sort_key)
    if not steps:
        return None
    names = [sp.Symbol(f"y{i}", nonnegative=True) for i in range(len(steps))]
    h = g.xreplace(dict(zip(steps, names)))
    if h.has(sp.floor, sp.ceiling):  # nested steps: not this rule
        return None
    for step in steps:
        inner = step.args[0]
        if not (sp.diff(inner, x).is_nonnegative and inner.subs(x, 0).is_nonnegative):
            return None
    for variable in [x] + names:
        if sp.simplify(sp.diff(h, variable)).is_nonpositive is not True:
            return None
    shown = ", ".join(str(step) for step in steps)
    return (f"f is non-increasing in t and in {shown}, which are non-decreasing and >= 0 in t (signs of the "
            "partial derivatives, sympy)")


def decide_non_increasing(f, branch: EventualBranch) -> ScheduleFinding:
    g = branch.expr
    through_steps = _monotone_through_steps(f) if f == g else None
    if through_steps is not None:
        return ScheduleFinding(NON_INCREASING, HOLDS, f"from t = 0: {through_steps}", SOURCE_33, from_t=0)
    d = sp.diff(g, x)
    sign, why = _sign_at_infinity(g, d)
    if sign is None and "oscillates" in why:
        witnesses = _increase_witnesses(f)
        if len(witnesses) == 4:
            shown = ", ".join(str(w) for w in witnesses)
            return ScheduleFinding(NON_INCREASING, FAILS, f"{why}; eta_(t+1) > eta_t at t = {shown}",
                                   SOURCE_33)
    if sign is None:
        return ScheduleFinding(NON_INCREASING, UNDECIDED, why, SOURCE_33)
    if sign > 0:
        return ScheduleFinding(NON_INCREASING, FAILS, f"eventually increasing: {why}", SOURCE_33)
    if sign == 0:
        start, how = 0, why
    else:
        try:
            rising = sp.solveset(d > 0, x, sp.Interval(0, sp.oo))
        except (NotImplementedError, ValueError, TypeError):
            rising = None
        if rising is not None and not isinstance(rising, sp.ConditionSet) and (
                rising is sp.EmptySet or rising.sup is not sp.oo):
            sup = rising.sup if rising is not sp.EmptySet else sp.Integer(0)
            how = (f"{why}; f' > 0 only on {rising} (solveset)" if rising is not sp.EmptySet
                   else f"{why}; f' <= 0 for all t >= 0 (solveset)")
        else:
            end = last_not_negative(d)
            sup = sp.Integer(0) if end is None else sp.Float(end, 15)
            how = f"{why}; f' < 0 on ({float(sup):.6g}, 1e12] (interval arithmetic)"
        start = max(branch.switch_t, int(math.ceil(float(sup))))
    if branch.detail:
        how += f"; {branch.detail}"
    top = start
    f_at = exact_function(f)
    with mpmath.workdps(50):
        for _ in range(WALK_LIMIT):
            if start == 0 or f_at(mpmath.mpf(start - 1)) < f_at(mpmath.mpf(start)):
                break
            start -= 1
    if start < top:
        how += f"; eta_(t+1) <= eta_t also from t = {start} (checked t = {start}..{top})"
    return ScheduleFinding(NON_INCREASING, HOLDS, f"from t = {start}: {how}", SOURCE_33, from_t=start)


def decide_vanishes(g) -> ScheduleFinding:
    try:
        value = sp.limit(g, x, sp.oo)
    except (NotImplementedError, ValueError, TypeError) as err:
        return ScheduleFinding(VANISHES, UNDECIDED, f"sympy cannot take lim f ({type(err).__name__})", SOURCE_33)
    if value == 0:
        return ScheduleFinding(VANISHES, HOLDS, "lim eta_t = 0", SOURCE_33)
    if isinstance(value, sp.AccumBounds):
        if value.min.is_positive:
            return ScheduleFinding(VANISHES, FAILS, f"eta_t/eta0 oscillates in {value}, above {value.min} > 0",
                                   SOURCE_33)
        return ScheduleFinding(VANISHES, UNDECIDED, f"lim eta_t/eta0 = {value}", SOURCE_33)
    if value is sp.oo:
        return ScheduleFinding(VANISHES, FAILS, "lim eta_t/eta0 = oo: eta_t grows without bound", SOURCE_33)
    if value.is_extended_positive:
        return ScheduleFinding(VANISHES, FAILS, f"lim eta_t = {value} eta0 > 0", SOURCE_33)
    return ScheduleFinding(VANISHES, UNDECIDED, f"lim eta_t/eta0 = {value}", SOURCE_33)


def decide_diverges(g) -> ScheduleFinding:
    try:
        scale = sp.limit(sp.log(g) / sp.log(x), x, sp.oo)
    except (NotImplementedError, ValueError, TypeError):
        scale = None
    if scale is sp.S.NegativeInfinity:  # f <= x^-2 for large x: the sum converges by comparison
        return ScheduleFinding(DIVERGES, FAILS, "lim log f / log t = -oo: eta_t/eta0 falls below t^-2 for large t "
                               "(faster than any power), so the sum converges (comparison test)", SOURCE_33)
    if scale is sp.oo:
        return ScheduleFinding(DIVERGES, HOLDS, "lim log f / log t = oo: eta_t/eta0 exceeds 1 for large t, so the "
                               "sum grows at least like t", SOURCE_33)
    try:
        term = growth_of(g)
        total = power_sum_growth(term)
    except Undecided as err:
        return ScheduleFinding(DIVERGES, UNDECIDED, str(err), SOURCE_33)
    shape = term.text if term.text != "1 (bounded)" else "a constant"
    if isinstance(term.constant, tuple):
        shape = f"between {term.constant[0]} and {term.constant[1]} times {shape}"
    if total.is_bounded:
        return ScheduleFinding(DIVERGES, FAILS, f"eta_t/eta0 ~ {shape}: the sum converges (integral / "
                                                f"comparison test)", SOURCE_33)
    return ScheduleFinding(DIVERGES, HOLDS, f"eta_t/eta0 ~ {shape}, so sum_{{s<t}} eta_s grows like {total.text}",
                           SOURCE_33)


def decide_assumption_34(g, non_increasing: ScheduleFinding, vanishes: ScheduleFinding) -> ScheduleFinding:
    if vanishes.status == FAILS:
        return ScheduleFinding(ASSUMPTION_34, FAILS, f"{vanishes.detail}: with eta_t >= c > 0 the tau-th term "
                               "beta^tau (exp(c1 tau c) - 1) grows without bound once c1 c > log(1/beta), while "
                               "C eta_t stays bounded", SOURCE_34)
    try:
        step = sp.limit(g.subs(x, x - 1) / g, x, sp.oo)
        if step is sp.oo:
            return ScheduleFinding(ASSUMPTION_34, FAILS, "eta_{t-1}/eta_t is unbounded: the tau = 1 term "
                                   "beta (exp(c1 eta_{t-1}) - 1) alone exceeds C eta_t", SOURCE_34)
        if non_increasing.status != HOLDS or vanishes.status != HOLDS:
            return ScheduleFinding(ASSUMPTION_34, UNDECIDED, "the sufficient condition needs eta_t eventually "
                                   "non-increasing and eta_t -> 0", SOURCE_34)
        doubling = sp.limit(g.subs(x, x / 2) / g, x, sp.oo)
        decay = sp.limit(sp.log(g) / x, x, sp.oo)
    except (NotImplementedError, ValueError, TypeError) as err:
        return ScheduleFinding(ASSUMPTION_34, UNDECIDED, f"sympy cannot take a limit ({type(err).__name__})",
                               SOURCE_34)
    if doubling.has(sp.AccumBounds) or not doubling.is_finite:
        return ScheduleFinding(ASSUMPTION_34, UNDECIDED, f"lim eta_(t/2)/eta_t = {doubling}: the head bound of the "
                               "sufficient condition does not apply", SOURCE_34)
    if decay != 0:
        return ScheduleFinding(ASSUMPTION_34, UNDECIDED, f"lim log(eta_t)/t = {decay}: the tail bound of the "
                               "sufficient condition does not apply", SOURCE_34)
    return ScheduleFinding(ASSUMPTION_34, HOLDS, f"head: eta_(t/2)/eta_t -> K = {doubling}, so C = c1 K "
                           "sqrt(beta)/(1 - sqrt(beta))^2 + 1 once c1 K eta_t <= log(1/beta)/2; tail: "
                           "log(eta_t)/t -> 0 and sum_{s<t} eta_s = o(t)", SOURCE_34)


def _source(name: str) -> str:
    return SOURCE_34 if name == ASSUMPTION_34 else SOURCE_33


def _undecided_all(f, why: str) -> ScheduleHypotheses:
    return ScheduleHypotheses(f, EventualBranch(f, 0),
                              tuple(ScheduleFinding(name, UNDECIDED, why, _source(name)) for name in STATEMENTS))


def _asked(name: str, question, *args, deadline: float) -> ScheduleFinding:
    """One hypothesis decided within its share of the time budget (:mod:`rates.symbolic.budget`)."""
    seconds = max(min(QUESTION_SECONDS, deadline - spent()), MIN_QUESTION_SECONDS)
    try:
        return answer_within(seconds, question, *args, what=f"sympy on '{name}'")
    except OutOfTime as late:
        return ScheduleFinding(name, UNDECIDED, f"{late} (time budget per question)", _source(name))
    except (NotImplementedError, ValueError, TypeError, RecursionError, AttributeError) as err:
        return ScheduleFinding(name, UNDECIDED, f"sympy failed on it ({type(err).__name__})", _source(name))


@lru_cache(maxsize=64)
def _decide_cached(f: sp.Expr) -> ScheduleHypotheses:
    deadline = spent() + DECISION_SECONDS
    try:
        branch = answer_within(QUESTION_SECONDS, eventual_branch, f, what="the eventual branch (sympy, interval "
                               "arithmetic)")
    except Undecided as err:
        return _undecided_all(f, str(err))
    except OutOfTime as late:
        return _undecided_all(f, f"{late} (time budget per question)")
    except (NotImplementedError, ValueError, TypeError, RecursionError, AttributeError) as err:
        return _undecided_all(f, f"the eventual branch: sympy failed ({type(err).__name__})")
    g = branch.expr
    monotone = _asked(NON_INCREASING, decide_non_increasing, f, branch, deadline=deadline)
    vanishes = _asked(VANISHES, decide_vanishes, g, deadline=deadline)
    diverges = _asked(DIVERGES, decide_diverges, g, deadline=deadline)
    assumption = _asked(ASSUMPTION_34, decide_assumption_34, g, monotone, vanishes, deadline=deadline)
    return ScheduleHypotheses(f, branch, (monotone, diverges, vanishes, assumption))


def decide(expr) -> ScheduleHypotheses:
    """The four hypotheses for ``eta_0 f(t)`` (any expression in ``t`` and ``eta0``), each with its reason."""
    return _decide_cached(unit_function(expr))
