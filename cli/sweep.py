"""``rates sweep GRID.toml --out DIR``: a grid of ``rates run`` configurations as batched engine tasks.

The grid's cells are converted by the click parameters of ``rates run`` itself (:func:`run_converters`),
so a bad cell gets the message ``rates run`` would print for that option, plus the grid key and value.
Everything is validated before the first task; rerunning the command resumes (``rates.sweep.store``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer

from rates.errors import InputError


def _run_command():
    from cli.run import run

    single = typer.Typer()
    single.command()(run)
    return typer.main.get_command(single)


def run_converters() -> tuple[dict[str, Callable[[Any], Any]], dict[str, Any]]:
    """Per grid key, ``rates run``'s parameter conversion (a cell is read as its command-line text) and
    ``rates run``'s default."""
    from rates.sweep.grid import GRID_KEYS  # here: it loads torch, which `rates --help` must not wait for

    command = _run_command()
    context = command.context_class(command, info_name="run")
    parameters = {param.opts[0].lstrip("-"): param for param in command.params if getattr(param, "opts", None)}
    converters, defaults = {}, {}
    for key in GRID_KEYS:
        param = parameters[key]

        def convert(value: Any, param=param, key=key) -> Any:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            try:
                converted = param.process_value(context, text)
                if key == "steps":  # rates run reads --steps as text (it also takes auto); a grid cell is a number
                    from rates.studies.auto_steps import parse_steps

                    converted = parse_steps(converted, auto=False)
                return converted
            except InputError:
                raise
            except Exception as err:  # click.BadParameter (typer >= 0.20 vendors its own click)
                if not hasattr(err, "format_message"):
                    raise
                raise InputError(f"--{key}", getattr(err, "message", str(err))) from None

        converters[key] = convert
        if not param.required:
            defaults[key] = param.default
    return converters, defaults


def sweep(
    grid: Path = typer.Argument(..., help="TOML file with a [grid] table: rates run options, a list varies one"),
    out: Path = typer.Option(..., "--out", help="sweep directory (created; rerun the command to resume)"),
    scheduler: str = typer.Option("local", "--scheduler", help="local (an embedded Dask LocalCluster), serial "
                                  "(this process) or the address of a running Dask scheduler (tcp://host:8786)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes of the local cluster "
                                          "(default: one per core)"),
    merge: bool = typer.Option(False, "--merge", help="accept a grid that differs from the one DIR was started "
                               "with and add its configurations to the sweep"),
    max_tasks: Optional[int] = typer.Option(None, "--max-tasks", help="stop after N tasks (rerun to resume)"),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="run again the configurations that failed "
                                      "(diverged or not certified) in an earlier run of this sweep"),
    runs_per_task: int = typer.Option(32, "--runs-per-task", help="at most this many runs in one engine call"),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="write a figure per configuration"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="a progress bar over tasks (terminal only)"),
) -> None:
    """Run every configuration of GRID not yet done in DIR, then fit them all and write the verdict tables.

    GRID is a TOML file with a [grid] table whose keys are rates run options: a list varies the option, a
    scalar fixes it, a key left out keeps its rates run default. Required: {REQUIRED_GRID_KEYS}. The others:
    {OPTIONAL_GRID_KEYS}. For example:

    \b
        [grid]
        algo = ["signgd", "ngd", "spectral-gd"]
        a = ["1/2", "3/4"]
        seed = [0, 1]      # the data draw and the reshuffling seed, as in rates run
        steps = 60000
        data = "default"
        batch = ["none", 10]   # "none" leaves an optional option out (full batch)
    """
    from rates.numeric.tasks import executor_name
    from rates.sweep.run import run_sweep

    executor = executor_name(scheduler)
    if workers is not None and (workers < 1 or executor != "local"):
        raise InputError("--workers", f"must be a positive integer with --scheduler local, got {workers} "
                         f"(scheduler {executor})")
    if max_tasks is not None and max_tasks < 0:
        raise InputError("--max-tasks", f"must be a non-negative integer, got {max_tasks}")
    if runs_per_task < 1:
        raise InputError("--runs-per-task", f"must be a positive integer, got {runs_per_task}")
    converters, defaults = run_converters()
    outcome = run_sweep(grid, out, converters, defaults, executor=executor, workers=workers, merge=merge,
                        max_tasks=max_tasks, runs_per_task=runs_per_task, progress=progress, figures=figures,
                        retry_failed=retry_failed, echo=typer.echo)
    for options, message in outcome.failed.values():
        typer.echo(f"failed: {options}: {message}", err=True)
    if not outcome.complete:
        typer.echo(f"stopped after {outcome.tasks_run} tasks ({outcome.tasks_left} left) in {outcome.seconds:.1f} s; "
                   "rerun the same command to resume")
        return
    typer.echo(f"{outcome.tasks_run} tasks run in {outcome.seconds:.1f} s; wrote {len(outcome.written)} files to {out}")
    table = out / "table.md"
    if table.exists():
        typer.echo("")
        typer.echo(table.read_text(encoding="utf-8"), nl=False)
    if any(rec.verdict.label == "violated" for rec in outcome.records):
        raise typer.Exit(1)  # docs/design.md: exit 1 when a verdict fails


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
