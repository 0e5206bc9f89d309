"""Predicted-vs-fitted verdict tables: one row per judged configuration (:mod:`rates.studies.fitting`).

A row shows the predicted rate with its source and status, the bound's local slope over the window, the fitted
slope ± bootstrap error, the window, the seeds, the fitted log power, the three findings of
:class:`rates.judge.compare.Assessment` (bound holds, dominant term, stated rate attained) and the verdict; notes
carry the numbers behind each outcome, the schedules of general-schedule rows and the plug-ins that answered. Every
table is a :class:`rates.output.tables.Table` (LaTeX booktabs / Markdown / JSON); ``rates table --fits`` builds one
from trajectory files (:func:`fits_table_for_cli`).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

import sympy as sp

from rates.errors import InputError
from rates.judge.compare import DEFAULT_TOLERANCE, Verdict
from rates.numeric.run_config import RunConfig
from rates.output.tables import Cell, Table, latex_escape
from rates.studies.fitting import FitRecord, exact_a, gap_target_text, load_fit_inputs
from rates.symbolic.papers import references_note


def _schedule_cell(config: RunConfig) -> Cell:
    """The a column of a verdict table: ``a`` for the polynomial family, the expression for a general schedule."""
    if config.general_schedule:
        schedule = config.schedule
        return Cell(schedule.text, f"${sp.latex(schedule.expr)}$", value=schedule.text)
    return Cell(str(config.a), f"${sp.latex(exact_a(config))}$", value=str(config.a))


def _row_name(config: RunConfig) -> str:
    """``signgd a = 1/2``, or ``signgd schedule eta0/((t + 2)*log(t + 2))`` for a general schedule: how a note
    names its row."""
    if config.general_schedule:
        return f"{config.algo} schedule {_schedule_cell(config).text}"
    return f"{config.algo} a = {config.a}"


def source_text(prediction: Any) -> str:
    """``SIGNADAM 003_... Cor. 5.4 [given]``: where a predicted rate comes from and how firm it is."""
    source = getattr(prediction, "source", "")
    if hasattr(source, "to_json"):
        source = source.to_json()
    if isinstance(source, dict):
        source = " ".join(str(source[k]) for k in ("seed", "theorem") if source.get(k))
    status = getattr(prediction, "status", "")
    status = f" [{status}]" if status and not str(status).startswith("[") else (f" {status}" if status else "")
    return f"{source}{status}".strip()


def _pm(value: Optional[float], err: Optional[float], digits: int = 3, narrow: bool = False) -> tuple[str, str]:
    """``-0.613 ± 0.054`` as text and LaTeX; ``narrow``: LaTeX that may break before the ``±``."""
    if value is None:
        return "-", "--"
    text = f"{value:+.{digits}f} ± {err:.{digits}f}"
    if narrow:
        return text, f"${value:+.{digits}f}$ $\\pm {err:.{digits}f}$"
    return text, f"${value:+.{digits}f} \\pm {err:.{digits}f}$"


def _window_cells(verdict: Verdict) -> Cell:
    w = verdict.window
    if verdict.fit is None:
        return Cell("-", "--")
    return Cell(f"[{w.t0:.3g}, {w.t1:.3g}] ({w.points} pts)", f"$[{_sci(w.t0)},$ ${_sci(w.t1)}]$ ({w.points})",
                value={"t0": w.t0, "t1": w.t1, "points": w.points, "source": w.source})


def _sci(x: float) -> str:
    mantissa, _, exponent = f"{x:.2e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = int(exponent)
    return f"{mantissa}\\cdot 10^{{{power}}}" if mantissa != "1" else f"10^{{{power}}}"


def verdict_table(records: Sequence[FitRecord], caption: str = "Predicted vs fitted margin-gap rates",
                  label: str = "tab:fits", seeds_note: str = "", columns: Sequence[str] = ()) -> Table:
    """One row per configuration: prediction (with source), bound's slope envelope, fit, window, verdict.

    ``columns`` names further config keys shown after ``a`` (``rates sweep``: the options its grid varies).
    """
    table = Table(["algorithm", "a", *columns, "predicted rate", "source", "bound slope envelope",
                   "fitted slope ± s.e.", "window t", "replicates", "log power k", "bound holds", "dominant term",
                   "stated rate", "verdict"], caption=caption, label=label)
    tolerances = set()
    for rec in records:
        if _is_direction_record(rec):
            table.add(*_direction_row(rec, columns))
            continue
        v = rec.verdict
        tolerances.add(v.tolerance)
        fit_text, fit_latex = _pm(v.fit.slope if v.fit else None, v.fit.stderr if v.fit else None)
        k_text, k_latex = _pm(v.log_power.slope if v.log_power else None,
                              v.log_power.stderr if v.log_power else None, 2, narrow=True)
        env = v.envelope
        replicates = rec.replicates or {"runs": len(rec.seeds), "independent": len(rec.seeds)}
        found = v.assessment
        table.add(
            Cell(str(rec.config.algo), value=rec.config.algo),
            _schedule_cell(rec.config),
            *_column_cells(rec.config, columns),
            _rate_cell(rec.prediction),
            Cell(_source_cell_text(rec)),  # Table.to_latex wraps it (the file name may break)
            Cell("-" if env is None else env.text(),
                 "--" if env is None else f"$[{env.fastest:+.3f},$ ${env.slowest:+.3f}]$",
                 value=None if env is None else env.to_json()),
            Cell(fit_text, fit_latex, value=None if v.fit is None else
                 {"slope": v.fit.slope, "stderr": v.fit.stderr, "ci95": [v.fit.ci_low, v.fit.ci_high]}),
            _window_cells(v),
            Cell(f"{replicates['independent']} of {replicates['runs']}",
                 value={**replicates, "seeds": list(rec.seeds)}),
            Cell(k_text, k_latex, value=None if v.log_power is None else
                 {"k": v.log_power.slope, "stderr": v.log_power.stderr}),
            *_finding_cells(found),
            Cell(v.label, value={"verdict": v.label, "reason": v.reason}),
        )
    table.notes.append(
        "Fitted slope: least squares of log gap on log t over the window, mean over the independent replicates; "
        "± is the bootstrap standard error (resampling replicates and checkpoints, seeded). Replicates: "
        "independent runs of all given (full-batch runs on one data draw, or byte-identical runs, count once). "
        "Window: after the observable entry into the separable, monotone-loss phase (full-batch NSD: loss falling "
        "at least at the descent lemma's rate (gamma/4) sum eta), the last two decades of the run, t >= 1e3, "
        "above 100x the margin solver's accuracy; several replicates share the intersection of their windows.")
    table.notes.append(
        "Bound slope envelope: the bound is C1/S1 + C2 S2/S1 (+ C3 S_{3/2}/S1 for Adam), S_p = sum eta^p, with "
        "unknown constants C >= 0; the envelope is the range of its least-squares log-log slope over the window "
        "for every ratio of the constants (exact partial sums). Verdicts are one-sided (docs/theory.md sec. 4): "
        "tight = inside the envelope widened by the tolerance "
        f"{', '.join(f'{t:g}' for t in sorted(tolerances)) or DEFAULT_TOLERANCE}; loose = faster than the fastest "
        "member; violated = slower than the slowest member with the 95% interval excluding it; inconclusive = "
        "too short, at the floor, not separated, a gap that has not moved (pre-asymptotic), too uncertain, or a "
        "slope that still bends; no-theorem = no family's hypotheses cover the run; not-applicable = a hypothesis "
        "fails on the data's constants (e.g. gamma_eff <= 0).")
    table.notes.append("Log power k: slope of log(gap t^r) on log log t with r the predicted exponent.")
    table.notes.append(
        "Three separate findings, none inferred from another. Bound holds: the 95% upper limit of the fitted slope "
        "is at most the slowest bound term's slope over the window plus the tolerance (violated: the fitted slope "
        "is slower than it by more than the tolerance and the 95% interval excludes it). Dominant term: the "
        "non-negative least-squares fit of the gap on the bound's terms over the window (relative residuals), "
        "with the leading term's share of the fitted sum at the window's start and end [fitted]; 'none' when the "
        "gap decays faster than every term. Stated rate: the paper's O(t^-r (log t)^k) (predicted rate and source "
        "columns) is attained when the fitted slope is within the tolerance of that rate's own slope over the "
        "window and the fitted log power within 1/2 of k; not attained when either 95% interval lies outside "
        "its band. Verdict: violated = the bound fails; tight = the bound holds and the stated rate is attained; "
        "loose = the bound holds and the gap decays faster than the stated rate; inconclusive otherwise.")
    for rec in records:
        if _is_direction_record(rec):
            continue
        target = rec.verdict.context.get("gap_target")
        if target is not None and target["name"] != "gamma":
            table.notes.append(f"{_row_name(rec.config)}, gap fitted: {gap_target_text(target)}.")
        if rec.verdict.label not in ("tight", "loose"):
            table.notes.append(f"{_row_name(rec.config)}, {rec.verdict.label}: {rec.verdict.reason}.")
    if seeds_note:
        table.notes.append(seeds_note)
    table.notes += _plugin_notes(records)
    references = references_note(source_text(rec.prediction) for rec in records if not _is_direction_record(rec))
    table.latex_tables = _paper_tables(_schedules_as_notes(table, records), 2 + len(columns), references)
    table.notes.append(references)
    return table


# The columns a paper prints as the result; the rest of a row is its provenance, in a table of its own.
RESULT_COLUMNS = ("predicted rate", "source", "fitted slope ± s.e.", "bound holds", "stated rate", "verdict")


PROVENANCE_COLUMNS = ("window t", "bound slope envelope", "log power k", "replicates", "bound holds",
                      "dominant term", "stated rate")


def _latex_of(cell: Cell) -> str:
    return cell.latex if cell.latex is not None else latex_escape(cell.text)


def _numbers_behind(cell: Cell, outcome: str) -> Cell:
    """``holds: 95% CI [...] vs ...`` -> ``95% CI [...] vs ...``; ``not attained (faster): slope ...`` ->
    ``faster: slope ...``: a finding's cell without the outcome the results table already prints."""
    text = cell.text
    if not text.startswith(outcome):
        return cell
    rest = text[len(outcome):].strip()
    qualifier = re.match(r"\((.*?)\):\s*", rest)
    rest = f"{qualifier.group(1)}: {rest[qualifier.end():]}" if qualifier else rest.lstrip(": ")
    return Cell(rest or text, value=cell.value)


