"""``rates report STUDY --out DIR``: run a named study, fit it, write trajectories, tables and figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rates.errors import InputError
from rates.numeric.run_parameters import check, parse_seeds
from rates.studies import STUDIES, StudyOptions, get_study


def report(
    study: str = typer.Argument(..., help="study name: {STUDIES}"),
    out: Path = typer.Option(..., "--out", help="output directory (created if missing)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="reshuffling streams, as in rates run (0..4 or 0,3,7); "
                                        "the default study is full batch and takes one; flavors trains one "
                                        "network per listed seed"),
    data_seeds: Optional[str] = typer.Option(None, "--data-seeds", help="data draws, as in rates run (0..4 or 0,3,7; "
                                             "default study: 0..2, --quick: 0)"),
    device: str = typer.Option("auto", "--device",
                               help="{DEVICES} | cuda:I (auto: cuda when available and the runs are large)"),
    quick: bool = typer.Option(False, "--quick", help="a tiny version for tests and smoke runs"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show progress while simulating"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="where the engine tasks run: local (an "
                                            "embedded Dask cluster), serial (this process) or a Dask scheduler "
                                            "address such as tcp://host:8786; default: the study's own"),
) -> None:
    """Run STUDY (default: SignGD/NGD/Spectral-GD/Adam rates) and write its artefacts into --out.

    --seeds are reshuffling streams and --data-seeds data draws, as in rates run and rates fit.
    """
    shuffles = parse_seeds(0, seeds) if seeds is not None else None
    draws = parse_seeds(0, data_seeds, "--data-seeds") if data_seeds is not None else None
    if draws is not None and study in STUDIES and study != "default":
        # a paper study's data draws are part of its protocols, fixed before any run (docs/studies.md)
        raise InputError("--data-seeds", f"the {study} study fixes its own data draws in its protocols; "
                                         "--data-seeds applies to the default study only (use --seeds for "
                                         "the paper studies' seed count)")
    device = check("device", device)
    if out.exists() and not out.is_dir():
        raise InputError("--out", f"{out} exists and is not a directory")
    run_study = get_study(study)
    written = run_study(out, StudyOptions(seeds=None if shuffles is None else len(shuffles), data_seeds=draws,
                                          shuffle_seeds=shuffles, device=device, quick=quick, progress=progress,
                                          scheduler=scheduler))
    print(f"wrote {len(written)} files to {out}")
    table = out / "table.md"
    if table.exists():
        print()
        print(table.read_text(encoding="utf-8"), end="")
    fits = out / "fits.json"
    if fits.exists() and any(rec.get("verdict", {}).get("verdict") == "violated"
                             or rec.get("verdict", {}).get("outcome") == "refuted"  # a limit direction refuted
                             for rec in json.loads(fits.read_text(encoding="utf-8"))):
        raise typer.Exit(1)  # docs/design.md: exit 1 when a verdict fails


def register(app: typer.Typer) -> None:
    app.command("report")(report)
