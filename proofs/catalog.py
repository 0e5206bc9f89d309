"""The names ``rates check`` accepts, known without importing the claim families.

The families build their claims with torch, sympy and mpmath (seconds of imports); an unknown claim or chain
name is refused before any of that (:func:`check_claim_names`). ``tests/test_check_cli.py`` holds these lists
equal to the registry's (:func:`proofs.registry.all_claims`) and the chains' (:data:`proofs.chains.CHAINS`).
"""

from __future__ import annotations

from typing import Optional

from rates.errors import InputError

# every claim in report order, as proofs.registry.all_claims() lists them
CLAIM_NAMES = (
    "simplex-complement", "hessian-quadratic", "hessian-loss-bound", "softmax-perturbation", "proxy-ratio",
    "proxy-below-loss", "loss-below-twice-proxy", "proxy-lower-bound", "low-loss-separability",
    "separation-level-chord", "norm-ordering", "gradient-dual-upper", "gradient-dual-lower",
    "minibatch-gradient-error", "momentum-accumulated-error", "vr-deviation", "gradient-stability", "vr-step-noise",
    "minibatch-mismatch-floor",
    "loss-lipschitz", "vr-momentum-error", "signgd-unnormalized-margin", "per-sample-step-direction",
    "local-curvature-step", "certificate-log-level", "certificate-contraction", "certificate-on-runs",
    "adam-moment-ratio", "adam-first-moment", "adam-second-moment", "adam-entry-alignment",
    "schedule-assumption-3.3", "schedule-assumption-3.4", "partial-sum-integral-bounds", "euler-identity",
    "soft-margin-key-inequality", "soft-margin-monotone", "per-sample-bias",
)
# claims made per schedule given (``--schedule EXPR``): proofs.schedule_hypotheses.NAME
SCHEDULE_CLAIM_NAMES = ("schedule-hypotheses",)
# the theorem families with a derivation chain (proofs.chains.CHAINS)
CHAIN_FAMILIES = ("nsd", "minibatch", "momentum", "vr", "adam")


def check_claim_names(names: Optional[list[str]]) -> None:
    """Refuse (bad input, listing the known names) any name that is not a claim."""
    known = CLAIM_NAMES + SCHEDULE_CLAIM_NAMES
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise InputError("NAME", f"unknown claim {', '.join(repr(u) for u in unknown)}; known: "
                                 f"{', '.join(known)}")
