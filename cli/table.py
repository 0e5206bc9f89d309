"""``rates table``: every theorem family x regime of ``a``, generated from the rate engine."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rates.errors import InputError
from rates.io import write_text_atomic
from rates.output.tables import Cell, Table, latex_document
from rates.symbolic.papers import references_note

FORMATS = ("latex", "markdown", "json")
GAP_LATEX = {"gamma": r"$\gamma$", "gamma_eff": r"$\gamma_{\mathrm{eff}}$"}


def predicted_rates_table() -> Table:
    """One row per family and regime; rates, regimes and best ``a`` are derived, never looked up."""
    import sympy as sp

    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic import asymptotics  # here: sympy's import time is paid only when a table is made
    from rates.symbolic.theorems import DECLARATIONS, template_for

    table = Table(["family", "algorithms", "regime", "rate", "r", "k", "best a", "gap to", "source", "status"],
                  caption="Predicted margin-gap rates O(t^-r (log t)^k) for eta_t = eta_0 (t+2)^-a",
                  caption_latex=r"Predicted margin-gap rates $O(t^{-r} (\log t)^k)$ for $\eta_t = \eta_0 (t+2)^{-a}$",
                  label="tab:predicted-rates",
                  footnoted={"source": "family"}, grouped=2)  # a paper prints each family's source once
    for family in DECLARATIONS:
        if family.template is None:  # a limit-direction theorem: a note below, not a rate row
            table.notes.append(f"{family.name} ({family.algorithms}): {family.statement}; "
                               f"{family.source.seed} {family.source.theorem} [rebuilt]. Covers only "
                               + "; ".join(h.statement for h in family.hypotheses) + ".")
            continue
        template = template_for(resolve_algorithm(**family.example))
        best = asymptotics.best_a(template.powers)
        source = f"{template.source.seed} {template.source.theorem}"
        if template.family == "nsd":  # SIGNADAM covers entry-wise norms only; Schatten norms are MINIBATCH's at b = n
            schatten = template_for(resolve_algorithm("spectral-gd")).source
            source = f"{source} (entry-wise); {schatten.seed} {schatten.theorem} (Schatten)"
        for regime, rate in asymptotics.regime_rates(template.powers):
            table.add(
                family.name, family.algorithms, Cell(regime.text, regime.latex),
                Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent), "log_power": rate.log_power,
                                                          "text": rate.text}),
                Cell(str(rate.exponent), f"${sp.latex(rate.exponent)}$"), rate.log_power,
                Cell(str(best), f"${sp.latex(best)}$"), Cell(template.gap_to, GAP_LATEX.get(template.gap_to)),
                source, template.status)
    table.notes.append("Derived by rates.symbolic.asymptotics from each template's numerator power sums over sum eta_s "
                       "(docs/theory.md sections 3-4); r and k of an open interval are expressions in a.")
    table.notes.append("A row applies only where its family's hypotheses hold (rates.symbolic.theorems.registry.gate): "
                       "mini-batch and momentum rows need gamma_eff > 0 with the data's constants; Adam needs eps = 0, "
                       "full batch and beta1 <= beta2.")
    table.notes.append(references_note([row[8] for row in table.rows]))
    return table


def schedule_rates_table(learning_rate) -> Table:
    """One row per theorem family for one schedule: the polynomial family's regime row for ``--a``-type
    schedules, else the rate derived for the expression (or ``no-theorem`` naming the failing hypothesis)."""
    import sympy as sp

    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems import DECLARATIONS, template_for
    from rates.symbolic.theorems.general import NoRate, predict_schedule

    if learning_rate.is_polynomial:
        full = predicted_rates_table()
        a = sp.Rational(learning_rate.a.numerator, learning_rate.a.denominator)
        full.rows = [row for row in full.rows if _regime_of_row(row).contains(a)]
        full.caption += f" at a = {learning_rate.a}"
        return full
    table = Table(["family", "algorithms", "schedule", "rate", "r", "k", "m", "dominant term", "gap to", "source",
                   "status"],
                  caption="Predicted margin-gap rates O(t^-r (log t)^k (log log t)^m) for eta_t = "
                          + learning_rate.text,
                  caption_latex=r"Predicted margin-gap rates $O(t^{-r} (\log t)^k (\log\log t)^m)$ for "
                                + f"$\\eta_t = {sp.latex(learning_rate.expr)}$",
                  label="tab:schedule-rates")
    for family in DECLARATIONS:
        if family.template is None:
            continue
        config = resolve_algorithm(**family.example)
        template = template_for(config)
        source = f"{template.source.seed} {template.source.theorem}"
        try:
            prediction = predict_schedule(config, template, learning_rate)
        except NoRate as err:
            table.add(family.name, family.algorithms, learning_rate.text, Cell("none", value=None), "", "", "",
                      str(err), Cell(template.gap_to, GAP_LATEX.get(template.gap_to)), source, "no-theorem")
            continue
        rate = prediction.rate
        table.add(family.name, family.algorithms, learning_rate.text,
                  Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent),
                                                            "log_power": str(rate.log_power),
                                                            "loglog_power": str(rate.loglog_power), "text": rate.text}),
                  str(rate.exponent), str(rate.log_power), str(rate.loglog_power), prediction.dominant,
                  Cell(template.gap_to, GAP_LATEX.get(template.gap_to)), source,
                  f"derived (template {template.status})")
    table.notes.append("Derived by rates.symbolic.theorems.general: the schedule hypotheses (MINIBATCH Ass. 3.3, "
                       "and Ass. 3.4 [rebuilt] for momentum and Adam), the growth class of every power sum of the "
                       "family's template, and its dominant numerator term over sum eta_s (docs/theory.md 4b).")
    return table


def _regime_of_row(row):
    import sympy as sp

    from rates.symbolic.asymptotics import Regime

    text = row[2].text if isinstance(row[2], Cell) else str(row[2])
    if text.startswith("a = "):
        value = sp.Rational(text[4:])
        return Regime(value, value)
    lo, hi = text[len("a in ("):-1].split(", ")
    return Regime(sp.Rational(lo), sp.Rational(hi))


def table(
    fmt: str = typer.Option("markdown", "--format", help="latex, markdown or json"),
    out: Optional[Path] = typer.Option(None, "--out", help="write to FILE instead of stdout"),
    fits: bool = typer.Option(False, "--fits", help="predicted vs fitted for the Trajectory FILES given after it"),
    files: Optional[list[Path]] = typer.Argument(None, help="Trajectory files (with --fits)"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="with --format latex: a compilable document instead of a fragment to \\input"),
    schedule: Optional[str] = typer.Option(None, "--schedule", help="the rows for one learning rate, an expression "
                                           "in t and eta0 (e.g. 'eta0/((t+2)*log(t+2))')"),
) -> None:
    """Print (or write) the predicted-rate table for every family and regime of a; with --fits, predicted vs
    fitted for the given Trajectory files (exit 1 when a row is violated).

    LaTeX is a portrait booktabs longtable to \\input into a paper: it fits \\textwidth, each source is a
    lettered note and each family is named once (its first line names the packages it needs: booktabs,
    longtable, array, amsmath); --standalone writes a document that compiles on its own."""
    if fmt not in FORMATS:
        raise InputError("--format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}")
    records = []
    if fits or files:
        from rates.studies.verdict_table import fits_records_for_cli, verdict_table

        records = fits_records_for_cli(fits, files)
        text = verdict_table(records).render(fmt)
    elif schedule is not None:
        from rates.schedule import Schedule

        text = schedule_rates_table(Schedule.parse(schedule, "schedule")).render(fmt)
    else:
        text = predicted_rates_table().render(fmt)
    if standalone:
        if fmt != "latex":
            raise InputError("--standalone", f"applies to --format latex only, got --format {fmt}")
        text = latex_document(text)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_text_atomic(out, text)
    if any(rec.verdict.label == "violated" or getattr(rec.verdict, "refuted", False) for rec in records):
        raise typer.Exit(1)  # like rates fit: a violated row is a failed check; other verdicts exit 0


def register(app: typer.Typer) -> None:
    app.command("table")(table)
