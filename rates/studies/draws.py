"""A claim judged on several data draws: the draws' outcomes decide it by an exact sign test.

Setting
    A figure of a paper shows one data draw, so its claim is read as a statement about the typical draw: a draw
    drawn like the figure's confirms it with probability above 1/2. Each draw is judged alone by the row's own
    criterion and gives one outcome: it confirms, refutes or leaves the claim undecided (a horizon too short,
    a tie within the row's tolerance).

Algorithm
    The two-sided exact binomial sign test (:func:`scipy.stats.binomtest`, success probability 1/2) on the draws
    that decide, at the level :data:`SIGN_TEST_LEVEL`: the claim is reproduced when more deciding draws confirm
    than refute and p <= the level, not reproduced when more refute and p <= the level, and open otherwise.
    Undecided draws are left out of the test, but the deciding draws must be more than half of all draws (the
    undecided ones could go either way; longer runs turn them into deciding ones). An open split says how many
    more draws would decide it if the draws kept splitting as they did (:func:`more_draws_to_decide`). One draw
    alone is no sample: its outcome is the row's, read for that draw only (as every one-draw row of the studies).

Guarantee
    :func:`decide_draws` returns ``(verdict, reason)`` in the claims' vocabulary; every reason names the reading,
    the counts, the test's p-value and the level, then the draws' own texts.

Reference
    The sign test: a two-sided exact binomial test of P(confirm) = 1/2 on the deciding draws (e.g. Conover,
    Practical Nonparametric Statistics, sec. 3.4); the rule is ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from scipy.stats import binomtest

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED

CONFIRMS, REFUTES, UNDECIDED = "confirms", "refutes", "undecided"
OUTCOMES = (CONFIRMS, REFUTES, UNDECIDED)
SIGN_TEST_LEVEL = 0.05
MAX_DRAWS_SEARCHED = 100_000  # the search for the deciding number of draws stops here
OF_VERDICT = {REPRODUCED: CONFIRMS, NOT_REPRODUCED: REFUTES, NO_VERDICT: UNDECIDED}

DRAWS_READING = (
    "the claim read as a statement about the typical draw, since the figure shows one: P(a draw confirms) > 1/2"
)
DRAWS_RULE = (
    f"each draw judged alone (confirms / refutes / undecided); {DRAWS_READING}; a two-sided exact binomial "
    f"sign test on the deciding draws at level {SIGN_TEST_LEVEL:g} reproduces it when more confirm than "
    f"refute and p <= {SIGN_TEST_LEVEL:g}, refutes it when more refute and p <= {SIGN_TEST_LEVEL:g}, and "
    "leaves it open otherwise or when the deciding draws are not more than half of all draws (an open "
    "split says how many more draws at that split would decide); one draw alone decides for itself"
)


@dataclass(frozen=True)
class SignTest:
    """The counts of the draws' outcomes and the sign test on the deciding ones."""

    confirming: int
    refuting: int
    undecided: int
    p_value: Optional[float]  # None when no draw decides

    @property
    def draws(self) -> int:
        return self.confirming + self.refuting + self.undecided

    @property
    def deciding(self) -> int:
        return self.confirming + self.refuting

    def counts_text(self) -> str:
        return f"{self.confirming} of {self.draws} draws confirm, {self.refuting} refute, {self.undecided} undecided"

    def test_text(self, level: float = SIGN_TEST_LEVEL) -> str:
        return (
            f"two-sided sign test on the {self.deciding} deciding draws: p = {self.p_value:.2g} "
            f"({'<=' if self.p_value <= level else '>'} {level:g})"
        )


def sign_test(outcomes: Sequence[str]) -> SignTest:
    """Count ``outcomes`` (each one of :data:`OUTCOMES`) and test the deciding ones against P(confirm) = 1/2."""
    unknown = sorted(set(outcomes) - set(OUTCOMES))
    if unknown:
        raise ValueError(f"draw outcomes must be among {OUTCOMES}, got {unknown}")
    confirming, refuting = outcomes.count(CONFIRMS), outcomes.count(REFUTES)
    deciding = confirming + refuting
    p_value = float(binomtest(confirming, deciding, 0.5).pvalue) if deciding else None
    return SignTest(confirming, refuting, len(outcomes) - deciding, p_value)


