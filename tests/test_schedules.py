"""Partial power sums of eta_t = eta_0 (t+2)^(-a): closed form vs direct summation, asymptotics, speed."""


import mpmath
import pytest
import sympy as sp

from rates.errors import InputError
from rates.symbolic.schedules import Schedule, power_sum_order

R = sp.Rational


def direct_sum(a, p, t0, t, eta0, dps=50):
    """Independent reference: add the terms one by one at 50 digits."""
    with mpmath.workdps(dps):
        exponent = mpmath.mpf((a * p).p) / (a * p).q
        scale = (mpmath.mpf(eta0.p) / eta0.q) ** (mpmath.mpf(p.p) / p.q)
        return scale * mpmath.fsum(mpmath.mpf(s + 2) ** (-exponent) for s in range(t0, t))


@pytest.mark.parametrize("a,p,t0,t", [
    (R(1, 2), R(2), 0, 1), (R(1, 2), R(2), 7, 10**4),            # ap = 1: harmonic numbers
    (R(3, 10), R(1), 7, 10**4), (R(3, 10), R(3, 2), 0, 137),      # ap < 1: continued Hurwitz zeta
    (R(2, 3), R(5, 2), 3, 10**4), (R(1), R(2), 0, 999),           # ap > 1
    (R(1), R(1), 5, 10**4), (R(2, 3), R(3, 2), 11, 12),
])
def test_exact_closed_form_equals_50_digit_direct_sum(a, p, t0, t):
    eta0 = R(1, 3)
    schedule = Schedule(a, eta0)
    exact = schedule.partial_sum_exact(p, t0, t).evalf(50)
    reference = direct_sum(a, p, t0, t, eta0)
    with mpmath.workdps(50):
        assert abs(mpmath.mpf(str(exact)) - reference) <= mpmath.mpf(10) ** -40 * abs(reference)
        numeric = schedule.partial_sum_numeric(p, t0, t, dps=45)
        assert abs(numeric - reference) <= mpmath.mpf(10) ** -40 * abs(reference)


@pytest.mark.parametrize("a,p", [(R(3, 10), R(2)), (R(1, 2), R(2)), (R(3, 4), R(2)), (R(1), R(1)),
                                 (R(1, 2), R(1)), (R(2, 3), R(3, 2))])
def test_leading_asymptotics_relative_error_shrinks_to_zero(a, p):
    schedule = Schedule(a, 1)
    errors = []
    for exponent in range(3, 10):
        t = 10**exponent
        exact = schedule.partial_sum_numeric(p, 0, t)
        leading = mpmath.mpf(str(schedule.partial_sum_leading(p, t).evalf(30)))
        errors.append(float(abs(leading / exact - 1)))
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors
    # the slowest case is ap = 1, where the error is (Euler gamma - 1 + ...)/log t ~ 0.02 at 1e9
    assert errors[-1] < 0.025, errors


def euler_maclaurin_tail(sigma, lo, hi):
    """sum_{s=lo}^{hi-1} (s+2)^-sigma by Euler-Maclaurin (integral + endpoint corrections), independent of zeta."""
    f = lambda x: (x + 2) ** (-sigma)
    df = lambda x: -sigma * (x + 2) ** (-sigma - 1)
    d3f = lambda x: -sigma * (sigma + 1) * (sigma + 2) * (x + 2) ** (-sigma - 3)
    if sigma == 1:
        integral = mpmath.log(mpmath.mpf(hi + 2) / (lo + 2))
    else:
        integral = ((hi + 2) ** (1 - sigma) - (lo + 2) ** (1 - sigma)) / (1 - sigma)
    return integral + (f(lo) - f(hi)) / 2 + (df(hi) - df(lo)) / 12 - (d3f(hi) - d3f(lo)) / 720


@pytest.mark.parametrize("a,p", [(R(1, 2), R(1)), (R(1, 2), R(2)), (R(2, 3), R(3, 2)), (R(3, 10), R(2))])
def test_numeric_sum_at_1e12_is_loop_free_and_matches_euler_maclaurin(a, p, monkeypatch):
    """Fast at any t because it loops over no terms: two Hurwitz zeta (or digamma, at a p = 1) values."""
    schedule = Schedule(a, 1)
    calls = []
    for name in ("zeta", "digamma"):
        original = getattr(mpmath, name)
        monkeypatch.setattr(mpmath, name, lambda *args, _f=original, _n=name: calls.append(_n) or _f(*args))
    value = schedule.partial_sum_numeric(p, 0, 10**12, dps=30)
    monkeypatch.undo()
    assert calls == 2 * ["digamma" if a * p == 1 else "zeta"]
    with mpmath.workdps(40):
        sigma = mpmath.mpf((a * p).p) / (a * p).q
        reference = direct_sum(a, p, 0, 2000, R(1), dps=40) + euler_maclaurin_tail(sigma, 2000, 10**12)
        assert abs(value / reference - 1) < mpmath.mpf(10) ** -18


def test_power_sum_order_regimes():
    assert power_sum_order(2, R(3, 10)).key() == (R(2, 5), 0)
    assert power_sum_order(2, R(1, 2)).key() == (0, 1)
    assert power_sum_order(2, R(3, 4)).key() == (0, 0)
    assert power_sum_order(R(5, 2), R(2, 5)).key() == (0, 1)


def test_partial_sums_array_matches_direct_float_sum():
    import numpy as np

    t = np.array([1, 2, 10, 1000])
    values = Schedule(R(1, 2), 1).partial_sums_array(2, t)
    expected = [sum((s + 2.0) ** -1 for s in range(int(ti))) for ti in t]
    assert np.allclose(values, expected, rtol=1e-13)


def test_schedule_rejects_a_outside_unit_interval():
    with pytest.raises(InputError) as err:
        Schedule(R(3, 2))
    assert err.value.option == "--a"


EXPONENT_TEXTS = ["1/2", "0.5", " 2 / 3 ", "1", "0.3", "1e-3", "3/10", "1.5/3", "0.25/0.5", "7/7", "1_0/2_0", "+1/3",
                  "2/3/4", "1/0", "0", "-1/2", "3/2", "", "abc", "1/x", "nan", "inf", "1e-20", "1/" + "9" * 16]


@pytest.mark.parametrize("text", EXPONENT_TEXTS)
def test_sympy_free_exponent_parser_reads_what_sympy_reads(text):
    """rates run parses a with fractions (rates.schedule); the expectation is sympy's Rational(str), which
    parse_exponent used before: the same number, or both refuse (out of range and a denominator > 1e15
    refused by the range checks of both routes)."""
    from rates.schedule import MAX_EXPONENT_DENOMINATOR, parse_exponent_fraction
    from rates.symbolic.schedules import parse_exponent

    try:
        expected = sp.Rational(text.strip())
    except (TypeError, ValueError, ZeroDivisionError, SyntaxError):
        expected = None
    if expected is None or not (0 < expected <= 1) or expected.q > MAX_EXPONENT_DENOMINATOR:
        with pytest.raises(InputError):
            parse_exponent_fraction(text)
        with pytest.raises(InputError):
            parse_exponent(text)
        return
    fraction = parse_exponent_fraction(text)
    assert (fraction.numerator, fraction.denominator) == (expected.p, expected.q)
    assert parse_exponent(text) == expected and float(fraction) == float(expected)
