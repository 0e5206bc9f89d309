"""Proofs by reduction: a claim's proof as a list of steps, each checked by sympy, interval arithmetic, or
by the proof of another claim; textbook theorems are named, never hidden.

Setting: a matrix or data lemma (``LHS(W, H, ...) <= RHS``) whose proof in the seed (or in its cited
literature) is a short chain: an algebraic identity, a standard inequality (triangle, Cauchy-Schwarz,
Hoelder, duality), another lemma, and a scalar inequality on a low-dimensional box (what is left after
symmetry, homogeneity and extreme-point reductions).

Algorithm: each :class:`Step` is checked on its own:

* ``identity`` -- sympy: ``simplify(expr) == 0``;
* ``scalar`` -- a :class:`~proofs.claims.ScalarProblem` proven on its whole box by sympy
  (:mod:`proofs.symbolic`) or by interval branch and bound (:mod:`proofs.interval`);
* ``claim`` -- another claim proven on its whole domain (its own reduction or scalar proof; searches do
  not count), checked recursively and cached per claim object;
* ``finite`` -- a predicate checked exactly (Python ``Fraction``/``int``) on every point of a finite set;
* ``cited`` -- a textbook theorem with its reference (accepted, listed in the proof's detail).

Guarantee: ``proven`` only when every step passed; otherwise ``undecided`` with the first failing step
(a refuted scalar step refutes the *reduction*, not the claim: refutation is the search's job). The
proof is as strong as its cited theorems, which are all standard and named in the output.

Reference: the reductions follow the seeds' surviving proof steps (SIGNADAM App. A-D, MINIBATCH App. C)
and Moore-Kearfott-Cloud, *Introduction to Interval Analysis* (2009) for the scalar steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import sympy as sp

from proofs.claims import VERDICT_PROVEN, Claim, MethodResult, ScalarProblem

UNDECIDED = "undecided"


@dataclass(frozen=True)
class Step:
    text: str
    kind: str  # identity | scalar | claim | finite | cited
    expr: Optional[sp.Expr] = None
    scalar: Optional[ScalarProblem] = None
    claim: Optional[Claim] = None
    points: Optional[Iterable[Any]] = None
    predicate: Optional[Callable[[Any], bool]] = None
    reference: str = ""


def identity(text: str, expr) -> Step:
    return Step(text, "identity", expr=sp.sympify(expr))


def scalar(text: str, problem: ScalarProblem) -> Step:
    return Step(text, "scalar", scalar=problem)


def lemma(text: str, claim: Claim) -> Step:
    return Step(text, "claim", claim=claim)


def finite(text: str, points: Iterable[Any], predicate: Callable[[Any], bool]) -> Step:
    return Step(text, "finite", points=list(points), predicate=predicate)


def cited(text: str, reference: str) -> Step:
    return Step(text, "cited", reference=reference)


_PROOF_CACHE: dict[int, tuple[Claim, MethodResult]] = {}


def proof_of(claim: Claim) -> MethodResult:
    """The claim proven on its whole domain by its reduction or scalar proof (searches do not count); cached."""
    cached = _PROOF_CACHE.get(id(claim))
    if cached is not None and cached[0] is claim:
        return cached[1]
    from proofs.interval import interval_method
    from proofs.symbolic import symbolic_method

    if claim.symbolic_proof is not None:
        result = claim.symbolic_proof()
    elif claim.scalar is not None:
        result = symbolic_method(claim.scalar)
        if not result.proven:
            result = interval_method(claim.scalar)
    else:
        result = MethodResult("symbolic", UNDECIDED, 0, float("nan"), {}, "no proof (search or simulation only)")
    _PROOF_CACHE[id(claim)] = (claim, result)
    return result


def _check(step: Step) -> tuple[bool, str]:
    if step.kind == "identity":
        ok = sp.simplify(step.expr) == 0
        return ok, "sympy: simplifies to 0" if ok else f"sympy: does not simplify to 0 ({sp.simplify(step.expr)})"
    if step.kind == "scalar":
        from proofs.interval import prove_on_box
        from proofs.symbolic import derivative_sign_proof

        if len(step.scalar.variables) == 1:
            proven, chain = derivative_sign_proof(step.scalar)
            if proven:
                return True, f"sympy: {chain}"
        box = prove_on_box(step.scalar, max_boxes=4000)
        if box.proven:
            return True, f"interval: {len(box.proven_boxes)} boxes cover the box"
        if box.counterexample is not None:
            return False, f"interval: certified violation at {box.counterexample['point']}"
        return False, f"interval: {len(box.undecided)} boxes undecided"
    if step.kind == "claim":
        result = proof_of(step.claim)
        return result.proven, f"claim {step.claim.name}: {result.verdict}"
    if step.kind == "finite":
        bad = [p for p in step.points if not step.predicate(p)]
        return not bad, f"exact check on {len(step.points)} points" + (f"; fails at {bad[0]}" if bad else "")
    if step.kind == "cited":
        return True, f"cited: {step.reference}"
    raise ValueError(f"unknown step kind {step.kind!r}")


def derivation(*steps: Step) -> Callable[[], MethodResult]:
    """A claim's ``symbolic_proof``: check every step; proven iff all pass."""

    def prove() -> MethodResult:
        lines = []
        for number, step in enumerate(steps, 1):
            try:
                ok, how = _check(step)
            except Exception as err:  # a step sympy cannot decide is a failed step, reported
                ok, how = False, f"{type(err).__name__}: {err}"
            lines.append(f"({number}) {step.text} [{how}]")
            if not ok:
                return MethodResult("symbolic", UNDECIDED, number, float("nan"), {"steps": lines},
                                    f"reduction fails at step {number}: {step.text} [{how}]")
        cites = sum(step.kind == "cited" for step in steps)
        return MethodResult("symbolic", VERDICT_PROVEN, len(steps), float("nan"), {"steps": lines},
                            f"reduction, {len(steps)} steps checked ({cites} cited textbook facts): "
                            + "; ".join(lines))

    return prove


def lazy(factory: Callable[[], Callable[[], MethodResult]]) -> Callable[[], MethodResult]:
    """Build a claim's proof only when it is checked: its sympy identities cost seconds, ``--list`` costs none."""

    def prove() -> MethodResult:
        return factory()()

    return prove
