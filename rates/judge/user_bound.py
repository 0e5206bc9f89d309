"""A researcher's own conjectured bound, judged exactly as a theorem's bound template is.

Setting
    ``rates fit --bound EXPR``: a conjectured upper bound on the margin gap ``gamma - gamma(W_t)`` written as a
    sum of terms, each with its own unknown positive constant, in the step ``t``, ``log``, ``sqrt``, ``exp`` and
    the power sums ``S(p) = sum_{s<t} eta_s^p`` of the run's own schedule (``eta_0`` included), e.g.
    ``(C2*S(2) + C0)/S(1)`` or ``C1*log(t)/t**(1/4) + C2/t``. Constants are the names starting with ``C``; the
    bound must be linear in them, and every part of it must carry one (a constant-free part would be a known
    function, which no theorem's template has).

Algorithm
    1. *Parse* (:func:`parse_bound`): the text is read by Python's own expression parser and only the nodes
       listed above are turned into sympy (no ``eval``); anything else is refused in one line naming
       ``--bound``. The bound is split into members ``f_m = d bound / d C_m`` (one per constant; a constant that
       is not a plain factor of its terms is refused).
    2. *Evaluate* (:class:`BoundOnRun`): each member at the checkpoints, with ``S(p)`` the exact partial sums of
       the run's schedule: Hurwitz-zeta sums for ``eta_t = eta_0 (t+2)^(-a)``
       (:meth:`rates.symbolic.schedules.Schedule.partial_sums_array`), chunked float64 sums of the schedule's
       values for any other schedule (:meth:`rates.schedule.Schedule.unit_values`).
    3. *Judge* (:func:`judge_user_bound`): :func:`rates.judge.compare.judge` with the members as the bound's
       unknown-constant terms -- the same window, slope fit, envelope over the constants, three findings and
       verdict as a theorem's template (docs/theory.md section 4). The stated rate of finding (iii) is the
       order ``t^-r (log t)^k`` of the asymptotically largest member, derived from the leading order of each
       ``S(p)`` (:func:`member_orders`, polynomial schedules); where it cannot be derived, (iii) compares the
       gap with the bound's shape instead, and the record says so.

Guarantee
    The same honesty rules as a theorem's verdict: ``violated`` only when the gap decays slower than every
    positive combination of the members over the window (95% interval excluding it); a run that has not
    entered its separable, monotone-loss phase, a frozen gap or a window at the solver floor is
    ``inconclusive`` with its numbers. The bound is labelled "user bound": it cites no paper.

Reference
    The bound model with unknown constants is docs/findings.md F8; the comparison rule docs/theory.md
    section 4; the template it mirrors docs/theory.md section 3.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

import numpy as np
import sympy as sp

from rates.errors import InputError
from rates.judge.compare import DEFAULT_TOLERANCE, Verdict, judge, measurement_lines
from rates.numeric.run_config import RunConfig
from rates.numeric.trajectory import Run
from rates.schedule import Schedule

OPTION = "bound"
LABEL = "user bound"
FUNCTIONS = {"log": sp.log, "sqrt": sp.sqrt, "exp": sp.exp}
POWER_SUM = "S"
MAX_CONSTANTS = 8
ALLOWED = ("t, numbers, + - * / ** (or ^), log(.), sqrt(.), exp(.), S(p) for p > 0 a number, "
           "and constants named C, C0, C1, C_noise, ...")
# float64 partial sums are formed chunk by chunk (the pairwise sum of each chunk, then math.fsum of the
# chunks): a 1e8-step run costs 1e8 schedule values but never holds more than one chunk of them
SUM_CHUNK = 1 << 20
MIN_CHECKED_T = 2
# S(p) for 0 < p <= MAX_POWER_SUM_P (a template's powers are 1 and 2; eta_t^p underflows long before p = 100)
MAX_POWER_SUM_P = 100
# t**e with |e| <= MAX_T_EXPONENT; a power of numbers at most MAX_POWER_DIGITS digits (rates.schedule), checked
# before sympy forms it (10**10**10 would take minutes)
MAX_T_EXPONENT = 1000

t_symbol = sp.Symbol("t", positive=True)


@dataclass(frozen=True)
class UserBound:
    """A parsed bound: its text, the sympy expression and one member per unknown constant.

    ``powers`` maps each ``S(p)`` symbol of the expression to its exact ``p``; ``members`` are the shapes
    ``d bound / d C`` in the order of ``constants``.
    """

    text: str
    expr: sp.Expr
    constants: tuple[sp.Symbol, ...]
    members: tuple[sp.Expr, ...]
    powers: dict[sp.Symbol, sp.Rational] = field(hash=False, compare=False)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sp.sstr(member) for member in self.members)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "expr": sp.sstr(self.expr), "source": LABEL,
                "members": [{"constant": str(c), "shape": label} for c, label in zip(self.constants, self.labels)]}


# ------------------------------------------------------------------------------------------------- parse


def _refuse(message: str) -> InputError:
    return InputError(OPTION, message)


class _Reader(ast.NodeVisitor):
    """Python's expression tree -> sympy, node by node; every other node is refused (nothing is evaluated)."""

    def __init__(self, text: str):
        self.text = text
        self.powers: dict[sp.Symbol, sp.Rational] = {}
        self.constants: dict[str, sp.Symbol] = {}

    def generic_visit(self, node: ast.AST) -> Any:
        piece = ast.get_source_segment(self.text, node) or type(node).__name__
        raise _refuse(f"{piece!r} is not allowed in a bound; allowed: {ALLOWED}")

    def visit_Expression(self, node: ast.Expression) -> sp.Expr:
        return self.visit(node.body)

    def visit_Constant(self, node: ast.Constant) -> sp.Expr:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            return self.generic_visit(node)
        if isinstance(node.value, float) and not math.isfinite(node.value):
            return self.generic_visit(node)
        # a decimal is read exactly as written (0.25 is 1/4), as --a reads its exponent
        return sp.Rational(ast.get_source_segment(self.text, node) or repr(node.value))

    def visit_Name(self, node: ast.Name) -> sp.Expr:
        if node.id == "t":
            return t_symbol
        if node.id.startswith("C") and node.id.isidentifier():
            return self.constants.setdefault(node.id, sp.Symbol(node.id, positive=True))
        if node.id in FUNCTIONS or node.id == POWER_SUM:
            raise _refuse(f"{node.id} is a function: write {node.id}(...); allowed: {ALLOWED}")
        raise _refuse(f"unknown name {node.id!r}; allowed: {ALLOWED}")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> sp.Expr:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        return self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> sp.Expr:
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise _refuse(f"division by zero in {ast.get_source_segment(self.text, node)!r}")
            return left / right
        if isinstance(node.op, ast.Pow):
            self._check_power(left, right, node)
            return left**right
        return self.generic_visit(node)

    def _check_power(self, base: sp.Expr, exponent: sp.Expr, node: ast.BinOp) -> None:
        from rates.schedule import MAX_POWER_DIGITS

        if not exponent.is_Rational:
            return
        piece = ast.get_source_segment(self.text, node) or "a power"
        if base.is_Rational:
            if base in (0, 1, -1):
                return
            digits = len(str(abs(base.p))) + len(str(base.q))
            if abs(exponent.p) * digits > MAX_POWER_DIGITS:
                raise _refuse(f"the power {piece[:60]} would have more than {MAX_POWER_DIGITS} digits; powers of "
                              f"numbers must stay within 10^{MAX_POWER_DIGITS}")
        elif abs(exponent) > MAX_T_EXPONENT:
            raise _refuse(f"the exponent in {piece[:60]} is {'beyond 1e6' if abs(exponent) > 10**6 else exponent}; "
                          f"exponents must lie in [-{MAX_T_EXPONENT}, {MAX_T_EXPONENT}]")

    def visit_Call(self, node: ast.Call) -> sp.Expr:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS and name != POWER_SUM or node.keywords or len(node.args) != 1:
            return self.generic_visit(node)
        argument = self.visit(node.args[0])
        if name != POWER_SUM:
            return FUNCTIONS[name](argument)
        if not (argument.is_number and argument.is_real and 0 < argument <= MAX_POWER_SUM_P):
            raise _refuse(f"S(p) needs a number p > 0 (at most {MAX_POWER_SUM_P}), "
                          f"got S({ast.get_source_segment(self.text, node.args[0])})")
        p = sp.nsimplify(argument, rational=True)
        symbol = sp.Symbol(f"S({sp.sstr(p)})", positive=True)
        self.powers[symbol] = sp.Rational(p)
        return symbol


