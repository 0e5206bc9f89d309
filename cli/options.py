"""Parsers shared by several commands; each raises InputError naming its option."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from rates.errors import InputError


def parse_fraction(text: str, option: str) -> sp.Rational:
    """Parse ``1/2``, ``0.5`` or ``2/3`` into an exact sympy Rational.

    Decimals are read exactly as written (``0.3`` is 3/10, not the nearest double).
    """
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise InputError(option, f"expected a number such as 1/2, 0.5 or 2/3, got {text!r}") from None
    return sp.Rational(value.numerator, value.denominator)


def parse_exponent_a(text: str, option: str = "--a") -> sp.Rational:
    """The schedule exponent a of eta_t = eta_0 (t+2)^(-a); THEORY.md section 2 allows a in (0, 1]."""
    a = parse_fraction(text, option)
    if not (0 < a <= 1):
        raise InputError(option, f"must be in (0, 1], got {text}")
    return a
