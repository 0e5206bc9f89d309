"""Regimes of ``a`` at and between their cut points, and how a rate's log power is written.

Independent expectations: docs/theory.md section 4's four NSD cases (``t^-a`` on (0, 1/2), ``log t / t^(1/2)``
at a = 1/2, ``t^-(1-a)`` on (1/2, 1), ``1 / log t`` at a = 1), Adam's best a = 2/3 (SIGNADAM Rem. 6.5), the cut
``a = 1/p`` where ``sum eta^p`` stops growing (``1 - a p = 0``), and the notation ``(log t)^k`` for k >= 2.
"""

from __future__ import annotations

import pytest
import sympy as sp

from rates.symbolic import asymptotics as A
from rates.symbolic.schedules import a_symbol as a

R = sp.Rational
NSD, ADAM = [2], [2, R(3, 2)]


@pytest.mark.parametrize(
    "powers, value, lo, hi",
    [
        (NSD, R(1, 2), R(1, 2), R(1, 2)),  # the cut itself is its own regime, not the open interval below it
        (NSD, R(3, 10), 0, R(1, 2)),
        (NSD, R(499, 1000), 0, R(1, 2)),
        (NSD, R(501, 1000), R(1, 2), 1),
        (NSD, R(3, 4), R(1, 2), 1),
        (NSD, 1, 1, 1),
        (ADAM, R(1, 2), 0, R(2, 3)),  # a = 1/2 changes nothing for Adam: merged into (0, 2/3)
        (ADAM, R(2, 3), R(2, 3), R(2, 3)),
        ([3], R(1, 3), R(1, 3), R(1, 3)),
    ],
)
def test_regime_of_a_cut_point_is_the_point(powers, value, lo, hi):
    assert A.regime_of(powers, value) == A.Regime(R(lo), R(hi))


def test_open_regimes_exclude_their_ends_and_points_contain_only_themselves():
    below, point, above = A.Regime(R(0), R(1, 2)), A.Regime(R(1, 2), R(1, 2)), A.Regime(R(1, 2), R(1))
    assert [below.contains(x) for x in (0, R(1, 4), R(1, 2))] == [False, True, False]
    assert [above.contains(x) for x in (R(1, 2), R(3, 4), 1)] == [False, True, False]
    assert [point.contains(x) for x in (R(1, 2), R(1, 4))] == [True, False]
    assert (below.text, point.text, above.text) == ("a in (0, 1/2)", "a = 1/2", "a in (1/2, 1)")
    assert (point.latex, above.latex) == (r"$a = \frac{1}{2}$", r"$a \in (\frac{1}{2}, 1)$")
    assert below.representative() == R(1, 4) and point.representative() == R(1, 2)


@pytest.mark.parametrize("value", [0, R(-1, 2), R(3, 2)])
def test_a_outside_the_unit_interval_has_no_regime(value):
    with pytest.raises(ValueError, match="outside"):
        A.regime_of(NSD, value)


def test_regime_rates_are_the_four_nsd_cases_and_adams():
    nsd = [(regime.text, rate.text) for regime, rate in A.regime_rates(NSD)]
    assert nsd == [
        ("a in (0, 1/2)", "t^(-a)"),
        ("a = 1/2", "log t / t^(1/2)"),
        ("a in (1/2, 1)", "t^(-(1 - a))"),
        ("a = 1", "1 / log t"),
    ]
    adam = [(regime.text, rate.text) for regime, rate in A.regime_rates(ADAM)]
    assert adam == [
        ("a in (0, 2/3)", "t^(-a/2)"),
        ("a = 2/3", "log t / t^(1/3)"),
        ("a in (2/3, 1)", "t^(-(1 - a))"),
        ("a = 1", "1 / log t"),
    ]
    assert (A.best_a(NSD), A.best_a(ADAM), A.best_a([3])) == (R(1, 2), R(2, 3), R(1, 3))


def test_cuts_are_where_a_power_sum_stops_growing():
    assert A.regime_cuts([3]) == [R(1, 3), 1]  # 1 - 3a = 0
    assert A.regime_cuts([R(5, 4)]) == [R(4, 5), 1]
    assert A.regime_cuts([1]) == [1] and A.regime_cuts([R(1, 2)]) == [1]  # 1/p outside (0, 1)


