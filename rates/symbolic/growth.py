"""Growth classes ``t^e (log t)^k (log log t)^m`` of a schedule and of its power sums ``S_p = sum_{s<t} eta_s^p``.

Setting (docs/theory.md, general schedules): a learning rate ``eta_t = eta_0 f(t)`` given as a sympy expression;
the bound template of docs/theory.md section 3 reads the schedule only through the orders of its power sums
(MINIBATCH Cor. D.5/E.5/F.5 and SIGNADAM Cor. C.5 substitute ``(t+2)^(-a)`` into the same template).

Algorithm
    1. *Class of f* (:func:`growth_of`): ``e = lim log f / log x``, then ``k = lim log(f x^-e) / log log x``,
       then ``m`` the same way with ``log log log x``; the remainder must tend to a constant ``c`` in
       ``(0, inf)`` (sympy ``limit``), otherwise the class is undecided. A factor that oscillates between
       two positive bounds (``2 + sin t``: sympy returns ``AccumBounds(1, 3)``) is kept apart: the class is then
       one of *bounds* (``c`` is an interval), enough for comparison tests but not for an equivalent.
    2. *Class of S_p* (:func:`power_sum_growth`): the integral test for an eventually non-increasing ``f``:
       ``int x^a (log x)^b (log log x)^d dx`` grows like ``x^(a+1)...`` (``a > -1``), ``(log x)^(b+1)...``
       (``a = -1, b > -1``), ``(log log x)^(d+1)`` (``a = b = -1, d > -1``) and is bounded below those lines.
    3. *Verification* (:func:`verify_primitive`): for a divergent class the candidate primitive ``G`` is
       checked by sympy: ``lim f^p / G' = c`` in ``(0, inf)`` (Stolz-Cesaro: then ``S_p ~ c G``).

Guarantee: a class is returned only when every limit was decided; otherwise :class:`Undecided` says which
limit sympy could not take. :mod:`rates.symbolic.power_sums` cross-checks the classes against exact partial
sums up to ``t = 10^12``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import sympy as sp

x = sp.Symbol("x", positive=True)  # the continuous step index of the asymptotic analysis


class Undecided(Exception):
    """sympy could not decide a limit the classification needs (the message says which)."""


@dataclass(frozen=True)
class Growth:
    """``c x^e (log x)^k (log log x)^m`` as ``x -> inf``; ``bounded`` means a convergent sum (limit a constant).

    ``constant`` is ``c`` (a sympy number) or, for an oscillating factor, a ``(low, high)`` pair of bounds.
    """

    e: sp.Rational
    k: sp.Rational
    m: sp.Rational
    constant: object = sp.Integer(1)

    def key(self) -> tuple:
        return (sp.Rational(self.e), sp.Rational(self.k), sp.Rational(self.m))

    @property
    def is_bounded(self) -> bool:
        return self.key() == (0, 0, 0)

    @property
    def grows(self) -> bool:
        return self.key() > (0, 0, 0)

    def __truediv__(self, other: Growth) -> Growth:
        return Growth(self.e - other.e, self.k - other.k, self.m - other.m)

    def expr(self, var=x) -> sp.Expr:
        """``x^e (log x)^k (log log x)^m`` without its constant."""
        return var**self.e * sp.log(var) ** self.k * sp.log(sp.log(var)) ** self.m

    @property
    def text(self) -> str:
        parts = []
        if self.e != 0:
            parts.append(f"t^({self.e})" if not (self.e.is_Integer and self.e == 1) else "t")
        if self.k != 0:
            parts.append("log t" if self.k == 1 else f"(log t)^({self.k})")
        if self.m != 0:
            parts.append("log log t" if self.m == 1 else f"(log log t)^({self.m})")
        return " ".join(parts) if parts else "1 (bounded)"


BOUNDED = Growth(sp.Integer(0), sp.Integer(0), sp.Integer(0))


def _limit(expr, what: str):
    try:
        value = sp.limit(expr, x, sp.oo)
    except (NotImplementedError, ValueError, TypeError, RecursionError) as err:
        raise Undecided(f"sympy cannot take lim {what} ({type(err).__name__})") from None
    if isinstance(value, sp.Limit) or value.has(sp.AccumBounds) or value is sp.nan:
        raise Undecided(f"lim {what} does not exist or is not decided ({value})")
    return value


def _oscillating_factor(factor) -> Optional[tuple]:
    """``(low, high)`` when ``factor`` stays between two positive constants without a limit (``2 + sin x``)."""
    if not factor.has(sp.sin, sp.cos):
        return None
    try:
        value = sp.limit(factor, x, sp.oo)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if isinstance(value, sp.AccumBounds) and value.min.is_positive and value.max.is_finite:
        return (value.min, value.max)
    return None


def _exponent(expr, scale, what: str) -> sp.Rational:
    value = _limit(sp.log(expr) / sp.log(scale), what)
    value = sp.nsimplify(value)
    if not value.is_Rational:
        raise Undecided(f"lim {what} = {value} is not a rational exponent")
    return sp.Rational(value)


def growth_of(expr) -> Growth:
    """The class of a positive expression in ``x`` as ``x -> inf`` (module docstring, step 1).

    >>> growth_of(1 / ((x + 2) * sp.log(x + 2))).key()
    (-1, -1, 0)
    >>> growth_of(sp.log(x + 2) / sp.sqrt(x + 2)).key()
    (-1/2, 1, 0)
    """
    expr = sp.sympify(expr)
    bounds = None
    rest = sp.Integer(1)
    for factor in sp.Mul.make_args(sp.factor_terms(expr)):
        found = _oscillating_factor(factor)
        if found is not None and bounds is None:
            bounds = found
        elif found is not None:
            bounds = (bounds[0] * found[0], bounds[1] * found[1])
        else:
            rest *= factor
    e = _exponent(rest, x, "log f / log x")
    r1 = sp.powsimp(rest * x ** (-e))
    k = _exponent(r1, sp.log(x), "log(f x^-e) / log log x")
    r2 = r1 * sp.log(x) ** (-k)
    c = _limit(r2, "f x^-e (log x)^-k")
    m = sp.Integer(0)
    if not (c.is_positive and c.is_finite):
        m = _exponent(r2, sp.log(sp.log(x)), "log(f x^-e (log x)^-k) / log log log x")
        c = _limit(r2 * sp.log(sp.log(x)) ** (-m), "f x^-e (log x)^-k (log log x)^-m")
        if not (c.is_positive and c.is_finite):
            raise Undecided(f"f is not c t^e (log t)^k (log log t)^m with 0 < c < inf (remainder limit {c})")
    constant = c if bounds is None else (c * bounds[0], c * bounds[1])
    return Growth(e, k, m, constant)


def power_sum_growth(term: Growth) -> Growth:
    """Class of ``sum_{s<t} g(s)`` for an eventually non-increasing ``g`` of class ``term`` (integral test).

    ``constant`` is the leading constant of the sum (``c/(e+1)`` etc.); a convergent sum is :data:`BOUNDED`.

    >>> power_sum_growth(Growth(sp.Rational(-1, 2), 0, 0)).key(), power_sum_growth(Growth(-1, -1, 0)).key()
    ((1/2, 0, 0), (0, 0, 1))
    """
    e, k, m = (sp.Rational(v) for v in term.key())
    c = term.constant
    scale = (lambda d: (c[0] / d, c[1] / d)) if isinstance(c, tuple) else (lambda d: c / d)
    if e > -1:
        return Growth(e + 1, k, m, scale(e + 1))
    if e < -1:
        return BOUNDED
    if k > -1:
        return Growth(sp.Integer(0), k + 1, m, scale(k + 1))
    if k < -1:
        return BOUNDED
    if m > -1:
        return Growth(sp.Integer(0), sp.Integer(0), m + 1, scale(m + 1))
    if m < -1:
        return BOUNDED
    raise Undecided("sum of 1/(t log t log log t) grows like log log log t, outside the class t^e (log t)^k "
                    "(log log t)^m")


def power_growth(term: Growth, p) -> Growth:
    """Class of ``g^p`` for ``g`` of class ``term``."""
    p = sp.Rational(p)
    c = term.constant
    constant = (c[0] ** p, c[1] ** p) if isinstance(c, tuple) else c**p
    return Growth(term.e * p, term.k * p, term.m * p, constant)


def verify_primitive(summand, total: Growth) -> Optional[sp.Expr]:
    """``lim summand / G'(x)`` for the primitive ``G = c x^e (log x)^k (log log x)^m`` of a divergent class.

    Returns the limit (1 when the class and its constant are right; Stolz-Cesaro then gives ``S ~ G``), or
    None when there is nothing to verify (a bounded sum, or an oscillating constant).
    """
    if not total.grows or isinstance(total.constant, tuple):
        return None
    derivative = sp.diff(total.constant * total.expr(x), x)
    return _limit(sp.sympify(summand) / derivative, "f^p / G'")
