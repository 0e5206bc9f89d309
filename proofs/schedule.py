"""The schedule ``eta_t = eta_0 (t+2)^(-a)``: MINIBATCH Lemma C.15 and the integral bounds on partial sums.

MINIBATCH Lemma C.15 (formulas lost) says the schedule meets Assumption 3.3 (decreasing, ``sum eta = inf``,
``eta -> 0``) and Assumption 3.4 with explicit times. Assumption 3.4 [rebuilt, after Zhang et al. 2024
Ass. 4.3 and the surviving proof steps "split at K", "head bound", "tail bound", "integral bound"]:

    S(t) = sum_{tau=0}^{t} beta^tau (exp(c_1 sum_{tau'=1}^{tau} eta_{t - tau'}) - 1) <= C eta_t   for t >= t_*.

Rebuilt constants (derivation):

* head ``tau <= t/2``: ``t - tau + 2 >= (t + 2)/2`` so ``sum_{tau'<=tau} eta_{t-tau'} <= tau 2^a eta_t``; with
  ``e^x - 1 <= x e^x`` and ``c_1 2^a eta_t <= log(1/beta)/2`` (time ``t_A``) the head is at most
  ``c_1 2^a eta_t sum_tau tau beta^(tau/2) = c_1 2^a sqrt(beta)/(1 - sqrt(beta))^2 eta_t``;
* tail ``tau > t/2``: the inner sum is at most ``P(t) = sum_{s<t} eta_s <= eta_0 ((t+1)^(1-a) - 1)/(1-a)``
  (``eta_0 log(t+1)`` at ``a = 1``), so the tail is at most ``beta^(t/2) e^(c_1 P(t)) / (1 - beta)``; its log
  minus ``log eta_t`` is ``phi(t)``, whose derivative decreases in t, so ``phi <= 0`` from the first
  ``t_B >= t_D`` (``phi'(t_D) <= 0``) with ``phi(t_B) <= 0`` on -- found by doubling and bisection;
* hence ``C = c_1 2^a sqrt(beta)/(1 - sqrt(beta))^2 + 1`` and ``t_* = max(t_A, t_B)``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from proofs.claims import MINIBATCH, SIGNADAM, Claim, MethodResult, SearchProblem
from proofs.derivation import cited, derivation, identity, lazy
from rates.symbolic.theorems.base import t1_integral_bound


def assumption_34_constant(a: float, beta: float, c1: float) -> float:
    root = math.sqrt(beta)
    return c1 * 2 ** a * root / (1 - root) ** 2 + 1


def _log_tail_excess(t: float, a: float, beta: float, c1: float, eta0: float) -> tuple[float, float]:
    """``phi(t)`` = log(tail bound / eta_t) and its derivative ``phi'(t)`` (module docstring)."""
    if a < 1:
        drift = eta0 * ((t + 1) ** (1 - a) - 1) / (1 - a)
    else:
        drift = eta0 * math.log(t + 1)
    phi = 0.5 * t * math.log(beta) + c1 * drift - math.log1p(-beta) - math.log(eta0) + a * math.log(t + 2)
    slope = 0.5 * math.log(beta) + c1 * eta0 * (t + 1) ** (-a) + a / (t + 2)
    return phi, slope


def assumption_34_time(a: float, beta: float, c1: float, eta0: float) -> int:
    """``t_* = max(t_A, t_B)`` of the rebuilt Lemma C.15 (module docstring)."""
    t_a = max(0, math.ceil((2 ** (1 + a) * c1 * eta0 / math.log(1 / beta)) ** (1 / a)) - 2)
    t_d = 0
    while _log_tail_excess(t_d, a, beta, c1, eta0)[1] > 0:
        t_d = 2 * t_d + 1
    hi = t_d
    while _log_tail_excess(hi, a, beta, c1, eta0)[0] > 0:
        hi = 2 * hi + 1
    lo = t_d
    while lo < hi:
        mid = (lo + hi) // 2
        if _log_tail_excess(mid, a, beta, c1, eta0)[0] <= 0:
            hi = mid
        else:
            lo = mid + 1
    return max(t_a, hi)


