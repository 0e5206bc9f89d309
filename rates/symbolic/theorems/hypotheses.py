"""Checkable hypotheses of the theorem families: what a run must satisfy before a theorem may judge it.

Setting
    A *fact sheet* (:class:`Facts`) holds what is known about one run or one ``rates predict`` call: the
    resolved algorithm (norm, batch, momentum, VR, Adam), the schedule (``a``, ``eta_0``), Adam's constants
    (``eps``, ``beta1``, ``beta2``) and, when a dataset is at hand, its numeric constants (``gamma`` in the
    algorithm's norm, ``B = max_i ||h_i||_1``, ``n``, ``d``, ``k``, whether it is orthogonal scale-skewed).

Algorithm (PEPit style: each family declares its setting, the gate only evaluates declarations)
    Every theorem family module declares one :class:`FamilyDeclaration`: ``covers(config)`` (the algorithm
    is the one the theorem is about) and a tuple of :class:`Hypothesis` predicates over the fact sheet.
    A hypothesis is either *structural* (about the configuration or the data's shape: ``eps = 0``, full batch,
    orthogonal data) or *constant* (a numeric condition on the data's constants: ``gamma_eff(b) > 0``).

Guarantee
    :func:`rates.symbolic.theorems.registry.gate` picks the one declaration that covers the configuration and returns
    ``covered`` (every checkable hypothesis holds; the unknown ones are listed), ``no-theorem`` (nothing
    covers it, or a structural hypothesis fails) or ``not-applicable`` (a constant hypothesis fails on the
    data's constants; its computed value is part of the reason).

Reference
    SIGNADAM Thm 5.3, 6.3; MINIBATCH Thm 4.1, 4.3,
    4.6, 4.9; docs/theory.md sections 3 and 5. PEPit's declarative problem classes inspired the split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Optional

import numpy as np

HOLDS, FAILS, UNKNOWN = "holds", "fails", "unknown"
STRUCTURE, CONSTANT = "structure", "constant"
PER_SAMPLE_NORMS = ("max", "frobenius", "spectral")


@dataclass(frozen=True)
class Facts:
    """What the gate may check; ``None`` means unknown (e.g. ``rates predict`` without ``--gamma``)."""

    config: Any  # rates.numeric.algorithms.AlgorithmConfig
    a: Optional[Fraction] = None
    eta0: Optional[float] = None
    gamma: Optional[float] = None  # max margin in the algorithm's norm
    B: Optional[float] = None
    n: Optional[int] = None
    d: Optional[int] = None
    k: Optional[int] = None
    orthogonal: Optional[bool] = None
    class_counts: Optional[tuple[int, ...]] = None
    hardest_scales: Optional[tuple[float, ...]] = None  # min_{i: y_i = c} s_i on orthogonal data
    adam_eps: Optional[float] = None
    adam_beta1: Optional[float] = None
    adam_beta2: Optional[float] = None
    schedule: Optional[Any] = None  # rates.schedule.Schedule when it is not eta_0 (t+2)^(-a) (then a is None)

    @property
    def general_schedule(self) -> bool:
        return self.schedule is not None and not self.schedule.is_polynomial

    @property
    def samples(self) -> Optional[int]:
        return self.n if self.n is not None else self.config.n

    @property
    def batch(self) -> Optional[int]:
        """The batch size b; full batch (``batch=None``) is ``b = n``."""
        if self.config.batch is not None:
            return self.config.batch
        return None if self.config.stochastic else self.samples

    def constants(self) -> dict[str, Any]:
        """Numeric constants for :func:`rates.symbolic.theorems.predict` (thresholds t0/t1), the known ones only."""
        values = {"gamma": self.gamma, "B": self.B, "n": self.samples, "k": self.k, "b": self.batch,
                  "beta": self.config.momentum, "eta_0": self.eta0}
        return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class Finding:
    """The outcome of one hypothesis on one fact sheet, with the numbers that decided it."""

    status: str  # HOLDS, FAILS or UNKNOWN
    detail: str


@dataclass(frozen=True)
class Hypothesis:
    """One condition of a theorem: a name, its statement with source and status, and its check."""

    name: str
    statement: str
    source: str
    kind: str  # STRUCTURE or CONSTANT
    check: Callable[[Facts], Finding]

    def evaluate(self, facts: Facts) -> Finding:
        return self.check(facts)


@dataclass(frozen=True)
class FamilyDeclaration:
    """A theorem family as the gate sees it. ``template`` is None for a limit-direction (not a rate) theorem."""

    name: str
    algorithms: str  # the named algorithms it covers, for tables
    example: dict  # keyword arguments of rates.numeric.algorithms.resolve_algorithm for one representative
    covers: Callable[[Any], bool]
    hypotheses: tuple[Hypothesis, ...]
    source: Any  # rates.symbolic.theorems.base.Source
    template: Optional[Callable[[Any], Any]] = None
    statement: str = ""  # what the theorem guarantees, one line
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the declaration as it applies to one configuration, for a family whose theorem depends on it (nsd: SIGNADAM
    # for entry-wise norms, MINIBATCH for the other Schatten norms); None: this declaration for every one
    for_config: Optional[Callable[[Any], FamilyDeclaration]] = None
    origin: str = ""  # "" for a built-in family; else the plug-in that registered it (its file, or distribution)

    def applied_to(self, config) -> FamilyDeclaration:
        """This family's declaration for ``config``: its source and its hypotheses' citations are those of the
        theorem that covers ``config``."""
        return self if self.for_config is None else self.for_config(config)


# --------------------------------------------------------------------------------------- shared checks


def _num(value: float) -> str:
    return f"{value:.4g}"


def a_in_unit_interval(source: str) -> Hypothesis:
    def check(facts: Facts) -> Finding:
        if facts.a is None:
            return Finding(UNKNOWN, "a not given")
        ok = 0 < facts.a <= 1
        return Finding(HOLDS if ok else FAILS, f"a = {facts.a} {'in' if ok else 'outside'} (0, 1]")
    return Hypothesis("a in (0, 1]", "schedule eta_t = eta_0 (t+2)^(-a) with a in (0, 1]", source, STRUCTURE, check)


def uses_assumption_34(config) -> bool:
    """Momentum (MINIBATCH Thm 4.3; Thm 4.6 with momentum) and Adam (SIGNADAM Thm 6.3) need MINIBATCH Assumption
    3.4 of the schedule; the other families need Assumption 3.3 only."""
    return bool(getattr(config, "adam", False)) or float(getattr(config, "momentum", 0.0) or 0.0) > 0


def schedule_hypotheses(config) -> tuple[Hypothesis, ...]:
    """The schedule hypotheses a family needs for a general schedule, in place of ``a in (0, 1]``: MINIBATCH
    Assumption 3.3 (three parts) and, for momentum and Adam, Assumption 3.4 [rebuilt]
    (:mod:`rates.symbolic.schedule_hypotheses` decides them; sympy is imported only when one is checked)."""
    names = ["eventually non-increasing", "sum eta_t = inf", "eta_t -> 0"]
    if uses_assumption_34(config):
        names.append("Assumption 3.4")

    def make(name: str) -> Hypothesis:
        def check(facts: Facts) -> Finding:
            from rates.symbolic.schedule_hypotheses import decide

            finding = decide(facts.schedule.expr).get(name)
            status = {"holds": HOLDS, "fails": FAILS}.get(finding.status, UNKNOWN)
            detail = finding.detail if status != UNKNOWN else f"undecided: {finding.detail}"
            return Finding(status, detail)

        from_source = ("MINIBATCH Ass. 3.4 [rebuilt]" if name == "Assumption 3.4" else "MINIBATCH Ass. 3.3")
        return Hypothesis(name, f"schedule: {name}", from_source, STRUCTURE, check)

    return tuple(make(name) for name in names)


def separable(source: str) -> Hypothesis:
    def check(facts: Facts) -> Finding:
        if facts.gamma is None:
            return Finding(UNKNOWN, "gamma not known (give data or --gamma)")
        ok = facts.gamma > 0
        return Finding(HOLDS if ok else FAILS, f"gamma = {_num(facts.gamma)} {'>' if ok else '<='} 0")
    return Hypothesis("separable", "data separable: max margin gamma > 0 in the algorithm's norm", source, CONSTANT,
                      check)


def full_batch(source: str, why: str) -> Hypothesis:
    def check(facts: Facts) -> Finding:
        b, n = facts.batch, facts.samples
        if not facts.config.stochastic and facts.config.batch is None:
            return Finding(HOLDS, "full batch (b = n)")
        if b is not None and n is not None and b == n:
            return Finding(HOLDS, f"b = n = {n}")
        return Finding(FAILS, f"mini-batch b = {b}" + (f" < n = {n}" if n is not None else "") + f"; {why}")
    return Hypothesis("b = n", "full batch: every step uses all n samples", source, STRUCTURE, check)


def momentum_range(source: str, low_open: bool) -> Hypothesis:
    def check(facts: Facts) -> Finding:
        beta = facts.config.momentum
        ok = (0 < beta < 1) if low_open else (0 <= beta < 1)
        interval = "(0, 1)" if low_open else "[0, 1)"
        return Finding(HOLDS if ok else FAILS, f"beta = {beta:g} {'in' if ok else 'outside'} {interval}")
    interval = "(0, 1)" if low_open else "[0, 1)"
    return Hypothesis("momentum range", f"momentum beta in {interval}", source, STRUCTURE, check)


def effective_margin(source: str, formula: str, value: Callable[[Facts], float]) -> Hypothesis:
    """``gamma_eff > 0`` computed with the data's constants (the 'large batch' / 'high momentum' condition)."""
    def check(facts: Facts) -> Finding:
        missing = [name for name, v in (("gamma", facts.gamma), ("B", facts.B), ("n", facts.samples),
                                        ("b", facts.batch)) if v is None]
        if missing:
            return Finding(UNKNOWN, f"gamma_eff needs {', '.join(missing)}")
        g = float(value(facts))
        ok = g > 0
        return Finding(HOLDS if ok else FAILS,
                       f"gamma_eff(b = {facts.batch}) = {formula} = {_num(g)} {'>' if ok else '<='} 0 "
                       f"(gamma = {_num(facts.gamma)}, B = {_num(facts.B)}, n = {facts.samples})")
    return Hypothesis("gamma_eff > 0", f"effective margin gamma_eff = {formula} > 0 [rebuilt]", source, CONSTANT,
                      check)