def parse_bound(text: str) -> UserBound:
    """Read ``text`` into a :class:`UserBound` (module docstring, step 1); :class:`InputError` naming ``--bound``.

    >>> bound = parse_bound("(C2*S(2) + C0)/S(1)")
    >>> [str(c) for c in bound.constants], bound.labels
    (['C0', 'C2'], ('1/S(1)', 'S(2)/S(1)'))
    >>> parse_bound("C1*log(t)/t^(1/4) + C2/t").labels
    ('log(t)/t**(1/4)', '1/t')
    """
    # ^ is power as mathematicians write it; in Python's grammar it binds looser than * and /, so it is
    # rewritten before parsing (t^(1/4) = t**(1/4), and C/t^(1/4) keeps its meaning)
    source = str(text).strip().replace("^", "**")
    if not source:
        raise _refuse("is empty; write a bound such as 'C1/S(1) + C2*S(2)/S(1)'")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        raise _refuse(f"cannot be parsed ({err.msg}): {source!r}") from None
    reader = _Reader(source)
    expr = reader.visit(tree)
    constants = tuple(sorted(reader.constants.values(), key=lambda c: c.name))
    if not constants:
        raise _refuse(f"{source!r} has no unknown constant; give each term its own, e.g. 'C1/t + C2*log(t)/t'")
    if len(constants) > MAX_CONSTANTS:
        raise _refuse(f"has {len(constants)} constants; at most {MAX_CONSTANTS}")
    members = []
    for c in constants:
        member = sp.simplify(sp.diff(expr, c))
        if any(sp.simplify(sp.diff(member, other)) != 0 for other in constants):
            raise _refuse(f"{c} is not a plain factor of its terms (the bound must be a sum of C * shape: "
                          f"no C^2, C1*C2, log(C), ...)")
        if member == 0:
            raise _refuse(f"{c} multiplies nothing")
        if member.is_positive is False or member.is_nonpositive:  # S(p) and t are positive symbols here
            raise _refuse(f"the term {sp.sstr(member)} of {c} is never positive; a bound's terms are positive")
        members.append(member)
    rest = sp.simplify(expr - sum(c * member for c, member in zip(constants, members)))
    if rest != 0:
        raise _refuse(f"the part {sp.sstr(rest)} carries no constant; give every term its own (e.g. C9*({rest}))")
    stray = expr.free_symbols - set(constants) - set(reader.powers) - {t_symbol}
    if stray:  # cannot happen through the reader; kept so that a later name cannot slip through silently
        raise _refuse(f"unknown names {', '.join(sorted(map(str, stray)))}")
    return UserBound(source, expr, constants, tuple(members), dict(reader.powers))


