"""``rates check [NAME...] [--chain FAMILY] [--thorough] [--json] [--save-dir DIR]``: run the proof checks of
:mod:`proofs`.

Prints one row per claim (claim, source, status, methods, trials, worst LHS/RHS, verdict) and, when every
claim was checked, each theorem family's chain verdict (:mod:`proofs.chains`); ``--chain nsd`` prints that
family's derivation step by step (its claims only). Exit code 1 if any claim is refuted by a counterexample
(or a method crashed: verdict ``error``) or a chain is broken / does not reach its template's exponents;
2 on bad input such as an unknown claim name or family (the message lists the known ones).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from rates.errors import InputError


def check(
    names: Optional[list[str]] = typer.Argument(None, help="claims to check (default: all)", metavar="NAME"),
    thorough: bool = typer.Option(False, "--thorough",
                                  help="10x random starts, 4x local searches, finer boxes, longer runs"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object per run instead of the table"),
    save_dir: Optional[Path] = typer.Option(None, "--save-dir",
                                            help="write the worst instance of every claim/method as JSON here"),
    list_only: bool = typer.Option(False, "--list", help="list the claim names with their sources and exit"),
    chain: Optional[str] = typer.Option(None, "--chain", metavar="FAMILY",
                                        help="print the derivation from lemmas to the bound template of FAMILY "
                                             "({CHAINS})"),
    schedules: Optional[list[str]] = typer.Option(None, "--schedule", metavar="EXPR",
                                                  help="with the claim name schedule-hypotheses: the schedules whose "
                                                       "hypotheses to check (repeatable; default: four examples)"),
) -> None:
    """Check the lemmas the rates rest on: symbolically, by interval arithmetic, or by adversarial search."""
    from proofs.catalog import CHAIN_FAMILIES, check_claim_names

    # bad names are refused before the claim families' imports (torch, sympy, mpmath: seconds)
    families = _families(chain, list(CHAIN_FAMILIES))
    if families is not None and names:
        raise InputError("--chain", "give either claim names or --chain, not both")
    check_claim_names(names)
    from proofs.chains import chain_claim_names
    from proofs.registry import select_claims
    from proofs.runner import result_json, results_table, run_checks, save_instances, short_source

    if families is not None:
        names = chain_claim_names([f for f in families if f != "per-sample"]) + (
            ["per-sample-step-direction"] if "per-sample" in families else [])
    from proofs.schedule_hypotheses import NAME as SCHEDULE_CLAIMS
    from proofs.schedule_hypotheses import schedule_claims

    if schedules and SCHEDULE_CLAIMS not in (names or []):
        raise InputError("--schedule", f"goes with the claim name {SCHEDULE_CLAIMS} "
                                       f"(rates check {SCHEDULE_CLAIMS} --schedule EXPR)")
    extra = schedule_claims(schedules) if names and SCHEDULE_CLAIMS in names else []
    names = [name for name in names or [] if name != SCHEDULE_CLAIMS] or (None if not extra else [])
    claims = (select_claims(names) if names or not extra else []) + extra
    if save_dir is not None and save_dir.exists() and not save_dir.is_dir():
        raise InputError("--save-dir", f"must be a directory (it is created if missing), got the file {save_dir}")
    if list_only:
        if families is not None:  # --chain: the derivation's steps in order, each with the claim it rests on
            print("\n".join(_chain_listing(families, {claim.name: claim for claim in claims}, short_source)))
            return
        for claim in claims:
            print(f"{claim.name}\t[{claim.status}]\t{short_source(claim.source)}")
        return

    def progress(result):
        if not as_json:
            print(f"  {result.claim.name}: {result.verdict} ({result.seconds:.1f}s)", file=sys.stderr)

    results = run_checks(claims, thorough=thorough, progress=progress)
    if save_dir is not None:
        save_instances(results, save_dir)
    chain_results, chains_ok = [], True
    if families is not None or (not names and not extra):
        chain_results, chains_ok = _run_chains(families or list(CHAIN_FAMILIES) + ["per-sample"], results)
    if as_json:
        print(json.dumps({"thorough": thorough, "claims": [result_json(r) for r in results],
                          "chains": [entry for entry, _ in chain_results]}, indent=1, default=str))
    else:
        if families is None:
            print(results_table(results).to_markdown(), end="")
        for entry, lines in chain_results:
            print("\n".join(lines if families is not None else [f"chain {entry['family']}: {entry['verdict']}"]))
    if any(r.verdict in ("counterexample", "error") for r in results) or not chains_ok:
        raise typer.Exit(1)  # a refuted claim, a crashed method, a broken chain: never a silent pass


def _families(chain: Optional[str], known: list[str]) -> Optional[list[str]]:
    if chain is None:
        return None
    allowed = known + ["per-sample"]
    if chain == "all":
        return allowed
    if chain not in allowed:
        raise InputError("--chain", f"must be one of {', '.join(allowed)}, all; got {chain!r}")
    return [chain]


def _chain_listing(families: list[str], claims: dict, short_source) -> list[str]:
    """``--list --chain FAMILY``: each chain's title and numbered steps (claim, status, source, what it gives),
    without checking anything."""
    from proofs.chains import CHAINS

    lines = []
    for family in families:
        if family == "per-sample":
            lines.append("chain per-sample: MINIBATCH Thm 4.9 (limit direction)")
            lines += [f"   1. {name} [{claims[name].status}] {short_source(claims[name].source)}"
                      for name in claims if name.startswith("per-sample")]
            continue
        chain = CHAINS[family]
        lines.append(f"chain {family}: {chain.title}")
        for number, step in enumerate(chain.steps, 1):
            claim = claims.get(step.claim) if step.claim else None
            where = f" [{claim.status}] {short_source(claim.source)}" if claim is not None else ""
            lines.append(f"  {number:2d}. {step.claim or 'definition'}{where}: {step.uses}")
    return lines


def _run_chains(families: list[str], results) -> tuple[list, bool]:
    """Evaluate the chains of ``families`` against the claim results; (json entry, text lines) per chain."""
    from proofs.chains import BROKEN, CHAINS, DOES_NOT_FOLLOW, evaluate, per_sample_chain_lines
    from proofs.registry import all_claims

    claims = {claim.name: claim for claim in all_claims()}
    by_name = {r.claim.name: r for r in results}
    out, ok = [], True
    for family in families:
        if family == "per-sample":
            lines, follows = per_sample_chain_lines(claims, by_name)
            ok &= follows
            verdict = lines[-1].split("verdict: ")[1] if "verdict: " in lines[-1] else lines[-1].split(": ", 1)[1]
            out.append(({"family": family, "verdict": verdict, "lines": lines}, lines))
            continue
        result = evaluate(CHAINS[family], claims, by_name)
        ok &= not (result.verdict.startswith(BROKEN) or result.verdict.startswith(DOES_NOT_FOLLOW))
        entry = {"family": family, "verdict": result.verdict,
                 "steps": [{"claim": step.claim, "uses": step.uses, "verdict": verdict}
                           for step, verdict in result.step_verdicts],
                 "comparisons": [{"component": c, "derived": str(dv), "template": str(tv), "equal": eq}
                                 for c, dv, tv, eq in result.comparisons]}
        out.append((entry, result.lines()))
    return out, ok


def register(app: typer.Typer) -> None:
    app.command("check")(check)
