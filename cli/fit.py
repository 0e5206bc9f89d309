"""``rates fit``: fit the margin gap's rate of a Trajectory (read or run) and judge it against the theorem.

Prints, per configuration: the predicted rate with its source, the bound's local slope over the window,
the fitted slope ± bootstrap error with its window, the fitted log power and the verdict (DESIGN.md,
"Interfaces"). Exit code 1 when a verdict is ``violated``, 2 on bad input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import typer

from rates.compare import DEFAULT_TOLERANCE, choose_window, parse_window
from rates.errors import InputError
from rates.report import FitRecord, fit_group, group_runs, run_slug, source_text

_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """``0..4`` (inclusive), ``0,2,5`` or ``3`` -> a list of distinct non-negative seeds."""
    match = _RANGE.match(text)
    if match:
        lo, hi = int(match.group(1)), int(match.group(2))
        if lo > hi:
            raise InputError(option, f"range {text!r} is empty (needs A <= B in A..B)")
        return list(range(lo, hi + 1))
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        raise InputError(option, f"expected a range A..B (e.g. 0..4), a list such as 0,2,5 or one seed, got {text!r}")
    seeds = [int(p) for p in parts]
    if len(set(seeds)) != len(seeds):
        raise InputError(option, f"repeated seed in {text!r}")
    return seeds


def _plot_path(base: Path, slug: str, several: bool) -> Path:
    return base.with_name(f"{base.stem}_{slug}{base.suffix}") if several else base


def describe(record: FitRecord) -> str:
    """The human-readable verdict block: every number with its source, window and uncertainty."""
    v, pred = record.verdict, record.prediction
    seeds = ", ".join(str(s) for s in record.seeds)
    lines = [f"{record.title}  (seeds {seeds})",
             f"  predicted rate : O({pred.rate.text})  [{source_text(pred)}]"]
    if v.fit is None:
        lines.append(f"  window         : {v.window.problem}")
    else:
        lines += [
            f"  bound local slope over the window : {v.predicted_local_slope:+.3f}",
            f"  fitted slope   : {v.fit.text()}",
        ]
        if v.log_power is not None:
            lines.append(f"  log power k    : {v.log_power.slope:+.2f} ± {v.log_power.stderr:.2f} "
                         f"(fit of log(gap t^{pred.rate.exponent}) on log log t, same window)")
    lines.append(f"  verdict        : {v.label} (tolerance {v.tolerance:g}) - {v.reason}")
    lines += [f"  note           : {note}" for note in v.notes]
    return "\n".join(lines)


def fit(
    from_file: Optional[Path] = typer.Option(None, "--from", help="a Trajectory JSON (rates run --out)"),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="seeds: 0..4, 0,2,5 or 3"),
    window: Optional[str] = typer.Option(None, "--window", help="fit window T0:T1 (default: automatic)"),
    tolerance: float = typer.Option(DEFAULT_TOLERANCE, "--tolerance", help="slope tolerance of 'tight', in (0, 1)"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="draw the fit to FILE.png or FILE.pdf"),
    as_json: bool = typer.Option(False, "--json", help="print the fit records as JSON"),
) -> None:
    """Fit the empirical rate of the margin gap and judge it against the predicted bound."""
    from rates.plots import check_figure_path, plot_fit
    from rates.trajectory import load

    if not (0 < tolerance < 1):
        raise InputError("--tolerance", f"must be in (0, 1), got {tolerance:g}")
    user_window = parse_window(window) if window is not None else None
    wanted = parse_seeds(seeds) if seeds is not None else None
    if plot is not None:
        check_figure_path(plot)
    if from_file is None:
        raise InputError("--from", "give a Trajectory file with --from FILE.json")
    runs = load(from_file).runs
    if wanted is not None:
        runs = [run for run in runs if run.config.get("seed") in wanted]
        if not runs:
            raise InputError("--seeds", f"no run of {from_file} has a seed in {seeds}")
    if user_window is not None:
        for run in runs:  # refuse a window outside any run before fitting or writing anything
            choose_window(run, user_window)

    records = [fit_group(group, tolerance, user_window) for group in group_runs(runs)]
    if plot is not None:
        for rec in records:
            plot_fit(rec.runs, rec.verdict, rec.prediction, _plot_path(plot, run_slug(rec.config), len(records) > 1),
                     title=rec.title, bound_label=f"bound {rec.prediction.rate.text}")
    if as_json:
        print(json.dumps([rec.to_json() for rec in records], indent=1, default=str))
    else:
        print("\n\n".join(describe(rec) for rec in records))
    if any(rec.verdict.label == "violated" for rec in records):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("fit")(fit)
