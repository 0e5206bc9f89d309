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


def test_eta_is_eta0_times_t_plus_2_to_the_minus_a():
    schedule = Schedule(R(1, 2), R(3))
    assert schedule.eta(2) == R(3, 2)  # 3 (2 + 2)^(-1/2)
    assert schedule.eta(7) == 1  # 3 (7 + 2)^(-1/2)
    assert sp.simplify(Schedule(R(2, 3)).eta(sp.Symbol("s")) - sp.Symbol("eta_0", positive=True)
                       * (sp.Symbol("s") + 2) ** R(-2, 3)) == 0


def test_orders_divide_exponent_by_exponent_and_log_power_by_log_power():
    from rates.symbolic.schedules import Order

    ratio = Order(R(1, 2), 1) / Order(R(1, 3), 3)
    assert ratio == Order(R(1, 6), -2) and ratio.key() == (R(1, 6), -2)
    assert isinstance(ratio.key()[1], int)


@pytest.mark.parametrize("t0,t", [(5, 5), (7, 3)])
def test_an_empty_or_reversed_range_sums_to_zero(t0, t):
    assert Schedule(R(1, 2), 1).partial_sum_numeric(1, t0, t) == 0
    assert Schedule(R(1, 2), 1).partial_sum_numeric(2, t0, t) == 0  # the digamma branch


def test_numeric_sum_with_an_eta0_override_scales_by_eta0_to_the_p():
    schedule = Schedule(R(1, 2))  # eta_0 symbolic: the numeric value needs the override
    value = schedule.partial_sum_numeric(R(3, 2), 0, 50, dps=30, eta0=0.25)
    reference = direct_sum(R(1, 2), R(3, 2), 0, 50, R(1, 4), dps=50)
    with mpmath.workdps(50):
        assert abs(value - reference) <= mpmath.mpf(10) ** -28 * reference
    assert Schedule(R(1, 2), 4).partial_sum_numeric(1, 0, 50, eta0=1) == Schedule(R(1, 2), 1).partial_sum_numeric(
        1, 0, 50)  # the override wins over the schedule's own eta_0


@pytest.mark.parametrize("p", [R(1), R(2)])
def test_numeric_sum_is_rounded_to_the_digits_asked(p):
    """The value comes back rounded to ``dps`` digits (mpmath's precision in bits for them), not carrying the
    extra working digits."""
    value = Schedule(R(1, 2), 1).partial_sum_numeric(p, 3, 10**6, dps=20)
    assert value._mpf_[3] <= mpmath.libmp.dps_to_prec(20)  # the mantissa's bit count
    with mpmath.workdps(60):
        exact = Schedule(R(1, 2), 1).partial_sum_numeric(p, 3, 10**6, dps=60)
        assert abs(value - exact) <= mpmath.mpf(10) ** -19 * exact


def test_parse_exponent_names_the_callers_option():
    from rates.symbolic.schedules import parse_exponent

    with pytest.raises(InputError) as err:
        parse_exponent("3/2", "alpha")
    assert err.value.option == "--alpha"


def test_a_schedule_holds_a_and_eta0_as_exact_sympy_numbers():
    schedule = Schedule("0.3", "1/3")  # read as written: 3/10, and the string "1/3" as the Rational 1/3
    assert schedule.a == R(3, 10) and isinstance(schedule.a, sp.Rational)
    assert schedule.eta0 == R(1, 3) and isinstance(schedule.eta0, sp.Rational)
    assert schedule.eta(7) == R(1, 3) * 9 ** R(-3, 10)


def test_the_exact_sum_keeps_harmonic_numbers_unevaluated_at_a_concrete_t():
    """At a p = 1 the closed form is H_{t+1} - H_{t0+1}, left unevaluated (evaluated, H_{t+1} is a rational of
    about t digits); its value is the direct sum."""
    total = Schedule(R(1, 2), 1).partial_sum_exact(2, 5, 1000)
    assert {h.args[0] for h in total.atoms(sp.harmonic)} == {6, 1001}
    assert abs(float(total.evalf(30)) - float(direct_sum(R(1, 2), R(2), 5, 1000, R(1)))) < 1e-14


def test_the_leading_term_of_a_convergent_sum_is_its_limit():
    """For a p > 1 the sum converges: its leading term is sum_{s >= 0} (s + 2)^(-ap), here the first 2000 terms
    added one by one and the rest by Euler-Maclaurin."""
    for a, p in [(R(3, 4), R(2)), (R(1), R(2)), (R(2, 3), R(5, 2))]:
        sigma = a * p
        with mpmath.workdps(40):
            exponent = mpmath.mpf(sigma.p) / sigma.q
            limit = direct_sum(a, p, 0, 2000, R(1), dps=40) + euler_maclaurin_tail(exponent, 2000, 10**60)
            leading = mpmath.mpf(str(Schedule(a, 1).partial_sum_leading(p).evalf(40)))
            assert abs(leading - limit) < 1e-15


def test_array_sums_keep_the_shape_of_t():
    import numpy as np

    t = np.array([[1, 2], [10, 1000]])
    values = Schedule(R(1, 2), 1).partial_sums_array(2, t)
    assert values.shape == (2, 2)
    assert values[1, 0] == pytest.approx(sum(1 / (s + 2.0) for s in range(10)), rel=1e-14)


@pytest.mark.parametrize("t0,t", [(0, 3), (0, 10), (1, 7), (2, 5), (10**12, 10**12 + 3)])
@pytest.mark.parametrize("p", [R(1), R(2), R(3, 2)])
def test_numeric_sum_is_correct_to_the_last_bit_of_the_digits_asked(t0, t, p):
    """Within one unit in the last place of ``dps`` digits of the direct sum at 100 digits, also where the two zeta
    values at t0 = 1e12 cancel in 12 digits (the working precision grows with the digits of t)."""
    dps = 30
    value = Schedule(R(1, 2), 1).partial_sum_numeric(p, t0, t, dps=dps)
    reference = direct_sum(R(1, 2), p, t0, t, R(1), dps=100)
    with mpmath.workdps(100):
        assert abs(value - reference) <= abs(reference) * mpmath.mpf(2) ** -mpmath.libmp.dps_to_prec(dps)


def test_the_defaults_sum_from_t0_0_to_30_digits():
    schedule = Schedule(R(1, 2), 1)
    assert schedule.partial_sum_exact(2, t=10).doit() == sp.harmonic(11) - 1  # sum_{s=0}^{9} 1/(s + 2)
    for p, t in [(2, 10), (1, 10), (2, 100), (R(3, 2), 10)]:
        value = schedule.partial_sum_numeric(p, 0, t)
        assert value._mpf_[3] <= mpmath.libmp.dps_to_prec(30)  # the mantissa holds 30 digits, not more
        reference = direct_sum(R(1, 2), R(p), 0, t, R(1), dps=60)
        with mpmath.workdps(60):
            assert abs(value - reference) <= abs(reference) * mpmath.mpf(2) ** -mpmath.libmp.dps_to_prec(30)