def _schedules_as_notes(table: Table, records: Sequence[Any]) -> Table:
    """The verdict table as a paper prints it: a general schedule's row names it ``schedule 1``, ``schedule 2``, ...
    in the ``a`` column (then headed ``a or schedule``) and a note defines each as a formula, so that one column
    of short keys keeps the results one table (a formula in a key column would split it into column parts)."""
    column = list(table.columns).index("a")
    numbers: dict[str, int] = {}
    formulas: dict[str, str] = {}
    rows = []
    for rec, row in zip(records, table.rows):
        row = list(row)
        config = rec.config
        if config.general_schedule:
            schedule = row[column]
            number = numbers.setdefault(schedule.text, len(numbers) + 1)
            formulas[schedule.text] = schedule.latex
            row[column] = Cell(f"schedule {number}", value=schedule.value)
        rows.append(row)
    if not numbers:
        return table
    note = Cell("Schedules: " + "; ".join(f"schedule {n}: eta_t = {text}" for text, n in numbers.items()) + ".",
                "Schedules: " + "; ".join(rf"\emph{{schedule {n}}}: $\eta_t = {formulas[text].strip('$')}$"
                                          for text, n in numbers.items()) + ".")
    columns = ["a or schedule" if i == column else name for i, name in enumerate(table.columns)]
    return replace(table, columns=columns, rows=rows, notes=[note, *table.notes], latex_tables=())