# ----------------------------------------------------------------------------------------- data facts


def is_orthogonal_skewed(H: np.ndarray, y: np.ndarray, k: int) -> bool:
    """``d = k`` and every row is ``h_i = s_i e_{y_i}`` with ``s_i > 0`` (MINIBATCH Def. 4.8 setting)."""
    H = np.asarray(H, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    if H.ndim != 2 or H.shape[1] != k:
        return False
    own = H[np.arange(len(y)), y]
    off = H.copy()
    off[np.arange(len(y)), y] = 0.0
    return bool(np.all(own > 0) and np.all(off == 0))


def data_facts(dataset) -> dict[str, Any]:
    """The data's numeric constants the gate needs, as JSON scalars (recorded in each run's config)."""
    H, y, k = np.asarray(dataset.H, dtype=float), np.asarray(dataset.y), int(dataset.k)
    orthogonal = is_orthogonal_skewed(H, y, k)
    out: dict[str, Any] = {"B": float(np.abs(H).sum(axis=1).max()), "n": int(H.shape[0]), "d": int(H.shape[1]),
                           "k": k, "orthogonal": orthogonal,
                           "class_counts": [int(c) for c in np.bincount(y, minlength=k)]}
    if orthogonal:
        own = H[np.arange(len(y)), y]
        out["hardest_scales"] = [float(own[y == c].min()) for c in range(k)]
    return out
