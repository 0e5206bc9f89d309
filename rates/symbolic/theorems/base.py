"""Bound templates, thresholds and predictions shared by every theorem family.

Setting (docs/theory.md section 3, SIGNADAM App. C proof overview; MINIBATCH
App. D-G) [rebuilt]: every linear-model theorem has the skeleton

1. descent ``L(W_{t+1}) <= L(W_t) - eta_t (gamma_ref - noise_t) G(W_t)`` with ``noise_t = sum_j c_j eta_t^{q_j}``;
2. ``t_0`` = first ``t`` with ``c_j eta_t^{q_j} <= gamma_ref / (2J)`` for each of the ``J`` noise terms
   (so ``noise_t <= gamma_ref/2``); closed form ``max_j ceil((2J c_j eta_0^{q_j}/gamma_ref)^{1/(a q_j)} - 2)``;
3. ``t_1`` = first ``t`` with ``S_1(t_0, t) >= (4n/gamma_ref)(log k + 2B S_1(0, t_0))``. Derivation: the loss
   is ``2B``-Lipschitz along unit steps (``|<grad L, Delta>| <= ||grad L||_* <= 2B G <= 2B``) so
   ``L(W_{t_0}) <= log k + 2B S_1(0, t_0)``; after ``t_0`` the descent gives
   ``(gamma_ref/2) sum_{s=t_0}^{t-1} eta_s G(W_s) <= L(W_{t_0})``, so some ``s < t_1`` has
   ``G(W_s) <= 1/(2n)``, hence every sample has ``1 - S_{y_i} <= 1/2`` and ``L <= 2 log2 G <= log2/n``
   (``-log(1-x) <= 2 log2 x`` on [0, 1/2]), and monotone descent keeps it there;
4. margin: for ``t > t_1``,
   ``gap(t) <= [ sum_j c_j S_{p_j}(t_0, t) + gamma_ref S_1(0, t_1) + log n ] / S_1(0, t)``.

A :class:`BoundTemplate` stores the numerator's power sums (``p_j`` and coefficients), the noise terms, the
reference margin (``gamma`` or an effective ``gamma_eff``), assumptions and source; the rate, regimes and
best ``a`` are *derived* by :mod:`rates.symbolic.asymptotics`, never stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import mpmath
import numpy as np
import sympy as sp

from rates.symbolic import asymptotics
from rates.symbolic.schedules import Schedule, a_symbol, eta0_symbol

# re-exported: the family modules import them from here with the rest of their template vocabulary
from rates.symbolic.theorems.sources import SEED_MINIBATCH as SEED_MINIBATCH
from rates.symbolic.theorems.sources import SEED_SIGNADAM as SEED_SIGNADAM
from rates.symbolic.theorems.sources import Source

# Constants shared by the templates (docs/theory.md section 1).
gamma, B, n, k, b, beta = sp.symbols("gamma B n k b beta", positive=True)
alpha = sp.Symbol("alpha", positive=True)
# Step sizes at step t, for constants that hold step by step (the descent start, not the margin bound): the step's
# own size eta_t and eta_lag = eta_{max(t - lag, 0)}, the size ``lag`` steps back (BoundTemplate.lag).
eta_step = sp.Symbol("eta_step", positive=True)
eta_lag = sp.Symbol("eta_lag", positive=True)


def curvature_alpha(B_value=B, eta0_value=eta0_symbol):
    """Second-order coefficient of the descent step: ``alpha = 2 B^2 exp(2 B eta_0)`` [rebuilt].

    Taylor: ``L(W - eta Delta) = L(W) - eta <grad L, Delta> + (eta^2/2) Delta^T Hess L(W') Delta``. Per
    sample with ``v = Delta h_i``: ``v^T (diag S - S S^T) v = Var_S(v) <= sum_c S_c (v_c - v_y)^2
    <= 4 (1 - S_y) ||v||_inf^2`` and ``||v||_inf <= ||Delta||_max ||h_i||_1 <= ||Delta|| B`` (Lemma C.1), so the
    quadratic term is ``<= 2 eta^2 B^2 G(W')``; the proxy ratio ``G(W')/G(W) <= exp(2 B ||W'-W||_max)``
    (SIGNADAM Lemma B.5 / MINIBATCH Lemma C.9) with ``||W' - W|| <= eta_t <= eta_0``.
    """
    return 2 * B_value**2 * sp.exp(2 * B_value * eta0_value)


@dataclass(frozen=True)
class PowerSumTerm:
    """``coefficient * sum_{s=t_0}^{t-1} eta_s^p`` in the numerator of the margin bound."""

    p: sp.Rational
    coefficient: sp.Expr
    meaning: str


@dataclass(frozen=True)
class NoiseTerm:
    """``coefficient * eta_t^q`` in the descent inequality's noise (sets ``t_0``)."""

    q: sp.Rational
    coefficient: sp.Expr
    meaning: str


@dataclass(frozen=True)
class BoundTemplate:
    """A theorem family's margin-gap bound, in the shape of docs/theory.md section 3.

    ``gamma_ref`` is what the noise must stay below and what the gap is measured to: ``gamma`` or an
    effective ``gamma_eff`` (then ``gap_to = "gamma_eff"`` and ``gamma_eff > 0`` is an assumption).
    """

    family: str
    title: str
    source: Source
    status: str  # "given" or "rebuilt" (docs/theory.md markers) for the rate statement
    gap_to: str
    numerator: tuple[PowerSumTerm, ...]
    noise: tuple[NoiseTerm, ...]
    gamma_ref: sp.Expr
    assumptions: tuple[str, ...]
    constants: dict[str, str] = field(default_factory=dict)  # symbol name -> meaning / status
    # derived symbols (alpha, gamma_eff, ...) -> expressions in the base constants; applied before numbers
    definitions: dict = field(default_factory=lambda: {alpha: curvature_alpha()})
    # step-local versions of some definitions, in eta_step (eta_t) and eta_lag (eta_{t - lag}): they bound the
    # noise at step t only (rates.symbolic.theorems.descent_start), where ``definitions`` bound it for every t
    step_local: dict = field(default_factory=dict)
    lag: Any = 0  # how many steps back eta_lag lies (a sympy expression in the base constants, e.g. n/b)

    def resolve(self, expr: sp.Expr) -> sp.Expr:
        for _ in range(3):  # definitions may refer to one another (alpha_vr -> alpha)
            expr = sp.sympify(expr).subs(self.definitions)
        return expr

    @property
    def powers(self) -> list[sp.Rational]:
        return [term.p for term in self.numerator]

    def numerator_expr(self, schedule: Schedule) -> sp.Expr:
        """The bound's numerator as a sympy expression in ``t, t_0, t_1`` (exact partial sums, step 4)."""
        t, t0, t1 = sp.symbols("t t_0 t_1", positive=True, integer=True)
        sums = sum(term.coefficient * schedule.partial_sum_exact(term.p, t0, t) for term in self.numerator)
        return sums + self.gamma_ref * schedule.partial_sum_exact(1, 0, t1) + sp.log(n)

    # -- thresholds ---------------------------------------------------------------------------------------
    def t0_expr(self) -> sp.Expr:
        """Closed form of ``t_0`` (see module docstring, step 2)."""
        J = len(self.noise)
        parts = [sp.ceiling((2 * J * term.coefficient * eta0_symbol**term.q / self.gamma_ref)
                            ** (1 / (a_symbol * term.q)) - 2)
                 for term in self.noise]
        return sp.Max(0, *parts)

    def t0_defining(self) -> str:
        J = len(self.noise)
        pieces = [f"{term.coefficient} * eta_t^({term.q}) <= {self.gamma_ref} / {2 * J}" for term in self.noise]
        return "first t with " + " and ".join(pieces)

    def t1_defining(self) -> str:
        return (f"first t > t_0 with sum_{{s=t_0}}^{{t-1}} eta_s >= (4 n / ({self.gamma_ref})) "
                "(log k + 2 B sum_{s<t_0} eta_s)")

    def t1_requirement(self, t0_value, values: dict, schedule: Schedule) -> mpmath.mpf:
        """Right-hand side ``R`` of ``t_1``'s defining inequality for numeric constants."""
        drift = schedule.partial_sum_numeric(1, 0, int(t0_value), eta0=values["eta_0"])
        g_ref = mpmath.mpf(str(sp.N(self.resolve(self.gamma_ref).subs(_subs(values)), 30)))
        return 4 * values["n"] / g_ref * (mpmath.log(values["k"]) + 2 * values["B"] * drift)


def _subs(values: dict) -> dict:
    """Numeric values keyed by the templates' (positive) symbols of the same name."""
    return {sp.Symbol(key, positive=True): sp.Integer(val) if isinstance(val, int) else sp.Float(val, 30)
            for key, val in values.items() if val is not None}


def first_time_sum_reaches(schedule: Schedule, start: int, requirement, eta0: float,
                           limit: int = 10**15) -> Optional[int]:
    """Smallest ``t > start`` with ``S_1(start, t) >= requirement`` by doubling + bisection on exact sums.

    Returns None when even ``t = limit`` does not reach it (e.g. ``a = 1``: ``t_1`` grows like ``exp(R)``).
    """
    def reached(t):
        return schedule.partial_sum_numeric(1, start, t, eta0=eta0) >= requirement

    return first_true_after(reached, start, limit)


def first_true_after(predicate, start: int, limit: int) -> Optional[int]:
    """Smallest ``t > start`` with ``predicate(t)`` for a predicate that stays true once true (a monotone
    search): doubling the distance from ``start``, then bisection; None when it is still false past ``limit``."""
    hi = start + 1
    while not predicate(hi):
        hi = start + 2 * (hi - start)
        if hi > limit:
            return None
    lo = start + (hi - start) // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid
        else:
            lo = mid
    return hi


def t1_integral_bound(a: sp.Rational, t0: int, requirement, eta0: float) -> str:
    """Closed-form sufficient ``t`` for ``S_1(t0, t) >= R``:
    ``sum_{s=t0}^{t-1} (s+2)^{-a} >= int_{t0+2}^{t+2} x^{-a} dx``.

    ``t = ceil(((1-a) R/eta_0 + (t0+2)^{1-a})^{1/(1-a)} - 2)`` for ``a < 1``, ``ceil((t0+2) exp(R/eta_0) - 2)`` at
    ``a = 1``; returned as a string because it can exceed every float.

    With ``a = 1/2``, ``t0 = 0``, ``R = 10``: ``(R/2 + sqrt 2)^2 - 2 = 39.1...``, and the exact first time is no later:

    >>> t1_integral_bound(sp.Rational(1, 2), 0, 10, 1.0)
    '40.0'
    >>> first_time_sum_reaches(Schedule(sp.Rational(1, 2), 1), 0, 10, eta0=1.0) <= 40
    True
    """
    with mpmath.workdps(30):
        R = mpmath.mpf(requirement) / eta0
        if a == 1:
            value = (t0 + 2) * mpmath.exp(R) - 2
        else:
            one_minus_a = 1 - mpmath.mpf(a.p) / a.q
            value = (one_minus_a * R + mpmath.mpf(t0 + 2) ** one_minus_a) ** (1 / one_minus_a) - 2
        return mpmath.nstr(mpmath.ceil(value), 12)


@dataclass
class Prediction:
    """What a theorem family predicts for one algorithm, norm and schedule exponent ``a``.

    ``rate`` is ``O(t^{-rate.exponent} (log t)^{rate.log_power})`` (``exponent = 0, log_power = -1`` is
    ``1/log t``); ``best_a`` maximises the exponent; ``thresholds`` hold ``t0``/``t1`` symbolic and, when
    constants were given, numeric.
    """

    family: str
    algorithm: str
    norm: str
    a: sp.Rational
    regime: str
    rate: asymptotics.Rate
    best_a: sp.Rational
    gap_to: str
    thresholds: dict[str, dict[str, Any]]
    source: Source
    status: str
    template: BoundTemplate
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "family": self.family,
            "algorithm": self.algorithm,
            "norm": self.norm,
            "a": str(self.a),
            "regime": self.regime,
            "rate": {"exponent": str(self.rate.exponent), "log_power": int(self.rate.log_power),
                     "text": self.rate.text, "latex": self.rate.latex},
            "best_a": str(self.best_a),
            "gap_to": self.gap_to,
            "thresholds": self.thresholds,
            "source": self.source.to_json(),
            "reference": self.source.reference.to_json() if self.source.reference else None,
            "status": self.status,
            "assumptions": self.assumptions,
            "notes": self.notes,
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)

    def bound_shape(self, t: np.ndarray) -> np.ndarray:
        """``(1 + sum_j S_{p_j}(0, t)) / S_1(0, t)`` from exact partial sums with ``eta_0 = 1`` and unit constants.

        Decreasing in ``t``: adding step ``t`` appends ``sum_j eta_t^{p_j}`` to the numerator and ``eta_t`` to
        the denominator, and ``sum_j eta_t^{p_j-1} <= sum_j S_{p_j}/S_1 < shape`` because ``eta`` decreases
        and every ``p_j >= 1`` (mediant inequality).
        """
        t = np.asarray(t, dtype=np.int64)
        if np.any(t < 1):
            raise ValueError("bound_shape needs t >= 1")
        schedule = Schedule(self.a, 1)
        numerator = 1.0 + sum(schedule.partial_sums_array(term.p, t) for term in self.template.numerator)
        return numerator / schedule.partial_sums_array(1, t)

    def bound_members(self, t: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
        """The bound's terms with their unknown non-negative constants dropped: ``1/S_1`` and ``S_p/S_1`` per term.

        The margin bound is ``C_1/S_1 + sum_j C_j S_{p_j}/S_1`` with ``C_1 = gamma_ref S_1(0, t_1) + log n (+ D_beta)``
        and ``C_j`` the rebuilt (worst-case) coefficients; only their signs are firm, so the comparator judges
        against every ratio (:func:`rates.judge.compare.slope_envelope`). Sums start at 0: starting them at ``t_0``
        only changes ``C_1`` by a constant, and the model takes every ``C >= 0``
        (the bound model of docs/findings.md F8).
        """
        t = np.asarray(t, dtype=np.int64)
        if np.any(t < 1):
            raise ValueError("bound_members needs t >= 1")
        schedule = Schedule(self.a, 1)
        s1 = schedule.partial_sums_array(1, t)
        members = [1.0 / s1] + [schedule.partial_sums_array(term.p, t) / s1 for term in self.template.numerator]
        labels = ["1/S_1"] + [f"S_{term.p}/S_1" for term in self.template.numerator]
        return members, labels


# Exact integers above this many digits are not formed: 2^(1/a) at a = 1e-6 has 301,030 digits and at
# a = 1e-400 it cannot be held in memory. Thresholds beyond it are estimated in log space (mpmath).
MAX_EXACT_EXPONENT = 64  # largest 1/(a q) substituted into t0's closed form (2^64 has 20 digits)
MAX_EXACT_T0 = 10**15  # larger t0 are reported as estimates: no run gets there


def _t0_log10(template: BoundTemplate, a: sp.Rational, subs: dict) -> Optional[mpmath.mpf]:
    """``log10(t0 + 2)`` upper estimate from the closed form, in log space (never forms a huge number).

    Each noise term gives ``x_j = (2J c_j eta_0^q_j / gamma_ref)^(1/(a q_j))``; ``t0 = max_j ceil(x_j - 2)``,
    so ``log10(t0 + 2) <= max_j log10(x_j) + log10(2)``. None when a constant is missing.
    """
    J = len(template.noise)
    logs = []
    with mpmath.workdps(30):
        for term in template.noise:
            base = template.resolve(2 * J * term.coefficient * eta0_symbol**term.q / template.gamma_ref).subs(subs)
            if base.free_symbols:
                return None
            base_mp = mpmath.mpf(sp.N(base, 30))
            if base_mp <= 0:
                return None
            exponent = 1 / (mpmath.mpf(a.p) / a.q * mpmath.mpf(term.q.p) / term.q.q)
            logs.append(mpmath.log10(base_mp) * exponent)
    return max(logs) if logs else None


def scientific(log10_value) -> str:
    """``10^x`` in scientific notation: ``1.23e+301``, or ``10^(4.3e+05)`` beyond any mantissa's reach."""
    log10_value = mpmath.mpf(log10_value)
    if log10_value < 10**6:
        exponent = int(mpmath.floor(log10_value))
        return f"{float(mpmath.power(10, log10_value - exponent)):.3g}e+{exponent:02d}"
    if log10_value < 1e300:
        return f"10^({float(log10_value):.4g})"
    return f"10^({mpmath.nstr(log10_value, 4)})"


def reference_margin(template: BoundTemplate, constants: dict, out: dict) -> Optional[tuple[dict, dict, sp.Expr]]:
    """The constants (``eta_0`` 1 unless given), their substitutions and ``gamma_ref`` evaluated on them, for the
    thresholds ``out``; None when ``gamma_ref`` needs a missing constant or is <= 0 (its assumption fails), with
    why in ``out["t0"]``. ``out[gap_to]`` holds ``gamma_ref``'s value."""
    values = {"eta_0": 1.0, **{key: val for key, val in constants.items() if val is not None}}
    subs = _subs(values)
    g_ref = template.resolve(template.gamma_ref).subs(subs)
    if g_ref.free_symbols:
        out["t0"]["missing"] = sorted(str(s) for s in g_ref.free_symbols)
        return None
    out[template.gap_to] = float(g_ref)
    if g_ref <= 0:
        out["t0"]["assumption_fails"] = f"{template.gap_to} = {float(g_ref):.6g} <= 0"
        return None
    return values, subs, g_ref


def numeric_thresholds(template: BoundTemplate, a: sp.Rational, constants: dict | None) -> dict[str, dict[str, Any]]:
    """``t0``/``t1``: symbolic always, numeric when the constants they need were given.

    Exact arithmetic is bounded (:data:`MAX_EXACT_EXPONENT`, :data:`MAX_EXACT_T0`): beyond it ``t0`` is an
    estimate in scientific notation (``numeric`` stays None) and ``t1`` is not searched.
    """
    largest_exponent = max((1 / (a * term.q) for term in template.noise), default=sp.Integer(0))
    exact_ok = largest_exponent <= MAX_EXACT_EXPONENT
    t0_sym = template.t0_expr().subs(a_symbol, a) if exact_ok else template.t0_expr()
    out = {
        "t0": {"symbolic": str(t0_sym), "latex": sp.latex(t0_sym), "closed_form": True,
               "defining": template.t0_defining(), "numeric": None},
        "t1": {"symbolic": template.t1_defining(), "closed_form": False,
               "defining": template.t1_defining(), "numeric": None,
               "upper_bound_symbolic": ("ceil((t_0 + 2) exp(R/eta_0) - 2)" if a == 1 else
                                        f"ceil(({1 - a} R/eta_0 + (t_0 + 2)^({1 - a}))^({1 / (1 - a)}) - 2)")
                                       + ", R = the right-hand side above (integral comparison)"},
    }
    reference = reference_margin(template, constants, out) if constants else None
    if reference is None:
        return out
    values, subs, _ = reference
    log10_t0 = _t0_log10(template, a, subs)
    if not exact_ok or (log10_t0 is not None and log10_t0 > mpmath.log10(MAX_EXACT_T0)):
        if log10_t0 is None:
            out["t0"]["missing"] = sorted(str(s) for s in template.resolve(t0_sym).subs(subs).free_symbols - {a_symbol})
            return out
        if log10_t0 <= mpmath.log10(MAX_EXACT_T0):  # huge 1/a but small base: t0 is small, computed in mpmath
            with mpmath.workdps(50):
                t0_int = max(0, int(mpmath.ceil(mpmath.power(10, log10_t0) - 2)))
        else:
            estimate = scientific(log10_t0)
            out["t0"]["estimate"] = estimate
            out["t0"]["note"] = f"t0 ~ {estimate} steps: beyond any run; exact integer not formed"
            out["t1"]["note"] = f"not searched: t0 ~ {estimate} already exceeds any run"
            return out
    else:
        t0_value = template.resolve(t0_sym).subs(subs)
        if t0_value.free_symbols:
            out["t0"]["missing"] = sorted(str(s) for s in t0_value.free_symbols)
            return out
        t0_int = int(t0_value)
    out["t0"]["numeric"] = t0_int
    if any(key not in values for key in ("n", "k", "B")):
        out["t1"]["missing"] = [key for key in ("n", "k", "B") if key not in values]
        return out
    unit_schedule = Schedule(a, 1)  # eta_0 enters the sums through the explicit eta0= arguments
    requirement = template.t1_requirement(t0_int, values, unit_schedule)
    t1 = first_time_sum_reaches(unit_schedule, t0_int, requirement, eta0=values["eta_0"])
    out["t1"]["requirement"] = float(requirement)
    out["t1"]["numeric"] = t1
    if t1 is None:
        out["t1"]["note"] = f"beyond 1e15 steps (requirement R = {float(requirement):.4g})"
    out["t1"]["upper_bound"] = t1_integral_bound(a, t0_int, requirement, values["eta_0"])
    return out


def make_prediction(template: BoundTemplate, algorithm: str, norm: str, a: sp.Rational,
                    constants: dict | None, notes: list[str] | None = None) -> Prediction:
    """Derive the regime, rate and best ``a`` from the template and attach thresholds and provenance."""
    a = sp.Rational(a)
    regime = asymptotics.regime_of(template.powers, a)
    return Prediction(
        family=template.family, algorithm=algorithm, norm=norm, a=a, regime=regime.text,
        rate=asymptotics.rate_at(template.powers, a), best_a=asymptotics.best_a(template.powers),
        gap_to=template.gap_to, thresholds=numeric_thresholds(template, a, constants), source=template.source,
        status=template.status, template=template, assumptions=list(template.assumptions), notes=notes or [],
    )

