"""The per-sample family's gate declaration: b = 1 SignSGD / N-SGD / Spectral-SGD on orthogonal data.

Setting: MINIBATCH section 4.4, Def. 4.8 [given]: ``d = k``, ``h_i = s_i e_{y_i}``
with ``s_i > 0``, per-sample updates (``b = 1``) under random reshuffling from ``W_0 = 0``.

Algorithm: :mod:`rates.symbolic.theorems.per_sample` (step directions, bias matrix ``M``).

Guarantee (Thm 4.9 / H.2 / H.3): ``W_t/||W_t|| -> M/||M||``, a limit *direction*, not a rate; this module only
declares when the theorem applies (the gate), :mod:`rates.symbolic.theorems.per_sample` says what it predicts. On
other data no seed theorem covers ``b = 1``: Thm 4.1's ``gamma_eff(1) = gamma - 4 B (n - 1)`` is negative for
every ``n >= 2`` (``gamma <= 2B``, docs/findings.md F2).
"""

from __future__ import annotations

from rates.symbolic.theorems.coverage import is_per_sample
from rates.symbolic.theorems.hypotheses import (
    FAILS,
    HOLDS,
    STRUCTURE,
    UNKNOWN,
    Facts,
    FamilyDeclaration,
    Finding,
    Hypothesis,
    a_in_unit_interval,
)
from rates.symbolic.theorems.minibatch import gamma_eff_minibatch
from rates.symbolic.theorems.per_sample import SOURCE


def _orthogonal(facts: Facts) -> Finding:
    if facts.orthogonal is None:
        return Finding(UNKNOWN, "data shape not known")
    if facts.orthogonal:
        return Finding(HOLDS, f"d = k = {facts.k}, every h_i = s_i e_(y_i)")
    detail = f"d = {facts.d}, k = {facts.k}: not of the form h_i = s_i e_(y_i)"
    if None not in (facts.gamma, facts.B, facts.samples):
        detail += (f"; and Thm 4.1 does not help: gamma_eff(1) = gamma - 4 B (n - 1) = "
                   f"{gamma_eff_minibatch(facts.gamma, facts.B, facts.samples, 1):.4g} <= 0")
    return Finding(FAILS, detail)


_CITE = f"{SOURCE.seed} {SOURCE.theorem} [given setting, rebuilt formulas]"
FAMILY = FamilyDeclaration(
    name="per-sample",
    algorithms="signsgd, nsgd, spectral-sgd with b = 1 (per-sample)",
    example={"name": "signsgd", "batch": 1},
    covers=is_per_sample,
    hypotheses=(
        Hypothesis("orthogonal data", "orthogonal scale-skewed data: d = k, h_i = s_i e_(y_i), s_i > 0 (Def. 4.8)",
                   _CITE, STRUCTURE, _orthogonal),
        a_in_unit_interval(_CITE),
    ),
    source=SOURCE,
    template=None,
    statement="W_t/||W_t|| -> M/||M||, M = sum_c (n_c/n) D_c e_c^T: a limit direction, not a rate",
)
