"""Symbolic method: sympy reduces a scalar claim to facts it can decide.

Setting: ``lhs(x) <= rhs(x)`` on an interval ``[lo, hi]`` (one variable), ``f = rhs - lhs``.

Algorithm:

* *identity* -- ``simplify(f) == 0`` proves equality (both inequalities);
* *series with non-negative terms* -- expand ``f`` at one end in ``u = x - lo`` (or ``hi - x``) with sympy's
  formal power series; if the first coefficients and the general one (``k`` beyond the polynomial part)
  are ``>= 0`` and the radius of convergence (ratio test) reaches the other end, ``f >= 0`` on the interval
  (at the far end by Abel's theorem, or ``f = +inf``);
* *concavity* -- ``f'' <= 0`` on I and ``f >= 0`` at both ends give ``f >= 0`` (a chord argument; this is
  what certifies bounds that are tight at an irrational end point, where interval enclosures cannot);
* *sign of a derivative* (Taylor with remainder) -- find the least ``k <= 4`` with a decided sign of
  ``f^(k)`` on the interval (``solveset(f^(k) < 0, x, I)`` empty) and check the lower-order derivatives at
  one end: anchored at ``lo``, ``f^(k) >= 0`` on I and ``f^(j)(lo) >= 0`` for ``j < k`` give ``f >= 0``
  (each ``f^(j)`` is non-decreasing from a non-negative value, downwards in ``j``); anchored at ``hi`` the
  same holds with signs ``(-1)^(k-j)``. End values are one-sided limits, so ``log`` at 0 is fine.

Guarantee: ``proven`` only when every step was decided by sympy (no numerics); otherwise ``undecided``
(never a counterexample: refutation is the interval and adversarial methods' job).

Reference: the proofs of SIGNADAM Lemma B.3 / MINIBATCH Lemma C.7 ("holds by the second-order Taylor
expansion"), which is exactly this argument with ``k = 2`` or ``3``.
"""

from __future__ import annotations

import sympy as sp

from proofs.claims import VERDICT_PROVEN, MethodResult, ScalarProblem

UNDECIDED = "undecided"


def _nonnegative_on(expr: sp.Expr, x: sp.Symbol, interval: sp.Interval) -> bool:
    expr = sp.simplify(expr)
    if expr.is_number:
        return bool(expr >= 0)
    try:
        bad = sp.solveset(expr < 0, x, interval)
    except (NotImplementedError, TypeError, ValueError):
        return False
    return bad == sp.S.EmptySet


def _end_value(expr: sp.Expr, x: sp.Symbol, point, side: str):
    try:
        return sp.limit(expr, x, point, dir=side)
    except (NotImplementedError, ValueError):
        return sp.nan


def series_proof(problem: ScalarProblem, first_terms: int = 8) -> tuple[bool, str]:
    """``f = rhs - lhs`` as a power series with non-negative coefficients on the whole interval (module docstring)."""
    from sympy.series.formal import Coeff

    (x,) = problem.variables
    lo, hi = (sp.nsimplify(b) for b in problem.bounds[0])
    u = sp.Symbol("u", nonnegative=True)
    f = problem.rhs - problem.lhs
    for anchor, substitution in ((lo, lo + u), (hi, hi - u)):
        g = sp.simplify(f.subs(x, substitution))
        try:
            series = sp.fps(g, u)
        except (NotImplementedError, ValueError, TypeError):
            continue
        if not hasattr(series, "ak"):
            continue
        k = series.ak.variables[0]
        head = sp.series(g, u, 0, first_terms).removeO()
        coefficients = [sp.simplify(head.coeff(u, j)) for j in range(first_terms)]
        if not all(c.is_nonnegative for c in coefficients):
            continue
        # beyond the polynomial part the Coeff(...) corrections vanish: check the general term for k >= first_terms
        general = series.ak.formula.replace(lambda e: isinstance(e, Coeff), lambda e: sp.S.Zero)
        m = sp.Symbol("m", integer=True, nonnegative=True)
        if sp.simplify(general.subs(k, first_terms + m)).is_nonnegative is not True:
            continue
        radius = sp.limit(sp.Abs(general / general.subs(k, k + 1)), k, sp.oo)
        if not (radius.is_extended_real and radius >= hi - lo):
            continue
        far = _end_value(f, x, hi if anchor == lo else lo, "-" if anchor == lo else "+")
        if radius == hi - lo and not far.is_extended_nonnegative:
            continue
        return True, (f"f = rhs - lhs = sum_k a_k u^k with u = |x - {anchor}|, a_k = {sp.simplify(general)} >= 0 "
                      f"(k >= {first_terms}; first terms {coefficients}), radius {radius} >= {hi - lo}")
    return False, "no non-negative power series at either end"


def derivative_sign_proof(problem: ScalarProblem, max_order: int = 4) -> tuple[bool, str]:
    """Try the Taylor-remainder argument; return (proven, the chain of facts used)."""
    if len(problem.variables) != 1:
        return False, "derivative-sign argument needs one variable"
    (x,) = problem.variables
    lo, hi = (sp.nsimplify(b) for b in problem.bounds[0])
    interval = sp.Interval(lo, hi)
    f = problem.rhs - problem.lhs
    derivatives = [f]
    for k in range(0, max_order + 1):
        if k > 0:
            derivatives.append(sp.simplify(sp.diff(derivatives[-1], x)))
        g = derivatives[k]
        for anchor, side, sign in ((lo, "+", 1), (hi, "-", -1)):
            if not _nonnegative_on(sign ** k * g, x, interval):
                continue
            ends = [_end_value(derivatives[j], x, anchor, side) for j in range(k)]
            # Taylor at hi: (x - hi)^j has the sign (-1)^j on I, so term j needs (-1)^j f^(j)(hi) >= 0
            signed = [sign ** j * e for j, e in enumerate(ends)]
            if all(v.is_extended_nonnegative for v in signed):
                facts = ", ".join(f"f^({j})({anchor}) = {e}" for j, e in enumerate(ends))
                where = "non-negative" if sign ** k > 0 else "non-positive"
                return True, f"f = rhs - lhs; f^({k}) = {sp.simplify(g)} is {where} on {interval}; {facts or 'k = 0'}"
    if _nonnegative_on(-derivatives[2] if len(derivatives) > 2 else -sp.diff(f, x, 2), x, interval):
        ends = [_end_value(f, x, lo, "+"), _end_value(f, x, hi, "-")]
        ends = [sp.simplify(e) for e in ends]
        if all(e.is_extended_nonnegative for e in ends):
            return True, (f"f = rhs - lhs is concave on {interval} (f'' <= 0) and f({lo}) = {ends[0]}, "
                          f"f({hi}) = {ends[1]} >= 0")
    proven, chain = series_proof(problem)
    if proven:
        return True, chain
    return False, "no derivative of order <= 4 with a decided sign, not concave with non-negative ends"


def symbolic_method(problem: ScalarProblem) -> MethodResult:
    f = sp.simplify(problem.rhs - problem.lhs)
    if f == 0:
        return MethodResult("symbolic", VERDICT_PROVEN, 1, 1.0, {}, "identity: rhs - lhs simplifies to 0")
    if problem.margin is not None:
        problem.certified_margin()  # raises if the rewriting is not sign-equivalent (reported as an error)
    proven, chain = derivative_sign_proof(problem)
    return MethodResult("symbolic", VERDICT_PROVEN if proven else UNDECIDED, 1, float("nan"), {}, chain)
