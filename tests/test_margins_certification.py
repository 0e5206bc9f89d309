"""The certification step of :mod:`rates.numeric.margins`: what the two bounds must satisfy before a max margin is
reported, and what is reported when they come close but not close enough.

The contract (docs/theory.md section 7 and the module docstring): ``gamma`` is the primal lower bound, ``upper``
the dual one; the reported accuracy is ``(upper - lower) / lower``; the target is 1e-9 relative; a bracket wider
than ``TOLERANCE_FAIL`` (1e-7) is an error; the bounds may cross only by float rounding (~1e-12 relative), and a
larger crossing means one of them is wrong, so it is an error too, never an "exact" margin.

The solvers' own points are kept and one bound is moved by a known factor (``_Problem.upper`` scaled), so the
expected accuracy is that factor minus one -- independent of the solver -- and the data are orthogonal with a
closed-form max margin (tests/test_margins.py's ``orthogonal_lp_margin``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_margins import orthogonal_lp_margin

from rates.errors import SolverError
from rates.norms import parse_norm
from rates.numeric import margins
from rates.numeric.data import orthogonal_skewed
from rates.numeric.margins import TARGET_ACCURACY, TOLERANCE_FAIL, _Pool, _solve

HARDEST = [1.0, 0.5, 2.0]
EXACT_UPPER = margins._Problem.upper


def data():
    return orthogonal_skewed([2, 2, 1], [1.0, 1.7, 0.5, 0.9, 2.0])


def solve_with_upper_scaled(monkeypatch, factor: float, norm: str = "max"):
    monkeypatch.setattr(margins._Problem, "upper", lambda self, lam: EXACT_UPPER(self, lam) * factor)
    ds = data()
    assert ds.meta["hardest_scales"] == HARDEST
    return _solve(np.asarray(ds.H, float), np.asarray(ds.y), ds.k, parse_norm(norm, "norm"))


def expected_gamma(norm: str) -> float:
    return orthogonal_lp_margin(HARDEST, {"max": math.inf, "sum": 1.0}[norm])


@pytest.mark.parametrize("norm", ["max", "sum"])
def test_the_unmoved_bounds_meet_the_target_and_the_closed_form(monkeypatch, norm):
    result = solve_with_upper_scaled(monkeypatch, 1.0, norm)
    assert result.gamma == pytest.approx(expected_gamma(norm), rel=1e-9)
    assert 0.0 <= result.accuracy <= TARGET_ACCURACY and result.checks["meets_target"] is True
    assert result.checks["target_accuracy"] == 1e-9  # docs/theory.md section 7


@pytest.mark.parametrize("norm", ["max", "sum"])
def test_bounds_crossing_by_one_percent_are_an_error_not_an_exact_margin(monkeypatch, norm):
    with pytest.raises(SolverError, match="could not be certified"):
        solve_with_upper_scaled(monkeypatch, 0.99, norm)
    with pytest.raises(SolverError):
        solve_with_upper_scaled(monkeypatch, 1 - 1e-10, norm)  # a crossing far past float rounding


def test_a_crossing_by_rounding_is_reported_as_exact(monkeypatch):
    result = solve_with_upper_scaled(monkeypatch, 1 - 1e-14)
    assert result.accuracy == 0.0
    assert result.gamma == pytest.approx(expected_gamma("max"), rel=1e-9)


def test_a_bracket_of_1e_8_is_reported_but_misses_the_1e_9_target(monkeypatch):
    result = solve_with_upper_scaled(monkeypatch, 1 + 1e-8)
    assert result.accuracy == pytest.approx(1e-8, rel=1e-3)
    assert result.checks["meets_target"] is False
    assert result.upper == pytest.approx(result.gamma * (1 + 1e-8), rel=1e-12)


def test_a_bracket_of_half_the_target_meets_it(monkeypatch):
    result = solve_with_upper_scaled(monkeypatch, 1 + 5e-10)
    assert result.accuracy == pytest.approx(5e-10, rel=1e-2) and result.checks["meets_target"] is True


def test_a_bracket_wider_than_the_failure_tolerance_is_an_error(monkeypatch):
    assert TOLERANCE_FAIL == 1e-7
    with pytest.raises(SolverError, match="disagree by more than 1e-07 relative"):
        solve_with_upper_scaled(monkeypatch, 1 + 2e-7)
    assert solve_with_upper_scaled(monkeypatch, 1 + 5e-8).accuracy == pytest.approx(5e-8, rel=1e-3)


def _pool(lower: float, upper: float) -> _Pool:
    pool = _Pool(None)
    # the best bounds are not the first names in order: the pool picks by value
    pool.lowers, pool.uppers = {"z primal": lower, "a primal": lower / 2}, {"z dual": upper, "a dual": 2 * upper}
    return pool


def test_the_pool_certifies_at_1e_9_relative_by_its_best_bounds():
    assert _pool(2.0, 2.0 * (1 + 5e-10)).certified()
    assert not _pool(2.0, 2.0 * (1 + 2e-9)).certified()  # twice the target: not certified
    assert not _pool(2.0, 2.0 * (1 + 1e-6)).certified()  # a target loosened 1000x would accept this
    assert _pool(2.0, 2.0 * (1 + 2e-9)).certified(goal=1e-8)
    assert not _pool(0.0, 1e-12).certified() and not _pool(-1.0, 1.0).certified()
    assert _pool(2.0, 2.0).best() == ("z primal", 2.0, "z dual", 2.0)  # the largest lower, the smallest upper
    assert _pool(0.5, 0.5 * (1 + 5e-10)).certified()  # gamma below 1 is certified as well
    assert not _pool(0.0, 0.0).certified()  # a zero margin is never certified
    assert _pool(1.0, 1.0 + 2.0**-30).certified(goal=2.0**-30)  # a bracket of exactly the goal meets it


@pytest.mark.parametrize(
    "lower,upper,expected",
    [
        (2.0, 2.0 * (1 + 5e-8), 5e-8),  # inside the failure tolerance: reported with its accuracy
        (1e7, 1e7 + 1, 1e-7),  # exactly TOLERANCE_FAIL (1 / 1e7 rounds to the float 1e-7): still reported
        (1e7, 1e7 + 1.5, None),  # 1.5e-7: wider than the failure tolerance
        (1.0, 1.0 - 1e-14, 0.0),  # a crossing by rounding is an exact margin
        (1e12, 1e12 - 0.5, 0.0),  # a crossing of 5e-13, inside the rounding allowance
        (1e12, 1e12 - 1, None),  # a crossing of exactly 1e-12: no longer rounding
        (1.0, 0.99, None),  # bounds crossing by 1%: one of them is wrong
        (1.0, 1.0 - 1e-10, None),
        (0.0, 1e-12, None),
        (-1.0, 1.0, None),
        (0.0, 0.0, None),  # no positive margin certified
        (1.0, math.inf, None),
        (1.0, math.nan, None),
        (math.nan, 1.0, None),
    ],
)
def test_the_certified_accuracy_is_the_relative_bracket_within_its_limits(lower, upper, expected):
    accuracy = margins._certified_accuracy(lower, upper)
    if expected is None:
        assert accuracy is None
    else:
        assert accuracy == pytest.approx(expected, rel=1e-6, abs=0.0)
        assert accuracy == (upper - lower) / lower if expected else accuracy == 0.0


def two_point_problem(norm: str) -> margins._Problem:
    """h_0 = (1, 0) in class 0, h_1 = (0, 2) in class 1: the rows vec((e_0 - e_1) h_0^T) = (1, 0, -1, 0) and
    vec((e_1 - e_0) h_1^T) = (0, -2, 0, 2)."""
    H, y = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([0, 1])
    problem = margins._Problem(margins.constraint_matrix(H, y, 2), 2, 2, parse_norm(norm, "norm"))
    assert problem.M.toarray().tolist() == [[1.0, 0.0, -1.0, 0.0], [0.0, -2.0, 0.0, 2.0]]
    return problem


def test_the_lower_bound_is_the_achieved_margin_of_W_by_definition():
    problem = two_point_problem("max")
    W = np.array([[1.0, -1.0], [-1.0, 1.0]])  # max norm 1; margins <W, A_0> = 2, <W, A_1> = 4
    assert problem.lower(W) == 2.0
    assert problem.lower(3 * W) == 2.0  # normalised by ||W|| = 3
    assert problem.lower(W, margins=np.array([3.0, 5.0])) == 3.0  # the caller's margins, divided by ||W|| = 1
    assert problem.lower(np.array([[0, -1], [-1, 1]])) == 1.0  # integer W: the margins 1 and 4
    assert problem.lower(np.zeros((2, 2))) == -math.inf  # W = 0 has no margin
    assert problem.lower(np.array([[1.0, -1.0], [-1.0, math.inf]])) == -math.inf
    assert problem.lower(np.array([[1.0, -1.0], [-1.0, math.nan]])) == -math.inf


def test_the_upper_bound_is_the_dual_norm_of_Z_on_the_simplex_by_definition():
    problem = two_point_problem("max")  # the dual of the max norm is the sum of absolute entries
    assert problem.upper(np.array([1.0, 0.0])) == 2.0  # Z = A_0: |1| + |-1|
    assert problem.upper(np.array([0.0, 1.0])) == 4.0  # Z = A_1: |-2| + |2|
    assert problem.upper(np.array([3.0, 0.0])) == 2.0  # projected onto the simplex: scaled to sum 1
    assert problem.upper(np.array([1.0, 1.0])) == 3.0  # Z = (A_0 + A_1) / 2 = [[1/2, -1], [-1/2, 1]]
    assert problem.upper(np.array([1.0, -5.0])) == 2.0  # negative weights clipped to 0
    assert problem.upper(np.array([math.nan, 1.0])) == 4.0  # a NaN weight counts as 0
    assert problem.upper(np.array([0.0, 0.0])) == math.inf and problem.upper(np.array([-1.0, -2.0])) == math.inf
    # weak duality on this problem: the W above achieves 2, the weights (1, 0) bound it by 2, so gamma = 2
    assert problem.lower(np.array([[1.0, -1.0], [-1.0, 1.0]])) == problem.upper(np.array([1.0, 0.0]))