def _paper_tables(table: Table, keys: int, references: str) -> list[Table]:
    """What ``table.tex`` prints for a verdict table: a compact results table (prediction with its source as a
    lettered note, fitted slope, each finding's outcome, verdict) and a provenance table keyed the same way
    (window, slope envelope, log power, replicates, each finding with its numbers) with the notes on how
    every number is measured. Markdown and JSON keep the one wide table."""
    columns = list(table.columns)
    key_names = columns[:keys]
    label = table.label or "tab:fits"
    provenance_label = f"{label}-provenance"

    def pick(names: Sequence[str], outcome_only: bool) -> list[list[Cell]]:
        rows = []
        for row in table.rows:
            cells = []
            for name in names:
                cell = row[columns.index(name)]
                if name in ("bound holds", "stated rate") and isinstance(cell.value, dict):
                    # the results table shows the outcome; its provenance, the numbers behind it
                    cell = Cell(cell.value["outcome"]) if outcome_only else _numbers_behind(cell, cell.value["outcome"])
                cells.append(cell)
            rows.append(cells)
        return rows

    result_names = key_names + list(RESULT_COLUMNS)
    schedules = [note for note in table.notes if _cell_text(note).startswith("Schedules: ")]
    result = Table(result_names, pick(result_names, True), caption=table.caption, label=label,
                   notes=[*schedules,
                          Cell("Windows, slope envelopes, log powers, replicates and the numbers behind each finding: "
                               "the provenance table below.",
                               rf"Windows, slope envelopes, log powers, replicates and the numbers behind each "
                               rf"finding: Table~\ref{{{provenance_label}}}."), references],
                   footnoted={"source": "predicted rate"}, grouped=1)
    # one paragraph per row, each number named: a paper's provenance table reads as text, and six narrow
    # columns of wrapped findings would take three times the height
    details = pick([name for name in PROVENANCE_COLUMNS if name in columns], False)
    replicates = {row[columns.index("replicates")].text for row in table.rows}
    shown = [name for name in PROVENANCE_COLUMNS if not (name == "replicates" and len(replicates) == 1)]
    rows = []
    for keys_of_row, cells in zip(pick(key_names, False), details):
        named = [(name, cell) for name, cell in zip(PROVENANCE_COLUMNS, cells) if name in shown]
        rows.append(keys_of_row + [Cell("; ".join(f"{name}: {cell.text}" for name, cell in named),
                                        "; ".join(rf"\emph{{{latex_escape(name)}}}: {_latex_of(cell)}"
                                                  for name, cell in named))])
    notes = list(table.notes)
    if len(replicates) == 1:
        notes.insert(0, f"Replicates: {replicates.pop()} independent in every row.")
    provenance = Table(key_names + ["provenance: " + ", ".join(shown)], rows,
                       caption=f"{table.caption}: provenance of each row", label=provenance_label,
                       notes=notes, grouped=1, small=True)
    return [result, provenance]