def summary(outcomes: Sequence[str], level: float = SIGN_TEST_LEVEL) -> str:
    """The counts and the test in words (empty for one draw, which is not tested)."""
    if len(outcomes) < 2:
        return ""
    test = sign_test(outcomes)
    return test.counts_text() + (f" ({test.test_text(level)})" if test.p_value is not None else "")


def more_draws_to_decide(test: SignTest, level: float = SIGN_TEST_LEVEL) -> Optional[int]:
    """The fewest further draws after which the sign test decides if the draws keep splitting as they did.

    At ``D`` deciding draws the majority side holds ``floor(f D)`` of them, ``f`` its observed share (rounded
    down: the split is not made to look better than it was), and the undecided draws keep their share, so ``D``
    deciding draws need ``ceil(D n / d)`` draws in all (``n`` draws now, ``d`` deciding). None when no number of
    draws decides: no draw decides or the split is even."""
    d, n = test.deciding, test.draws
    majority = max(test.confirming, test.refuting)
    if d == 0 or 2 * majority == d:
        return None
    for total in range(d, MAX_DRAWS_SEARCHED + 1):
        side = majority * total // d  # floor(f D) in integers
        if binomtest(side, total, 0.5).pvalue <= level:
            return max(math.ceil(total * n / d) - n, 0)
    return None


def decide_draws(
    outcomes: Sequence[str], texts: Sequence[str], level: float = SIGN_TEST_LEVEL, refuted: str = "", open_: str = ""
) -> tuple[str, str]:
    """``(verdict, reason)`` of a claim from its draws' ``outcomes`` (:data:`OUTCOMES`), one per draw, with the
    draws' own ``texts`` (e.g. ``"seed 1 not reproduced (...)"``) appended to the reason. ``refuted`` and ``open_``
    lead the reason of a refuted and of an open claim (what the row's criterion found)."""
    detail = "; ".join(texts)
    if len(outcomes) == 1:
        outcome = outcomes[0]
        verdict = {CONFIRMS: REPRODUCED, REFUTES: NOT_REPRODUCED, UNDECIDED: NO_VERDICT}[outcome]
        if verdict == REPRODUCED:
            return verdict, ""
        return verdict, ((refuted if verdict == NOT_REPRODUCED else open_) or f"one draw, which {outcome}") + (
            f": {detail}" if detail else ""
        )
    test = sign_test(outcomes)
    tail = f"{test.counts_text()}; {detail}" if detail else test.counts_text()
    if test.p_value is None:
        verdict, what = NO_VERDICT, "no draw decides; longer runs decide"
    elif 2 * test.deciding <= test.draws:
        verdict, what = (
            NO_VERDICT,
            (
                f"only {test.deciding} of {test.draws} draws decide ({test.test_text(level)}); "
                "a verdict needs more than half of the draws to decide: longer runs decide"
            ),
        )
    elif test.p_value <= level and test.confirming > test.refuting:
        verdict, what = REPRODUCED, f"reproduced for most draws ({DRAWS_READING}): {test.test_text(level)}"
    elif test.p_value <= level and test.refuting > test.confirming:
        verdict, what = NOT_REPRODUCED, f"not reproduced for most draws ({DRAWS_READING}): {test.test_text(level)}"
    else:
        more = more_draws_to_decide(test, level)
        unanimous = 0 in (test.confirming, test.refuting)
        agree = "the deciding draws agree but are too few" if unanimous else "the draws split"
        verdict, what = (
            NO_VERDICT,
            (
                f"{agree} ({DRAWS_READING}): {test.test_text(level)}; "
                + (
                    "an even split: more draws at this split never decide"
                    if more is None
                    else f"{more} more draws at this split would decide"
                )
            ),
        )
    lead = refuted if verdict == NOT_REPRODUCED else open_ if verdict == NO_VERDICT else ""
    return verdict, (f"{lead}; " if lead else "") + f"{what}; {tail}"
