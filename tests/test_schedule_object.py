"""The schedule object (rates.schedule): parsing, refusals, the polynomial family, values.

Expectations are computed independently of sympy: the values of f(t) with Python's math module term by term,
the first offending step by a plain loop over t, sympy's own printing of eta0*(t+2)**(-a) for the text the
polynomial family writes without sympy.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from rates.errors import InputError
from rates.schedule import Schedule, schedule_from_options

STEPS = range(0, 300)


@pytest.fixture(autouse=True)
def parsed_afresh(monkeypatch):
    """Each test parses its schedules again: the per-process caches of parsed texts and evaluators would otherwise
    answer with what an earlier test (or, under mutmut, the unmutated parent process) computed."""
    from rates import schedule

    schedule._parsed.cache_clear()
    schedule._compiled.cache_clear()
    monkeypatch.setattr(schedule, "_NUMPY_EVALUATORS", {})

EXPRESSIONS = {  # text -> f(t) written with math, independently of the parser
    "eta0*(t+2)**(-1/2)": lambda t: (t + 2) ** -0.5,
    "eta0/((t+2)*log(t+2))": lambda t: 1 / ((t + 2) * math.log(t + 2)),
    "eta0*log(t+2)/sqrt(t+2)": lambda t: math.log(t + 2) / math.sqrt(t + 2),
    "Min(eta0*(t+1)/100, eta0/sqrt(t+2))": lambda t: min((t + 1) / 100, 1 / math.sqrt(t + 2)),
    "Piecewise((eta0*(t+1)/100, t < 99), (eta0/sqrt(t+2), True))":
        lambda t: (t + 1) / 100 if t < 99 else 1 / math.sqrt(t + 2),
    "eta0*(2+sin(t))/sqrt(t+2)": lambda t: (2 + math.sin(t)) / math.sqrt(t + 2),
    "eta0*(1+exp(-t/100))/(t+2)": lambda t: (1 + math.exp(-t / 100)) / (t + 2),
}


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_parsed_schedule_has_the_values_written_with_math(text):
    schedule = Schedule.parse(text)
    values = schedule.unit_values(0, len(STEPS))
    expected = np.array([EXPRESSIONS[text](t) for t in STEPS])
    assert values.dtype == np.float64 and values.shape == expected.shape
    np.testing.assert_allclose(values, expected, rtol=4e-16 * 8, atol=0)
    # a window later on has the same values as the same steps read from the start
    assert np.array_equal(schedule.unit_values(97, 130), values[97:130])
    assert schedule.unit_value(120) == values[120]


def test_warm_up_and_piecewise_forms_switch_where_written():
    warm_up = Schedule.parse("Min(eta0*(t+1)/100, eta0/sqrt(t+2))")
    # (t+1)/100 < 1/sqrt(t+2) until (t+1)^2 (t+2) >= 10^4, i.e. t = 20 is the first step on the decay
    switch = next(t for t in range(100) if (t + 1) / 100 >= 1 / math.sqrt(t + 2))
    assert switch == 21 - 1 or switch == 21  # the crossing lies between 20 and 21
    values = warm_up.unit_values(0, 40)
    assert values[switch - 1] == pytest.approx((switch) / 100, rel=1e-15)
    assert values[switch + 1] == pytest.approx(1 / math.sqrt(switch + 3), rel=1e-15)
    piecewise = Schedule.parse("Piecewise((eta0*(t+1)/100, t < 99), (eta0/sqrt(t+2), True))")
    assert piecewise.unit_values(98, 100).tolist() == [0.99, 1 / math.sqrt(101)]
    assert not warm_up.is_polynomial and warm_up.a is None and warm_up.label() == warm_up.text


@pytest.mark.parametrize("a", ["1/2", "1", "3/10", "2/3", "1/3", "0.25", "999/1000", "7/10"])
def test_polynomial_schedule_equals_its_parsed_expression_and_prints_as_sympy_does(a):
    import sympy

    from rates.schedule import eta0_sym, t_sym

    shorthand = Schedule.polynomial(a)
    exponent = Fraction(a)
    decimal = str(float(exponent)) if 10**6 % exponent.denominator == 0 else str(exponent)  # decimals read exactly
    for text in (f"eta0*(t+2)**(-{exponent})", f"eta0/(t+2)**({exponent})", f"eta0*(2+t)^(-{decimal})"):
        parsed = Schedule.parse(text)
        assert parsed == shorthand and hash(parsed) == hash(shorthand), text
    assert shorthand.a == exponent and shorthand.is_polynomial
    expected_text = str(eta0_sym * (t_sym + 2) ** (-sympy.Rational(exponent.numerator, exponent.denominator)))
    assert shorthand.text == expected_text
    assert shorthand.label() == f"a={exponent}"
    assert shorthand.to_json() == {"expr": expected_text, "a": str(exponent)}
    assert Schedule.from_json(shorthand.to_json()) == shorthand
    assert sympy.simplify(shorthand.expr - eta0_sym * (t_sym + 2) ** (-sympy.Rational(str(exponent)))) == 0


@pytest.mark.parametrize("a", ["1/2", "1", "3/10", "2/3", "1/7"])
def test_polynomial_values_are_the_engines_formula_bit_for_bit(a):
    schedule = Schedule.polynomial(a)
    a_float = float(Fraction(a))
    values = schedule.unit_values(0, 5000)
    expected = np.array([(t + 2.0) ** (-a_float) for t in range(5000)])  # Python's float power, one by one
    assert np.array_equal(values, expected)
    assert np.array_equal(schedule.unit_values(1234, 2345), expected[1234:2345])
    assert schedule.unit_value(4321) == expected[4321]


@pytest.mark.parametrize("text", ["eta0", "eta0*(t+2)**(-3/2)", "eta0*(t+2)**(-2)", "eta0*(t+3)**(-1/2)",
                                  "2*eta0*(t+2)**(-1/2)", "eta0*(t+2)**(-1/2)*log(t+2)"])
def test_expressions_outside_the_polynomial_family_have_no_a(text):
    schedule = Schedule.parse(text)
    assert schedule.a is None and not schedule.is_polynomial and schedule.to_json() == {"expr": schedule.text}


def first_offending_step(f, stop=10**4):
    """The first integer t >= 0 where f(t) is not a finite number > 0 (a plain loop in Python floats)."""
    for t in range(stop):
        try:
            value = f(t)
        except (ZeroDivisionError, ValueError):
            return t
        if not (math.isfinite(value) and value > 0):
            return t
    return None


@pytest.mark.parametrize("text,f,problem", [
    ("eta0*sin(t)", math.sin, "not > 0"),                        # sin(0) = 0
    ("eta0*sin(t+1)", lambda t: math.sin(t + 1), "not > 0"),     # sin(4) < 0
    ("eta0/(t-3)", lambda t: 1 / (t - 3), "not > 0"),            # negative before the pole
    ("eta0/(t-3)**2", lambda t: 1 / (t - 3) ** 2, "not finite"),  # infinite at t = 3
    ("eta0*sqrt(t-3)", lambda t: math.sqrt(t - 3), "not finite"),
    ("eta0*(t-100)**2/(t+2)", lambda t: (t - 100) ** 2 / (t + 2), "not > 0"),
])
def test_values_that_are_not_a_learning_rate_name_the_first_offending_step(text, f, problem):
    expected = first_offending_step(f)
    assert expected is not None
    with pytest.raises(InputError) as error:
        Schedule.parse(text)
    message = str(error.value)
    assert message.startswith("--schedule: ") and "\n" not in message
    assert f"at t = {expected} " in message and problem in message, message


def test_sin_schedule_offends_first_at_zero_and_its_shifted_form_at_three():
    assert first_offending_step(math.sin) == 0 and first_offending_step(lambda t: math.sin(t + 1)) == 3
    assert math.sin(4) < 0 < math.sin(3)


def test_a_value_that_goes_bad_beyond_the_dense_range_is_found_on_the_log_grid():
    with pytest.raises(InputError, match=r"not > 0 at t = 2000000 "):
        Schedule.parse("eta0*(2*10**6 - t)")
    with pytest.raises(InputError, match=r"not > 0 at t = 123456789 "):
        Schedule.parse("eta0*(123456789 - t)")
    Schedule.parse("eta0*(10**13 - t)")  # positive at every step checked: accepted


@pytest.mark.parametrize("text,pattern", [
    ("eta0*x", r"unknown symbol x"),
    ("eta0*alpha*(t+2)**(-1/2)", r"unknown symbol alpha"),
    ("eta0*foo(t)", r"unknown function foo"),
    ("eta0*(t+2", r"not parseable"),
    ("eta0 */ t", r"not parseable"),
    ("t.__class__", r"not parseable"),
    ("eta0*[1][0]", r"not parseable"),
    ("", r"empty"),
    ("eta0**2/(t+2)", r"must be eta0 times a function of t"),
    ("eta0**2*(t+2)**(-1/2)", r"must be eta0 times a function of t"),
    ("1/sqrt(t+2)", r"must be eta0 times a function of t"),
    ("eta0 + 1/(t+2)", r"must be eta0 times a function of t"),
    ("Piecewise((eta0, t < eta0), (eta0/(t+2), True))", r"must be eta0 times a function of t"),
    ("eta0/(t+2) + 2/(t+2)**2", r"must be eta0 times a function of t"),  # a product without eta0 in the sum
])
def test_bad_expressions_are_refused_in_one_line(text, pattern):
    with pytest.raises(InputError, match=pattern) as error:
        Schedule.parse(text)
    assert str(error.value).startswith("--schedule: ") and "\n" not in str(error.value)


def test_eta0_is_taken_out_of_min_max_and_sums():
    assert str(Schedule.parse("Max(eta0/(t+2), eta0/100)").unit_expr) == "Max(1/100, 1/(t + 2))"
    values = Schedule.parse("eta0*t/(t+2)**2 + eta0/(t+2)**2").unit_values(0, 100)
    np.testing.assert_allclose(values, [(t + 1) / (t + 2) ** 2 for t in range(100)], rtol=1e-15)
    # a constant times a Min: eta0 is taken out of the Min, the constant kept
    values = Schedule.parse("2*Min(eta0/(t+2), eta0/100)").unit_values(0, 300)
    np.testing.assert_allclose(values, [2 * min(1 / (t + 2), 1 / 100) for t in range(300)], rtol=1e-15)
    # eta0 that cancels only once simplified: (eta0^2 + eta0) / (eta0 + 1) = eta0
    values = Schedule.parse("(eta0**2 + eta0)/((eta0 + 1)*(t + 2))").unit_values(0, 100)
    np.testing.assert_allclose(values, [1 / (t + 2) for t in range(100)], rtol=1e-15)


def test_a_rate_that_underflows_in_float64_is_refused_where_it_reaches_zero():
    expected = next(t for t in range(10**6) if math.exp(-t / 1000) == 0.0)
    with pytest.raises(InputError, match=rf"not > 0 at t = {expected} "):
        Schedule.parse("eta0*exp(-t/1000)")


def test_options_give_one_schedule():
    assert schedule_from_options("1/2", None) == Schedule.polynomial("1/2")
    assert schedule_from_options(None, "eta0/sqrt(t+2)") == Schedule.polynomial("1/2")
    assert schedule_from_options(None, None, default_a="1/2") == Schedule.polynomial("1/2")
    with pytest.raises(InputError, match=r"--a .* --schedule"):
        schedule_from_options("1/2", "eta0/sqrt(t+2)")
    with pytest.raises(InputError, match=r"--schedule"):
        schedule_from_options(None, None)
    with pytest.raises(InputError, match=r"^--a: must be in \(0, 1\]"):
        schedule_from_options("3/2", None)


def test_schedules_pickle_and_rebuild_their_values():
    schedule = Schedule.parse("eta0/((t+2)*log(t+2))")
    copy = pickle.loads(pickle.dumps(schedule))
    assert copy == schedule and np.array_equal(copy.unit_values(0, 50), schedule.unit_values(0, 50))


def test_importing_the_module_and_the_polynomial_family_need_no_sympy():
    code = ("import sys; from rates.schedule import Schedule; s = Schedule.polynomial('1/2'); "
            "s.unit_values(0, 3); s.label(); s.to_json(); print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_a_schedule_parsed_once_is_read_back_and_evaluated_without_sympy(tmp_path):
    """The on-disk cache keeps a parsed schedule with its evaluator's numpy source; a second process parses
    the same text, evaluates it and reads its canonical text back (a Dask worker, a trajectory file) without
    importing sympy, and gets the same bits as the first."""
    import json
    import os

    code = ("import sys, json; from rates.schedule import Schedule; "
            "s = Schedule.parse('Piecewise((eta0*(t+1)/100, t < 99), (eta0*log(t+2)/sqrt(t+2), True))'); "
            "again = Schedule.parse(s.text); v = s.unit_values(0, 300); "
            "print(json.dumps([s.text, s.a, again == s, v.tobytes().hex(), 'sympy' in sys.modules]))")
    env = {**os.environ, "RATES_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      timeout=120, env=env).stdout) for _ in range(2)]
    (text, a, equal, values, first_sympy), (text2, a2, equal2, values2, second_sympy) = runs
    assert first_sympy and not second_sympy
    assert (text, a, equal, values) == (text2, a2, equal2, values2) and equal and a is None
    expected = np.array([(t + 1) / 100 if t < 99 else math.log(t + 2) / math.sqrt(t + 2) for t in range(300)])
    np.testing.assert_allclose(np.frombuffer(bytes.fromhex(values)), expected, rtol=1e-15)


def test_a_damaged_cache_entry_is_a_miss(tmp_path, monkeypatch):
    from rates import cache, schedule

    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(schedule, "_NUMPY_EVALUATORS", {})
    schedule._parsed.cache_clear()
    text = "eta0*(3+cos(t))/(t+2)"
    key = schedule._cache_key(text)
    Schedule.parse(text)  # stores the entry
    entry = cache.load(schedule.CACHE_KIND, key)
    assert entry["text"] == "eta0*(cos(t) + 3)/(t + 2)" and schedule._restore(key) == Schedule.parse(text)
    cache.store(schedule.CACHE_KIND, key, {**entry, "numpy": "def _lambdifygenerated(t):\n    return 2.0 + 0*t\n"})
    assert schedule._restore(key) is None  # an evaluator that does not give the stored values again
    cache.store(schedule.CACHE_KIND, key, {**entry, "numpy": "def _lambdifygenerated(t):\n    return ("})
    assert schedule._restore(key) is None  # source that does not compile


@pytest.mark.parametrize("text", [*EXPRESSIONS, "Max(eta0/(t+2), eta0*exp(-t)/10)",
                                  "eta0*(1 + Abs(cos(t)) + floor(t/3) + ceiling(t/7)*E/pi)/(t+2)"])
def test_every_function_a_schedule_may_name_is_restored_from_the_cache(text, tmp_path, monkeypatch):
    """The cached numpy source runs in the namespace :func:`rates.schedule._numpy_namespace` gives it: every
    allowed function must be found there, or the cache would never be used."""
    from rates import schedule

    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(schedule, "_NUMPY_EVALUATORS", {})
    schedule._parsed.cache_clear()  # parsed by an earlier test: this process would not store it again
    parsed = Schedule.parse(text)
    restored = schedule._restore(schedule._cache_key(text))
    assert restored == parsed
    if not parsed.is_polynomial:
        steps = np.arange(0, 500, dtype=np.float64)
        fresh = schedule._evaluate(schedule._compiled(parsed.text)[2], steps)
        assert np.array_equal(schedule._evaluate(schedule._NUMPY_EVALUATORS[parsed.text], steps), fresh)


# ------------------------------------------------------------------ the exponent, the options, the size of numbers


@pytest.mark.parametrize("text, value", [("1/1 000", Fraction(1, 1000)), ("1/1000000000000000", Fraction(1, 10**15)),
                                         (" 0.25 ", Fraction(1, 4)), ("1", Fraction(1)), ("0.5/2", Fraction(1, 4))])
def test_an_exponent_is_read_exactly_up_to_a_denominator_of_1e15(text, value):
    from rates.schedule import parse_exponent_fraction

    assert parse_exponent_fraction(text) == value


@pytest.mark.parametrize("text, message", [
    ("1/2/3", "expected a number such as 1/2, 0.5 or 2/3, got '1/2/3'"),  # two slashes, not (1/2)/3
    ("0", "must be in (0, 1], got 0"),
    ("3/2", "must be in (0, 1], got 3/2"),
    ("1/1000000000000001", "must be a fraction with denominator <= 1e15 (the engine steps in float64), "
                           "got 1/1000000000000001"),
])
def test_an_exponent_outside_the_allowed_ones_is_refused_naming_the_option(text, message):
    from rates.schedule import parse_exponent_fraction

    with pytest.raises(InputError) as error:
        parse_exponent_fraction(text)
    assert (error.value.parameter, error.value.message) == ("a", message)
    with pytest.raises(InputError) as error:
        parse_exponent_fraction(text, "gamma")
    assert error.value.parameter == "gamma"


def test_the_options_name_themselves_in_every_refusal():
    with pytest.raises(InputError) as error:
        schedule_from_options("1/2", "eta0/(t+2)")
    assert (error.value.parameter, error.value.message) == (
        "schedule", "give either --a or --schedule, not both (got --a 1/2 and --schedule eta0/(t+2))")
    with pytest.raises(InputError) as error:
        schedule_from_options(None, None)
    assert (error.value.parameter, error.value.message) == (
        "schedule", "give the learning rate as --a A (eta0*(t+2)**(-A)) or --schedule EXPR")
    with pytest.raises(InputError) as error:
        schedule_from_options(None, "eta0*x")
    assert error.value.parameter == "schedule"
    with pytest.raises(InputError) as error:
        schedule_from_options("2", None)
    assert error.value.parameter == "a"


def test_a_record_is_read_by_its_a_when_it_has_one():
    # a file of the polynomial family is read by its a, whatever its expression says (older files wrote both)
    assert Schedule.from_json({"expr": "not read", "a": "1/2"}) == Schedule.polynomial("1/2")
    assert Schedule.from_json({"expr": "eta0/((t+2)*log(t+2))", "a": None}) == Schedule.parse("eta0/((t+2)*log(t+2))")
    assert Schedule.from_json({"expr": "eta0/(t+2)"}) == Schedule.polynomial("1")


def test_an_evaluator_is_restored_from_the_cache_without_compiling_and_compiled_on_a_miss(tmp_path, monkeypatch):
    from rates import schedule

    text = "eta0/((t+2)*log(t+2))"
    parsed = Schedule.parse(text)  # stores the entry in this test's cache
    schedule._compiled.cache_clear()
    expected = [1 / ((t + 2) * math.log(t + 2)) for t in range(5)]
    np.testing.assert_allclose(parsed.unit_values(0, 5), expected, rtol=1e-15)
    assert schedule._compiled.cache_info().currsize == 0 and parsed.text in schedule._NUMPY_EVALUATORS
    # an empty cache: compiled once from the text
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(schedule, "_NUMPY_EVALUATORS", {})
    np.testing.assert_allclose(parsed.unit_values(0, 5), expected, rtol=1e-15)
    assert schedule._compiled.cache_info().currsize == 1 and schedule._NUMPY_EVALUATORS == {}


def test_an_unknown_module_attribute_is_an_attribute_error():
    import rates.schedule

    with pytest.raises(AttributeError, match=r"^module 'rates.schedule' has no attribute 'nothing'$"):
        rates.schedule.nothing  # noqa: B018


@pytest.mark.parametrize("text", [
    "10**133",                  # 133 x (2 + 1) digits = 399 <= 400
    "(1/10)**133",              # 1/10: 1 + 2 digits
    "1**(10**100)", "0**(10**100)", "(-1)**(10**100)",  # powers of 0, 1 and -1 have no size
    "10**((-1)**2 + 132)",      # (-1)**2 = 1: 10**133
    "10**((-1)**(2/3) + 133)",  # a root of -1 is not formed: it counts as -1 in the size estimate, 10**132
    "sqrt(2)**400", "sqrt(2)**3",  # a constant not formed exactly counts one digit a power
    "(100**(1/2))**150",        # a root is not formed exactly either: one digit a power
    "t**(10**6)",               # a power of t is not a number
    "0.1**100",                 # a decimal is read from its text, 1/10: 3 digits a power, 300
    "(2 + 1j)**2",              # a complex constant is not formed: one digit a power
    "(pi + 2)*t", "sqrt(t+2)**1000",  # a sum with a constant not formed; a function of t is not a number
    "Piecewise((1, t < 10), (1/(t+2), True))**1000",  # a piece and its condition hold t
])
def test_powers_of_numbers_within_400_digits_are_allowed(text):
    from rates.schedule import check_number_sizes

    check_number_sizes(text, "schedule")


@pytest.mark.parametrize("text, power", [
    ("10**134", "10 ** 134"),  # 402 digits
    ("(1/10)**134", "(1 / 10) ** 134"),
    ("eta0/(t+2) + 10**(-134)", "10 ** (-134)"),
    ("10**((-1)**2 + 133)", "10 ** ((-1) ** 2 + 133)"),  # (-1)**2 = 1, not -1: 10**134
    ("sqrt(2)**401", "sqrt(2) ** 401"),
    ("(10**2)**150", "(10 ** 2) ** 150"),   # 100 has four digits: 600
    ("9**9**9", "9 ** 9 ** 9"),
    ("10^134", "10 ** 134"),  # ^ is read as **
    ("pi**401", "pi ** 401"),  # a constant not formed counts one digit a power
    ("Piecewise((2, 1 < 2), (3, True))**401", "Piecewise((2, 1 < 2), (3, True)) ** 401"),
])
def test_a_power_of_numbers_beyond_400_digits_is_refused_before_it_is_formed(text, power):
    from rates.schedule import check_number_sizes

    with pytest.raises(InputError) as error:
        check_number_sizes(text, "bound")
    assert error.value.parameter == "bound"
    assert error.value.message == (f"the power {power} would have more than 400 digits; powers of numbers must stay "
                                   "within 10^400 (float64 reaches 1.8e308)")


def test_a_refused_power_is_echoed_to_60_characters_and_deep_nesting_is_refused():
    from rates.schedule import check_number_sizes

    power = "(1000000000000000000000 + 2000000000000000000000 + 3000000000000000000000) ** 100"  # 23 digits x 100
    with pytest.raises(InputError) as error:
        check_number_sizes(power.replace(" ** ", "**"), "schedule")
    assert error.value.message.startswith(f"the power {power[:60]} would have more than 400 digits")
    with pytest.raises(InputError) as error:
        check_number_sizes("+".join(["t"] * 1500), "bound")  # 1500 nested sums, past Python's recursion limit
    assert (error.value.parameter, error.value.message) == ("bound", "expression nested too deeply")


def test_a_number_literal_beyond_float64_is_refused_with_a_message_not_a_crash():
    """1e999 is inf to Python's parser (no fraction holds it; the size check used to raise ValueError)."""
    from rates.schedule import check_number_sizes

    with pytest.raises(InputError) as error:
        check_number_sizes("eta0*1e999/(t+2)", "schedule")
    assert error.value.message.startswith("a number literal beyond float64's largest (1.8e308)")
    with pytest.raises(InputError) as error:
        Schedule.parse("eta0*1e999/(t+2)")
    assert str(error.value).startswith("--schedule: a number literal beyond float64") and "\n" not in str(error.value)
    check_number_sizes("eta0*1e308/(t+2)", "schedule")  # the largest decade float64 holds passes the check


