"""The derived rate tables against docs/theory.md section 4, a new template, and the bound's numeric slope."""

import numpy as np
import pytest
import sympy as sp

from rates.numeric.algorithms import AlgorithmConfig, resolve_algorithm
from rates.symbolic import asymptotics
from rates.symbolic.schedules import a_symbol
from rates.symbolic.theorems import FAMILIES, predict, template_for
from rates.symbolic.theorems.base import BoundTemplate, NoiseTerm, PowerSumTerm, Source, gamma

R = sp.Rational
a = a_symbol

# docs/theory.md section 4, typed here (and only here) as the independent expectation.
NSD_TABLE = [("a in (0, 1/2)", a, 0), ("a = 1/2", R(1, 2), 1), ("a in (1/2, 1)", 1 - a, 0), ("a = 1", 0, -1)]
ADAM_TABLE = [("a in (0, 2/3)", a / 2, 0), ("a = 2/3", R(1, 3), 1), ("a in (2/3, 1)", 1 - a, 0), ("a = 1", 0, -1)]
FAMILY_TABLES = {"nsd": (NSD_TABLE, R(1, 2)), "minibatch": (NSD_TABLE, R(1, 2)), "momentum": (NSD_TABLE, R(1, 2)),
                 "vr": (NSD_TABLE, R(1, 2)), "adam": (ADAM_TABLE, R(2, 3))}
EXAMPLES = {"nsd": "signgd", "minibatch": "signsgd", "momentum": "signum", "vr": "vr-nsgd", "adam": "adam"}


@pytest.mark.parametrize("family", sorted(FAMILY_TABLES))
def test_derived_table_equals_theory_section_4(family):
    expected, expected_best = FAMILY_TABLES[family]
    template = template_for(resolve_algorithm(EXAMPLES[family]))
    derived = asymptotics.regime_rates(template.powers)
    assert [regime.text for regime, _ in derived] == [row[0] for row in expected]
    for (regime, rate), (_, exponent, log_power) in zip(derived, expected):
        assert sp.simplify(rate.exponent - exponent) == 0, (regime.text, rate.exponent)
        assert rate.log_power == log_power
    assert asymptotics.best_a(template.powers) == expected_best


def test_new_template_with_power_five_halves_gets_a_boundary_at_two_fifths(monkeypatch):
    """sum eta^{5/2} over sum eta: growing t^{1-5a/2} for a < 2/5, log t at 2/5, bounded after."""
    template = BoundTemplate(
        family="custom", title="test", source=Source("none", "test"), status="rebuilt", gap_to="gamma",
        numerator=(PowerSumTerm(R(5, 2), sp.Integer(1), "test term"),),
        noise=(NoiseTerm(R(3, 2), sp.Integer(1), "test noise"),), gamma_ref=gamma, assumptions=())
    monkeypatch.setitem(FAMILIES, "custom", lambda config: template)
    config = AlgorithmConfig("custom", "max", "custom", None, None, 0.0, False, False)
    assert R(2, 5) in asymptotics.regime_cuts(template.powers)
    # by hand: (1 - a) - (1 - 5a/2) = 3a/2 below 2/5; t^{3/5}/log t at 2/5; (1 - a) above
    for value, exponent, log_power in [(R(1, 4), R(3, 8), 0), (R(3, 10), R(9, 20), 0), (R(2, 5), R(3, 5), 1),
                                       (R(1, 2), R(1, 2), 0), (R(9, 10), R(1, 10), 0), (R(1), 0, -1)]:
        prediction = predict(config, value)
        assert (prediction.rate.exponent, prediction.rate.log_power) == (exponent, log_power), value
        assert prediction.best_a == R(2, 5)
    assert predict(config, R(1, 4)).regime == "a in (0, 2/5)"


def local_slope(shape, t_lo, t_hi):
    values = shape(np.array([t_lo, t_hi]))
    return float(np.log(values[1] / values[0]) / np.log(t_hi / t_lo))


