"""Polynomially decaying learning rates and their power sums, three ways.

Setting: the schedule ``eta_t = eta_0 (t+2)^(-a)``, ``a in (0, 1]`` (docs/theory.md section 2; SIGNADAM
Cor. 5.4 / C.5; MINIBATCH Lemma C.15) [given].

Quantity: the partial power sums ``S_p(t_0, t) = sum_{s=t_0}^{t-1} eta_s^p`` that every bound of
docs/theory.md section 3 is built from (the denominator is ``S_1(0, t)``).

Three evaluations, each an independent route to the same number:

* :func:`partial_sum_exact` -- sympy closed form: ``eta_0^p (zeta(ap, t_0+2) - zeta(ap, t+2))`` with the
  Hurwitz zeta (valid for every ``ap != 1`` by analytic continuation of ``zeta(s, q) - zeta(s, q+N) =
  sum_{j<N} (q+j)^(-s)``) and harmonic numbers ``H_{t+1} - H_{t_0+1}`` at ``ap = 1``;
* :func:`partial_sum_leading` -- the leading asymptotic term with the regime split at ``ap = 1``:
  ``t^(1-ap)/(1-ap)`` (growing), ``log t`` (logarithmic), the Hurwitz-zeta limit (bounded);
* :func:`partial_sum_numeric` -- mpmath at any precision, no loop, for ``t`` up to ``1e12`` and beyond.

:func:`power_sum_order` gives the growth order ``t^e (log t)^k`` of ``S_p`` -- the only fact about the
schedule that :mod:`rates.symbolic.asymptotics` needs to derive rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from rates.schedule import parse_exponent_fraction

t_symbol = sp.Symbol("t", positive=True, integer=True)
t0_symbol = sp.Symbol("t_0", nonnegative=True, integer=True)
a_symbol = sp.Symbol("a", positive=True)
eta0_symbol = sp.Symbol("eta_0", positive=True)


def parse_exponent(a, option: str = "a") -> sp.Rational:
    """The schedule exponent ``a`` of ``eta_t = eta_0 (t+2)^(-a)`` as an exact Rational, from ``1/2``, ``0.5``,
    ``2/3`` or a number; docs/theory.md section 2 allows ``a`` in (0, 1]. Decimals are read exactly as written
    (``0.3`` is 3/10). The one parser of ``a`` for the CLI, the engine and :class:`Schedule`: it is
    :func:`rates.schedule.parse_exponent_fraction` (which ``rates run`` calls directly, without sympy) as a
    sympy ``Rational``.

    >>> parse_exponent("0.3"), parse_exponent("2/3"), parse_exponent(1)
    (3/10, 2/3, 1)
    """
    value = parse_exponent_fraction(a, option)
    return sp.Rational(value.numerator, value.denominator)


def _check_a(a) -> sp.Rational:
    # sp.Rational(a) first: a float keeps its exact binary value here, as Schedule always did.
    return parse_exponent(sp.Rational(a))


@dataclass(frozen=True)
class Order:
    """Growth ``t^exponent (log t)^log_power`` as ``t -> infinity``; compared lexicographically."""

    exponent: sp.Rational
    log_power: int

    def key(self) -> tuple:
        return (sp.Rational(self.exponent), int(self.log_power))

    def __truediv__(self, other: Order) -> Order:
        return Order(self.exponent - other.exponent, self.log_power - other.log_power)


def power_sum_order(p, a) -> Order:
    """Order of ``S_p(t_0, t)``: ``t^(1-ap)`` if ``ap < 1``, ``log t`` if ``ap = 1``, bounded if ``ap > 1``.

    Integral comparison of the decreasing function ``x^(-ap)`` (docs/theory.md section 4) [given].

    >>> power_sum_order(1, sp.Rational(1, 2))  # sum (s+2)^(-1/2) ~ 2 t^(1/2)
    Order(exponent=1/2, log_power=0)
    >>> power_sum_order(2, sp.Rational(1, 2))  # sum (s+2)^(-1), the harmonic numbers
    Order(exponent=0, log_power=1)
    """
    ap = sp.Rational(a) * sp.Rational(p)
    if ap < 1:
        return Order(1 - ap, 0)
    if ap == 1:
        return Order(sp.Integer(0), 1)
    return Order(sp.Integer(0), 0)


@dataclass(frozen=True)
class Schedule:
    """``eta_t = eta_0 (t+2)^(-a)``; ``a`` exact rational in (0, 1], ``eta_0 > 0`` (symbol by default)."""

    a: sp.Rational
    eta0: sp.Expr = eta0_symbol

    def __post_init__(self):
        object.__setattr__(self, "a", _check_a(self.a))
        object.__setattr__(self, "eta0", sp.sympify(self.eta0))

    def eta(self, s) -> sp.Expr:
        return self.eta0 * (sp.sympify(s) + 2) ** (-self.a)

    def partial_sum_exact(self, p, t0=0, t=t_symbol) -> sp.Expr:
        """Closed form of ``sum_{s=t0}^{t-1} eta_s^p`` (Hurwitz zeta, or harmonic numbers at ``ap = 1``).

        At ``a = 1/2, p = 2`` the terms are ``1/(s+2)``, so the first ten sum to ``H_11 - 1``:

        >>> Schedule(sp.Rational(1, 2), 1).partial_sum_exact(2, 0, 10).doit() == sp.harmonic(11) - 1
        True
        """
        p = sp.Rational(p)
        s_exp = self.a * p
        t0, t = sp.sympify(t0), sp.sympify(t)
        if s_exp == 1:
            # unevaluated: at a concrete t, sympy would expand H_{t+1} into a rational with ~t digits
            core = sp.harmonic(t + 1, evaluate=False) - sp.harmonic(t0 + 1, evaluate=False)
        else:
            core = sp.zeta(s_exp, t0 + 2) - sp.zeta(s_exp, t + 2)
        return self.eta0**p * core

    def partial_sum_leading(self, p, t=t_symbol) -> sp.Expr:
        """Leading term of ``sum_{s<t} eta_s^p`` as ``t -> infinity`` (the regime split is at ``ap = 1``)."""
        p = sp.Rational(p)
        s_exp = self.a * p
        t = sp.sympify(t)
        if s_exp < 1:
            core = t ** (1 - s_exp) / (1 - s_exp)
        elif s_exp == 1:
            core = sp.log(t)
        else:
            core = sp.zeta(s_exp, 2)
        return self.eta0**p * core

    def partial_sum_numeric(self, p, t0: int, t: int, dps: int = 30, eta0: float | None = None) -> mpmath.mpf:
        """``sum_{s=t0}^{t-1} eta_s^p`` to ``dps`` digits with mpmath (Hurwitz zeta / digamma; no loop).

        Working precision is raised by the number of digits of ``t``: for ``ap < 1`` both zeta values are
        of size ``t^(1-ap)`` and their difference loses that many digits.

        >>> total = Schedule(sp.Rational(1, 2), 1).partial_sum_numeric(2, 0, 10)  # H_11 - 1 = 55991/27720
        >>> abs(total - mpmath.mpf(55991) / 27720) < 1e-14
        True
        >>> loop = mpmath.fsum(mpmath.mpf(s + 2) ** mpmath.mpf(-0.75) for s in range(100, 5000))
        >>> abs(Schedule(sp.Rational(3, 4), 1).partial_sum_numeric(1, 100, 5000) - loop) < 1e-11
        True
        """
        if t <= t0:
            return mpmath.mpf(0)
        p = sp.Rational(p)
        s_exp = self.a * p
        scale = self.eta0 if eta0 is None else eta0
        with mpmath.workdps(dps + 2 * len(str(int(t))) + 5):
            if s_exp == 1:
                core = mpmath.digamma(t + 2) - mpmath.digamma(t0 + 2)
            else:
                s_mp = mpmath.mpf(s_exp.p) / s_exp.q
                core = mpmath.zeta(s_mp, t0 + 2) - mpmath.zeta(s_mp, t + 2)
            scale_mp = mpmath.mpf(str(sp.N(scale, dps + 5)))
            pp = mpmath.mpf(p.p) / p.q
            value = scale_mp**pp * core
        with mpmath.workdps(dps):
            return +value  # rounded to dps digits, not to the caller's (default 15-digit) context

    def partial_sums_array(self, p, t: np.ndarray, t0: int = 0) -> np.ndarray:
        """Float64 ``sum_{s=t0}^{t-1} (s+2)^(-ap)`` (``eta_0 = 1``) for an array of ``t`` -- exact sums,
        not asymptotics."""
        unit = Schedule(self.a, 1)
        return np.array([float(unit.partial_sum_numeric(p, t0, int(ti), dps=20)) for ti in np.asarray(t).ravel()],
                        dtype=np.float64).reshape(np.shape(t))