def assumption_34_sum(t: int, a: float, beta: float, c1: float, eta0: float) -> float:
    """``S(t)`` exactly (float64, log domain so that ``beta^tau`` times a huge exponential is finite)."""
    eta_back = eta0 * (np.arange(t - 1, -1, -1, dtype=np.float64) + 2) ** (-a)  # eta_{t-1}, ..., eta_0
    inner = np.concatenate([[0.0], np.cumsum(eta_back)])  # tau = 0..t
    x = c1 * inner
    taus = np.arange(t + 1)
    with np.errstate(divide="ignore"):
        log_terms = taus * math.log(beta) + np.where(x > 30, x + np.log1p(-np.exp(-x)), np.log(np.expm1(x)))
    return float(np.exp(log_terms).sum())


def _ass33_symbolic() -> MethodResult:
    """Assumption 3.3 for every ``a in (0, 1]``: sympy decides each part for a symbolic ``a``."""
    t, a, eta0 = sp.symbols("t a eta_0", positive=True)
    eta = eta0 * (t + 2) ** (-a)
    decreasing = sp.diff(eta, t).is_negative
    vanishing = sp.limit(eta, t, sp.oo) == 0
    n = sp.Symbol("n", integer=True, nonnegative=True)
    harmonic_diverges = sp.Sum(1 / (n + 2), (n, 0, sp.oo)).is_convergent() is sp.false
    # comparison: (t+2)^(-a) >= (t+2)^(-1) for a <= 1, t >= 0, so the sum of eta diverges with the harmonic one
    ok = bool(decreasing) and bool(vanishing) and harmonic_diverges
    detail = (f"d eta/dt negative: {decreasing}; lim eta = 0: {vanishing}; sum 1/(t+2) diverges: {harmonic_diverges}"
              " (comparison (t+2)^-a >= (t+2)^-1 for a <= 1)")
    return MethodResult("symbolic", "proven" if ok else "undecided", 1, 1.0, {}, detail)


def schedule_decay() -> Claim:
    """MINIBATCH Lemma C.15, Assumption 3.3 part: decreasing, not summable, vanishing -- for every a in (0, 1]."""
    t, a = sp.symbols("t a", positive=True)
    return Claim(
        name="schedule-assumption-3.3",
        source=f"{MINIBATCH} Lemma C.15, Assumption 3.3; {SIGNADAM} Ass. 3.3",
        statement="eta_t = eta0 (t+2)^-a is decreasing, sum_t eta_t = inf and eta_t -> 0 for every a in (0, 1]",
        latex=r"\eta_t\downarrow 0,\ \sum_t \eta_t=\infty",
        status="given",
        domain="a in (0, 1] symbolic, eta0 > 0, t >= 0",
        symbolic_proof=_ass33_symbolic,
    )


