"""``rates check [NAME...] [--thorough] [--json] [--save-dir DIR]``: run the proof checks of :mod:`proofs`.

Prints one row per claim (claim, source, status, methods, trials, worst LHS/RHS, verdict); exit code 1 if
any claim is refuted by a counterexample (or a method crashed: verdict ``error``), 2 on bad input such as an
unknown claim name (the message lists the known ones).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from rates.errors import InputError


def check(
    names: Optional[List[str]] = typer.Argument(None, help="claims to check (default: all)", metavar="NAME"),
    thorough: bool = typer.Option(False, "--thorough", help="10x random starts, 4x local searches, finer boxes, longer runs"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object per run instead of the table"),
    save_dir: Optional[Path] = typer.Option(None, "--save-dir", help="write the worst instance of every claim/method as JSON here"),
    list_only: bool = typer.Option(False, "--list", help="list the claim names with their sources and exit"),
) -> None:
    """Check the lemmas the rates rest on: symbolically, by interval arithmetic, or by adversarial search."""
    from proofs.registry import select_claims
    from proofs.runner import result_json, results_table, run_checks, save_instances, short_source

    claims = select_claims(names)
    if save_dir is not None and save_dir.exists() and not save_dir.is_dir():
        raise InputError("--save-dir", f"must be a directory (it is created if missing), got the file {save_dir}")
    if list_only:
        for claim in claims:
            print(f"{claim.name}\t[{claim.status}]\t{short_source(claim.source)}")
        return

    def progress(result):
        if not as_json:
            print(f"  {result.claim.name}: {result.verdict} ({result.seconds:.1f}s)", file=sys.stderr)

    results = run_checks(claims, thorough=thorough, progress=progress)
    if save_dir is not None:
        save_instances(results, save_dir)
    if as_json:
        print(json.dumps({"thorough": thorough, "claims": [result_json(r) for r in results]}, indent=1, default=float))
    else:
        print(results_table(results).to_markdown(), end="")
    if any(r.verdict in ("counterexample", "error") for r in results):
        raise typer.Exit(1)  # a refuted claim, or a method that crashed: never a silent pass


def register(app: typer.Typer) -> None:
    app.command("check")(check)
