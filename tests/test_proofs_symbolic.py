"""The symbolic method decides scalar claims by sympy alone, and never 'proves' a false one."""

import sympy as sp

from proofs.claims import ScalarProblem
from proofs.homogeneous import euler_identity
from proofs.proxy import loss_below_twice_proxy, proxy_below_loss, proxy_lower_bound, separation_level_chord
from proofs.schedule import schedule_decay
from proofs.softmax import simplex_complement
from proofs.symbolic import symbolic_method

x = sp.Symbol("x")


def test_scalar_claims_proven_by_sympy():
    for claim in (simplex_complement(), proxy_below_loss(), loss_below_twice_proxy(), proxy_lower_bound(),
                  separation_level_chord()):
        result = symbolic_method(claim.scalar)
        assert result.verdict == "proven", (claim.name, result.detail)


def test_taylor_argument_uses_the_right_order():
    # 1 - e^{-l} >= l - l^2/2 needs the second derivative (-log s / s^2 >= 0), as the seed's proof says
    detail = symbolic_method(proxy_lower_bound().scalar).detail
    assert "f^(2)" in detail and "log(s)" in detail


def test_false_or_unprovable_claims_are_not_proven():
    assert symbolic_method(simplex_complement(constant=1).scalar).verdict == "undecided"
    false_bound = ScalarProblem([x], [(0, 2)], sp.exp(x) - 1, 2 * x)  # false at x = 2 (e^2 - 1 > 4)
    assert symbolic_method(false_bound).verdict == "undecided"


def test_claim_specific_symbolic_proofs():
    assert schedule_decay().symbolic_proof().verdict == "proven"
    assert euler_identity().symbolic_proof().verdict == "proven"


def test_series_with_non_negative_terms():
    from proofs.symbolic import series_proof

    # G <= L per sample: -log s - (1 - s) = sum_{k>=2} (1 - s)^k / k, radius 1 = the whole of (0, 1]
    proven, detail = series_proof(proxy_below_loss().scalar)
    assert proven and "1/_k" in detail and "radius 1" in detail
    # the weakened Lemma A.4 has a negative coefficient at both ends (-x + x^2 and -u + u^2)
    assert series_proof(simplex_complement(constant=1).scalar)[0] is False