def schedule_assumptions() -> Claim:
    """MINIBATCH Lemma C.15, Assumption 3.4 part: explicit ``t_*`` and ``C`` (rebuilt, module docstring)."""

    def decode(params):
        a = min(1.0, max(0.05, 0.05 + 0.95 / (1 + math.exp(-params[0]))))
        beta = 0.05 + 0.9 / (1 + math.exp(-params[1]))
        c1 = math.exp(min(max(params[2], -3.0), 1.6))
        eta0 = math.exp(min(max(params[3], -4.0), 0.5))
        return a, beta, c1, eta0

    def sample(rng):
        params = np.array([rng.normal(0, 2), rng.normal(0, 1.5), rng.uniform(-3, 1.6), rng.uniform(-4, 0.5)])
        if rng.random() < 0.2:
            params[0] = 10.0  # a = 1 exactly (the logarithmic case)
        return params, None

    def ratio(params, _context):
        a, beta, c1, eta0 = decode(params)
        t_star = assumption_34_time(a, beta, c1, eta0)
        if t_star > 50_000:
            return -math.inf  # outside the searched range (cost), not a failure
        constant = assumption_34_constant(a, beta, c1)
        worst = -math.inf
        for t in sorted({t_star, t_star + 1, t_star + 5, 2 * t_star + 3}):
            worst = max(worst, assumption_34_sum(t, a, beta, c1, eta0) / (constant * eta0 * (t + 2) ** (-a)))
        return worst

    def describe(params, _context):
        a, beta, c1, eta0 = decode(params)
        return {"a": a, "beta": beta, "c1": c1, "eta0": eta0, "t_star": assumption_34_time(a, beta, c1, eta0),
                "C": assumption_34_constant(a, beta, c1)}

    return Claim(
        name="schedule-assumption-3.4",
        source=f"{MINIBATCH} Lemma C.15, Assumption 3.4; {SIGNADAM} Ass. 3.4",
        statement="eta_t = eta0 (t+2)^-a satisfies, for t >= t_*: "
                  "sum_tau beta^tau (exp(c1 sum_{tau'=1}^{tau} eta_{t-tau'}) - 1) <= C eta_t, "
                  "C = c1 2^a sqrt(beta)/(1-sqrt(beta))^2 + 1",
        latex=r"\sum_{\tau=0}^{t}\beta^\tau\big(e^{c_1\sum_{\tau'=1}^{\tau}\eta_{t-\tau'}}-1\big) "
              r"\le C\eta_t\ (t\ge t_*)",
        status="rebuilt",
        domain="a in [0.05, 1], beta in [0.05, 0.95], c1 in [0.05, 5], eta0 in [0.018, 1.6]; "
               "t in {t_*, t_*+1, t_*+5, 2t_*+3}, t_* <= 5e4",
        search=SearchProblem(sample, ratio, describe, starts=80, polish=3, max_evaluations=60),
    )


def _exact_power_sum(q, t0: int, t: int) -> mpmath.mpf:
    """``sum_{s=t0}^{t-1} (s+2)^(-q)`` by the Hurwitz zeta (digamma at q = 1), 40 digits."""
    with mpmath.workdps(40 + len(str(t))):
        if q == 1:
            return mpmath.digamma(t + 2) - mpmath.digamma(t0 + 2)
        return mpmath.zeta(q, t0 + 2) - mpmath.zeta(q, t + 2)


def _integral(q, lo, hi) -> mpmath.mpf:
    with mpmath.workdps(40 + len(str(int(hi)))):
        if q == 1:
            return mpmath.log(mpmath.mpf(hi) / lo)
        return (mpmath.mpf(hi) ** (1 - q) - mpmath.mpf(lo) ** (1 - q)) / (1 - q)


