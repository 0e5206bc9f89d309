"""The hypothesis gate: one registry of theorem families built from their own declarations.

Setting: every family module declares ``FAMILY`` (:class:`rates.symbolic.theorems.hypotheses.FamilyDeclaration`):
which configurations it covers and which hypotheses it needs.

Algorithm: :func:`family_of` returns the one declaration that covers a configuration (the declarations'
``covers`` are disjoint; a test checks it on every named algorithm; they live in the sympy-free
:mod:`rates.symbolic.theorems.coverage`, which answers for them); :func:`gate` evaluates its hypotheses.

Guarantee: ``rates predict``, ``rates fit``, ``rates table --fits`` and ``rates report`` decide "which theorem,
if any, may judge this run" here and nowhere else (the old if/elif in ``rates.numeric.algorithms`` and the
hand-written family examples are gone).

Reference: the family modules (:mod:`rates.symbolic.theorems.nsd`, ``adam``, ``minibatch``, ``momentum``,
``variance_reduction``, ``per_sample_family``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rates.symbolic.theorems import adam, minibatch, momentum, nsd, per_sample_family, variance_reduction
from rates.symbolic.theorems.coverage import family_name
from rates.symbolic.theorems.hypotheses import (
    CONSTANT,
    FAILS,
    HOLDS,
    STRUCTURE,
    UNKNOWN,
    Facts,
    FamilyDeclaration,
    Finding,
    Hypothesis,
)

DECLARATIONS: tuple[FamilyDeclaration, ...] = (nsd.FAMILY, adam.FAMILY, minibatch.FAMILY, momentum.FAMILY,
                                               variance_reduction.FAMILY, per_sample_family.FAMILY)
REGISTRY: dict[str, FamilyDeclaration] = {family.name: family for family in DECLARATIONS}
COVERED, NO_THEOREM, NOT_APPLICABLE = "covered", "no-theorem", "not-applicable"


def register_declaration(family: FamilyDeclaration) -> FamilyDeclaration:
    """Add a plug-in family to the gate (the public route is :func:`rates.plugins.register_family`); its
    ``covers`` is asked before the built-in families' about a plug-in's optimiser, and about a built-in one only
    when the user chose the family (``--family``; :func:`rates.symbolic.theorems.coverage.family_name`)."""
    from rates.symbolic.theorems.coverage import COVERS, PLUGIN_COVERS

    if family.name in COVERS:
        raise ValueError(f"{family.name!r} is a built-in family ({', '.join(COVERS)}); choose another name")
    REGISTRY[family.name] = family
    PLUGIN_COVERS[family.name] = family.covers
    return family


def forget_declaration(name: str) -> None:
    """Undo :func:`register_declaration` (the built-in families stay)."""
    from rates.symbolic.theorems.coverage import PLUGIN_COVERS

    if name in PLUGIN_COVERS:
        PLUGIN_COVERS.pop(name)
        REGISTRY.pop(name, None)


def family_of(config) -> Optional[FamilyDeclaration]:
    """The declaration covering ``config`` (None: no family covers it), decided by the declarations' own
    predicates, which :func:`rates.symbolic.theorems.coverage.family_name` holds without sympy."""
    name = family_name(config)
    return None if name is None else REGISTRY[name]


@dataclass(frozen=True)
class GateResult:
    """Which family judges a run (if any) and every hypothesis' outcome with its numbers."""

    family: Optional[FamilyDeclaration]
    outcome: str  # COVERED, NO_THEOREM or NOT_APPLICABLE
    checks: tuple[tuple[Hypothesis, Finding], ...]

    def failing(self, kind: Optional[str] = None) -> list[tuple[Hypothesis, Finding]]:
        return [(h, f) for h, f in self.checks if f.status == FAILS and (kind is None or h.kind == kind)]

    def unknown(self) -> list[tuple[Hypothesis, Finding]]:
        return [(h, f) for h, f in self.checks if f.status == UNKNOWN]

    @property
    def reason(self) -> str:
        if self.family is None:
            return "no theorem family covers this configuration"
        name = f"{self.family.name} family ({self.family.source.seed} {self.family.source.theorem})"
        if self.outcome == NO_THEOREM:
            return f"{name} needs " + "; ".join(f"{h.name} ({f.detail})" for h, f in self.failing(STRUCTURE))
        if self.outcome == NOT_APPLICABLE:
            return f"{name} needs " + "; ".join(f"{h.name}: {f.detail}" for h, f in self.failing(CONSTANT))
        return f"{name}: " + "; ".join(f"{h.name}: {f.detail}" for h, f in self.checks)

    def to_json(self) -> dict:
        plugin = {"plugin": self.family.origin} if self.family is not None and self.family.origin else {}
        return {"family": None if self.family is None else self.family.name, **plugin, "outcome": self.outcome,
                "reason": self.reason,
                "hypotheses": [{"name": h.name, "kind": h.kind, "statement": h.statement, "source": h.source,
                                "status": f.status, "detail": f.detail} for h, f in self.checks]}


def _evaluate(family: FamilyDeclaration, hypothesis: Hypothesis, facts: Facts) -> Finding:
    """One hypothesis on ``facts``; a plug-in family's check that fails or returns anything but a
    :class:`Finding` of a known status is the plug-in's error, naming it."""
    if not family.origin:
        return hypothesis.evaluate(facts)
    from rates.errors import PluginError
    from rates.symbolic.theorems.provenance import call

    what = f"family {family.name!r}: hypothesis {hypothesis.name!r}"
    finding = call(family.origin, what, hypothesis.evaluate, facts)
    if not isinstance(finding, Finding) or finding.status not in (HOLDS, FAILS, UNKNOWN):
        raise PluginError(family.origin, f"{what} returned {finding!r}, not a Finding(status, detail) with status "
                                         f"{HOLDS!r}, {FAILS!r} or {UNKNOWN!r}")
    return finding


def gate(facts: Facts) -> GateResult:
    """Evaluate the covering family's hypotheses on ``facts`` (module docstring of ``hypotheses``)."""
    family = family_of(facts.config)
    if family is None:
        return GateResult(None, NO_THEOREM, ())
    family = family.applied_to(facts.config)  # the theorem and citations for this configuration's norm
    hypotheses = family.hypotheses
    if facts.general_schedule:  # its own hypotheses replace "a in (0, 1]" (docs/theory.md, general schedules)
        from rates.symbolic.theorems.hypotheses import schedule_hypotheses

        hypotheses = tuple(h for h in hypotheses if h.name != "a in (0, 1]") + schedule_hypotheses(facts.config)
    checks = tuple((h, _evaluate(family, h, facts)) for h in hypotheses)
    if any(f.status == FAILS and h.kind == STRUCTURE for h, f in checks):
        outcome = NO_THEOREM
    elif any(f.status == FAILS for _, f in checks):
        outcome = NOT_APPLICABLE
    else:
        outcome = COVERED
    return GateResult(family, outcome, checks)
