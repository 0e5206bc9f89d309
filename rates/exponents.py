"""The schedule exponent ``a`` of ``eta_t = eta_0 (t+2)^(-a)`` read as an exact fraction, without sympy.

Setting: docs/theory.md section 2 allows ``a`` in (0, 1]. ``rates run`` needs ``a`` only as an exact number
(its float for the steps, its text for the record), so it reads it here: importing sympy costs ~0.6 s of a
start-up meant to stay near 2 s. :func:`rates.symbolic.schedules.parse_exponent` is this parser with the
result as a sympy ``Rational`` (one definition of what an exponent may be).

Algorithm: the string rules of sympy's ``Rational(str)`` (sympy 1.14, ``Rational.__new__``), which themselves
use :class:`fractions.Fraction`: at most one ``/``, spaces removed, ``P/Q`` read as ``Fraction(P) /
Fraction(Q)``, anything else as ``Fraction(text)``; so both routes accept and refuse the same texts and give
the same number (tests/test_schedules.py compares them).
"""

from __future__ import annotations

from fractions import Fraction

from rates.errors import InputError

MAX_EXPONENT_DENOMINATOR = 10**15


def _fraction(text: str) -> Fraction:
    if text.count("/") > 1:
        raise ValueError(text)
    text = text.replace(" ", "")
    numerator, slash, denominator = text.rpartition("/")
    if slash:
        return Fraction(numerator) / Fraction(denominator)
    return Fraction(text)


def parse_exponent_fraction(a, option: str = "a") -> Fraction:
    """``a`` from ``1/2``, ``0.5``, ``2/3`` or a number, as an exact :class:`~fractions.Fraction` in (0, 1].

    Decimals are read exactly as written (``0.3`` is 3/10); a string's denominator is at most 1e15 (the
    engine steps in float64, and 1e-400 is 0 there).

    >>> parse_exponent_fraction("0.3"), parse_exponent_fraction(" 2 / 3 "), parse_exponent_fraction(1)
    (Fraction(3, 10), Fraction(2, 3), Fraction(1, 1))
    """
    try:
        value = _fraction(str(a).strip())
    except (TypeError, ValueError, ZeroDivisionError):
        raise InputError(option, f"expected a number such as 1/2, 0.5 or 2/3, got {a!r}") from None
    if not (0 < value <= 1):
        raise InputError(option, f"must be in (0, 1], got {a}")
    if isinstance(a, str) and value.denominator > MAX_EXPONENT_DENOMINATOR:
        raise InputError(option, f"must be a fraction with denominator <= 1e{len(str(MAX_EXPONENT_DENOMINATOR)) - 1} "
                                 f"(the engine steps in float64), got {str(a).strip()[:40]}")
    return value
