"""``rates sweep``: validate a grid, run what is not done yet as engine tasks, fit every configuration.

Setting
    A grid file (:mod:`rates.sweep.grid`) and a sweep directory (:mod:`rates.sweep.store`).

Algorithm
    1. Load and validate the whole grid (every cell, every configuration) -- nothing is written before.
    2. Lock the directory; refuse a grid other than the accepted ones unless ``merge``.
    3. Plan tasks for the configurations no complete trajectory file holds, run them with
       :func:`rates.numeric.tasks.run_tasks`, and save each one as it arrives (file, then index line).
    4. When every configuration of the grid is done, fit all configurations of the directory (seeds
       pooled, as ``rates report``) and write ``table.md``, ``table.tex``, ``table.json``, ``fits.json``
       and figures with :func:`rates.studies.default_study.write_outputs`.

Guarantee
    Interrupting at any point (Ctrl-C, a killed worker or driver, ``max_tasks``) loses no finished task:
    the next run with the same grid and directory skips them and runs each remaining configuration once.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from rates.numeric.run_config import RunConfig
from rates.numeric.tasks import run_tasks
from rates.sweep.grid import (
    GRID_KEYS,
    Configuration,
    Converter,
    expand,
    grid_digest,
    load_grid,
    normalise_grid,
    plan_tasks,
)
from rates.sweep.store import SweepStore

# Columns the verdict table always has (algo, a) or that name the seeds it pools (seed).
_TABLE_FIXED_KEYS = ("algo", "a", "seed")
# grid key -> the run config field it shows up as
_CONFIG_FIELD = {"adam-beta1": "adam_beta1", "adam-beta2": "adam_beta2", "adam-eps": "adam_eps"}


@dataclass
class SweepOutcome:
    """What a call did: configurations of the grid, how many were already done, tasks run and left."""

    configurations: int
    already_done: int
    tasks_run: int
    tasks_left: int
    seconds: float
    written: list[Path] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (configuration, message)

    @property
    def complete(self) -> bool:
        return self.tasks_left == 0


def prepare(grid_path: str | os.PathLike, converters: Mapping[str, Converter], defaults: Mapping[str, Any],
            check_device: bool = True) -> tuple[dict[str, list[Any]], list[Configuration]]:
    """Load and validate the grid: its normalised columns and its configurations (InputError if bad)."""
    where = Path(grid_path).name
    columns = normalise_grid(load_grid(grid_path), converters, defaults, where=where)
    return columns, expand(columns, where=where, check_device=check_device)


def run_sweep(grid_path: str | os.PathLike, out_dir: str | os.PathLike, converters: Mapping[str, Converter],
              defaults: Mapping[str, Any], executor: str = "local", workers: Optional[int] = None,
              merge: bool = False, max_tasks: Optional[int] = None, runs_per_task: int = 32,
              progress: bool = False, figures: bool = True, retry_failed: bool = False,
              echo: Callable[[str], None] = lambda line: None) -> SweepOutcome:
    """Run (or resume) the sweep of ``grid_path`` in ``out_dir``; see the module docstring."""
    started = time.perf_counter()
    columns, configurations = prepare(grid_path, converters, defaults,
                                      check_device=executor in ("serial", "local"))
    check_budget(configurations, workers, runs_per_task, executor)
    SweepStore.check_target(out_dir)
    created = _new_files(Path(out_dir))
    try:
        with SweepStore(out_dir) as store:
            store.accept_grid(grid_digest(configurations), columns, str(grid_path), len(configurations), merge)
            done = store.done()
            failed = store.failed()
            if retry_failed:
                store.forget_failures(set(failed))
                failed = {}
            for note in store.notes:
                echo(f"note: {note}")
            pending = [c for c in configurations if c.key not in done and c.key not in failed]
            planned = plan_tasks(pending, runs_per_task)
            skipped = sum(c.key in failed for c in configurations)
            echo(f"{len(configurations)} configurations: {len(configurations) - len(pending) - skipped} already "
                 f"done, {len(pending)} to run in {len(planned)} tasks ({executor})"
                 + (f"; {skipped} failed before and are skipped (--retry-failed runs them again)" if skipped else ""))
            described = {c.key: c.describe() for c in configurations}

            def save(index: int, trajectory) -> None:
                task, keys = planned[index]
                good, bad = _split_diverged(trajectory, keys)
                if good:
                    kept = [run for run, key in zip(trajectory.runs, keys) if key in good]
                    store.save_task(task.key, type(trajectory)(kept, trajectory.meta), good)
                if bad:
                    store.record_failures({key: (described[key], message) for key, message in bad.items()})

            def fail(index: int, message: str) -> None:
                store.record_failures({key: (described[key], message) for key in planned[index][1]})

            limit = None if max_tasks is None else max(0, int(max_tasks))
            run_tasks([task for task, _ in planned], executor, workers=workers, progress=progress, on_result=save,
                      limit=limit, on_failure=fail, estimate=False)
            ran = len(planned) if limit is None else min(limit, len(planned))
            outcome = SweepOutcome(len(configurations), len(configurations) - len(pending), ran,
                                   len(planned) - ran, time.perf_counter() - started)
            outcome.failed = store.failed()
            if outcome.complete:
                order = {c.key: i for i, c in enumerate(configurations)}
                outcome.records, outcome.written = _fit_and_write(store, Path(out_dir), figures, started, order,
                                                                  outcome.failed)
    except BaseException:
        if created and not _has_results(Path(out_dir)):
            _remove(created)  # a sweep refused or stopped before its first result leaves nothing behind
        raise
    return outcome


def _new_files(out_dir: Path) -> list[Path]:
    """The paths a first run would create in ``out_dir`` that do not exist yet (deepest first)."""
    from rates.sweep.store import INDEX, LOCK, MANIFEST

    paths = [out_dir / name for name in (MANIFEST, LOCK, INDEX)] + [out_dir]
    return [path for path in paths if not path.exists()]


def _has_results(out_dir: Path) -> bool:
    from rates.sweep.store import FAILED, TRAJECTORIES

    return (out_dir / TRAJECTORIES).exists() or (out_dir / FAILED).exists()


def _remove(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.rmdir() if path.is_dir() else path.unlink()
        except OSError:
            pass


def _split_diverged(trajectory, keys: list[str]) -> tuple[list[str], dict[str, str]]:
    """The keys of the runs that stayed finite, and key -> message for those that diverged."""
    import numpy as np

    good, bad = [], {}
    for run, key in zip(trajectory.runs, keys):
        finite = np.isfinite(run.gap) & np.isfinite(run.margin)
        if finite.all():
            good.append(key)
        else:
            first = int(np.argmax(~finite))
            bad[key] = (f"the run diverged: margin gap {run.gap[first]} at t = {int(run.t[first])} (float64 "
                        f"overflow); choose a smaller eta0")
    return good, bad


def check_budget(configurations, workers: Optional[int], runs_per_task: int = 32, executor: str = "local") -> None:
    """Refuse a grid that cannot fit in memory and announce one estimated over an hour (rates.budget); the
    announced time probes each of the grid's recipes on this machine (:func:`rates.numeric.tasks.estimate_tasks`)
    and counts the processes ``executor`` runs at once."""
    from rates import budget
    from rates.numeric.tasks import estimate_tasks, worker_processes

    if not configurations:
        return
    total = max_bytes = 0.0
    for c in configurations:
        n, k, d = c.shape
        one = budget.estimate_linear_runs(1, c.steps, c.checkpoints, n, k, d)
        total += one.seconds
        max_bytes = max(max_bytes, one.bytes)
    parallel = worker_processes(executor, workers, len(configurations))
    largest = max(configurations, key=lambda c: c.steps)
    estimate = budget.Estimate(int(max_bytes), total / parallel, len(configurations), largest.steps)
    budget.check(estimate, option="GRID", measure=lambda: estimate_tasks(
        [task for task, _ in plan_tasks(configurations, runs_per_task)], workers, executor=executor).seconds)


def _fit_and_write(store: SweepStore, out_dir: Path, figures: bool, started: float, order: Mapping[str, int],
                   failed: Mapping[str, tuple[str, str]]):
    from rates.studies.default_study import write_outputs
    from rates.studies.fitting import fit_group, group_runs

    manifest = store.manifest() or {}
    grids = manifest.get("grids", {})
    # the grid's order (seeds of one configuration adjacent and ascending); merged grids' leftovers last
    keyed = sorted(store.runs(), key=lambda item: order.get(item[0], len(order)))
    runs = [run for _, run in keyed]
    records = [fit_group(group) for group in group_runs(runs)]
    varying = [_CONFIG_FIELD.get(key, key) for key in GRID_KEYS if key not in _TABLE_FIXED_KEYS
               and len({json.dumps(v, default=str) for g in grids.values() for v in g["grid"].get(key, [])}) > 1]
    slugs = _unique_slugs(records, varying)
    steps = sorted({int(run.config.steps) for run in runs})
    seeds = sorted({run.config.recorded_data_seed for run in runs}, key=str)
    seeds_note = (f"Sweep of {len(runs)} runs ({len(records)} configurations; seeds {', '.join(map(str, seeds))} "
                  f"pooled per configuration, each seed a data draw and a reshuffling seed); steps "
                  f"{', '.join(map(str, steps))}; grids: {', '.join(g.get('source', '?') for g in grids.values())}.")
    if failed:
        shown = "; ".join(f"{options}: {message}" for options, message in list(failed.values())[:3])
        more = f" and {len(failed) - 3} more (failed.jsonl)" if len(failed) > 3 else ""
        seeds_note += (f" {len(failed)} configuration(s) failed and are not in the table: {shown}{more}; "
                       "rerun with --retry-failed to run them again.")
    meta = {"command": "rates sweep", "grids": list(grids), "wall_s": time.perf_counter() - started}
    written = write_outputs(records, out_dir, seeds_note, caption="Sweep: predicted vs fitted margin-gap rates",
                            figures=figures, meta=meta, trajectories=False,
                            slug=lambda config: slugs[_config_id(config)], columns=varying)
    current = {path.resolve() for path in written}
    for stale in (out_dir / "figures").glob("*") if (out_dir / "figures").is_dir() else []:
        if stale.is_file() and stale.resolve() not in current:  # a figure of an earlier table (before --merge)
            stale.unlink()
    return records, written


def _config_id(config: RunConfig) -> str:
    return config.configuration_key()


def _unique_slugs(records, varying) -> dict[str, str]:
    """File stems for the figures: ``signgd_a1-2`` plus the varied options, numbered if still equal."""
    from rates.studies.default_study import run_slug

    slugs: dict[str, str] = {}
    used: set[str] = set()
    for rec in records:
        parts = [run_slug(rec.config)] + [f"{key}{rec.config.configuration_value(key)}" for key in varying]
        stem = re.sub(r"[^A-Za-z0-9_.+-]", "-", "_".join(parts))
        name, count = stem, 1
        while name in used:
            count += 1
            name = f"{stem}_{count}"
        used.add(name)
        slugs[_config_id(rec.config)] = name
    return slugs
