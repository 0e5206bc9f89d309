"""``rates fit --bound``: a user's conjectured bound, judged as a theorem's template is.

Independent expectations: synthetic gaps with a known law (``t^-1/4``, ``log t / t^(1/4)``), whose slopes are
closed forms; the power sums against a plain loop over the schedule; the members' orders against the
leading orders of docs/theory.md section 4 typed by hand; and, on one short real SignGD run, the theorem's own
verdict on the same trajectory (the user bound ``C1/S(1) + C2*S(2)/S(1)`` is the NSD template of SIGNADAM
Thm 5.3, so its envelope must be the theorem's).
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import sympy as sp
from cli_invoke import invoke
from test_compare import checkpoints, synthetic_run

from rates.errors import InputError
from rates.judge.user_bound import judge_user_bound, member_orders, parse_bound, power_sums, stated_order
from rates.schedule import Schedule


def test_members_are_the_derivatives_in_the_constants():
    bound = parse_bound("(C2*S(2) + C0)/S(1)")
    assert [str(c) for c in bound.constants] == ["C0", "C2"]
    assert bound.labels == ("1/S(1)", "S(2)/S(1)")
    # a constant shared by two terms is one member; ^ is a power, binding tighter than / as written
    shared = parse_bound("C1*(log(t)/t + 1/t) + C2/t^(1/4)")
    t = sp.Symbol("t", positive=True)
    assert sp.simplify(shared.members[0] - (sp.log(t) + 1) / t) == 0
    assert sp.simplify(shared.members[1] - t ** sp.Rational(-1, 4)) == 0
    assert parse_bound("C*0.25/t").members == (sp.Rational(1, 4) / t,)  # a decimal is read exactly


@pytest.mark.parametrize("text, words", [
    ("", "is empty"),
    ("C1/(t", "cannot be parsed"),
    ("x/t", "unknown name 'x'"),
    ("C1**2/t", "not a plain factor"),
    ("C1*C2/t", "not a plain factor"),
    ("log(C1)/t", "not a plain factor"),
    ("1/t + C/t", "carries no constant"),
    ("1/t", "no unknown constant"),
    ("-C/t", "never positive"),
    ("C*S(0)/t", "S(p) needs a number p > 0"),
    ("C*S(t)", "S(p) needs a number p > 0"),
    ("__import__('os').getcwd()", "is not allowed"),
    ("C.real/t", "is not allowed"),
    # refused before sympy forms the number (these took minutes): the allowed ranges are named
    ("C/t**(10**10**10)", "the power 10**10**10 would have more than 400 digits"),
    ("C/S(1e308)", "S(p) needs a number p > 0 (at most 100)"),
    ("C/t**2000", "exponents must lie in [-1000, 1000]"),
    ("C/t if t else C", "is not allowed"),
])
def test_bad_bounds_are_refused_in_one_line_with_exit_2(text, words, tmp_path):
    out = tmp_path / "never.json"
    code, stdout, err = invoke(["fit", "--algo", "signgd", "--a", "3/4", "--steps", "100", "--bound", text,
                                "--out", str(out)])
    assert code == 2 and stdout == "" and not out.exists()
    assert err.count("\n") == 1 and err.startswith("rates: error: --bound: ") and words in err, err


def test_power_sums_are_the_schedules_own_partial_sums():
    t = np.array([1, 7, 100, 5000])
    s = np.arange(5000)
    eta = 0.5 * (s + 2.0) ** -0.5
    expected = {p: np.cumsum(eta ** float(p))[t - 1] for p in (1, 2, sp.Rational(3, 2))}
    sums = power_sums(Schedule.polynomial("1/2"), 0.5, list(expected), t)
    for p, values in expected.items():
        np.testing.assert_allclose(sums[p], values, rtol=1e-12)


@pytest.mark.parametrize("a, text, exponent, log_power", [
    ("1/2", "C*S(2)/S(1)", "1/2", 1),    # sum 1/(s+2) ~ log t over sum (s+2)^-1/2 ~ 2 sqrt t
    ("3/4", "C*S(2)/S(1)", "1/4", 0),    # sum (s+2)^-3/2 converges; 1/S_1 ~ t^-1/4
    ("1", "C/S(1)", "0", -1),            # 1/log t
    ("3/10", "C*S(2)/S(1)", "3/10", 0),  # t^(1-3/5) / t^(7/10)
    ("1/2", "C*log(t)^2/sqrt(t)", "1/2", 2),
])
def test_member_orders_are_the_leading_orders(a, text, exponent, log_power):
    bound = parse_bound(text)
    (order,) = member_orders(bound, Schedule.polynomial(a))
    assert (order.exponent, order.log_power) == (sp.Rational(exponent), log_power)


def test_a_member_outside_the_class_gets_no_order():
    # 1/log log t: t^0 (log t)^0 times a factor that still tends to 0 -- not O(1), so no order is claimed
    (order,) = member_orders(parse_bound("C/log(log(t))"), Schedule.polynomial("1/2"))
    assert not order.known and "not of the form" in order.note
    assert stated_order([order]) is None


def test_stated_rate_is_the_largest_member():
    bound = parse_bound("C1/S(1) + C2*S(2)/S(1)")
    stated = stated_order(member_orders(bound, Schedule.polynomial("1/2")))
    assert stated.label == "S(2)/S(1)" and (stated.exponent, stated.log_power) == (sp.Rational(1, 2), 1)


def quarter_run(law=lambda t: 3 * t ** -0.25, noise: float = 0.01):
    return synthetic_run(law, t=checkpoints(1e6, 60).astype(np.int64), noise=noise, a="3/4")


def test_a_false_bound_is_violated_and_a_true_one_tight():
    run = quarter_run()
    false = judge_user_bound([run], parse_bound("C/t"))
    assert false.verdict.label == "violated"
    assert false.verdict.envelope.slowest == pytest.approx(-1.0, abs=1e-12)
    assert false.verdict.fit.slope == pytest.approx(-0.25, abs=0.01)
    true = judge_user_bound([run], parse_bound("C1/S(1) + C2*S(2)/S(1)"))
    assert true.verdict.label == "tight", true.verdict.reason
    # a bound that decays slower than the data holds but is not attained: loose
    slack = judge_user_bound([run], parse_bound("C1*log(t)/t^(1/4) + C2/t"))
    assert slack.verdict.label == "loose", slack.verdict.reason


def test_a_log_factor_the_bound_misses_is_violated():
    # gap log t / t^(1/4): its slope over [1e4, 1e6] is -1/4 + 1/log t ~ -0.16, slower than C t^-1/4 by ~0.09
    run = quarter_run(lambda t: np.log(t) * t ** -0.25)
    verdict = judge_user_bound([run], parse_bound("C/t^(1/4)")).verdict
    assert verdict.label == "violated", verdict.reason
    assert judge_user_bound([run], parse_bound("C*log(t)/t^(1/4)")).verdict.label == "tight"


def test_a_window_where_an_asymptotically_smaller_term_is_slowest_is_pre_asymptotic():
    # log(t)^10/sqrt(t) grows until t = e^20 while t^(-1/4) is the bound's order: over [1e4, 1e6] the slowest
    # term is the wrong one, so (iii) cannot be measured; the data are t^(-1/4), which the bound does not refute
    verdict = judge_user_bound([quarter_run()], parse_bound("C1/t^(1/4) + C2*log(t)^10/t^(1/2)")).verdict
    assert verdict.label == "inconclusive" and "pre-asymptotic for this bound" in verdict.reason, verdict.reason


def test_a_frozen_gap_is_inconclusive_not_violated():
    run = quarter_run(lambda t: 0.3 + 0 * t, noise=0.0)  # SignGD whose sign pattern never changes
    verdict = judge_user_bound([run], parse_bound("C/t")).verdict
    assert verdict.label == "inconclusive" and "pre-asymptotic" in verdict.reason


@pytest.fixture(scope="module")
def signgd_run(tmp_path_factory):
    """One short real run: SignGD at a = 3/4 on the default preset, 20000 steps (gap ~ t^-1/4, SIGNADAM Cor. 5.4)."""
    path = tmp_path_factory.mktemp("signgd") / "run.json"
    code, _, err = invoke(["fit", "--algo", "signgd", "--a", "3/4", "--steps", "20000", "--device", "cpu",
                           "--no-progress", "--out", str(path)])
    assert code == 0, err
    return path


def test_real_run_false_bound_exits_1_violated(signgd_run):
    code, out, _ = invoke(["fit", "--from", str(signgd_run), "--bound", "C/t"])
    assert code == 1
    assert "user bound     : C/t" in out and "verdict        : violated" in out


def test_real_run_theorem_template_as_user_bound_matches_the_theorem(signgd_run):
    code, out, err = invoke(["fit", "--from", str(signgd_run), "--bound", "C1/S(1) + C2*S(2)/S(1)", "--json"])
    assert code == 0, err
    (mine,) = json.loads(out)
    code, out, err = invoke(["fit", "--from", str(signgd_run), "--json"])
    (theirs,) = json.loads(out)
    assert mine["user_bound"]["source"] == "user bound" and mine["prediction"] is None
    assert mine["verdict"]["verdict"] in ("tight", "loose")
    assert mine["verdict"]["verdict"] == theirs["verdict"]["verdict"]
    np.testing.assert_allclose(mine["verdict"]["envelope"]["members"], theirs["verdict"]["envelope"]["members"],
                               rtol=1e-9)
    assert mine["verdict"]["fit"]["slope"] == theirs["verdict"]["fit"]["slope"]


def test_power_sums_of_any_schedule_are_chunked_exact_sums(monkeypatch):
    import rates.judge.user_bound as user_bound

    monkeypatch.setattr(user_bound, "SUM_CHUNK", 1000)  # several chunks, checkpoints inside and on their edges
    t = np.array([3000, 1, 999, 1000, 1001, 2500])
    s = np.arange(3000, dtype=float)
    eta = 2.0 / ((s + 2) * np.log(s + 2))
    sums = power_sums(Schedule.parse("eta0/((t+2)*log(t+2))"), 2.0, [sp.Integer(1), sp.Integer(2)], t)
    for p in (1, 2):
        np.testing.assert_allclose(sums[p], np.cumsum(eta**p)[t - 1], rtol=1e-12)
    # the polynomial family through the same call: Hurwitz-zeta sums, equal to the loop
    poly = power_sums(Schedule.polynomial("1/2"), 2.0, [sp.Integer(1)], t)[sp.Integer(1)]
    np.testing.assert_allclose(poly, np.cumsum(2.0 * (s + 2) ** -0.5)[t - 1], rtol=1e-12)


def test_a_general_schedule_is_judged_without_a_stated_rate():
    run = quarter_run()
    run.config = dataclasses.replace(run.config, a=None, schedule=Schedule.parse("eta0/((t+2)*log(t+2))"))
    record = judge_user_bound([run], parse_bound("C1/S(1) + C2*S(2)/S(1)"))
    # 1/S_1 ~ 1/log log t decays far slower than the data's t^-1/4: the bound holds, and the data are faster
    assert record.stated is None and record.verdict.label == "loose", record.verdict.reason
    assert any("no stated rate" in note for note in record.verdict.notes)
    assert judge_user_bound([run], parse_bound("C/t")).verdict.label == "violated"


def test_a_short_run_is_inconclusive_with_its_numbers():
    run = synthetic_run(lambda t: 3 * t ** -0.25, t=checkpoints(800, 30).astype(np.int64), noise=0.01, a="3/4")
    verdict = judge_user_bound([run], parse_bound("C/t")).verdict
    assert verdict.label == "inconclusive" and "run too short for an asymptotic window (t >= 1000)" in verdict.reason


def test_real_run_user_bound_draws_its_figure(signgd_run, tmp_path):
    figure = tmp_path / "bound.png"
    code, out, err = invoke(["fit", "--from", str(signgd_run), "--bound", "C1*log(t)/t^(1/4) + C2/t",
                             "--plot", str(figure)])
    assert code == 0, err
    assert "verdict        : loose" in out and figure.stat().st_size > 0 and figure.with_suffix(".pdf").exists()


@pytest.mark.parametrize("schedule", [["--a", "1/2"], ["--schedule", "eta0/((t+2)*log(t+2))"]])
def test_a_term_negative_in_the_users_window_is_refused_before_it_runs(schedule, tmp_path):
    # log(t) - 5 < 0 for t < e^5 ~ 148: sympy cannot tell its sign, the checkpoints can; S(2) - 0.9 too, since
    # S_2(2) = 1/2 + 1/3 at a = 1/2 and 1/(2 log 2)^2 + 1/(3 log 3)^2 = 0.61 for the other schedule
    for text, first in (("C*(log(t) - 5)", "t = 2"), ("C*(S(2) - 0.9)", "t = 2")):
        out = tmp_path / "never.json"
        code, stdout, err = invoke(["fit", "--algo", "signgd", *schedule, "--steps", "1000", "--bound", text,
                                    "--window", "2:1000", "--out", str(out)])
        assert code == 2 and stdout == "" and not out.exists(), err
        assert err.startswith("rates: error: --bound: the term") and f"at {first};" in err, err


def test_a_bound_needs_to_be_positive_only_where_it_can_be_judged(tmp_path):
    # log(log(t)) < 0 at t = 2 (log log 2 = -0.37) but > 0 from t = 3 on; an automatic window starts at t >= 1e3
    # (rates.judge.compare.MIN_WINDOW_START), so C/log(log(t)) is a bound there; inside a user window from 2 it is not
    out = tmp_path / "run.json"
    code, stdout, err = invoke(["fit", "--algo", "signgd", "--a", "1/2", "--steps", "2000", "--bound", "C/log(log(t))",
                                "--device", "cpu", "--no-progress", "--out", str(out)])
    assert code == 0 and "user bound     : C/log(log(t))" in stdout, err
    code, stdout, err = invoke(["fit", "--from", str(out), "--bound", "C/log(log(t))", "--window", "2:2000"])
    assert code == 2 and "the term 1/log(log(t)) is -2.73 at t = 2;" in err, err


def test_a_term_negative_on_a_files_checkpoints_is_refused(signgd_run, tmp_path):
    figure = tmp_path / "never.png"
    code, stdout, err = invoke(["fit", "--from", str(signgd_run), "--bound", "C*(log(t) - 5)", "--window", "2:20000",
                                "--plot", str(figure)])
    assert code == 2 and stdout == "" and not figure.exists()
    assert "the term log(t) - 5 is -4.31 at t = 2;" in err, err


# --------------------------------------------------------------------- the parts, without a run (milliseconds each)


def refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_bound(text)
    assert caught.value.parameter == "bound"
    return caught.value.message


@pytest.mark.parametrize("text, piece", [
    ("C.real/t", "'C.real' is not allowed"),   # an attribute, quoted as written
    ("~C/t", "'~C' is not allowed"),           # a unary operator other than + and -
    ("C % t", "'C % t' is not allowed"),       # a binary operator other than + - * / **
    ("C*log(t, 2)", "'log(t, 2)' is not allowed"),  # two arguments
    ("C*log(x=t)", "'log(x=t)' is not allowed"),  # a keyword
    ("C*floor(t)", "'floor(t)' is not allowed"),  # a function not listed
    ("True*C/t", "'True' is not allowed"),
    ("C*1e400/t", "'1e400' is not allowed"),   # a float that is not finite
    ("C*'a'/t", "\"'a'\" is not allowed"),
])
def test_each_refused_piece_is_quoted_as_written(text, piece):
    message = refusal(text)
    assert message.startswith(piece) and message.endswith("and constants named C, C0, C1, C_noise, ...")


@pytest.mark.parametrize("text, words", [
    ("C*log/t", "log is a function: write log(...)"),
    ("C*S/t", "S is a function: write S(...)"),
    ("c1/t", "unknown name 'c1'"),
    ("C/(t - t)", "division by zero in 'C/(t - t)'"),
    ("C*S(101)", "S(p) needs a number p > 0 (at most 100), got S(101)"),
    ("C*S(-1)", "got S(-1)"),
    ("C/t**1001", "the exponent in t**1001 is 1001; exponents must lie in [-1000, 1000]"),
    ("C/t**(10**7)", "the exponent in t**(10**7) is beyond 1e6"),
    ("C*10**134/t", "the power 10**134 would have more than 400 digits"),  # 134 x (2 + 1) digits = 402
    ("C1/t + C2/t + C3/t + C4/t + C5/t + C6/t + C7/t + C8/t + C9/t", "has 9 constants; at most 8"),
    ("   ", "is empty"),
])
def test_refusals_name_the_rule_and_the_value(text, words):
    assert words in refusal(text)


def test_the_largest_allowed_numbers_and_signs_are_read_exactly():
    t = sp.Symbol("t", positive=True)
    assert parse_bound("C*10**133/t").members == (sp.Integer(10) ** 133 / t,)  # 133 x 3 = 399 digits: allowed
    assert parse_bound("C*1**(10**10)/t").members == (1 / t,)  # powers of 1 (and 0, -1) have no size
    assert parse_bound("C/t**1000").members == (t**-1000,)
    assert parse_bound("C*S(100)").powers == {sp.Symbol("S(100)", positive=True): 100}
    assert parse_bound("C*S(0.5)/S(1)").labels == ("S(1/2)/S(1)",)
    assert parse_bound("+C/t").members == parse_bound("-(-C)/t").members == (1 / t,)
    assert parse_bound("C*1e-3/t").members == (sp.Rational(1, 1000) / t,)
    assert parse_bound("Cx*sqrt(t)*exp(-t)").members == (sp.sqrt(t) * sp.exp(-t),)
    eight = " + ".join(f"C{i}/t**{i}" for i in range(1, 9))
    assert len(parse_bound(eight).constants) == 8


def test_the_json_of_a_bound_lists_each_constant_with_its_shape():
    assert parse_bound("C1/S(1) + C2*S(2)/S(1)").to_json() == {
        "text": "C1/S(1) + C2*S(2)/S(1)", "expr": "C1/S(1) + C2*S(2)/S(1)", "source": "user bound",
        "members": [{"constant": "C1", "shape": "1/S(1)"}, {"constant": "C2", "shape": "S(2)/S(1)"}]}


def test_orders_are_written_as_powers_of_t_and_log_t():
    from rates.judge.user_bound import MemberOrder, rate_text

    half = sp.Rational(1, 2)
    assert rate_text(sp.Rational(1, 4), sp.Integer(1)) == "t^-1/4 (log t)^1"
    assert rate_text(half, sp.Integer(0)) == "t^-1/2"
    assert rate_text(sp.Integer(0), sp.Integer(-1)) == "(log t)^-1"
    assert rate_text(sp.Integer(0), sp.Integer(0)) == "1"
    known = MemberOrder("S(2)/S(1)", half, sp.Integer(1))
    assert known.known and known.text() == "S(2)/S(1) ~ t^-1/2 (log t)^1"
    assert known.to_json() == {"shape": "S(2)/S(1)", "exponent": "1/2", "log_power": "1", "note": ""}
    unknown = MemberOrder("1/log(log(t))", None, None, "why")
    assert not unknown.known and unknown.text() == "1/log(log(t)): order not derived (why)"
    assert unknown.to_json() == {"shape": "1/log(log(t))", "exponent": None, "log_power": None, "note": "why"}
    assert not MemberOrder("x", half, None).known and not MemberOrder("x", None, half).known


def test_the_stated_order_is_the_slowest_decay_and_on_a_tie_the_larger_log_power():
    from rates.judge.user_bound import MemberOrder

    half, quarter = sp.Rational(1, 2), sp.Rational(1, 4)
    fast, logged, slow = (MemberOrder("a", half, sp.Integer(0)), MemberOrder("b", half, sp.Integer(2)),
                          MemberOrder("c", quarter, sp.Integer(-1)))
    assert stated_order([fast, logged, slow]) is slow  # t^-1/4 / log t decays slowest
    assert stated_order([fast, logged]) is logged and stated_order([logged, fast]) is logged
    assert stated_order([]) is None
    assert stated_order([fast, MemberOrder("d", None, None, "?")]) is None


def test_planned_checkpoints_are_a_200_point_log_grid_from_2_to_the_last_step():
    from rates.judge.user_bound import planned_checkpoints

    for steps in (10**6, 5000):
        grid = planned_checkpoints(steps)
        expected = sorted({round(2 * (steps / 2) ** (i / 199)) for i in range(200)})  # written with Python floats
        assert grid.tolist() == expected and grid[0] == 2 and grid[-1] == steps
    assert planned_checkpoints(1).tolist() == [2.0]  # never below t = 2


def test_power_sums_start_at_one_step():
    with pytest.raises(ValueError, match=r"^power sums need t >= 1$"):
        power_sums(Schedule.polynomial("1/2"), 1.0, [sp.Integer(1)], np.array([0, 5]))
    for schedule in (Schedule.polynomial("1/2"), Schedule.parse("eta0/sqrt(t+2)*(1+0*t)")):
        sums = power_sums(schedule, 3.0, [sp.Integer(1), sp.Integer(2)], np.array([1.0, 2.9]))
        # S_p(1) = eta_0^p = (3 / sqrt 2)^p; t = 2.9 is read as 2 steps
        np.testing.assert_allclose(sums[sp.Integer(1)], [3 / math.sqrt(2), 3 / math.sqrt(2) + 3 / math.sqrt(3)])
        np.testing.assert_allclose(sums[sp.Integer(2)], [4.5, 4.5 + 3.0])


def test_a_bound_on_a_run_is_the_sum_of_its_members_and_refuses_a_non_positive_term():
    from rates.judge.user_bound import BoundOnRun

    on_run = BoundOnRun(parse_bound("C1/t + C2/t**2"), Schedule.polynomial("1/2"), 1.0)
    np.testing.assert_allclose(on_run.bound_shape(np.array([2.0, 4.0])), [0.75, 0.3125])
    members, labels = on_run.bound_members(np.array([2.0, 4.0]))
    assert labels == ["1/t", "t**(-2)"] and np.allclose(members, [[0.5, 0.25], [0.25, 0.0625]])
    with_sums = BoundOnRun(parse_bound("C*S(2)/S(1)"), Schedule.polynomial("1"), 2.0)
    # eta = 2/(s+2): S_2(2) / S_1(2) = (1 + 4/9) / (1 + 2/3)
    np.testing.assert_allclose(with_sums.bound_shape(np.array([2.0])), [(1 + 4 / 9) / (1 + 2 / 3)])
    negative = BoundOnRun(parse_bound("C*(log(t) - 5)"), Schedule.polynomial("1/2"), 1.0)
    with pytest.raises(InputError, match=r"^--bound: the term log\(t\) - 5 is -4.31 at t = 2; every term must be "
                                         r"positive and finite at the checkpoints it is judged on$"):
        negative.bound_shape(np.array([200.0, 2.0]))  # the first offending checkpoint in the order given


def test_positivity_is_required_only_where_the_bound_can_be_judged():
    from rates.judge.user_bound import check_positive

    bound, schedule = parse_bound("C/log(log(t))"), Schedule.polynomial("1/2")
    t = np.array([1.0, 2.0, 3.0, 999.0, 1000.0, 5000.0])
    check_positive(bound, schedule, 1.0, t)  # automatic windows start at t >= 1000
    check_positive(bound, schedule, 1.0, t, window=(3, 5000))  # log log 3 = 0.094 > 0
    with pytest.raises(InputError, match="at t = 2;"):
        check_positive(bound, schedule, 1.0, t, window=(2, 5000))
    with pytest.raises(InputError, match="at t = 1;"):  # a window from 0 is checked from the first step, t = 1
        check_positive(bound, schedule, 1.0, t, window=(0, 5000))
    shifted = parse_bound("C*(log(t) - log(1000))")  # 0 at t = 1000: judged from there, so refused
    with pytest.raises(InputError, match="at t = 1000;"):
        check_positive(shifted, schedule, 1.0, t)
    check_positive(shifted, schedule, 1.0, t, window=(1001, 5000))
    late = parse_bound("C*(3000 - t)")  # negative only past the user's window end
    check_positive(late, schedule, 1.0, t, window=(2, 2999))
    with pytest.raises(InputError, match="at t = 5000;"):
        check_positive(late, schedule, 1.0, t, window=(2, 5000))


def test_a_records_json_and_text_carry_the_bound_its_orders_and_the_verdict():
    run = quarter_run()
    replicates = {"independent": 1, "runs": 1, "varies": "seed"}
    record = judge_user_bound([run], parse_bound("C1/S(1) + C2*S(2)/S(1)"), replicates=replicates)
    quarter = {"exponent": "1/4", "log_power": "0", "note": ""}  # both terms ~ t^-1/4 at a = 3/4 (S_2 converges)
    assert record.to_json() == {
        "schema": "rates.fit/1", "config": run.config.configuration(), "seeds": [0], "prediction": None,
        "user_bound": {**record.bound.to_json(), "orders": [{"shape": "1/S(1)", **quarter},
                                                            {"shape": "S(2)/S(1)", **quarter}],
                       "stated_rate": {"shape": "1/S(1)", **quarter}},
        "verdict": record.verdict.to_json(), "gate": None, "replicates": replicates}
    lines = record.describe().splitlines()
    assert lines[:6] == [
        "signgd (max), a = 3/4  (seeds 0)",
        "  replicates     : 1 independent of 1 run(s) (seed)",
        "  user bound     : C1/S(1) + C2*S(2)/S(1)  [user bound: no theorem, no source; constants C1, C2 unknown, > 0]",
        "    term         : 1/S(1) ~ t^-1/4",
        "    term         : S(2)/S(1) ~ t^-1/4",
        "  stated rate    : O(t^-1/4), its largest term [derived from the leading order of each S(p)]"]
    assert "  gap fitted     : gamma - gamma(W_t), as recorded" in lines
    v = record.verdict
    assert f"  (i) bound      : {v.assessment.bound.outcome} - {v.assessment.bound.text}" in lines
    assert f"  (ii) dominant  : {v.assessment.dominant.text}" in lines
    assert f"  (iii) stated   : {v.assessment.stated_rate.outcome} - {v.assessment.stated_rate.text}" in lines
    assert f"  verdict        : tight (tolerance 0.05) - {v.reason}" in lines
    assert lines[-1] == f"  note           : {v.notes[-1]}" and v.notes[0].startswith("user bound: the judgement")
    # without a stated rate the record says null, and the text has no stated-rate line
    general = dataclasses.replace(run.config, a=None, schedule=Schedule.parse("eta0/((t+2)*log(t+2))"))
    run.config = general
    other = judge_user_bound([run], parse_bound("C/S(1)"), seeds=[7])
    assert other.to_json()["user_bound"]["stated_rate"] is None and other.to_json()["seeds"] == [7]
    assert other.title == "signgd (max), schedule eta0/((t + 2)*log(t + 2))"
    assert not any(line.startswith("  stated rate") for line in other.describe().splitlines())


def test_a_pre_asymptotic_window_is_noted_where_the_verdict_is_not_a_rate_claim():
    # log(t)^20/t^2 has slope -2 + 20/log t ~ -0.4 over the window while 1/t, the asymptotically largest term, has
    # slope -1 exactly: the judge's own "inconclusive" (a still bending gap t^-0.1) stands and the reason is a note
    record = judge_user_bound([quarter_run(lambda t: 3 * t**-0.1)], parse_bound("C1/t + C2*log(t)**20/t**2"))
    assert record.stated.label == "1/t" and record.verdict.label == "inconclusive"
    assert "pre-asymptotic" not in record.verdict.reason
    assert record.verdict.notes[0].startswith("user bound: the judgement is the one of a theorem's template")
    note = record.verdict.notes[1]
    assert note.startswith("over the window the slowest term is log(t)**20/t**2 (slope -0.4"), note
    assert note.endswith("not the asymptotically largest 1/t (slope -1.000): the window is pre-asymptotic for "
                         "this bound")


def test_a_largest_term_with_a_fractional_log_power_is_compared_by_shape():
    record = judge_user_bound([quarter_run()], parse_bound("C*sqrt(log(t))/t**(1/4)"))
    assert (record.stated.exponent, record.stated.log_power) == (sp.Rational(1, 4), sp.Rational(1, 2))
    assert record.verdict.notes[1] == ("the largest term's log power 1/2 is not an integer: finding (iii) compares "
                                       "the gap with the bound's shape, unit constants")
    assert len(record.verdict.notes) == 2 and record.verdict.label == "tight", record.verdict.reason


LONG_T_POWER = "t**(1000000000000000000000000000000000000000000000000000000000000001)"
LONG_POWER = "(1000000000000000000000000000000 + 2000000000000000000000000000000)**20"  # 32 digits x 20


@pytest.mark.parametrize("text, message", [
    ("  ", "is empty; write a bound such as 'C1/S(1) + C2*S(2)/S(1)'"),
    ("C1 - C1 + C2/t", "C1 multiplies nothing"),
    ("C1*sqrt(-t)", "the term I*sqrt(t) of C1 is never positive; a bound's terms are positive"),  # imaginary
    ("C1/t + 1", "the part 1 carries no constant; give every term its own (e.g. C9*(1))"),
    ("C1/t**1000000", "the exponent in t**1000000 is 1000000; exponents must lie in [-1000, 1000]"),
    ("C1/t**1500000", "the exponent in t**1500000 is beyond 1e6; exponents must lie in [-1000, 1000]"),
    (f"C1/{LONG_T_POWER}", f"the exponent in {LONG_T_POWER[:60]} is beyond 1e6; exponents must lie in [-1000, 1000]"),
    (f"C1*{LONG_POWER}/t", f"the power {LONG_POWER[:60]} would have more than 400 digits; powers of numbers must stay "
                           "within 10^400"),  # each power echoed to its first 60 characters
])
def test_refused_bounds_say_why_word_for_word(text, message):
    with pytest.raises(InputError) as error:
        parse_bound(text)
    assert (error.value.parameter, error.value.message) == ("bound", message)


def test_bound_numbers_are_read_exactly_and_its_constants_are_positive():
    """0 ** n, (-1) ** n and a power of exactly 400 digits by the size count (2**200: 2 = 2/1, two digits a power,
    200 x 2 = 400) are allowed; a decimal is read as written, beyond float64's 17 digits; the constants are positive."""
    t, C1 = sp.Symbol("t", positive=True), sp.Symbol("C1", positive=True)
    assert parse_bound("C1*(1 + 0**1000)/t").expr == C1 / t
    assert parse_bound("C1*(-1)**1000/t").expr == C1 / t
    assert parse_bound("C1*2**200/t").expr == 2**200 * C1 / t
    assert parse_bound("C1*0.10000000000000000001/t").expr == sp.Rational(10**19 + 1, 10**20) * C1 / t  # 0.1 + 1e-20
    assert all(c.is_positive for c in parse_bound("C1/t + C_noise*log(t)/t").constants)