def test_a_schedule_with_a_large_but_allowed_number_is_parsed():
    schedule = Schedule.parse("eta0*10**133/(t+2)")
    assert schedule.unit_value(0) == pytest.approx(5e132, rel=1e-15)
    with pytest.raises(InputError, match="would have more than 400 digits"):
        Schedule.parse("eta0*10**134/(t+2)")


def test_values_over_an_empty_range_and_far_out_are_float64():
    assert Schedule.polynomial("1/2").unit_values(5, 5).tolist() == []
    assert Schedule.parse("eta0/((t+2)*log(t+2))").unit_values(7, 7).tolist() == []
    # (t+2)^3 overflows int64 past t ~ 2.1e6: the steps are floats, so the value is 1/(3000002^3 + 1)
    far = Schedule.parse("eta0/(1 + (t+2)**3)").unit_values(3 * 10**6, 3 * 10**6 + 1)
    assert far[0] == pytest.approx(1 / (3000002.0**3 + 1), rel=1e-15)


def test_complex_values_of_an_evaluator_are_not_a_learning_rate():
    from rates.schedule import _evaluate

    values = _evaluate(lambda t: np.array([1 + 0j, 2 + 1j, 3 + 0j]), np.arange(3.0))
    assert values.dtype == np.float64 and values[0] == 1.0 and np.isnan(values[1]) and values[2] == 3.0


