"""Dominant-term analysis: from a bound template to ``O(t^{-r} (log t)^k)`` per regime of ``a``.

Setting: a margin-gap bound of the docs/theory.md section 3 shape

    gap(t) <= [ sum_j c_j S_{p_j}(t_0, t) + C ] / S_1(0, t),      S_p = sum eta_s^p,  eta_s = eta_0 (s+2)^(-a),

with constants ``c_j, C`` and thresholds ``t_0, t_1`` that do not grow with ``t``.

Algorithm: each power sum has order ``t^(1-ap)`` / ``log t`` / ``1`` (:func:`rates.symbolic.schedules.power_sum_order`).
The regimes of ``a`` are cut at every ``a = 1/p_j`` in (0, 1), at every ``a`` where two growing terms swap
dominance, and at ``a = 1`` (where the denominator turns logarithmic). Inside a regime one numerator term
dominates; the rate is its order divided by the denominator's. The best ``a`` maximises the exponent ``r(a)``
(continuous and piecewise linear in ``a``, so its maximum sits at a cut point).

Guarantee: nothing here knows any particular table; docs/theory.md section 4 is *reproduced* from templates
(tests/test_asymptotics.py compares the two).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp

from rates.symbolic.schedules import Order, a_symbol, power_sum_order

DENOMINATOR_POWER = sp.Integer(1)


@dataclass(frozen=True)
class Rate:
    """``O(t^{-exponent} (log t)^{log_power} (log log t)^{loglog_power})``; ``exponent`` may be an expression in
    ``a`` inside a regime; ``loglog_power`` is 0 for every polynomial schedule (general schedules:
    :mod:`rates.symbolic.theorems.general`)."""

    exponent: sp.Expr
    log_power: int
    loglog_power: int = 0

    @property
    def text(self) -> str:
        if self.loglog_power == 0 and sp.Rational(self.log_power).is_Integer:
            return rate_text(self.exponent, self.log_power)
        return class_rate_text(self.exponent, self.log_power, self.loglog_power)

    @property
    def latex(self) -> str:
        if self.loglog_power == 0 and sp.Rational(self.log_power).is_Integer:
            return rate_latex(self.exponent, self.log_power)
        return class_rate_latex(self.exponent, self.log_power, self.loglog_power)


@dataclass(frozen=True)
class Regime:
    """An open interval ``(lo, hi)`` of ``a`` or a single point ``lo == hi``."""

    lo: sp.Rational
    hi: sp.Rational

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    def contains(self, a) -> bool:
        a = sp.Rational(a)
        return a == self.lo if self.is_point else self.lo < a < self.hi

    def representative(self) -> sp.Rational:
        return self.lo if self.is_point else (self.lo + self.hi) / 2

    @property
    def text(self) -> str:
        return f"a = {self.lo}" if self.is_point else f"a in ({self.lo}, {self.hi})"

    @property
    def latex(self) -> str:
        return f"$a = {_frac_latex(self.lo)}$" if self.is_point else \
            f"$a \\in ({_frac_latex(self.lo)}, {_frac_latex(self.hi)})$"


def _frac_latex(x) -> str:
    x = sp.nsimplify(x)
    return sp.latex(x)


def normal_form(expr) -> sp.Expr:
    """``sp.simplify(expr)``, computed cheaply for the expressions this module builds.

    Every exponent here is a polynomial in ``a`` of degree <= 1 with rational coefficients (``1 - a p``
    minus ``1 - a``, or a constant); for those, ``sp.expand`` returns exactly the expression ``simplify``
    returns (tests/test_asymptotics.py compares the two over every template's regimes and a grid of
    coefficients). Measured: 0.46 ms a call against 6.8 ms, and no first-call import of
    ``sympy.physics.units`` (~0.25 s), which ``simplify`` pulls in. Anything else still goes through
    ``simplify``.

    >>> normal_form((1 - a_symbol) - (1 - 2 * a_symbol)), normal_form(1 - a_symbol / 2 - sp.Rational(1, 2))
    (a, 1/2 - a/2)
    """
    expr = sp.sympify(expr)
    if expr.free_symbols <= {a_symbol} and expr.is_polynomial(a_symbol):
        return sp.expand(expr)
    return sp.simplify(expr)


def _growth_exponent(p) -> sp.Expr:
    return 1 - a_symbol * sp.Rational(p)


def regime_cuts(powers: Sequence) -> list[sp.Rational]:
    """Cut points of (0, 1]: ``a = 1/p`` for each power, pairwise dominance swaps, and ``a = 1``.

    >>> regime_cuts([2]), regime_cuts([2, sp.Rational(3, 2)])  # NSD; Adam's extra sum of eta^(3/2)
    ([1/2, 1], [1/2, 2/3, 1])
    """
    powers = sorted({sp.Rational(p) for p in powers} | {DENOMINATOR_POWER})
    cuts = {sp.Integer(1)}
    for p in powers:
        if p > 0 and 0 < 1 / p < 1:
            cuts.add(1 / p)
    # Growing terms t^(1-ap) and t^(1-aq) only meet at a = 0; solving keeps the cut set honest anyway.
    for i, p in enumerate(powers):
        for q in powers[i + 1:]:
            for root in sp.solve(sp.Eq(_growth_exponent(p), _growth_exponent(q)), a_symbol):
                if root.is_rational and 0 < root < 1:
                    cuts.add(sp.Rational(root))
    return sorted(cuts)


def regimes(powers: Sequence) -> list[Regime]:
    """The regimes of ``a`` in order: ``(0, c_1), {c_1}, (c_1, c_2), ..., {1}``."""
    out, lo = [], sp.Integer(0)
    for cut in regime_cuts(powers):
        out.append(Regime(lo, cut))
        out.append(Regime(cut, cut))
        lo = cut
    return out


def regime_rates(powers: Sequence, has_constant: bool = True) -> list[tuple[Regime, Rate]]:
    """Regimes with their rates; a cut that changes nothing (same rate on both sides and at the point,
    e.g. ``a = 1/2`` for Adam, where the ``sum eta^2`` term stops growing but ``sum eta^{3/2}`` still
    dominates) is merged away so that each listed regime has one rate formula."""
    merged: list[tuple[Regime, Rate]] = []
    for regime in regimes(powers):
        rate = rate_in_regime(powers, regime, has_constant)
        if not regime.is_point and len(merged) >= 2:
            (left, left_rate), (point, point_rate) = merged[-2], merged[-1]
            at_point = left_rate.exponent.subs(a_symbol, point.lo)
            if (not left.is_point and point.is_point and normal_form(left_rate.exponent - rate.exponent) == 0
                    and left_rate.log_power == rate.log_power == point_rate.log_power
                    and normal_form(at_point - point_rate.exponent) == 0):
                merged[-2:] = [(Regime(left.lo, regime.hi), left_rate)]
                continue
        merged.append((regime, rate))
    return merged


def regime_of(powers: Sequence, a, has_constant: bool = True) -> Regime:
    """The (merged) regime that contains the exact value ``a``."""
    for regime, _ in regime_rates(powers, has_constant):
        if regime.contains(a):
            return regime
    raise ValueError(f"a = {a} is outside (0, 1]")


def dominant_order(powers: Sequence, a, has_constant: bool = True) -> tuple[Order, object]:
    """Largest order among the numerator's power sums (and a constant term) at a fixed rational ``a``.

    Returns the order and the power that attains it (``None`` when the constant term dominates alone).
    """
    best, arg = (Order(sp.Integer(0), 0), None) if has_constant else (None, None)
    for p in powers:
        order = power_sum_order(p, a)
        if best is None or order.key() > best.key():
            best, arg = order, sp.Rational(p)
    return best, arg


def rate_at(powers: Sequence, a, has_constant: bool = True) -> Rate:
    """Rate of the template at one exact ``a``: dominant numerator order over ``S_1(0, t)``.

    The NSD template (numerator ``sum eta^2``) at the four cases of docs/theory.md section 4:

    >>> [rate_at([2], a).text for a in (sp.Rational(3, 10), sp.Rational(1, 2), sp.Rational(3, 4), 1)]
    ['t^(-3/10)', 'log t / t^(1/2)', 't^(-1/4)', '1 / log t']
    """
    numerator, _ = dominant_order(powers, a, has_constant)
    ratio = numerator / power_sum_order(DENOMINATOR_POWER, a)
    return Rate(-ratio.exponent, ratio.log_power)


def rate_in_regime(powers: Sequence, regime: Regime, has_constant: bool = True) -> Rate:
    """Rate over a whole regime; inside an open interval the exponent is an expression in ``a``.

    The dominant term is the one at the regime's representative point; its order is rebuilt symbolically
    (``1 - a p`` for a growing sum) so that the interval's rate reads ``t^{-a}``, ``t^{-(1-a)}``, ...
    """
    if regime.is_point:
        return rate_at(powers, regime.lo, has_constant)
    a = regime.representative()
    numerator, arg = dominant_order(powers, a, has_constant)
    num_exp = _growth_exponent(arg) if (arg is not None and numerator.exponent > 0) else numerator.exponent
    den = power_sum_order(DENOMINATOR_POWER, a)
    den_exp = _growth_exponent(DENOMINATOR_POWER) if den.exponent > 0 else den.exponent
    return Rate(normal_form(den_exp - num_exp), numerator.log_power - den.log_power)


def best_a(powers: Sequence, has_constant: bool = True) -> sp.Rational:
    """The ``a`` maximising the exponent ``r(a)``; ties go to the smaller log power, then the smaller ``a``.

    ``r`` is continuous and linear between cuts, so comparing cut points and the open intervals' closures
    suffices; a supremum approached only inside an open interval would show up as an interval endpoint
    with a larger limit than every attained value, which we report as that endpoint.

    >>> best_a([2]), best_a([2, sp.Rational(3, 2)])  # NSD: 1/2 (rate log t / sqrt t); Adam: 2/3 (t^(-1/3))
    (1/2, 2/3)
    """
    candidates = []
    for regime, rate in regime_rates(powers, has_constant):
        if regime.is_point:
            candidates.append((sp.Rational(rate.exponent), -rate.log_power, -regime.lo, regime.lo))
        else:
            for end in (regime.lo, regime.hi):
                if end > 0:
                    limit = (sp.Rational(rate.exponent.subs(a_symbol, end)) if rate.exponent.free_symbols
                             else rate.exponent)
                    candidates.append((limit, -10**9, -end, end))  # a limit, never preferred over an attained tie
    return max(candidates)[3]


@dataclass(frozen=True)
class _Notation:
    """How one output format writes powers of t, logs and division."""

    log: str
    log_power: str  # format with k
    power: str  # format with the exponent string
    divide: str
    render: object  # sympy expression -> string


_TEXT = _Notation("log t", "(log t)^{k}", "t^({})", " / ", str)
_LATEX = _Notation(r"\log t", r"(\log t)^{{{k}}}", "t^{{{}}}", "/", sp.latex)


def _format_rate(exponent, log_power: int, notation: _Notation) -> str:
    r = normal_form(exponent)
    k = int(log_power)
    log = notation.log if abs(k) == 1 else notation.log_power.format(k=abs(k))
    if r.free_symbols:
        inner = notation.render(r) if (r.is_Symbol or r.is_Mul) else f"({notation.render(r)})"
        power = notation.power.format(f"-{inner}")
        return power if k == 0 else (f"{power} {log}" if k > 0 else f"{power}{notation.divide}{log}")
    if k == 0:
        return "1" if r == 0 else notation.power.format(f"-{r}")
    if k > 0:
        return log if r == 0 else f"{log} / {notation.power.format(r)}"
    return f"1{notation.divide}{log}" if r == 0 else f"{notation.power.format(f'-{r}')}{notation.divide}{log}"


def rate_text(exponent, log_power: int) -> str:
    """Plain text: ``t^(-3/10)``, ``log t / t^(1/2)``, ``1 / log t``, ``t^(-(1 - a))``."""
    return _format_rate(exponent, log_power, _TEXT)


def rate_latex(exponent, log_power: int) -> str:
    """LaTeX: ``t^{-3/10}``, ``\\log t / t^{1/2}``, ``1/\\log t``, ``t^{-(1 - a)}``."""
    return _format_rate(exponent, log_power, _LATEX)


def _class_parts(exponent, log_power, loglog_power, latex: bool) -> tuple[list[str], list[str]]:
    """Numerator and denominator factors of ``t^-r (log t)^k (log log t)^m`` (all three exact rationals)."""
    r, k, m = sp.Rational(exponent), sp.Rational(log_power), sp.Rational(loglog_power)
    power = (lambda e: f"t^{{{sp.latex(e)}}}") if latex else (lambda e: f"t^({e})")
    names = ((r"\log t", r"\log\log t") if latex else ("log t", "log log t"))

    def factor(name, e):
        if e == 1:
            return name
        if latex:
            return f"({name})^{{{sp.latex(e)}}}"
        return f"({name})^{e}" if e.is_Integer else f"({name})^({e})"

    top, bottom = [], []
    if r < 0:
        top.append(power(-r))
    elif r > 0:
        bottom.append(power(r))
    for name, e in zip(names, (k, m)):
        if e > 0:
            top.append(factor(name, e))
        elif e < 0:
            bottom.append(factor(name, -e))
    return top, bottom


def class_rate_text(exponent, log_power, loglog_power) -> str:
    """Plain text of a general schedule's rate: ``1 / log log t``, ``1 / (log t)^2``, ``(log t)^2 / t^(1/2)``.

    >>> class_rate_text(0, 0, -1), class_rate_text(0, -2, 0), class_rate_text(sp.Rational(1, 2), 2, 0)
    ('1 / log log t', '1 / (log t)^2', '(log t)^2 / t^(1/2)')
    """
    top, bottom = _class_parts(exponent, log_power, loglog_power, latex=False)
    head = " ".join(top) if top else "1"
    return head if not bottom else f"{head} / {' '.join(bottom)}"


def class_rate_latex(exponent, log_power, loglog_power) -> str:
    """LaTeX of a general schedule's rate: ``1/\\log\\log t``, ``1/(\\log t)^{2}``."""
    top, bottom = _class_parts(exponent, log_power, loglog_power, latex=True)
    head = " ".join(top) if top else "1"
    return head if not bottom else f"{head}/{' '.join(bottom)}"