# -------------------------------------------------------------------------------------------- evaluate


def power_sums(schedule: Schedule, eta0: float, powers: Sequence[sp.Rational],
               t: np.ndarray) -> dict[sp.Rational, np.ndarray]:
    """``S_p(t) = sum_{s<t} eta_s^p`` of ``eta_t = eta0 * schedule(t)`` for each ``p``, at integer checkpoints ``t``."""
    t = np.floor(np.asarray(t, dtype=float)).astype(np.int64)
    if np.any(t < 1):
        raise ValueError("power sums need t >= 1")
    eta0 = float(eta0)
    if schedule.is_polynomial:
        from rates.symbolic.schedules import Schedule as PolynomialSums

        unit = PolynomialSums(sp.Rational(schedule.a.numerator, schedule.a.denominator), 1)
        return {p: eta0 ** float(p) * unit.partial_sums_array(p, t) for p in powers}
    order = np.argsort(t)
    wanted = t[order]
    sums = {p: np.empty(len(t)) for p in powers}
    totals = {p: [] for p in powers}
    start, i = 0, 0
    while i < len(wanted):
        stop = min(start + SUM_CHUNK, int(wanted[-1]))
        values = eta0 * schedule.unit_values(start, stop)
        raised = {p: values ** float(p) for p in powers}
        while i < len(wanted) and wanted[i] <= stop:
            for p in powers:
                sums[p][order[i]] = math.fsum(totals[p]) + float(np.sum(raised[p][: wanted[i] - start]))
            i += 1
        for p in powers:
            totals[p].append(float(np.sum(raised[p])))
        start = stop
    return sums