def test_the_polynomial_family_names_the_option_it_was_given():
    for option in ("a", "gamma"):
        with pytest.raises(InputError) as error:
            Schedule.polynomial("2", *(() if option == "a" else (option,)))
        assert error.value.parameter == option


def test_a_cached_evaluator_runs_with_numpy_and_abs_only(tmp_path, monkeypatch):
    from rates import cache, schedule

    text = "eta0*(3+cos(t))/(t+2)"
    parsed = Schedule.parse(text)
    key = schedule._cache_key(text)
    entry = cache.load(schedule.CACHE_KIND, key)
    probe = [float(v).hex() for v in np.full(len(schedule.PROBE_STEPS), 2.0)]
    # abs is there (Abs is printed as abs), Python's other builtins are not: such an entry is a miss
    cache.store(schedule.CACHE_KIND, key, {**entry, "probe": probe,
                                           "numpy": "def _lambdifygenerated(t):\n    return abs(0*t - 2.0)\n"})
    assert schedule._restore(key) == parsed
    cache.store(schedule.CACHE_KIND, key, {**entry, "probe": probe,
                                           "numpy": "def _lambdifygenerated(t):\n    return 0*t + len('ab')\n"})
    assert schedule._restore(key) is None


def test_the_dense_check_steps_in_floats_and_says_where_it_looked():
    # (t+2)^4 passes int64's range at t ~ 55000: checked on float steps the rate is positive everywhere
    Schedule.parse("eta0/(1 + (t+2)**4)")
    with pytest.raises(InputError) as error:
        Schedule.parse("eta0*sin(t)")
    assert error.value.message.endswith("eta0*f(t) must be a finite positive learning rate at every step t >= 0")


def test_a_bad_stretch_narrower_than_a_coarse_grid_is_found_on_the_601_point_grid():
    # (t - 5e9)^2 - 1e16 <= 0 exactly on [4.9e9, 5.1e9]: one ratio of the log grid (10^(6/600) = 1.023) wide, far
    # inside one of a 50-point grid (10^(6/49) = 1.33); f = 0 first at t = 4.9e9, and f > 0 at every t before
    assert (4.9e9 - 5e9) ** 2 - 1e16 == 0 and (4899999999 - 5e9) ** 2 - 1e16 > 0
    with pytest.raises(InputError) as error:
        Schedule.parse("eta0*((t - 5*10**9)**2 - 10**16)/(t+2)**3")
    assert "is not > 0 at t = 4900000000 " in error.value.message
    assert error.value.message.endswith("(checked at each t <= 1000000 and on a log grid up to 1e12)")
