"""Rigorous method: interval arithmetic (mpmath ``iv``) with bisection proves ``rhs - lhs >= 0`` on a box.

Setting: a scalar claim ``lhs(x) <= rhs(x)`` for every ``x`` in a closed box ``D`` of R^m.

Algorithm (branch and bound, Moore/Hansen): keep a list of sub-boxes that cover ``D``. For a box ``X``

1. *monotonicity test* -- enclose each partial derivative of ``f = rhs - lhs`` over ``X``; where
   ``df/dx_j >= 0`` (``<= 0``) on all of ``X`` the minimum over ``X`` lies on the face ``x_j = lo_j``
   (``hi_j``), so that coordinate is fixed there. This is what lets a bound that is tight at a point
   (``1 - s <= -log s`` at ``s = 1``) be proven at all;
2. *enclosure* -- evaluate ``f`` in interval arithmetic on the reduced box; a lower end ``>= 0`` proves the
   whole box;
3. *counterexample* -- otherwise evaluate ``f`` at the box centre as a point interval; an upper end
   ``< 0`` is a certified violation (outward rounding makes it rigorous);
4. otherwise bisect the widest coordinate (relative to ``D``) and repeat, up to ``max_boxes``.

Guarantee: ``proven`` means every box of a finite cover of ``D`` (returned, so that a test can check the
cover) has a certified non-negative enclosure; ``counterexample`` returns a point with certified ``f < 0``.

Reference: R. E. Moore, R. B. Kearfott, M. J. Cloud, *Introduction to Interval Analysis* (SIAM 2009), ch. 5-6;
E. Hansen, G. W. Walster, *Global Optimization Using Interval Analysis* (2004), the monotonicity test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import mpmath
import sympy as sp
from mpmath import iv

from proofs.claims import VERDICT_COUNTEREXAMPLE, VERDICT_PROVEN, MethodResult, ScalarProblem

UNDECIDED = "undecided"  # boxes left that neither a proof nor a certified counterexample settled

_IV_TYPE = type(iv.mpf(0))
_IV_FUNCTIONS = {"mpf": iv.mpf, "log": iv.log, "exp": iv.exp, "sqrt": iv.sqrt, "sin": iv.sin, "cos": iv.cos}


def _iv_function(expr: sp.Expr, variables) -> Callable:
    compiled = sp.lambdify(list(variables), expr, modules=[_IV_FUNCTIONS, "mpmath"])

    def evaluate(*args):
        value = compiled(*args)
        return value if isinstance(value, _IV_TYPE) else iv.mpf(value)  # constants come back as int/float

    return evaluate


Box = tuple[tuple[mpmath.mpf, mpmath.mpf], ...]


@dataclass
class IntervalProof:
    proven: bool
    proven_boxes: list[Box] = field(default_factory=list)
    counterexample: dict | None = None
    undecided: list[Box] = field(default_factory=list)
    boxes_examined: int = 0
    worst_ratio: float = float("-inf")  # max lhs/rhs at box centres (a lower estimate of the supremum)
    worst_point: dict = field(default_factory=dict)


def _lower(value) -> mpmath.mpf:
    """The lower end of an ``iv`` interval as a plain mpf (``iv``'s ``.a`` is itself a point interval)."""
    return mpmath.mp.make_mpf(value._mpi_[0])


def _to_mpf(value) -> mpmath.mpf:
    return mpmath.mpf(sp.Float(sp.nsimplify(value), 30)) if not isinstance(value, mpmath.mpf) else value


class _Enclosure:
    """Interval enclosures of an expression, sharpened by monotonicity of its derivatives (recursively).

    If an enclosure of ``de/dx_j`` over the box has a sign, ``e`` is monotone in ``x_j`` there, so its range
    is the hull of its ranges on the two faces ``x_j = lo_j`` and ``x_j = hi_j`` -- which removes the
    dependency effect that makes naive enclosures useless next to a point where the bound is tight.
    Derivatives are simplified and factored by sympy first (``m (beta^(m-1) - 1)`` encloses far better than
    ``-m + m beta^(m-1)``).
    """

    def __init__(self, expr: sp.Expr, variables, order: int):
        self.variables = list(variables)
        self.order = order
        self._cache: dict[sp.Expr, Callable] = {}
        self._grads: dict[sp.Expr, list[sp.Expr]] = {}
        self.expr = expr

    def _fn(self, expr: sp.Expr) -> Callable:
        if expr not in self._cache:
            self._cache[expr] = _iv_function(expr, self.variables)
        return self._cache[expr]

    def _gradient(self, expr: sp.Expr) -> list[sp.Expr]:
        if expr not in self._grads:
            self._grads[expr] = [sp.factor(sp.simplify(sp.diff(expr, v))) for v in self.variables]
        return self._grads[expr]

    def __call__(self, X: list, expr: sp.Expr | None = None, depth: int | None = None):
        expr = self.expr if expr is None else expr
        depth = self.order if depth is None else depth
        value = self._fn(expr)(*X)
        if depth == 0:
            return value
        for j, grad in enumerate(self._gradient(expr)):
            if X[j].a == X[j].b or grad == 0:
                continue
            try:
                g = self(X, grad, depth - 1)
            except (ZeroDivisionError, ValueError):
                continue
            if g.a >= 0 or g.b <= 0:
                faces = []
                for end in (X[j].a, X[j].b):
                    Y = list(X)
                    Y[j] = iv.mpf(end)
                    faces.append(self(Y, expr, depth))
                low = min(face.a for face in faces)
                high = max(face.b for face in faces)
                return iv.mpf([max(low, value.a), min(high, value.b)]) if value.a <= high and low <= value.b \
                    else iv.mpf([low, high])
        return value


def prove_on_box(problem: ScalarProblem, max_boxes: int = 20000, order: int = 3) -> IntervalProof:
    """Prove ``problem.lhs <= problem.rhs`` on the whole box or return a certified counterexample."""
    variables = list(problem.variables)
    margin = (problem.certified_margin() if problem.margin is not None
              else sp.factor(sp.simplify(problem.rhs - problem.lhs)))
    enclose = _Enclosure(margin, variables, order)
    f = _iv_function(margin, variables)
    lhs_f = _iv_function(problem.lhs, variables)
    rhs_f = _iv_function(problem.rhs, variables)
    domain: Box = tuple((_to_mpf(lo), _to_mpf(hi)) for lo, hi in problem.bounds)
    widths = [hi - lo for lo, hi in domain]

    out = IntervalProof(proven=False)
    stack: list[Box] = [domain]
    while stack:
        box = stack.pop()
        out.boxes_examined += 1
        try:
            ok = enclose([iv.mpf([lo, hi]) for lo, hi in box]).a >= 0
        except (ZeroDivisionError, ValueError):
            ok = False
        if ok:
            out.proven_boxes.append(box)
            continue
        centre = [(lo + hi) / 2 for lo, hi in box]
        point = [iv.mpf(c) for c in centre]
        try:
            at_centre = f(*point)
            lhs_c, rhs_c = lhs_f(*point), rhs_f(*point)
            if rhs_c.a > 0:
                ratio = float(_lower(lhs_c.mid) / _lower(rhs_c.mid))
                if ratio > out.worst_ratio:
                    out.worst_ratio = ratio
                    out.worst_point = {str(v): float(c) for v, c in zip(variables, centre)}
        except (ZeroDivisionError, ValueError):
            at_centre = None
        if at_centre is not None and at_centre.b < 0:
            lhs_c, rhs_c = lhs_f(*point), rhs_f(*point)
            out.counterexample = {
                "point": {str(v): mpmath.nstr(c, 17) for v, c in zip(variables, centre)},
                "lhs": mpmath.nstr(_lower(lhs_c.mid), 17),
                "rhs": mpmath.nstr(_lower(rhs_c.mid), 17),
                "rhs_minus_lhs_at_most": mpmath.nstr(mpmath.mp.make_mpf(at_centre._mpi_[1]), 17),
            }
            return out
        if out.boxes_examined + len(stack) >= max_boxes:
            out.undecided.append(box)
            continue
        j = max(range(len(box)), key=lambda i: (box[i][1] - box[i][0]) / widths[i] if widths[i] else -1)
        lo, hi = box[j]
        mid = (lo + hi) / 2
        if not lo < mid < hi:  # at working precision the box cannot shrink: report it, do not spin
            out.undecided.append(box)
            continue
        left = tuple((lo, mid) if i == j else b for i, b in enumerate(box))
        right = tuple((mid, hi) if i == j else b for i, b in enumerate(box))
        stack.extend([right, left])
    out.proven = not out.undecided
    return out


def interval_method(problem: ScalarProblem, thorough: bool = False) -> MethodResult:
    proof = prove_on_box(problem, max_boxes=200000 if thorough else 20000)
    worst = proof.worst_ratio if proof.worst_ratio != float("-inf") else float("nan")
    if proof.counterexample is not None:
        return MethodResult("interval", VERDICT_COUNTEREXAMPLE, proof.boxes_examined,
                            _ratio(proof.counterexample),
                            proof.counterexample, "certified: rhs - lhs < 0 at the point (outward rounding)")
    if proof.proven:
        return MethodResult("interval", VERDICT_PROVEN, proof.boxes_examined, worst,
                            {"worst_centre": proof.worst_point, "cover_boxes": len(proof.proven_boxes)},
                            f"{len(proof.proven_boxes)} boxes cover the whole domain, each certified")
    return MethodResult("interval", UNDECIDED, proof.boxes_examined, worst,
                        {"undecided_boxes": [[[float(a), float(b)] for a, b in box] for box in proof.undecided[:5]]},
                        f"{len(proof.undecided)} boxes undecided after {proof.boxes_examined} boxes")


def _ratio(counterexample: dict) -> float:
    lhs, rhs = mpmath.mpf(counterexample["lhs"]), mpmath.mpf(counterexample["rhs"])
    return float(lhs / rhs) if rhs > 0 else float("inf")
