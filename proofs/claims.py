"""Claims checked by ``rates check``: the lemma statements the rates lean on, as executable objects.

A :class:`Claim` states ``LHS <= RHS`` on a domain, cites its source (seed file + lemma/theorem number),
says whether the statement is [given] in the seed or [rebuilt] by the project (docs/theory.md), and carries the
problems its methods work on:

* :class:`ScalarProblem` -- sympy ``lhs``/``rhs`` over a box of real variables, for the symbolic method
  (:mod:`proofs.symbolic`) and the rigorous interval method (:mod:`proofs.interval`);
* :class:`SearchProblem` -- a sampler of instances and a numeric ``ratio = LHS/RHS``, for the adversarial
  method (:mod:`proofs.adversarial`);
* :class:`SimulationProblem` -- a deterministic numerical experiment that returns its own worst ratio
  (used for the per-sample bias theorem and soft-margin monotonicity, which are statements about runs).

``worst ratio`` is ``max LHS/RHS`` over what a method examined, so a value above 1 is a violation.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
import sympy as sp

SIGNADAM = "SIGNADAM"
MINIBATCH = "MINIBATCH"
FLAVORS = "FLAVORS"

VERDICT_PROVEN = "proven"
VERDICT_COUNTEREXAMPLE = "counterexample"
VERDICT_ERROR = "error"


def verdict_no_counterexample(trials: int) -> str:
    return f"no counterexample in {trials} trials"


@dataclass(frozen=True)
class ScalarProblem:
    """``lhs <= rhs`` for every point of the box ``bounds`` (closed; extended reals allowed at endpoints)."""

    variables: Sequence[sp.Symbol]
    bounds: Sequence[tuple[Any, Any]]  # exact endpoints (sympy/int/fraction), one pair per variable
    lhs: sp.Expr
    rhs: sp.Expr
    # An expression with the sign of rhs - lhs that interval arithmetic encloses better: rhs - lhs rewritten
    # (``log s (log s + 2)`` rather than ``log(s)**2 + 2 log s``, finite at s = 0) or exp(rhs - lhs) - 1
    # (``4^x (1 - x) - 1`` is exactly 0 at x = 1/2 where ``log 2 - log 2`` is not); sympy checks which.
    margin: Optional[sp.Expr] = None

    def certified_margin(self) -> sp.Expr:
        """The margin to prove ``>= 0``, after sympy has certified it has the sign of ``rhs - lhs``."""
        difference = self.rhs - self.lhs
        if self.margin is None:
            return difference
        if sp.simplify(self.margin - difference) == 0:
            return self.margin
        if sp.simplify((sp.exp(difference) - 1 - self.margin).rewrite(sp.exp)) == 0:
            return self.margin  # exp is increasing with exp(0) = 1, so the sign is the same
        raise ValueError("the margin has not been shown to have the sign of rhs - lhs")


@dataclass(frozen=True)
class SearchProblem:
    """Adversarial search space: a start ``(x, context) = sample(rng)``; ``x`` in R^dim is what the local
    optimiser moves, ``context`` holds what stays fixed during a local search (shapes, labels, the norm).

    ``ratio(x, context)`` returns LHS/RHS (``-inf`` outside the domain); ``describe(x, context)`` returns the
    instance as JSON-ready data (saved for the worst ratio found). Starts are drawn so that random starts
    reach the corners where the bound is tight (large logits, one dominant class, rank-one matrices).
    """

    sample: Callable[[np.random.Generator], tuple[np.ndarray, Any]]
    ratio: Callable[[np.ndarray, Any], float]
    describe: Callable[[np.ndarray, Any], dict]
    starts: int = 200  # random starts by default (``--thorough`` multiplies by 10)
    polish: int = 6  # local optimisations from the best starts (``--thorough`` multiplies by 4)
    max_evaluations: int = 300  # per local optimisation
    tolerance: float = 1e-9  # ratio > 1 + tolerance is a counterexample (float64 round-off margin)


@dataclass(frozen=True)
class SimulationOutcome:
    trials: int
    worst_ratio: float
    instance: dict
    refuted: bool


@dataclass(frozen=True)
class SimulationProblem:
    """A deterministic experiment: ``run(thorough, seed) -> SimulationOutcome``."""

    run: Callable[[bool, int], SimulationOutcome]


@dataclass(frozen=True)
class Claim:
    name: str
    source: str  # seed file + lemma/theorem number
    statement: str  # plain text, LHS <= RHS
    latex: str
    status: str  # "given" | "rebuilt"
    domain: str  # in words: where the statement is claimed
    scalar: Optional[ScalarProblem] = None
    search: Optional[SearchProblem] = None
    simulation: Optional[SimulationProblem] = None
    symbolic_proof: Optional[Callable[[], MethodResult]] = None  # a claim-specific sympy reduction
    notes: str = ""
    # the lemma's constants as sympy expressions (name -> value): the chains of proofs.chains read them here,
    # so a changed constant changes the derived bound template
    constants: dict = field(default_factory=dict)

    @property
    def seed(self) -> int:
        """A fixed per-claim seed: runs are deterministic and independent of the order of claims."""
        return zlib.crc32(self.name.encode())

    @property
    def methods(self) -> list[str]:
        names = []
        if self.scalar is not None or self.symbolic_proof is not None:
            names.append("symbolic")
        if self.scalar is not None:
            names.append("interval")
        if self.search is not None:
            names.append("adversarial")
        if self.simulation is not None:
            names.append("simulation")
        return names


@dataclass
class MethodResult:
    """What one method found for one claim."""

    method: str
    verdict: str  # proven | counterexample | no counterexample in N trials | error | (symbolic) undecided
    trials: int = 0
    worst_ratio: float = float("nan")
    instance: dict = field(default_factory=dict)
    detail: str = ""

    @property
    def refuted(self) -> bool:
        return self.verdict == VERDICT_COUNTEREXAMPLE

    @property
    def proven(self) -> bool:
        return self.verdict == VERDICT_PROVEN


@dataclass
class CheckResult:
    claim: Claim
    results: list[MethodResult]
    seconds: float = float("nan")  # wall time of all methods of this claim

    @property
    def verdict(self) -> str:
        """Counterexample beats everything; a proof beats a search; an error is reported as such."""
        if any(r.refuted for r in self.results):
            return VERDICT_COUNTEREXAMPLE
        if any(r.proven for r in self.results):
            return VERDICT_PROVEN
        searched = [r for r in self.results if r.verdict.startswith("no counterexample")]
        if searched and not any(r.verdict == VERDICT_ERROR for r in self.results):
            return verdict_no_counterexample(sum(r.trials for r in searched))
        if self.results and all(r.verdict == "undecided" for r in self.results):
            return "undecided"  # decided neither way (e.g. a schedule hypothesis sympy cannot settle): not a crash
        return VERDICT_ERROR
