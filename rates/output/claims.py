"""The claims table that ends every study: each claim of a paper, what was measured, and a verdict.

Setting
    A study (``rates report minibatch | signadam | flavors``) checks the claims of one seed paper. Each
    claim is a :class:`Claim`: the statement, its source (seed file and theorem / figure number), what was
    measured (numbers with their spread), the criterion that decides it, and one of three verdicts:

    * ``reproduced`` -- the criterion holds on the measurements;
    * ``not reproduced`` -- it fails, with the reason (the numbers that fail it);
    * ``no verdict`` -- the measurements cannot decide it, with what would decide it (a longer run, a
      theorem whose hypotheses hold, ...).

    Nothing is dropped: a claim the study could not test is still a row, with ``no verdict`` and why.

    Each claim carries its :class:`Protocol`, declared in the study module before any run: the quantity, the
    horizon or window, the decision rule and its thresholds, the seeds, and the alternative the test rules out.
    Rows read from one figure share one horizon (:meth:`ClaimsTable.add` refuses a second one). A row that is
    an identity of the code (it holds whatever the paper says) is a *check of the implementation*: it is
    printed in its own table and counted apart from the paper's claims.

Algorithm
    Rate claims are decided by the comparator (:func:`rates.studies.fitting.fit_group` /
    :func:`rates.judge.compare.judge`):
    :func:`claim_verdict_from_fit` maps its labels *generically*: ``tight`` and ``loose`` (the gap decays at
    least as fast as the bound) reproduce an upper-bound claim, ``violated`` does not, and every other label
    (``inconclusive``, ``no-theorem``, ``not-applicable`` and any later addition) is ``no verdict`` carrying
    the comparator's reason, so the vocabulary of the verdict rules flows through unchanged.

Reference
    The three seeds in ``the References section of README.md`` (001 FLAVORS, 002 MINIBATCH, 003 SIGNADAM);
    docs/theory.md section 4 for the one-sided reading of rate bounds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from rates.io import write_text_atomic
from rates.output.tables import Cell, Table

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NO_VERDICT = "no verdict"
CLAIM_VERDICTS = (REPRODUCED, NOT_REPRODUCED, NO_VERDICT)
SMOKE_VERDICT = "no verdict (smoke run)"
# Comparator labels that confirm an upper-bound rate claim (the gap decays at least as fast as the bound).
_CONFIRMING = ("tight", "loose")
_REFUTING = ("violated",)
_COLUMNS = ("#", "claim", "source", "measured", "criterion", "verdict", "reason / what would decide it", "protocol")


@dataclass(frozen=True)
class Protocol:
    """How one claim is tested, fixed before the run; changing it is a code change with its reason."""

    quantity: str  # what is measured
    window: str  # the horizon or window it is read at
    rule: str  # the decision rule with its thresholds
    seeds: str  # the seeds / data draws it pools
    rules_out: str  # the alternative a `reproduced` verdict rules out
    figure: str = ""  # the figure (or group) whose rows share one window; "" for a row that stands alone

    def text(self) -> str:
        return (f"quantity: {self.quantity}; window: {self.window}; rule: {self.rule}; seeds: {self.seeds}; "
                f"rules out: {self.rules_out}")


@dataclass
class Claim:
    """One row of a claims table; ``reason`` is required unless the claim is reproduced."""

    claim: str
    source: str
    measured: str
    criterion: str
    verdict: str
    reason: str = ""
    values: Any = None  # machine-readable numbers behind ``measured`` (JSON)
    smoke: bool = False  # judged on a smoke run (--quick): always 'no verdict', shown as SMOKE_VERDICT
    protocol: Optional[Protocol] = None
    # an identity of the code (it cannot fail whatever the paper says): a check of the implementation, counted
    # apart from the paper's claims
    implementation_check: bool = False

    @property
    def shown_verdict(self) -> str:
        return SMOKE_VERDICT if self.smoke else self.verdict

    def __post_init__(self) -> None:
        if self.verdict not in CLAIM_VERDICTS:
            raise ValueError(f"claim verdict must be one of {CLAIM_VERDICTS}, got {self.verdict!r}")
        if self.verdict != REPRODUCED and not self.reason:
            raise ValueError(f"a {self.verdict!r} claim needs its reason: {self.claim}")


def decide(holds: Optional[bool], reason_if_not: str, undecided: str = "") -> tuple[str, str]:
    """``(verdict, reason)`` of a criterion that holds (True), fails (False) or cannot be evaluated (None)."""
    if holds is None:
        return NO_VERDICT, undecided or reason_if_not
    return (REPRODUCED, "") if holds else (NOT_REPRODUCED, reason_if_not)


def claim_verdict_from_fit(label: str, reason: str) -> tuple[str, str]:
    """Map a comparator verdict label (any vocabulary) to a claim verdict with its reason."""
    if label in _CONFIRMING:
        return REPRODUCED, ""
    if label in _REFUTING:
        return NOT_REPRODUCED, f"{label}: {reason}"
    return NO_VERDICT, f"{label}: {reason}"


def combine(verdicts: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """One verdict for a claim made of several parts: any part refuted -> not reproduced; any part
    undecided -> no verdict; else reproduced. Reasons of the deciding parts are joined."""
    if any(v == NOT_REPRODUCED for v, _ in verdicts):
        return NOT_REPRODUCED, "; ".join(r for v, r in verdicts if v == NOT_REPRODUCED)
    if any(v == NO_VERDICT for v, _ in verdicts):
        return NO_VERDICT, "; ".join(r for v, r in verdicts if v == NO_VERDICT)
    return REPRODUCED, ""


@dataclass
class ClaimsTable:
    """The claims of one paper, rendered by :class:`rates.output.tables.Table` (Markdown, LaTeX, JSON)."""

    title: str
    label: str
    claims: list[Claim] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Set for a smoke run (--quick, e.g. "quick mode, 400 steps"): its horizons and seed counts can neither
    # refute a claim (a failed criterion shows the horizon) nor confirm one (a criterion met at t <= 1000 says
    # nothing of the late phase the papers describe), so every row becomes 'no verdict (smoke run)' with
    # what the criterion gave kept in the reason.
    short_run: str = ""

    def add(self, claim: Claim) -> Claim:
        figure = claim.protocol.figure if claim.protocol else ""
        if figure:
            window = claim.protocol.window
            for other in self.claims:
                if other.protocol and other.protocol.figure == figure and other.protocol.window != window:
                    raise ValueError(f"rows of {figure} must share one window: {other.protocol.window!r} "
                                     f"({other.claim}) against {window!r} ({claim.claim})")
        if self.short_run:
            outcome = claim.verdict + (f": {claim.reason}" if claim.reason else "")
            claim = replace(claim, verdict=NO_VERDICT, smoke=True,
                            reason=f"{self.short_run}; the full mode decides (the criterion gave {outcome})")
        self.claims.append(claim)
        return claim

    @property
    def paper_claims(self) -> list[Claim]:
        return [c for c in self.claims if not c.implementation_check]

    @property
    def implementation_checks(self) -> list[Claim]:
        return [c for c in self.claims if c.implementation_check]

    def counts(self) -> dict[str, int]:
        """Verdict counts of the paper's claims; the checks of the implementation are counted apart."""
        return {v: sum(c.verdict == v for c in self.paper_claims) for v in CLAIM_VERDICTS}

    def check_counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.implementation_checks) for v in CLAIM_VERDICTS}

    def _rows(self, table: Table, claims: list[Claim]) -> None:
        for i, c in enumerate(claims, 1):
            table.add(Cell(str(i), value=i), Cell(c.claim), Cell(c.source),
                      Cell(c.measured, value=c.values if c.values is not None else c.measured),
                      Cell(c.criterion), Cell(c.shown_verdict), Cell(c.reason or "-"),
                      Cell(c.protocol.text() if c.protocol else "not declared",
                           value=asdict(c.protocol) if c.protocol else None))

    def table(self) -> Table:
        table = Table(list(_COLUMNS), caption=self.title, label=self.label)
        self._rows(table, self.paper_claims)
        counts = self.counts()
        checks = self.implementation_checks
        apart = ""
        if checks:
            done = self.check_counts()
            apart = (f" Checks of the implementation, counted apart: {done[REPRODUCED]} of {len(checks)} passed"
                     f" (next table).")
        table.notes.append(", ".join(f"{counts[v]} {v}" for v in CLAIM_VERDICTS)
                           + f" of {len(self.paper_claims)} claims." + apart)
        table.notes.extend(self.notes)
        table.latex_tables = self._paper_tables(table)
        return table

    def checks_table(self) -> Optional[Table]:
        """The rows that are identities of the code (they hold whatever the paper says), in their own table."""
        checks = self.implementation_checks
        if not checks:
            return None
        table = Table(list(_COLUMNS), caption=f"{self.title}: checks of the implementation",
                      label=f"{self.label}-checks" if self.label else "")
        self._rows(table, checks)
        table.notes.append("Identities of the code: they cannot fail whatever the paper says, so they test the "
                           "implementation, not the paper, and are not counted among its claims.")
        return table

    def _paper_tables(self, table: Table) -> list[Table]:
        """What ``claims.tex`` prints: the claims with their sources and verdicts (one page for up to 20 claims
        of usual length), then, keyed by the claim's number, the evidence: what was measured, the criterion
        and the reason or what would decide it. Markdown and JSON keep one table."""
        columns = list(table.columns)
        evidence_label = f"{self.label}-evidence" if self.label else ""

        def pick(names: list[str]) -> list[list]:
            return [[row[columns.index(name)] for name in names] for row in table.rows]

        where = rf"Table~\ref{{{evidence_label}}}" if evidence_label else "the next table"
        shown = ["#", "claim", "source", "verdict"]
        result = Table(shown, pick(shown), caption=table.caption, label=self.label,
                       notes=[table.notes[0], Cell("What was measured, the criteria and the reasons: the evidence "
                                                   "table below.",
                                                   f"What was measured, the criteria and the reasons: {where}.")])
        evidence = ["#", "measured", "criterion", "reason / what would decide it"]
        protocols = ["#", "protocol"]
        return [result, Table(evidence, pick(evidence), caption=f"{table.caption}: evidence", label=evidence_label,
                              notes=list(table.notes[1:]), small=True),
                Table(protocols, pick(protocols), caption=f"{table.caption}: protocols, fixed before the runs",
                      label=f"{self.label}-protocols" if self.label else "", small=True)]

    def write(self, out_dir: Path, stem: str = "claims") -> list[Path]:
        """``claims.md``, ``claims.tex`` (a table to ``\\input`` into a paper) and ``claims.json`` in ``out_dir``."""
        table = self.table()
        checks = self.checks_table()
        markdown, latex, payload = table.to_markdown(), table.to_latex(), json.loads(table.to_json())
        if checks is not None:
            markdown += "\n" + checks.to_markdown()
            latex += checks.to_latex()
            payload["implementation_checks"] = json.loads(checks.to_json())
        out_dir = Path(out_dir)
        return [write_text_atomic(out_dir / f"{stem}.md", markdown),
                write_text_atomic(out_dir / f"{stem}.tex", latex),
                write_text_atomic(out_dir / f"{stem}.json", json.dumps(payload, indent=1, default=str) + "\n")]
