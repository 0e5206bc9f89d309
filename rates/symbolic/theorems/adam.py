"""Adam without the stability constant (eps = 0), max-norm geometry.

Setting: as NSD (docs/theory.md section 1) plus SIGNADAM Ass. 3.2 (second-moment buffer entries bounded below
by ``rho``) and Ass. 3.4 (the schedule satisfies the moment-ratio condition after a time depending on
``beta1, beta2``).

Algorithm: ``m_t = beta1 m_{t-1} + (1-beta1) g_t``, ``v_t = beta2 v_{t-1} + (1-beta2) g_t^2``, bias
corrected, ``W <- W - eta_t m_t / sqrt(v_t)`` (SIGNADAM eq. 3; ``beta1 = beta2 = 0`` is SignGD).

Guarantee (SIGNADAM Thm 6.3, Cor. 6.4, Remark 6.5) [rebuilt]: the descent step
carries, besides SignGD's curvature noise ``alpha eta_t``, the moment mismatch ``|m/sqrt(v) - sign(g)|``,
which Lemma D.1-D.4 bound entry-wise by ``O(sqrt(eta_t))`` (first and second moments average gradients
over a window of past iterates that moved by ``O(eta_t)``); so ``noise_t = alpha eta_t + c_adam eta_t^{1/2}``
and the margin numerator gains ``c_adam sum_{s=t_0}^{t-1} eta_s^{3/2}``:

    gamma - gamma(W_t) <= [ c_adam sum eta_s^{3/2} + alpha sum eta_s^2 + gamma sum_{s<t_1} eta_s + log n ]
                          / sum_{s<t} eta_s.

``c_adam`` grows with ``d`` and ``log(1/rho)`` and depends on ``beta1, beta2``; its exact value is not
rebuilt here (it stays a symbol; numeric ``t_0`` needs ``--c-adam``). Remark 6.5 states the consequence
that the derivation must reproduce: best ``a = 2/3`` with ``t^{-1/3}`` versus SignGD's ``t^{-1/2}``.
"""

from __future__ import annotations

import sympy as sp

from rates.symbolic.theorems.base import (
    SEED_SIGNADAM,
    BoundTemplate,
    NoiseTerm,
    PowerSumTerm,
    Source,
    alpha,
    curvature_alpha,
    gamma,
)
from rates.symbolic.theorems.coverage import covers_adam
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
    full_batch,
    separable,
)

c_adam = sp.Symbol("c_adam", positive=True)
SOURCE = Source(SEED_SIGNADAM, "Thm 6.3, Cor. 6.4, Rem. 6.5")


def template(norm: str = "max") -> BoundTemplate:
    return BoundTemplate(
        family="adam",
        title="Adam, eps = 0 (max)",
        source=SOURCE,
        status="rebuilt",
        gap_to="gamma",
        numerator=(PowerSumTerm(sp.Rational(3, 2), c_adam, "moment mismatch |m/sqrt(v) - sign g| = O(sqrt(eta_t))"),
                   PowerSumTerm(sp.Integer(2), alpha, "second-order (curvature) noise")),
        noise=(NoiseTerm(sp.Integer(1), alpha, "curvature: alpha eta_t"),
               NoiseTerm(sp.Rational(1, 2), c_adam, "moment mismatch: c_adam eta_t^(1/2)")),
        gamma_ref=gamma,
        assumptions=("data separable: gamma > 0 in the max norm", "||h_i||_1 <= B",
                     "v_0 entries >= rho > 0 (SIGNADAM Ass. 3.2)", "beta1 <= beta2 schedule condition (Ass. 3.4)"),
        constants={"alpha": "2 B^2 exp(2 B eta_0) [rebuilt]",
                   "c_adam": "moment-mismatch constant, grows with d and log(1/rho) [rebuilt, order only]"},
        definitions={alpha: curvature_alpha()},
    )


covers = covers_adam  # rates.symbolic.theorems.coverage: sympy-free


def _eps_zero(facts: Facts) -> Finding:
    if facts.adam_eps is None:
        return Finding(UNKNOWN, "eps not recorded")
    if facts.adam_eps == 0:
        return Finding(HOLDS, "eps = 0")
    return Finding(FAILS, f"eps = {facts.adam_eps:g} > 0; Thm 6.3 assumes eps = 0 and no seed theorem covers eps > 0")


def _betas_ordered(facts: Facts) -> Finding:
    b1, b2 = facts.adam_beta1, facts.adam_beta2
    if b1 is None or b2 is None:
        return Finding(UNKNOWN, "beta1/beta2 not recorded")
    ok = b1 <= b2
    return Finding(HOLDS if ok else FAILS, f"beta1 = {b1:g} {'<=' if ok else '>'} beta2 = {b2:g}")


_CITE = f"{SEED_SIGNADAM} Thm 6.3 [rebuilt]"
FAMILY = FamilyDeclaration(
    name="adam",
    algorithms="adam",
    example={"name": "adam"},
    covers=covers,
    hypotheses=(
        Hypothesis("eps = 0", "Adam without the stability constant (SIGNADAM eq. 3, eps = 0)", _CITE, STRUCTURE,
                   _eps_zero),
        full_batch(_CITE, "no seed theorem covers mini-batch Adam"),
        Hypothesis("beta1 <= beta2", "beta1 <= beta2, as in the binary-class Adam analysis Thm 6.3 extends "
                   "[rebuilt, docs/theory.md section 3]", _CITE, STRUCTURE, _betas_ordered),
        separable(_CITE),
        a_in_unit_interval(_CITE),
    ),
    source=SOURCE,
    template=lambda config: template(config.norm),
    statement="gamma - gamma(W_t) <= [c_adam S_{3/2} + alpha S_2 + gamma S_1(0, t_1) + log n] / S_1 for t > t_1",
)
