"""Chains: from lemma claims to the very bound template ``rates predict`` uses, one per theorem family.

Setting: a theorem family's bound (docs/theory.md section 3) is ``gap(t) <= [sum_j c_j S_{q_j+1}(t_0, t) + gamma_ref
S_1(0, t_1) + log n] / S_1(0, t)`` where ``sum_j c_j eta_t^{q_j}`` is the noise of the descent inequality
``L(W_{t+1}) <= L(W_t) - eta_t (gamma_ref - noise_t) G(W_t)``. The templates in :mod:`rates.symbolic.theorems` store
``gamma_ref``, the noise terms and the numerator's power sums.

Algorithm: each chain lists its steps -- a lemma claim of :mod:`proofs` (looked up in the registry, so a
changed claim changes the chain) with the inequality it contributes -- and *derives*, with sympy, the descent
noise ``{q_j: c_j}``, ``gamma_ref`` and the ``t_1`` requirement from the constants the claims carry
(``Claim.constants``). The margin step (SIGNADAM Lemma 5.2 / C.2, MINIBATCH D.3) turns noise ``c eta^q`` into
the numerator term ``c S_{q+1}``; the iterate bound ``||W_t|| <= S_1(0, t)`` (unit steps) gives the denominator.
The derived bound is then compared term by term with the family's template object (``template.resolve``).

Guarantee (the chain's verdict):

* ``follows`` -- every step's claim is proven or unrefuted (each listed with its own verdict) and the derived
  bound equals the template in every term;
* ``follows in exponents; constants differ`` -- same powers (the rate, docs/theory.md's firm contract) but some
  coefficient of the template is not what the lemmas give: a finding, printed with both expressions;
* ``does not follow`` -- the powers differ (the template's rate is not derived);
* ``broken`` -- a step's claim is refuted (or its check crashed).

Reference: SIGNADAM App. C-D (Lemma C.1, C.2, Thm C.4, Lemma D.1-D.7);
MINIBATCH App. D-G (Lemma D.1-D.3, E.1, F.1, G.1); PEPit's habit of printing
the derived and the stated guarantee side by side.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

import mpmath
import sympy as sp

from proofs.claims import VERDICT_COUNTEREXAMPLE, VERDICT_ERROR, VERDICT_PROVEN, CheckResult
from rates.symbolic.schedules import Schedule, eta0_symbol
from rates.symbolic.theorems.base import B, BoundTemplate, b, beta, gamma, k, n

FOLLOWS = "follows"
FOLLOWS_EXPONENTS = "follows in exponents; constants differ"
DOES_NOT_FOLLOW = "does not follow"
BROKEN = "broken"
NOT_EVALUATED = "not evaluated"

K1, K2 = sp.symbols("K_1 K_2", positive=True)  # Ass. 3.4 constants of the first/second moment (MINIBATCH C.15)
d = sp.Symbol("d", positive=True)


@dataclass(frozen=True)
class ChainStep:
    claim: Optional[str]  # a registry claim name, or None for a definition / cited step
    uses: str  # the inequality the step contributes, with its constants


@dataclass
class Derived:
    noise: dict  # q -> coefficient of eta_t^q in the descent noise
    gamma_ref: sp.Expr
    lipschitz: sp.Expr  # c in L(W_{t_0}) <= log k + c B S_1(0, t_0)
    notes: list = field(default_factory=list)
    free_in_template: dict = field(default_factory=dict)  # template symbol -> what the chain derives for it


@dataclass(frozen=True)
class Chain:
    family: str
    title: str
    steps: tuple
    template: Callable[[], BoundTemplate]
    derive: Callable[[dict], Derived]


def _const(claims: dict, name: str, key: str) -> sp.Expr:
    return sp.sympify(claims[name].constants[key])


def _curvature(claims: dict, step_bound=1) -> sp.Expr:
    """``(c_hess/2) B^2 ||Delta||^2 exp(c_ratio B ||Delta||_max eta_0)``: the second-order coefficient."""
    c_hess = _const(claims, "hessian-loss-bound", "c_hess")
    c_ratio = _const(claims, "proxy-ratio", "c_ratio")
    return c_hess / 2 * B**2 * step_bound**2 * sp.exp(c_ratio * B * step_bound * eta0_symbol)


_COMMON_HEAD = (
    ChainStep("hessian-loss-bound", "second-order Taylor term <= (eta^2/2) c_hess B^2 ||Delta||^2 G(W'), "
                                    "||Delta|| <= 1"),
    ChainStep("proxy-ratio", "G(W') <= exp(c_ratio B ||W' - W||_max) G(W), ||W' - W||_max <= eta_t <= eta_0"),
    ChainStep("norm-ordering", "||Delta||_max <= ||Delta|| <= 1 in every entry-wise / Schatten norm"),
)
_COMMON_TAIL = (
    ChainStep("schedule-assumption-3.3", "eta_t decreases to 0 with sum eta_t = inf: t_0 and t_1 exist"),
    ChainStep("loss-lipschitz", "L(W_{t_0}) <= log k + c_lipschitz B S_1(0, t_0)  (t_1 requirement)"),
    ChainStep("separation-level-chord", "G <= 1/(2n) gives L <= log 2/n: separable and L <= 2G after t_1"),
    ChainStep("loss-below-twice-proxy", "L <= 2 G once L <= log2/n"),
    ChainStep("low-loss-separability", "margins >= -log(e^{nL} - 1) (separability after t_1)"),
    ChainStep("signgd-unnormalized-margin", "unnormalised margin >= gamma_ref sum eta G/L - sum_j c_j S_{q_j+1} "
                                            "- log(2nL)"),
    ChainStep("proxy-lower-bound", "G/L -> 1 as L -> 0 (the margin's G/L factor)"),
    ChainStep(None, "||W_t|| <= S_1(0, t) (unit steps) -> gap <= [sum_j c_j S_{q_j+1}(t_0,t) + gamma_ref "
                    "S_1(0,t_1) + log n]"
                    " / S_1(0, t)"),
    ChainStep("partial-sum-integral-bounds", "integral bounds on S_p turn the bound into the corollary's rate"),
)


def _nsd(claims: dict) -> Derived:
    return Derived({sp.Integer(1): _curvature(claims)}, gamma, _const(claims, "loss-lipschitz", "c_lipschitz"))


def _minibatch(claims: dict) -> Derived:
    c_batch = _const(claims, "minibatch-gradient-error", "c_batch")
    return Derived({sp.Integer(1): _curvature(claims)}, gamma - 2 * c_batch,
                   _const(claims, "loss-lipschitz", "c_lipschitz"),
                   ["gamma_eff = gamma - 2 ||E||_*/G: <grad L, Delta> >= ||grad_S L||_* - ||E||_* >= ||grad "
                    "L||_* - 2||E||_*"])


@functools.lru_cache(maxsize=1)
def _mean_lag() -> sp.Expr:
    """``sum_j (1 - beta) beta^j j = beta/(1 - beta)`` for ``beta in (0, 1)`` (sympy's series, convergent branch)."""
    j = sp.Symbol("j", integer=True, nonnegative=True)
    value = sp.summation((1 - beta) * beta**j * j, (j, 0, sp.oo))
    if isinstance(value, sp.Piecewise):
        value = value.args[0][0]
    return sp.simplify(value)


def _momentum(claims: dict) -> Derived:
    c_error = _const(claims, "momentum-accumulated-error", "c_momentum_error")
    c_stab = _const(claims, "gradient-stability", "c_stability")
    c_exp = _const(claims, "gradient-stability", "c_stability_exp")
    # drift of the momentum signal, to leading order in eta_t: sum_j (1-beta) beta^j c_stab (c_exp j eta_t) G
    drift = c_stab * c_exp * _mean_lag()
    return Derived({sp.Integer(1): _curvature(claims) + 2 * drift}, gamma - 2 * c_error,
                   _const(claims, "loss-lipschitz", "c_lipschitz"),
                   ["drift ||sum_j (1-beta) beta^j (grad_S L(W_{t-j}) - grad_S L(W_t))|| <= sum_j (1-beta) beta^j "
                    "c_stability (e^{c_exp j eta} - 1) G, leading order in eta_t (e^x - 1 ~ x, eta_{t-j} ~ eta_t); "
                    "it enters <grad L, Delta> twice, like the sampling error in gamma_eff"])


def _vr(claims: dict) -> Derived:
    c_vr = _const(claims, "vr-deviation", "c_vr")
    c_soft = _const(claims, "softmax-perturbation", "c_softmax")
    c_ratio = _const(claims, "proxy-ratio", "c_ratio")
    m = n / b
    # deviation <= c_vr (e^{x} - 1) G(W~) with x = c_soft B ||W_t - W~|| <= c_soft B m (1 + m) eta_t; e^x - 1 <= x e^x,
    # x <= c_soft B m eta_0; G(W~) <= e^{c_ratio B m eta_0} G(W_t); twice in <grad L, Delta>
    noise = (2 * c_vr * c_soft * B * m * (1 + m) * sp.exp(c_soft * B * m * eta0_symbol)
             * sp.exp(c_ratio * B * m * eta0_symbol))
    return Derived({sp.Integer(1): _curvature(claims) + noise}, gamma, _const(claims, "loss-lipschitz", "c_lipschitz"),
                   ["||W_t - W~|| <= m eta_{t-m} <= m (1 + m) eta_t for t >= m (MINIBATCH F.1)"])


def _adam(claims: dict) -> Derived:

    C = _const(claims, "adam-moment-ratio", "C_D1")
    first = 2 * B * K1  # adam-first-moment + Ass. 3.4: ||m_t - (1-beta1^{t+1}) g_t||_sum <= 2 B K_1 eta_t G
    second = 2 * B**2 * K2  # adam-second-moment + Ass. 3.4: ||v_t - (1-beta2^{t+1}) g_t^2||_sum <= 2 B^2 K_2 eta_t G^2
    sqrt_term = 2 * (1 + C) * sp.sqrt(k * d * second)  # adam-entry-alignment: (1+C)(e + 2 sqrt(N V)), N = k d
    c_adam = sp.Symbol("c_adam", positive=True)
    noise = {sp.Rational(1, 2): sqrt_term, sp.Integer(1): _curvature(claims, step_bound=C) + (1 + C) * first}
    return Derived(noise, gamma, _const(claims, "loss-lipschitz", "c_lipschitz"),
                   [f"C_D1 = {C} (Lemma D.1); K_1, K_2: Ass. 3.4 constants (MINIBATCH C.15) for c_1 = 2 B C_D1 and "
                    "4 B C_D1; bias correction changes m/sqrt(v) by sqrt(1-beta2^(t+1))/(1-beta1^(t+1)) -> 1",
                    "Adam's step has ||m/sqrt(v)||_max <= C_D1, not 1: the curvature term carries C_D1^2 and "
                    "exp(2 B C_D1 eta_0); the iterate bound ||W_t||_max <= S_1(0,t) needs SIGNADAM Lemma D.7 "
                    "(|m/sqrt(v)| <= 1 + o(1) once the loss is small), cited, not checked here"],
                   {c_adam: sqrt_term})


def _template(family: str) -> Callable[[], BoundTemplate]:
    def build() -> BoundTemplate:
        from rates.symbolic.theorems import adam, minibatch, momentum, nsd, variance_reduction

        return {"nsd": nsd.template, "adam": adam.template, "minibatch": minibatch.template,
                "momentum": momentum.template, "vr": variance_reduction.template}[family]()

    return build


CHAINS = {
    "nsd": Chain("nsd", "NSD full batch (SIGNADAM Thm 5.3 / C.4, Cor. 5.4)", _COMMON_HEAD + (
        ChainStep("gradient-dual-lower", "<grad L, Delta> = ||grad L||_* >= gamma G (first-order term)"),
    ) + _COMMON_TAIL, _template("nsd"), _nsd),
    "minibatch": Chain("minibatch", "mini-batch NSD (MINIBATCH Thm 4.1 / D.4)", _COMMON_HEAD + (
        ChainStep("gradient-dual-lower", "||grad L||_* >= gamma G"),
        ChainStep("minibatch-gradient-error", "||grad_S L - grad L||_* <= c_batch G (C.11 with C.1)"),
    ) + _COMMON_TAIL, _template("minibatch"), _minibatch),
    "momentum": Chain("momentum", "mini-batch NSD + momentum (MINIBATCH Thm 4.3 / E.4)", _COMMON_HEAD + (
        ChainStep("gradient-dual-lower", "||grad L||_* >= gamma G"),
        ChainStep("momentum-accumulated-error", "||sum (1-beta) beta^(t-tau) E_tau|| <= c_momentum_error G (C.12)"),
        ChainStep("gradient-stability", "||grad_S L(W') - grad_S L(W)|| <= c_stability (e^{c_exp ||W'-W||} - 1) "
                                        "G (C.10)"),
        ChainStep("schedule-assumption-3.4", "sum_j beta^j (e^{c_1 sum eta} - 1) <= C eta_t (Ass. 3.4): the "
                                             "drift is O(eta_t)"),
    ) + _COMMON_TAIL, _template("momentum"), _momentum),
    "vr": Chain("vr", "VR mini-batch NSD (MINIBATCH Thm 4.6 / F.4)", _COMMON_HEAD + (
        ChainStep("gradient-dual-lower", "||grad L||_* >= gamma G"),
        ChainStep("vr-deviation", "VR estimator error <= c_vr (e^{c_softmax B ||W - W~||} - 1) G(W~) (C.13)"),
        ChainStep("softmax-perturbation", "the exponent constant c_softmax"),
        ChainStep("vr-momentum-error", "with momentum: C.14 sums C.13 and C.9 over the momentum window"),
    ) + _COMMON_TAIL, _template("vr"), _vr),
    "adam": Chain("adam", "Adam, eps = 0 (SIGNADAM Thm 6.3 / D.8, Cor. 6.4)", _COMMON_HEAD + (
        ChainStep("adam-moment-ratio", "|m_t| <= C_D1 sqrt(v_t): ||Delta_t||_max <= C_D1 (D.1)"),
        ChainStep("adam-first-moment", "||m_t - (1-beta1^{t+1}) g_t||_sum <= 2B(1-beta1) sum beta1^tau (e^{..} "
                                       "- 1) G (6.1/D.2)"),
        ChainStep("adam-second-moment", "||v_t - (1-beta2^{t+1}) g_t^2||_sum <= 2B^2(1-beta2) sum beta2^tau "
                                        "(e^{..} - 1) G^2 (6.2/D.3)"),
        ChainStep("schedule-assumption-3.4", "the two sums are <= K_1 eta_t, K_2 eta_t (Ass. 3.4)"),
        ChainStep("adam-entry-alignment", "<g, m/sqrt(v)> >= ||g||_1 - (1+C_D1)(e + 2 sqrt(k d V)) (D.4): the "
                                          "eta^{1/2} term"),
        ChainStep("gradient-dual-lower", "||grad L||_1 >= gamma G (max-norm margin)"),
    ) + _COMMON_TAIL, _template("adam"), _adam),
}


@dataclass
class ChainResult:
    chain: Chain
    step_verdicts: list  # (ChainStep, verdict text)
    derived: Derived
    comparisons: list  # (component, derived, template, equal: bool | None)
    verdict: str

    def lines(self) -> list[str]:
        template = self.chain.template()
        out = [f"chain {self.chain.family}: {self.chain.title}",
               f"  ends at rates.symbolic.theorems.{_module(self.chain.family)}.template() "
               f"({template.source.text}, [{template.status}])"]
        for number, (step, verdict) in enumerate(self.step_verdicts, 1):
            label = step.claim or "definition"
            out.append(f"  {number:2d}. [{verdict}] {label}: {step.uses}")
        for note in self.derived.notes:
            out.append(f"      note: {note}")
        out.append("  derived vs template:")
        for component, derived, stated, equal in self.comparisons:
            mark = {True: "equal", False: "DIFFERS", None: "template leaves it symbolic"}[equal]
            out.append(f"    {component}: derived {derived} | template {stated} -> {mark}")
        out.append(f"  verdict: {self.verdict}")
        return out


def _module(family: str) -> str:
    return {"vr": "variance_reduction"}.get(family, family)


def _numerator_from_noise(noise: dict) -> dict:
    return {q + 1: c for q, c in noise.items()}


def _t1_requirement(derived: Derived, template: BoundTemplate, values: dict) -> tuple[float, float]:
    """Derived and stated t_1 requirement at one numeric point (t_0 = 5, a = 1/2)."""
    schedule = Schedule(sp.Rational(1, 2), 1)
    subs = {sp.Symbol(key, positive=True): v for key, v in values.items()}
    g_ref = float(template.resolve(derived.gamma_ref).subs(subs).subs({sp.Symbol(key): v for key, v in values.items()}))
    drift = schedule.partial_sum_numeric(1, 0, 5, eta0=values["eta_0"])
    # (gamma_ref/2) sum eta G <= L(W_{t_0}) and G <= 1/(2n) needed: sum eta >= 4 n L(W_{t_0}) / gamma_ref
    derived_value = 4 * values["n"] / g_ref * (mpmath.log(values["k"]) + float(derived.lipschitz) * values["B"] * drift)
    return float(derived_value), float(template.t1_requirement(5, values, schedule))


def _same(first: sp.Expr, second: sp.Expr) -> bool:
    """Equal as expressions: a numeric test at seeded random points first (cheap, decides "different"),
    then sympy's simplification (decides "equal")."""
    difference = sp.sympify(first - second)
    symbols = sorted(sp.sympify(first).free_symbols | sp.sympify(second).free_symbols, key=str)
    rng = random.Random(20240611)
    for _ in range(3):
        point = {symbol: sp.Rational(rng.randint(11, 89), 100) for symbol in symbols}  # beta-like values in (0, 1)
        value = complex(difference.subs(point).evalf(30))
        scale = 1 + abs(complex(sp.sympify(first).subs(point).evalf(30)))
        if abs(value) > 1e-20 * scale:
            return False
    return sp.simplify(difference) == 0


def evaluate(chain: Chain, claims: dict, results: dict) -> ChainResult:
    """Compare the chain's derived bound with its template; ``results`` maps claim names to CheckResults."""
    step_verdicts = []
    broken = False
    missing = [step.claim for step in chain.steps if step.claim is not None and step.claim not in claims]
    if missing:  # a registry without the chain's lemmas (a test's toy registry): nothing to derive from
        return ChainResult(chain, [(step, "missing") for step in chain.steps], Derived({}, gamma, sp.Integer(0)), [],
                           f"{NOT_EVALUATED} (claims not in the registry: {', '.join(missing)})")
    for step in chain.steps:
        if step.claim is None:
            step_verdicts.append((step, "definition"))
            continue
        result: Optional[CheckResult] = results.get(step.claim)
        verdict = result.verdict if result is not None else "not checked"
        broken |= verdict in (VERDICT_COUNTEREXAMPLE, VERDICT_ERROR)
        step_verdicts.append((step, verdict))
    derived = chain.derive(claims)
    template = chain.template()
    comparisons = []
    stated_noise = {term.q: template.resolve(term.coefficient) for term in template.noise}
    stated_numerator = {term.p: template.resolve(term.coefficient) for term in template.numerator}
    powers_equal = set(stated_noise) == set(derived.noise) and set(stated_numerator) == set(
        _numerator_from_noise(derived.noise))
    constants_equal = True
    for label, stated, mine in (("noise eta^", stated_noise, derived.noise),
                                ("numerator S_", stated_numerator, _numerator_from_noise(derived.noise))):
        for power in sorted(set(stated) | set(mine)):
            s_value, d_value = stated.get(power), mine.get(power)
            if s_value is None or d_value is None:
                comparisons.append((f"{label}{power}", d_value, s_value, False))
                continue
            free = s_value in derived.free_in_template
            equal = None if free else _same(s_value, d_value)
            constants_equal &= equal is not False
            comparisons.append((f"{label}{power}", d_value, s_value, equal))
    g_equal = _same(template.resolve(template.gamma_ref), derived.gamma_ref)
    constants_equal &= g_equal
    comparisons.append(("gamma_ref", derived.gamma_ref, template.resolve(template.gamma_ref), g_equal))
    values = {"n": 6, "k": 3, "B": 1.0, "eta_0": 1.0, "gamma": 5.0, "b": 6, "beta": 0.5}
    mine_t1, stated_t1 = _t1_requirement(derived, template, values)
    t1_equal = abs(mine_t1 - stated_t1) <= 1e-9 * abs(stated_t1)
    constants_equal &= t1_equal
    comparisons.append(("t1 requirement at n=6, k=3, B=1, gamma=5, t0=5, a=1/2", f"{mine_t1:.10g}", f"{stated_t1:.10g}",
                        t1_equal))
    if broken:
        verdict = BROKEN
    elif not powers_equal:
        verdict = DOES_NOT_FOLLOW
    elif constants_equal:
        verdict = FOLLOWS
    else:
        verdict = FOLLOWS_EXPONENTS
    unproven = [s.claim for s, v in step_verdicts if s.claim is not None and v != VERDICT_PROVEN]
    if verdict in (FOLLOWS, FOLLOWS_EXPONENTS) and unproven:
        verdict += f" (steps searched, not proven: {', '.join(unproven)})"
    return ChainResult(chain, step_verdicts, derived, comparisons, verdict)


def chain_claim_names(families) -> list[str]:
    names = []
    for family in families:
        names.extend(step.claim for step in CHAINS[family].steps if step.claim is not None)
    return list(dict.fromkeys(names))


def per_sample_chain_lines(claims: dict, results: dict) -> tuple[list[str], bool]:
    """The per-sample theorem predicts a direction: derive ``M`` from the step-direction lemma and compare it with
    :func:`rates.symbolic.theorems.per_sample.bias_matrix` (what ``rates predict`` uses) for a few class counts."""
    import numpy as np

    from rates.symbolic.theorems.per_sample import bias_matrix

    claim = "per-sample-step-direction"
    if claim not in claims:
        return [f"chain per-sample: {NOT_EVALUATED} (claim {claim} not in the registry)"], True
    verdict = results[claim].verdict if claim in results else "not checked"
    out = ["chain per-sample: per-sample SignSGD limit direction (MINIBATCH Thm 4.9 / H.2)",
           "  ends at rates.symbolic.theorems.per_sample.bias_matrix (used by limit_direction)",
           f"   1. [{verdict}] {claim}: a class-c sample moves W by eta (2 e_c - 1) e_c^T",
           "   2. [definition] an epoch visits class c n_c times at steps whose eta ratio -> 1 (eta_t ~ t^-a), so "
           "W_T / sum eta -> sum_c (n_c/n) (2 e_c - 1) e_c^T",
           "  derived vs template:"]
    ok = verdict not in (VERDICT_COUNTEREXAMPLE, VERDICT_ERROR)
    for counts in ((1, 2, 4), (3, 1, 1), (2, 5)):
        kk = len(counts)
        derived = sp.zeros(kk, kk)
        for c, count in enumerate(counts):
            direction = 2 * sp.eye(kk)[:, c] - sp.ones(kk, 1)
            derived[:, c] = sp.Rational(count, sum(counts)) * direction
        stated = bias_matrix(list(counts), "signsgd")
        equal = bool(np.allclose(np.array(derived, dtype=float), stated, rtol=0, atol=1e-15))
        ok &= equal
        out.append(f"    M for counts {counts}: derived {derived.tolist()} -> {'equal' if equal else 'DIFFERS'}")
    out.append(f"  verdict: {'follows' if ok else 'broken'}")
    return out, ok
