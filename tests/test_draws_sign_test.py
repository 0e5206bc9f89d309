"""The sign test over data draws (rates.studies.draws) against binomial probabilities summed by hand (math.comb)."""

from __future__ import annotations

import math

import pytest

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED
from rates.studies.draws import (
    CONFIRMS,
    REFUTES,
    UNDECIDED,
    decide_draws,
    more_draws_to_decide,
    sign_test,
)


def two_sided_p(majority: int, deciding: int) -> float:
    """P(a side holds at least ``majority`` of ``deciding`` fair coin flips), doubled (the binomial is symmetric)."""
    if 2 * majority == deciding:
        return 1.0
    tail = sum(math.comb(deciding, i) for i in range(majority, deciding + 1))
    return min(1.0, 2 * tail / 2**deciding)


def fewest_more_draws(majority: int, deciding: int, draws: int, level: float = 0.05) -> int:
    """The same split continued: D deciding draws with floor(majority D / deciding) on the majority side, the first D
    whose two-sided p is at most ``level``; the undecided draws keep their share of the draws."""
    total = deciding
    while two_sided_p(majority * total // deciding, total) > level:
        total += 1
    return math.ceil(total * draws / deciding) - draws


def draws(confirming: int, refuting: int, undecided: int = 0) -> list[str]:
    return [CONFIRMS] * confirming + [REFUTES] * refuting + [UNDECIDED] * undecided


@pytest.mark.parametrize("confirming, refuting", [(9, 1), (6, 4), (10, 0), (1, 9), (5, 5), (3, 0), (8, 1), (7, 2)])
def test_p_value_is_the_doubled_binomial_tail(confirming, refuting):
    test = sign_test(draws(confirming, refuting, 2))
    assert (test.confirming, test.refuting, test.undecided) == (confirming, refuting, 2)
    assert test.p_value == pytest.approx(two_sided_p(max(confirming, refuting), confirming + refuting), rel=1e-12)


def test_hand_values_of_the_examples():
    assert two_sided_p(9, 10) == pytest.approx(22 / 1024)  # 2 (C(10,9) + C(10,10)) / 2^10 = 0.0215
    assert two_sided_p(6, 10) == pytest.approx(2 * 386 / 1024)  # C(10,6..10) = 210 + 120 + 45 + 10 + 1 = 386
    assert two_sided_p(6, 6) == pytest.approx(2 / 64)


def test_nine_of_ten_reproduce_and_one_of_ten_refute_with_the_numbers():
    verdict, reason = decide_draws(draws(9, 1), ["seed 0 reproduced", "seed 9 not reproduced"])
    assert verdict == REPRODUCED
    assert "reproduced for most draws" in reason and "typical draw" in reason
    assert "9 of 10 draws confirm, 1 refute, 0 undecided" in reason and "p = 0.021 (<= 0.05)" in reason
    assert reason.endswith("seed 0 reproduced; seed 9 not reproduced")
    verdict, reason = decide_draws(draws(1, 9), [], refuted="X trails Y")
    assert verdict == NOT_REPRODUCED and reason.startswith("X trails Y; not reproduced for most draws")
    assert "1 of 10 draws confirm, 9 refute" in reason


def test_a_split_stays_open_and_says_how_many_draws_would_decide():
    verdict, reason = decide_draws(draws(6, 4), [])
    assert verdict == NO_VERDICT and "p = 0.75 (> 0.05)" in reason
    more = fewest_more_draws(6, 10, 10)
    assert more > 50  # a 60:40 split needs about a hundred draws
    assert more_draws_to_decide(sign_test(draws(6, 4))) == more
    assert f"{more} more draws at this split would decide" in reason
    # 7 of 9 deciding (p = 0.18) with one draw undecided of 10: the undecided share is kept
    assert two_sided_p(7, 9) > 0.05
    assert more_draws_to_decide(sign_test(draws(7, 2, 1))) == fewest_more_draws(7, 9, 10)
    # three draws that agree are too few: six agreeing decide (p = 2/64), five do not (p = 2/32)
    verdict, reason = decide_draws(draws(0, 3), [])
    assert verdict == NO_VERDICT and "agree but are too few" in reason and "3 more draws" in reason
    assert fewest_more_draws(3, 3, 3) == 3


def test_an_even_split_never_decides():
    verdict, reason = decide_draws(draws(5, 5), [])
    assert verdict == NO_VERDICT and "never decide" in reason
    assert more_draws_to_decide(sign_test(draws(5, 5))) is None


def test_undecided_draws_are_left_out_but_the_deciding_ones_must_be_a_majority():
    # six of ten confirm, four undecided: p = 2/64 on the six deciding draws
    assert decide_draws(draws(6, 0, 4), [])[0] == REPRODUCED
    # five confirm, five undecided: not more than half decide, and p = 2/32 > 0.05 anyway
    verdict, reason = decide_draws(draws(5, 0, 5), [], open_="still falling")
    assert verdict == NO_VERDICT and reason.startswith("still falling; only 5 of 10 draws decide")
    # twelve draws: six confirm, six undecided -- p = 2/64 would decide, but only half of the draws decide
    assert two_sided_p(6, 6) <= 0.05
    assert decide_draws(draws(6, 0, 6), [])[0] == NO_VERDICT
    verdict, reason = decide_draws(draws(0, 0, 4), [])
    assert verdict == NO_VERDICT and "no draw decides" in reason


def test_the_level_is_inclusive_and_declared():
    p = two_sided_p(9, 10)
    assert decide_draws(draws(9, 1), [], level=p * (1 + 1e-9))[0] == REPRODUCED
    assert decide_draws(draws(9, 1), [], level=p * (1 - 1e-6))[0] == NO_VERDICT
    assert decide_draws(draws(8, 1), [])[0] == REPRODUCED  # p = 2 (9 + 1) / 512 = 0.039
    assert decide_draws(draws(7, 2), [])[0] == NO_VERDICT  # p = 2 (36 + 9 + 1) / 512 = 0.18


def test_one_draw_decides_for_itself_and_bad_outcomes_are_refused():
    assert decide_draws([CONFIRMS], ["draw 0"]) == (REPRODUCED, "")
    assert decide_draws([REFUTES], ["draw 0"], refuted="X trails Y") == (NOT_REPRODUCED, "X trails Y: draw 0")
    assert decide_draws([UNDECIDED], ["draw 0"], open_="tie") == (NO_VERDICT, "tie: draw 0")
    with pytest.raises(ValueError, match="draw outcomes"):
        sign_test(["holds"])


def test_full_modes_run_enough_draws_for_the_test_and_quick_modes_one():
    """A row over N draws can decide only if N agreeing draws reach the level: 2 / 2^N <= 0.05 needs N >= 6; the full
    modes run 10 (9 of 10 agreeing decide, p = 22 / 1024), the quick modes one draw, judged for itself."""
    from rates.studies.minibatch import protocols as minibatch
    from rates.studies.signadam import protocols as signadam

    for draws_in_full, draws_in_quick in (
        (minibatch.FULL.fig1_seeds, minibatch.QUICK.fig1_seeds),
        (signadam.FULL.margin_draws, signadam.QUICK.margin_draws),
    ):
        assert draws_in_full >= 10 and two_sided_p(draws_in_full - 1, draws_in_full) <= 0.05
        assert decide_draws(draws(draws_in_full - 1, 1), [])[0] == REPRODUCED
        assert draws_in_quick == 1
    assert two_sided_p(5, 5) > 0.05 and two_sided_p(6, 6) <= 0.05
