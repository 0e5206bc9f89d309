"""All claims checked by ``rates check``, in report order, and lookup by name."""

from __future__ import annotations

from proofs.catalog import check_claim_names
from proofs.claims import Claim


def all_claims() -> list[Claim]:
    # imported here so that ``rates --help`` does not pay for torch/sympy set-up of every family
    from proofs import (
        adam,
        certificate,
        descent,
        effective_margin,
        gradient,
        homogeneous,
        per_sample,
        proxy,
        schedule,
        softmax,
        stochastic,
    )

    claims: list[Claim] = []
    for family in (softmax, proxy, gradient, stochastic, effective_margin, descent, certificate, adam, schedule,
                   homogeneous, per_sample):
        claims.extend(family.CLAIMS)
    return claims


def select_claims(names: list[str] | None) -> list[Claim]:
    """The claims named (all when none); an unknown name is bad input listing the known names."""
    check_claim_names(names)
    claims = all_claims()
    if not names:
        return claims
    by_name = {claim.name: claim for claim in claims}
    return [by_name[name] for name in dict.fromkeys(names)]