def partial_sum_bounds() -> Claim:
    """Integral bounds on ``S_q(t0, t) = sum_{s=t0}^{t-1} (s+2)^(-q)`` used by the corollaries
    (docs/theory.md section 4).

    Claim: ``int_{t0+2}^{t+2} x^-q dx <= S_q(t0, t) <= (t0+2)^-q + int_{t0+2}^{t+1} x^-q dx`` [given: integral
    comparison of a decreasing function], and the project's closed-form ``t_1``
    (:func:`rates.symbolic.theorems.base.t1_integral_bound`) reaches its requirement: ``R <= eta_0 S_a(t0, t_1)``.
    Exact sums by mpmath's Hurwitz zeta (an independent route from :mod:`rates.symbolic.schedules`).
    """

    def decode(params):
        q = min(3.0, max(0.05, float(params[0])))
        t0 = int(min(1e4, math.exp(min(max(params[1], 0.0), 9.3)))) - 1
        t = t0 + max(1, int(math.exp(min(max(params[2], 0.0), 27.0))))
        requirement = math.exp(min(max(params[3], -3.0), 3.0))
        return q, max(t0, 0), t, requirement

    def sample(rng):
        params = np.array([rng.choice([rng.uniform(0.05, 3.0), 1.0, 0.5, 2.0]), rng.uniform(0, 9.3),
                           rng.uniform(0, 27.0), rng.uniform(-3, 3)])
        return params, None

    def ratio(params, _context):
        q, t0, t, requirement = decode(params)
        exact = _exact_power_sum(q, t0, t)
        lower = _integral(q, t0 + 2, t + 2)
        upper = mpmath.mpf(t0 + 2) ** (-q) + _integral(q, t0 + 2, t + 1)
        worst = max(lower / exact, exact / upper)
        a = sp.Rational(q).limit_denominator(1000) if q <= 1 else None
        if a is not None and 0 < a <= 1 and requirement / 1.0 < 60:
            t1 = int(mpmath.mpf(t1_integral_bound(a, t0, requirement, 1.0)))
            if t1 < 10**30:
                worst = max(worst, requirement / _exact_power_sum(mpmath.mpf(a.p) / a.q, t0, max(t1, t0 + 1)))
        return float(worst)

    def describe(params, _context):
        q, t0, t, requirement = decode(params)
        return {"q": q, "t0": t0, "t": t, "requirement": requirement}

    return Claim(
        name="partial-sum-integral-bounds",
        source="docs/theory.md section 4; SIGNADAM Cor. C.5; MINIBATCH Cor. D.5/E.5/F.5 "
               "and Lemma C.15 (integral bound)",
        statement="int_{t0+2}^{t+2} x^-q dx <= sum_{s=t0}^{t-1} (s+2)^-q <= (t0+2)^-q + int_{t0+2}^{t+1} x^-q dx; "
                  "t1_integral_bound reaches R",
        latex=r"\int_{t_0+2}^{t+2}x^{-q}dx \le \sum_{s=t_0}^{t-1}(s+2)^{-q} "
              r"\le (t_0+2)^{-q}+\int_{t_0+2}^{t+1}x^{-q}dx",
        status="given",
        domain="q in [0.05, 3], 0 <= t0 < 1e4, 1 <= t - t0 <= 5e11, R in [0.05, 20]",
        search=SearchProblem(sample, ratio, describe, starts=80, polish=3, max_evaluations=80, tolerance=1e-12),
        symbolic_proof=lazy(lambda: _partial_sum_proof()),
    )


def _partial_sum_proof():
    x, q, t0, R = sp.symbols("x q t_0 R", positive=True)
    c = sp.Symbol("c", positive=True)  # c = 1 - a in (0, 1)
    decreasing = sp.diff(x ** (-q), x)
    T = (c * R + (t0 + 2) ** c) ** (1 / c)  # t_1 + 2 before the ceiling, eta_0 = 1
    reached = sp.powdenest(sp.integrate(x ** (c - 1), (x, t0 + 2, T), conds="none"), force=True) - R
    T_log = (t0 + 2) * sp.exp(R)
    reached_log = sp.integrate(1 / x, (x, t0 + 2, T_log)) - R
    return derivation(
        identity("d/dx x^(-q) = -q x^(-q-1) < 0 for x, q > 0: the summand is decreasing",
                 decreasing + q * x ** (-q - 1)),
        cited("for a decreasing f: int_{s+2}^{s+3} f <= f(s+2) <= int_{s+1}^{s+2} f; summing over s = t0..t-1 gives "
              "both bounds (the first term kept apart on the right)", "integral test (e.g. Apostol, Calculus I, 10.5)"),
        identity("t1_integral_bound: int_{t0+2}^{T} x^(-a) dx = R/eta_0 at T = ((1-a) R/eta_0 + "
                 "(t0+2)^(1-a))^(1/(1-a)), "
                 "a = 1 - c < 1 (eta_0 = 1 by scaling)", sp.simplify(reached)),
        identity("and at a = 1 with T = (t0 + 2) e^(R/eta_0)", sp.simplify(sp.expand_log(reached_log, force=True))),
        cited("the ceiling only enlarges t, the integral is increasing in t, and the sum dominates the integral "
              "(lower bound above): R <= eta_0 S_a(t0, t_1)", "monotonicity"),
    )


CLAIMS = [schedule_decay(), schedule_assumptions(), partial_sum_bounds()]
