"""Normalised steepest descent, full batch, for any entry-wise l_p or Schatten-p norm.

Setting: multiclass linear classifier, cross-entropy, separable data with margin ``gamma`` in the
algorithm's own norm, ``||h_i||_1 <= B`` (docs/theory.md section 1).

Algorithm: ``W_{t+1} = W_t - eta_t Delta_t``, ``Delta_t`` the steepest direction of ``grad L(W_t)`` in the
unit ball of the norm (SignGD for max, NGD for Frobenius, Spectral-GD for spectral, coordinate descent for
sum; docs/theory.md section 2).

Guarantee (SIGNADAM Thm 5.3 for SignGD, Remark 5.5 / App. E for any entry-wise
norm, rates Cor. 5.4 / C.5; for the spectral, nuclear and other Schatten norms, which SIGNADAM does not treat,
MINIBATCH Thm 4.1 / Cor. 4.2 at ``b = n``, ``beta = 0``, see :func:`source_for`): for ``t > t_1``

    gamma - gamma(W_t) <= [ alpha sum_{s=t_0}^{t-1} eta_s^2 + gamma sum_{s<t_1} eta_s + log n ] / sum_{s<t} eta_s

with ``alpha = 2 B^2 exp(2 B eta_0)`` (:func:`rates.symbolic.theorems.base.curvature_alpha`, [rebuilt]) and the
thresholds of :mod:`rates.symbolic.theorems.base`. The numerator's only growing term is ``sum eta^2`` -- the
corollary's four cases follow from it (derived in :mod:`rates.symbolic.asymptotics`). Structure [given] by the
surviving proof text of Cor. C.5; constants [rebuilt].
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from rates.norms import parse_norm
from rates.symbolic.theorems.base import (
    SEED_MINIBATCH,
    SEED_SIGNADAM,
    BoundTemplate,
    NoiseTerm,
    PowerSumTerm,
    Source,
    alpha,
    curvature_alpha,
    gamma,
)
from rates.symbolic.theorems.coverage import covers_nsd
from rates.symbolic.theorems.hypotheses import FamilyDeclaration, a_in_unit_interval, full_batch, separable

SOURCE = Source(SEED_SIGNADAM, "Thm 5.3, Cor. 5.4/C.5, Rem. 5.5")
# SIGNADAM treats entry-wise norms only (its section 2); Schatten norms come from MINIBATCH's norm-general
# analysis, whose no-momentum theorem at b = n has gamma_eff(n) = gamma and, in its own words, "the full-batch
# convergence rate" under "the corresponding entry-wise or Schatten-p norm" (MINIBATCH section 1).
SCHATTEN_SOURCE = Source(SEED_MINIBATCH, "Thm 4.1/D.4, Cor. 4.2/D.5 at b = n, beta = 0")


def source_for(norm: str) -> Source:
    """SIGNADAM for entry-wise norms (Frobenius = Schatten-2 included), MINIBATCH for the other Schatten norms.

    >>> source_for("spectral").text
    'MINIBATCH Thm 4.1/D.4, Cor. 4.2/D.5 at b = n, beta = 0'
    >>> source_for("max") == SOURCE and source_for("frobenius") == SOURCE
    True
    """
    parsed = parse_norm(norm)
    return SCHATTEN_SOURCE if parsed.kind == "schatten" and parsed.p != 2.0 else SOURCE


def template(norm: str = "max") -> BoundTemplate:
    """The NSD bound for ``norm`` (constants do not depend on the norm: Lemma C.1 ordering)."""
    return BoundTemplate(
        family="nsd",
        title=f"NSD full batch ({norm})",
        source=source_for(norm),
        status="given",
        gap_to="gamma",
        numerator=(PowerSumTerm(sp.Integer(2), alpha, "second-order (curvature) noise of the Taylor step"),),
        noise=(NoiseTerm(sp.Integer(1), alpha, "curvature: alpha eta_t"),),
        gamma_ref=gamma,
        assumptions=("data separable: gamma > 0 in the " + norm + " norm", "||h_i||_1 <= B", "a in (0, 1]"),
        constants={"alpha": f"2 B^2 exp(2 B eta_0) [rebuilt] = {curvature_alpha()}"},
    )


covers = covers_nsd  # full batch, no momentum, no VR, not Adam (rates.symbolic.theorems.coverage: sympy-free)


_CITE = f"{SEED_SIGNADAM} Thm 5.3 [given]"
_SCHATTEN_CITE = f"{SEED_MINIBATCH} Thm 4.1 at b = n, beta = 0 [given]"


def _applied_to(config) -> FamilyDeclaration:
    """The Schatten-norm declaration (MINIBATCH's theorem and citations) for a Schatten norm other than Frobenius."""
    return SCHATTEN_FAMILY if source_for(config.norm) == SCHATTEN_SOURCE else FAMILY


FAMILY = FamilyDeclaration(
    name="nsd",
    algorithms="signgd, ngd, spectral-gd, cd, nsd (any entry-wise / Schatten-p norm)",
    example={"name": "signgd"},
    covers=covers,
    hypotheses=(full_batch(_CITE, "Thm 5.3 is a full-batch theorem"), separable(_CITE), a_in_unit_interval(_CITE)),
    source=SOURCE,
    template=lambda config: template(config.norm),
    statement="gamma - gamma(W_t) <= [alpha S_2 + gamma S_1(0, t_1) + log n] / S_1 for t > t_1",
    for_config=_applied_to,
)
# spectral-gd, nuclear, schatten:P (P != 2): SIGNADAM treats entry-wise norms only, so the theorem, its statement
# and every hypothesis cite MINIBATCH Thm 4.1 at b = n, beta = 0 (module docstring)
SCHATTEN_FAMILY = replace(
    FAMILY, source=SCHATTEN_SOURCE, for_config=_applied_to,
    hypotheses=(full_batch(_SCHATTEN_CITE, "the Schatten-norm rate is Thm 4.1 at b = n"), separable(_SCHATTEN_CITE),
                a_in_unit_interval(_SCHATTEN_CITE)))