@dataclass
class BoundOnRun:
    """A :class:`UserBound` on one run's schedule: what :func:`rates.judge.compare.judge` asks of a bound
    (``bound_shape``, ``bound_members``) with ``S(p)`` the run's exact partial sums."""

    bound: UserBound
    schedule: Schedule
    eta0: float

    def _values(self, t: np.ndarray) -> list[np.ndarray]:
        t = np.asarray(t, dtype=float)
        symbols = list(self.bound.powers)
        sums = power_sums(self.schedule, self.eta0, [self.bound.powers[s] for s in symbols], t) if symbols else {}
        arguments = [np.floor(t)] + [sums[self.bound.powers[s]] for s in symbols]
        values = []
        for label, member in zip(self.bound.labels, self.bound.members):
            function = sp.lambdify([t_symbol] + symbols, member, modules="numpy")
            with np.errstate(all="ignore"):
                value = np.broadcast_to(np.asarray(function(*arguments), dtype=float), t.shape).copy()
            bad = np.flatnonzero(~(np.isfinite(value) & (value > 0)))
            if len(bad):
                raise _refuse(f"the term {label} is {value[bad[0]]:.3g} at t = {int(t[bad[0]])}; every term must be "
                              "positive and finite at the checkpoints it is judged on")
            values.append(value)
        return values

    def bound_members(self, t: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
        return self._values(t), list(self.bound.labels)

    def bound_shape(self, t: np.ndarray) -> np.ndarray:
        return np.sum(self._values(t), axis=0)


def check_positive(bound: UserBound, schedule: Schedule, eta0: float, t: np.ndarray,
                   window: Optional[tuple[float, float]] = None) -> None:
    """Refuse (one line naming ``--bound``, the term and the first offending ``t``) a bound with a term that is
    not positive and finite at a checkpoint it can be judged on: inside the user's ``window`` ``(T0, T1)``, or
    from the earliest start of an automatic window (:data:`rates.judge.compare.MIN_WINDOW_START`) on. A bound is
    judged, and drawn, on its window only, so ``C/log(log(t))`` (negative at ``t = 2``) is a bound. Called before
    a run starts or a file is fitted, so that nothing is written for a bound that cannot be judged."""
    from rates.judge.compare import MIN_WINDOW_START

    t = np.unique(np.floor(np.asarray(t, dtype=float)))
    low, high = (MIN_WINDOW_START, np.inf) if window is None else (max(window[0], 1), window[1])
    BoundOnRun(bound, schedule, eta0)._values(t[(t >= max(low, 1)) & (t <= high)])


def planned_checkpoints(steps: int, count: int = 200) -> np.ndarray:
    """Log-spaced ``t`` in ``[2, steps]``: where a run of ``steps`` steps can be judged (a superset's stand-in)."""
    top = max(int(steps), MIN_CHECKED_T)
    return np.unique(np.round(np.logspace(math.log10(MIN_CHECKED_T), math.log10(top), count)))


# ------------------------------------------------------------------------------------------------ orders


@dataclass(frozen=True)
class MemberOrder:
    """``f(t) ~ t^-exponent (log t)^log_power`` as ``t -> infinity`` for one member (None: not derived)."""

    label: str
    exponent: Optional[sp.Rational]
    log_power: Optional[sp.Rational]
    note: str = ""

    @property
    def known(self) -> bool:
        return self.exponent is not None and self.log_power is not None

    def text(self) -> str:
        if not self.known:
            return f"{self.label}: order not derived ({self.note})"
        return f"{self.label} ~ {rate_text(self.exponent, self.log_power)}"

    def to_json(self) -> dict[str, Any]:
        return {"shape": self.label, "exponent": None if self.exponent is None else str(self.exponent),
                "log_power": None if self.log_power is None else str(self.log_power), "note": self.note}


def rate_text(exponent: sp.Rational, log_power: sp.Rational) -> str:
    """``t^-1/4 (log t)^1``-style text of ``t^-exponent (log t)^log_power``."""
    parts = [] if exponent == 0 else [f"t^{sp.sstr(-exponent)}"]
    if log_power != 0:
        parts.append(f"(log t)^{sp.sstr(log_power)}")
    return " ".join(parts) or "1"


def _order(expr: sp.Expr) -> tuple[Optional[sp.Rational], Optional[sp.Rational]]:
    """``(e, k)`` with ``expr ~ t^e (log t)^k``, from two sympy limits (None where sympy cannot decide)."""
    try:
        e = sp.limit(sp.log(expr) / sp.log(t_symbol), t_symbol, sp.oo)
        if not (e.is_number and e.is_finite):
            return None, None
        e = sp.nsimplify(e, rational=True)
        k = sp.limit(sp.log(expr * t_symbol ** (-e)) / sp.log(sp.log(t_symbol)), t_symbol, sp.oo)
        if not (k.is_number and k.is_finite):
            return None, None
        k = sp.nsimplify(k, rational=True)
        # the class holds only if what is left tends to a positive constant: 1/log log t has e = k = 0 but is
        # no constant, and is refused here rather than called O(1)
        rest = sp.limit(expr * t_symbol ** (-e) * sp.log(t_symbol) ** (-k), t_symbol, sp.oo)
        if not (rest.is_number and rest.is_finite and rest.is_positive):
            return None, None
        return sp.Rational(e), sp.Rational(k)
    except (NotImplementedError, ValueError, TypeError, sp.PoleError):
        return None, None


def member_orders(bound: UserBound, schedule: Schedule) -> list[MemberOrder]:
    """Each member's order, with ``S(p)`` replaced by its leading order for ``eta_0 (t+2)^(-a)``
    (:meth:`rates.symbolic.schedules.Schedule.partial_sum_leading`: ``t^(1-ap)/(1-ap)``, ``log t`` or a
    Hurwitz-zeta constant)."""
    schedule = schedule if bound.powers else None
    if schedule is not None and not schedule.is_polynomial:
        why = "S(p)'s order is derived here for eta_0 (t+2)^(-a) schedules only"
        return [MemberOrder(label, None, None, why) for label in bound.labels]
    subs = {}
    if schedule is not None:
        from rates.symbolic.schedules import Schedule

        unit = Schedule(sp.Rational(schedule.a.numerator, schedule.a.denominator), 1)
        subs = {symbol: unit.partial_sum_leading(p, t_symbol) for symbol, p in bound.powers.items()}
    orders = []
    for label, member in zip(bound.labels, bound.members):
        e, k = _order(member.subs(subs))
        if e is None:
            orders.append(MemberOrder(label, None, None, "not of the form c t^e (log t)^k as t -> infinity, or "
                                                         "sympy could not find the limits that decide it"))
        else:
            orders.append(MemberOrder(label, -e, k))
    return orders


def stated_order(orders: Sequence[MemberOrder]) -> Optional[MemberOrder]:
    """The asymptotically largest member (largest ``t^e (log t)^k``), None unless every order is known."""
    if not orders or not all(order.known for order in orders):
        return None
    return max(orders, key=lambda order: (-order.exponent, order.log_power))


# ------------------------------------------------------------------------------------------------- judge


@dataclass
class UserBoundRecord:
    """One configuration judged against a user bound: its runs, the bound, the members' orders and the verdict."""

    config: RunConfig  # the first run's; its configuration fields are the record's
    seeds: list[Any]
    bound: UserBound
    on_run: BoundOnRun
    orders: list[MemberOrder]
    stated: Optional[MemberOrder]
    verdict: Verdict
    runs: list[Run]
    replicates: Optional[dict[str, Any]] = None

    @property
    def title(self) -> str:
        config = self.config
        schedule = f"schedule {config.schedule.text}" if config.general_schedule else f"a = {config.a}"
        return f"{config.algo} ({config.norm}), {schedule}"

    def to_json(self) -> dict[str, Any]:
        return {"schema": "rates.fit/1", "config": self.config.configuration(), "seeds": self.seeds, "prediction": None,
                "user_bound": {**self.bound.to_json(), "orders": [order.to_json() for order in self.orders],
                               "stated_rate": None if self.stated is None else self.stated.to_json()},
                "verdict": self.verdict.to_json(), "gate": None, "replicates": self.replicates}

    def describe(self) -> str:
        """The verdict block, line for line as a theorem's (``rates fit``), the bound labelled as the user's."""
        v = self.verdict
        lines = [f"{self.title}  (seeds {', '.join(str(s) for s in self.seeds)})"]
        if self.replicates is not None:
            rep = self.replicates
            lines.append(f"  replicates     : {rep['independent']} independent of {rep['runs']} run(s) "
                         f"({rep['varies']})")
        lines.append(f"  {LABEL}     : {self.bound.text}  [{LABEL}: no theorem, no source; constants "
                     f"{', '.join(map(str, self.bound.constants))} unknown, > 0]")
        lines += [f"    term         : {order.text()}" for order in self.orders]
        if self.stated is not None:
            lines.append(f"  stated rate    : O({rate_text(self.stated.exponent, self.stated.log_power)}), its largest "
                         f"term [derived from the leading order of each S(p)]")
        lines += measurement_lines(v, self.stated.exponent if self.stated is not None else None)
        lines.append("  gap fitted     : gamma - gamma(W_t), as recorded")
        if v.assessment is not None:
            lines.append(f"  (i) bound      : {v.assessment.bound.outcome} - {v.assessment.bound.text}")
            lines.append(f"  (ii) dominant  : {v.assessment.dominant.text}")
            lines.append(f"  (iii) stated   : {v.assessment.stated_rate.outcome} - {v.assessment.stated_rate.text}")
        lines.append(f"  verdict        : {v.label} (tolerance {v.tolerance:g}) - {v.reason}")
        lines += [f"  note           : {note}" for note in v.notes]
        return "\n".join(lines)


def judge_user_bound(runs: Sequence[Run], bound: UserBound, tolerance: float = DEFAULT_TOLERANCE,
                     window: Optional[tuple[float, float]] = None, seeds: Optional[list[Any]] = None,
                     replicates: Optional[dict[str, Any]] = None) -> UserBoundRecord:
    """Judge the runs (independent replicates of one configuration) against ``bound`` (module docstring)."""
    config = runs[0].config
    on_run = BoundOnRun(bound, config.schedule, config.eta0)
    orders = member_orders(bound, config.schedule)
    stated = stated_order(orders)
    exponent = None if stated is None else float(stated.exponent)
    log_power = None
    notes = [f"{LABEL}: the judgement is the one of a theorem's template (docs/theory.md section 4) with the "
             "constants unknown and positive; 'violated' means no choice of them fits the gap's decay over the window"]
    if stated is not None and stated.log_power.q != 1:
        notes.append(f"the largest term's log power {stated.log_power} is not an integer: finding (iii) compares the "
                     "gap with the bound's shape, unit constants")
        exponent = None
    elif stated is not None:
        log_power = int(stated.log_power)
    else:
        unknown = "; ".join(order.text() for order in orders if not order.known)
        notes.append(f"no stated rate ({unknown}): finding (iii) compares the gap with the bound's shape, unit "
                     "constants")
    verdict = judge(runs, on_run, exponent=exponent, tolerance=tolerance, window=window, log_power=log_power)
    if stated is not None and verdict.envelope is not None:
        slowest = verdict.envelope.labels[int(np.argmax(verdict.envelope.members))]
        order = next(order for order in orders if order.label == slowest)
        if (order.exponent, order.log_power) != (stated.exponent, stated.log_power):
            slopes = dict(zip(verdict.envelope.labels, verdict.envelope.members))
            why = (f"over the window the slowest term is {slowest} (slope {slopes[slowest]:+.3f}), not the "
                   f"asymptotically largest {stated.label} (slope {slopes[stated.label]:+.3f}): the window is "
                   "pre-asymptotic for this bound")
            if verdict.label in ("tight", "loose"):  # (iii) was measured against the wrong term; 'violated' stands
                verdict = replace(verdict, label="inconclusive", reason=f"{why}; run longer (was {verdict.label}: "
                                                                         f"{verdict.reason})")
            else:
                notes.append(why)
    verdict.notes[:0] = notes
    seeds = seeds if seeds is not None else [run.config.seed_or(i) for i, run in enumerate(runs)]
    return UserBoundRecord(config, seeds, bound, on_run,
                           orders, stated, verdict, list(runs), replicates)