def _plugin_notes(records: Sequence[Any]) -> list[str]:
    """``Answers from plug-ins: optimiser l3-gd, family lp-nsd and paper GLSS2018 from file /x.py.``: which rows'
    predictions plug-ins gave (none: the built-ins gave every one)."""
    from rates.symbolic.theorems.provenance import provenance, provenance_lines

    entries = []
    for rec in records:
        family = getattr(getattr(rec, "gate", None), "family", None)
        source = getattr(getattr(rec, "prediction", None), "source", None)
        for entry in provenance(rec.config.algo, getattr(family, "name", None), getattr(source, "seed", None)):
            if entry not in entries:
                entries.append(entry)
    return [line + "." for line in provenance_lines(entries, label="Answers from plug-ins: ")]


def _cell_text(cell: Any) -> str:
    return cell.text if isinstance(cell, Cell) else str(cell)


def _is_direction_record(rec: Any) -> bool:
    """A per-sample run judged on its limit direction (MINIBATCH Thm 4.9), not on a rate."""
    from rates.judge.limit_direction import PerSampleRecord

    return isinstance(rec, PerSampleRecord)


def _finding_cells(found: Any) -> tuple[Cell, Cell, Cell]:
    if found is None:
        return Cell("-"), Cell("-"), Cell("-")
    return tuple(Cell(f.cell(), value=f.to_json()) for f in (found.bound, found.dominant, found.stated_rate))


