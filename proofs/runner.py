"""Run the methods of each claim and render the results (table rows, JSON, saved instances)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

from proofs.adversarial import search
from proofs.claims import (
    FLAVORS,
    MINIBATCH,
    SIGNADAM,
    VERDICT_COUNTEREXAMPLE,
    VERDICT_ERROR,
    CheckResult,
    Claim,
    MethodResult,
    verdict_no_counterexample,
)
from proofs.interval import interval_method
from proofs.symbolic import symbolic_method
from rates.io import write_text_atomic
from rates.output.tables import Cell, Table
from rates.symbolic.papers import references_note


def _guarded(method: str, run) -> MethodResult:
    try:
        return run()
    except Exception as err:  # a crashing method is an ``error`` verdict, reported, never a silent pass
        return MethodResult(method, VERDICT_ERROR, 0, math.nan, {}, f"{type(err).__name__}: {err}")


def _simulation(claim: Claim, thorough: bool) -> MethodResult:
    outcome = claim.simulation.run(thorough, claim.seed)
    verdict = VERDICT_COUNTEREXAMPLE if outcome.refuted else verdict_no_counterexample(outcome.trials)
    return MethodResult("simulation", verdict, outcome.trials, outcome.worst_ratio, outcome.instance,
                        f"deterministic simulation (seed {claim.seed})")


def check_claim(claim: Claim, thorough: bool = False) -> CheckResult:
    results: list[MethodResult] = []
    if claim.symbolic_proof is not None:
        results.append(_guarded("symbolic", claim.symbolic_proof))
    elif claim.scalar is not None:
        results.append(_guarded("symbolic", lambda: symbolic_method(claim.scalar)))
    if claim.scalar is not None:
        results.append(_guarded("interval", lambda: interval_method(claim.scalar, thorough)))
    if claim.search is not None:
        results.append(_guarded("adversarial", lambda: search(claim.search, claim.seed, thorough)))
    if claim.simulation is not None:
        results.append(_guarded("simulation", lambda: _simulation(claim, thorough)))
    return CheckResult(claim, results)


def run_checks(claims: list[Claim], thorough: bool = False, progress=None) -> list[CheckResult]:
    out = []
    for claim in claims:
        start = time.perf_counter()
        result = check_claim(claim, thorough)
        result.seconds = time.perf_counter() - start
        out.append(result)
        if progress is not None:
            progress(result)
    return out


_SEED_NAMES = {SIGNADAM: "SIGNADAM", MINIBATCH: "MINIBATCH", FLAVORS: "FLAVORS"}


def short_source(source: str) -> str:
    for long, short in _SEED_NAMES.items():
        source = source.replace(long, short)
    return re.sub(r"\s*\(constant: [^)]*\)", "", source)


def _worst(result: CheckResult) -> float:
    values = [r.worst_ratio for r in result.results
              if isinstance(r.worst_ratio, float) and not math.isnan(r.worst_ratio)]
    return max(values) if values else math.nan


def _format_ratio(value: float) -> str:
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-"
    return f"{value:.10f}" if abs(value - 1) < 1e-6 else f"{value:.6g}"


def results_table(results: list[CheckResult]) -> Table:
    table = Table(["claim", "source", "status", "method", "trials", "worst LHS/RHS", "verdict"],
                  caption="rates check: lemma claims (LHS <= RHS; worst ratio > 1 refutes)", label="tab:check")
    for result in results:
        claim = result.claim
        methods = "+".join(r.method for r in result.results)
        trials = sum(r.trials for r in result.results)
        table.add(claim.name, short_source(claim.source), f"[{claim.status}]", methods, Cell(str(trials), value=trials),
                  Cell(_format_ratio(_worst(result)), value=None if math.isnan(_worst(result)) else _worst(result)),
                  result.verdict)
    table.notes.append(references_note([]) + ". [rebuilt]: statement reconstructed by the project "
                       "(docs/theory.md); [given]: stated in the paper.")
    table.notes.append("proven = symbolic (sympy) or interval arithmetic (mpmath iv, whole domain); worst ratio of a "
                       "proven scalar claim is the largest LHS/RHS seen at box centres.")
    return table


def result_json(result: CheckResult) -> dict:
    claim = result.claim
    return {
        "name": claim.name, "source": claim.source, "status": claim.status, "statement": claim.statement,
        "latex": claim.latex, "domain": claim.domain, "verdict": result.verdict,
        "method": "+".join(r.method for r in result.results),
        "trials": sum(r.trials for r in result.results), "worst_ratio": _json_number(_worst(result)),
        "seconds": round(result.seconds, 3),
        "methods": [{"method": r.method, "verdict": r.verdict, "trials": r.trials,
                     "worst_ratio": _json_number(r.worst_ratio), "detail": r.detail, "instance": r.instance}
                    for r in result.results],
    }


def _json_number(value):
    return None if isinstance(value, float) and (math.isnan(value) or math.isinf(value)) else value


def save_instances(results: list[CheckResult], directory: Path) -> list[Path]:
    """One JSON per claim and method with the worst instance found (the counterexample, if any)."""
    written = []
    for result in results:
        for method in result.results:
            if not method.instance:
                continue
            payload = {"claim": result.claim.name, "source": result.claim.source, "statement": result.claim.statement,
                       "method": method.method, "verdict": method.verdict,
                       "worst_ratio": _json_number(method.worst_ratio),
                       "instance": method.instance}
            path = Path(directory) / f"{result.claim.name}.{method.method}.json"
            written.append(write_text_atomic(path, json.dumps(payload, indent=1, default=float) + "\n"))
    return written
