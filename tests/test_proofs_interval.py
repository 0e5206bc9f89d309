"""The rigorous method: interval arithmetic + bisection proves scalar claims on their whole domain."""

from fractions import Fraction

import mpmath
import sympy as sp

from proofs.claims import ScalarProblem
from proofs.interval import interval_method, prove_on_box
from proofs.proxy import loss_below_twice_proxy, proxy_below_loss, proxy_lower_bound, separation_level_chord
from proofs.softmax import simplex_complement

x, y = sp.symbols("x y")


def _covers_interval(boxes, lo, hi) -> bool:
    spans = sorted((box[0][0], box[0][1]) for box in boxes)
    if spans[0][0] != lo or spans[-1][1] != hi:
        return False
    return all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_proxy_below_loss_is_proven_on_the_whole_domain_not_sampled():
    proof = prove_on_box(proxy_below_loss().scalar)
    assert proof.proven and not proof.undecided and proof.counterexample is None
    assert _covers_interval(proof.proven_boxes, 0, 1)  # the certified boxes tile [0, 1] exactly


def test_every_scalar_claim_has_a_complete_certified_cover():
    for claim in (simplex_complement(), proxy_below_loss(), loss_below_twice_proxy(), proxy_lower_bound(),
                  separation_level_chord()):
        problem = claim.scalar
        proof = prove_on_box(problem)
        lo, hi = (mpmath.mpf(sp.Float(sp.nsimplify(b), 30)) for b in problem.bounds[0])
        assert proof.proven, claim.name
        assert _covers_interval(proof.proven_boxes, lo, hi), claim.name


def test_two_dimensional_cover_needs_bisection_and_tiles_the_box():
    # (x - 1)(y - 1) >= -1.2 on [0, 2]^2: true (minimum -1 at two corners) but the naive enclosure of
    # x y - x - y on the whole box is [-4, 4], so the proof must split; the cover must tile the box.
    problem = ScalarProblem([x, y], [(0, 2), (0, 2)], -(x * y - x - y) - 1 - sp.Rational(6, 5), 0)
    proof = prove_on_box(problem, order=0)
    assert proof.proven and len(proof.proven_boxes) > 1
    volume = sum((b[0][1] - b[0][0]) * (b[1][1] - b[1][0]) for b in proof.proven_boxes)
    assert volume == 4  # dyadic boxes: exact arithmetic, so equality is exact
    for px in (0, 0.37, 1, 1.99, 2):  # every probe point lies in some certified box
        for py in (0, 0.5, 1.25, 2):
            assert any(b[0][0] <= px <= b[0][1] and b[1][0] <= py <= b[1][1] for b in proof.proven_boxes)


def test_false_bound_gets_a_certified_counterexample_with_exact_recheck():
    # (x - 1)(y - 1) >= -0.9 is false near the corners (value -1)
    problem = ScalarProblem([x, y], [(0, 2), (0, 2)], -(x * y - x - y) - 1 - sp.Rational(9, 10), 0)
    proof = prove_on_box(problem)
    assert not proof.proven and proof.counterexample is not None
    point = {k: Fraction(v) for k, v in proof.counterexample["point"].items()}
    assert (point["x"] - 1) * (point["y"] - 1) < Fraction(-9, 10)  # exact rational re-check


def test_weakened_lemma_a4_is_refuted_deterministically():
    weak = simplex_complement(constant=1).scalar  # 1 - s_c^2 <= 1 - s_c is false on (0, 1)
    first, second = interval_method(weak), interval_method(weak)
    assert first.verdict == "counterexample" == second.verdict
    assert first.instance == second.instance
    s_c = Fraction(first.instance["point"]["x"])
    assert 1 - s_c**2 > 1 - s_c  # the returned point violates the weakened statement exactly


def test_margin_rewriting_must_be_sign_equivalent():
    import pytest

    good = ScalarProblem([x], [(0, sp.Rational(1, 2))], -sp.log(1 - x), 2 * sp.log(2) * x, margin=4**x * (1 - x) - 1)
    assert good.certified_margin() == 4**x * (1 - x) - 1
    bad = ScalarProblem([x], [(0, sp.Rational(1, 2))], -sp.log(1 - x), 2 * sp.log(2) * x, margin=x)  # not equivalent
    with pytest.raises(ValueError):
        bad.certified_margin()