@pytest.mark.parametrize(
    "exponent, log_power, text, latex",
    [
        (0, 2, "(log t)^2", r"(\log t)^{2}"),
        (R(1, 2), 2, "(log t)^2 / t^(1/2)", r"(\log t)^{2} / t^{1/2}"),
        (R(1, 4), -2, "t^(-1/4) / (log t)^2", r"t^{-1/4}/(\log t)^{2}"),
        (0, -2, "1 / (log t)^2", r"1/(\log t)^{2}"),
        (0, -3, "1 / (log t)^3", r"1/(\log t)^{3}"),
        (a, 2, "t^(-a) (log t)^2", r"t^{-a} (\log t)^{2}"),
        (a, -2, "t^(-a) / (log t)^2", r"t^{-a}/(\log t)^{2}"),
        (1 - a, -1, "t^(-(1 - a)) / log t", r"t^{-(1 - a)}/\log t"),
        (0, 1, "log t", r"\log t"),
        (0, 0, "1", "1"),
    ],
)
def test_log_powers_are_written_with_their_power(exponent, log_power, text, latex):
    assert A.rate_text(exponent, log_power) == text
    assert A.rate_latex(exponent, log_power) == latex


def test_general_schedule_rates_keep_fractional_and_loglog_powers():
    assert A.Rate(R(1, 2), R(3, 2)).text == "(log t)^(3/2) / t^(1/2)"
    assert A.Rate(R(1, 2), 2, -1).text == "(log t)^2 / t^(1/2) log log t"
    assert A.Rate(0, 0, -2).text == "1 / (log log t)^2"
    assert A.Rate(R(-1, 2), 0, 1).latex == r"t^{\frac{1}{2}} \log\log t"
    assert A.class_rate_latex(R(1, 2), 2, 0) == r"(\log t)^{2}/t^{\frac{1}{2}}"
    assert A.Rate(R(1, 2), 1).text == "log t / t^(1/2)"  # an integer power keeps the polynomial notation


def test_a_power_sum_below_power_one_adds_no_cut():
    assert A.regime_cuts([R(2, 3)]) == [1]  # 1/p = 3/2 lies outside (0, 1)


def test_normal_form_simplifies_what_is_not_a_polynomial_in_a():
    assert A.normal_form(sp.sin(a) ** 2 + sp.cos(a) ** 2) == 1
    assert A.normal_form((1 - a) - (1 - 2 * a)) == a


def test_a_template_of_constants_alone():
    """No power sum in the numerator: the constant over S_1 ~ t^(1 - a) decays like t^-(1 - a)."""
    constant = A.dominant_order([], R(1, 2))
    assert constant[1] is None and (constant[0].exponent, constant[0].log_power) == (0, 0)
    assert A.dominant_order([], R(1, 2), has_constant=False) == (None, None)
    assert A.rate_at([], R(1, 2)) == A.Rate(R(1, 2), 0)
    assert [(regime.text, rate.text) for regime, rate in A.regime_rates([])] == [
        ("a in (0, 1)", "t^(-(1 - a))"), ("a = 1", "1 / log t")]
    assert A.regime_of([], R(1, 2)) == A.Regime(0, 1)


def test_rates_with_one_log_factor_and_class_rates_with_several_factors():
    assert A.rate_text(a, 1) == "t^(-a) log t" and A.rate_latex(a, 1) == r"t^{-a} \log t"
    assert A.class_rate_text(R(1, 2), 0, 0) == "1 / t^(1/2)"
    assert A.class_rate_latex(R(1, 2), 0, 0) == r"1/t^{\frac{1}{2}}"
    assert A.class_rate_text(R(-1, 2), 1, 0) == "t^(1/2) log t"
    assert A.class_rate_latex(R(1, 2), -1, 0) == r"1/t^{\frac{1}{2}} \log t"
    assert A.best_a([]) == 1  # t^-(1 - a) improves up to a = 1, where 1 / log t is attained