def _direction_row(rec: Any, columns: Sequence[str]) -> list[Cell]:
    """A Thm 4.9 row: no rate, no slope envelope; the decay of 1 - cos(W_t, M) in the fit columns."""
    from rates.judge.limit_direction import THEOREM

    v, d = rec.verdict, rec.verdict.decay
    fit_text, fit_latex = _pm(d.slope if d else None, d.slope_stderr if d else None)
    window = Cell("-", "--") if d is None else Cell(
        f"[{d.t_start:.3g}, {d.t_end:.3g}] ({d.points} pts)", f"$[{_sci(d.t_start)},$ ${_sci(d.t_end)}]$ ({d.points})")
    return [Cell(str(rec.config.algo), value=rec.config.algo),
            _schedule_cell(rec.config),
            *_column_cells(rec.config, columns),
            Cell("W_t/||W_t|| -> M/||M|| (a limit, no rate)", value=None), Cell(THEOREM),
            Cell("-", "--"), Cell(f"1 - cos(W_t, M): {fit_text}", f"$1-\\cos$: {fit_latex}", value=None if d is None
                                  else {"slope": d.slope, "stderr": d.slope_stderr}),
            window, Cell(f"{len(rec.seeds)} of {len(rec.seeds)}", value={"seeds": list(rec.seeds)}),
            Cell("-", "--"), Cell("-"), Cell("-"), Cell(f"limit direction: {v.outcome}"),
            Cell(v.label, value={"verdict": v.label, "reason": v.reason})]


def _column_cells(config: RunConfig, columns: Sequence[str]) -> list[Cell]:
    """The cells of the further ``columns`` of a row (options a sweep varies), as the configuration records them."""
    return [Cell(str(value), value=value) for value in map(config.configuration_value, columns)]


def bound_label(rec: FitRecord) -> str:
    return "no rate theorem" if rec.prediction is None else f"bound {rec.prediction.rate.text}"


def _rate_cell(prediction: Any) -> Cell:
    if prediction is None:
        return Cell("none (no rate theorem)", "--", value=None)
    rate = prediction.rate
    return Cell(rate.text, f"${rate.latex}$", value={"exponent": str(rate.exponent),
                                                     "log_power": int(rate.log_power), "text": rate.text})


def _source_cell_text(rec: FitRecord) -> str:
    if rec.prediction is not None:
        return source_text(rec.prediction)
    family = getattr(rec.gate, "family", None)
    return "-" if family is None else f"{family.source.seed} {family.source.theorem}"


def fits_table(paths: Sequence[str | os.PathLike], tolerance: float = DEFAULT_TOLERANCE) -> Table:
    """Predicted vs fitted table of ``rates table --fits FILES...``."""
    return verdict_table(load_fit_inputs(paths, tolerance))


def fits_records_for_cli(fits: bool, files: Optional[Sequence[Path]]) -> list[FitRecord]:
    """``rates table --fits FILES...``: the flag and its files are checked here, in one place."""
    if not files:
        raise InputError("fits", "give one or more Trajectory files after --fits (rates run --out / rates report)")
    if not fits:
        raise InputError("fits", f"file arguments need --fits (got {files[0]})")
    return load_fit_inputs(files)


def fits_table_for_cli(fits: bool, files: Optional[Sequence[Path]]) -> Table:
    return verdict_table(fits_records_for_cli(fits, files))
