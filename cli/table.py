"""``rates table``: every theorem family x regime of ``a``, generated from the rate engine."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rates import asymptotics
from rates.algorithms import resolve_algorithm
from rates.errors import InputError
from rates.io import write_text_atomic
from rates.references import references_note
from rates.tables import Cell, Table
from rates.theorems import FAMILIES, FAMILY_EXAMPLES, template_for
from rates.theorems.per_sample import SOURCE as PER_SAMPLE_SOURCE

FORMATS = ("latex", "markdown", "json")


def predicted_rates_table() -> Table:
    """One row per family and regime; rates, regimes and best ``a`` are derived, never looked up."""
    table = Table(["family", "algorithms", "regime", "rate", "r", "k", "best a", "gap to", "source", "status"],
                  caption="Predicted margin-gap rates O(t^-r (log t)^k) for eta_t = eta_0 (t+2)^-a",
                  label="tab:predicted-rates")
    for family in FAMILIES:
        algorithms, example = FAMILY_EXAMPLES[family]
        template = template_for(resolve_algorithm(example))
        best = asymptotics.best_a(template.powers)
        source = f"{template.source.seed} {template.source.theorem}"
        if template.family == "nsd":  # SIGNADAM covers entry-wise norms only; Schatten norms are MINIBATCH's at b = n
            schatten = template_for(resolve_algorithm("spectral-gd")).source
            source = f"{source} (entry-wise); {schatten.seed} {schatten.theorem} (Schatten)"
        for regime, rate in asymptotics.regime_rates(template.powers):
            table.add(
                family, algorithms, Cell(regime.text, regime.latex),
                Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent), "log_power": rate.log_power,
                                                          "text": rate.text}),
                str(rate.exponent), rate.log_power, str(best), template.gap_to,
                source, template.status)
    table.notes.append("Derived by rates.asymptotics from each template's numerator power sums over sum eta_s "
                       "(docs/theory.md sections 3-4); r and k of an open interval are expressions in a.")
    table.notes.append(f"Per-sample (b = 1) SignSGD/N-SGD/Spectral-SGD predict a limit direction M/||M||, not a rate: "
                       f"{PER_SAMPLE_SOURCE.seed} {PER_SAMPLE_SOURCE.theorem} [rebuilt].")
    table.notes.append(references_note([row[8] for row in table.rows] + [PER_SAMPLE_SOURCE.seed]))
    return table


def table(
    fmt: str = typer.Option("markdown", "--format", help="latex, markdown or json"),
    out: Optional[Path] = typer.Option(None, "--out", help="write to FILE instead of stdout"),
    fits: bool = typer.Option(False, "--fits", help="predicted vs fitted for the Trajectory FILES given after it"),
    files: Optional[list[Path]] = typer.Argument(None, help="Trajectory files (with --fits)"),
) -> None:
    """Print (or write) the predicted-rate table for every family and regime of a."""
    if fmt not in FORMATS:
        raise InputError("--format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fits or files:
        from rates.report import fits_table_for_cli

        text = fits_table_for_cli(fits, files).render(fmt)
    else:
        text = predicted_rates_table().render(fmt)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(out, text)


def register(app: typer.Typer) -> None:
    app.command("table")(table)