@pytest.mark.parametrize("algo,a_value", [("signgd", R(3, 10)), ("signgd", R(3, 4)), ("adam", R(1, 2)),
                                          ("adam", R(4, 5)), ("signgd", R(1, 2))])
def test_bound_shape_slope_matches_derived_exponent(algo, a_value):
    """A second route to r: the exact-sum bound's log-log slope, corrected for the predicted log power."""
    prediction = predict(resolve_algorithm(algo), a_value)
    t_lo, t_hi = 10**8, 10**9
    slope = local_slope(prediction.bound_shape, t_lo, t_hi)
    # a (log t)^k factor adds k / log t to the local slope (docs/theory.md section 4)
    log_correction = prediction.rate.log_power / np.log(np.sqrt(t_lo * t_hi))
    assert slope == pytest.approx(-float(prediction.rate.exponent) + log_correction, abs=0.01)


def test_bound_shape_is_decreasing_and_uses_exact_sums():
    prediction = predict(resolve_algorithm("adam"), R(2, 3))
    t = np.unique(np.logspace(0, 7, 100).astype(np.int64))
    shape = prediction.bound_shape(t)
    assert np.all(np.diff(shape) < 0)
    s = np.arange(0, 50, dtype=float)
    eta = (s + 2) ** (-2 / 3)
    expected = (1 + np.sum(eta**2) + np.sum(eta**1.5)) / np.sum(eta)
    assert prediction.bound_shape(np.array([50]))[0] == pytest.approx(expected, rel=1e-12)


def test_rate_text_and_latex():
    assert asymptotics.rate_text(R(1, 2), 1) == "log t / t^(1/2)"
    assert asymptotics.rate_latex(R(1, 2), 1) == r"\log t / t^{1/2}"
    assert asymptotics.rate_text(0, -1) == "1 / log t"
    assert asymptotics.rate_latex(R(3, 10), 0) == "t^{-3/10}"
    assert asymptotics.rate_text(1 - a, 0) == "t^(-(1 - a))"


def _derive_everything(powers_list):
    """Regimes, rates (exponent, log power, text, latex) and best a of every power set."""
    out = []
    for powers in powers_list:
        rates = [(regime.text, rate.exponent, rate.log_power, rate.text, rate.latex)
                 for regime, rate in asymptotics.regime_rates(powers)]
        out.append((rates, asymptotics.best_a(powers)))
    return out


def test_normal_form_gives_what_simplify_gives_for_every_template(monkeypatch):
    """The cheap normal form (sp.expand on polynomials in a) against sympy's simplify, the derivation it
    replaced, over every named algorithm's template and further power sets: same regimes, same exponents
    (structurally equal sympy objects), same text and LaTeX, same best a."""
    from rates.numeric.algorithms import ALGORITHMS

    powers_list = []
    for name in sorted(ALGORITHMS):
        config = resolve_algorithm(name, norm="max" if ALGORITHMS[name].norm is None else None, n=10, batch=2)
        powers_list.append(tuple(template_for(config).powers))
    assert len(set(powers_list)) >= 2  # NSD's and Adam's at least
    powers_list += [(R(5, 2),), (2, R(3, 2), R(5, 4)), (3,), (R(4, 3), 2)]
    fast = _derive_everything(powers_list)
    monkeypatch.setattr(asymptotics, "normal_form", sp.simplify)
    slow = _derive_everything(powers_list)
    assert fast == slow
    for (rates_fast, _), (rates_slow, _) in zip(fast, slow):  # == on sympy objects is structural; check types too
        assert [type(row[1]) for row in rates_fast] == [type(row[1]) for row in rates_slow]


def test_normal_form_equals_simplify_on_linear_forms_in_a():
    coefficients = [R(p, q) for p in range(-4, 5) for q in (1, 2, 5)]
    for slope in coefficients:
        for offset in coefficients[::3]:
            expr = slope * a + offset
            assert asymptotics.normal_form(expr) == sp.simplify(expr), expr
    # not a polynomial in a: simplify itself decides
    expr = sp.log(a**2) - 2 * sp.log(a)
    assert asymptotics.normal_form(expr) == sp.simplify(expr) == 0
