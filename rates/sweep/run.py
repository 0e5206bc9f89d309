"""``rates sweep``: validate a grid, run what is not done yet as engine tasks, fit every configuration.

Setting
    A grid file (:mod:`rates.sweep.grid`) and a sweep directory (:mod:`rates.sweep.store`).

Algorithm
    1. Load and validate the whole grid (every cell, every configuration) -- nothing is written before.
    2. Lock the directory; refuse a grid other than the accepted ones unless ``merge``.
    3. Plan tasks for the configurations no complete trajectory file holds, run them with
       :func:`rates.sweep.tasks.run_tasks`, and save each one as it arrives (file, then index line).
    4. When every configuration of the grid is done, fit all configurations of the directory (seeds
       pooled, as ``rates report``) and write ``table.md``, ``table.tex``, ``table.json``, ``fits.json``
       and figures with :func:`rates.report.write_outputs`.

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
from rates.sweep.tasks import run_tasks

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
              progress: bool = False, figures: bool = True,
              echo: Callable[[str], None] = lambda line: None) -> SweepOutcome:
    """Run (or resume) the sweep of ``grid_path`` in ``out_dir``; see the module docstring."""
    started = time.perf_counter()
    columns, configurations = prepare(grid_path, converters, defaults,
                                      check_device=executor in ("serial", "local"))
    SweepStore.check_target(out_dir)
    with SweepStore(out_dir) as store:
        store.accept_grid(grid_digest(configurations), columns, str(grid_path), len(configurations), merge)
        done = store.done()
        pending = [c for c in configurations if c.key not in done]
        planned = plan_tasks(pending, runs_per_task)
        echo(f"{len(configurations)} configurations: {len(configurations) - len(pending)} already done, "
             f"{len(pending)} to run in {len(planned)} tasks ({executor})")

        def save(index: int, trajectory) -> None:
            task, keys = planned[index]
            store.save_task(task.key, trajectory, keys)

        limit = None if max_tasks is None else max(0, int(max_tasks))
        run_tasks([task for task, _ in planned], executor, workers=workers, progress=progress, on_result=save,
                  limit=limit)
        ran = len(planned) if limit is None else min(limit, len(planned))
        outcome = SweepOutcome(len(configurations), len(configurations) - len(pending), ran, len(planned) - ran,
                               time.perf_counter() - started)
        if outcome.complete:
            order = {c.key: i for i, c in enumerate(configurations)}
            outcome.records, outcome.written = _fit_and_write(store, Path(out_dir), figures, started, order)
    return outcome


def _fit_and_write(store: SweepStore, out_dir: Path, figures: bool, started: float, order: Mapping[str, int]):
    from rates.report import fit_group, group_runs, write_outputs

    manifest = store.manifest() or {}
    grids = manifest.get("grids", {})
    # the grid's order (seeds of one configuration adjacent and ascending); merged grids' leftovers last
    keyed = sorted(store.runs(), key=lambda item: order.get(item[0], len(order)))
    runs = [run for _, run in keyed]
    records = [fit_group(group) for group in group_runs(runs)]
    varying = [_CONFIG_FIELD.get(key, key) for key in GRID_KEYS if key not in _TABLE_FIXED_KEYS
               and len({json.dumps(v, default=str) for g in grids.values() for v in g["grid"].get(key, [])}) > 1]
    slugs = _unique_slugs(records, varying)
    steps = sorted({int(run.config["steps"]) for run in runs})
    seeds = sorted({run.config.get("data_seed") for run in runs}, key=str)
    seeds_note = (f"Sweep of {len(runs)} runs ({len(records)} configurations; seeds {', '.join(map(str, seeds))} "
                  f"pooled per configuration, each seed a data draw and a reshuffling seed); steps "
                  f"{', '.join(map(str, steps))}; grids: {', '.join(g.get('source', '?') for g in grids.values())}.")
    meta = {"command": "rates sweep", "grids": list(grids), "wall_s": time.perf_counter() - started}
    written = write_outputs(records, out_dir, seeds_note, caption="Sweep: predicted vs fitted margin-gap rates",
                            figures=figures, meta=meta, trajectories=False,
                            slug=lambda config: slugs[_config_id(config)], columns=varying)
    return records, written


def _config_id(config: Mapping[str, Any]) -> str:
    from rates.report import config_key

    return config_key(dict(config))


def _unique_slugs(records, varying) -> dict[str, str]:
    """File stems for the figures: ``signgd_a1-2`` plus the varied options, numbered if still equal."""
    from rates.report import run_slug

    slugs: dict[str, str] = {}
    used: set[str] = set()
    for rec in records:
        parts = [run_slug(rec.config)] + [f"{key}{rec.config.get(key)}" for key in varying]
        stem = re.sub(r"[^A-Za-z0-9_.+-]", "-", "_".join(parts))
        name, count = stem, 1
        while name in used:
            count += 1
            name = f"{stem}_{count}"
        used.add(name)
        slugs[_config_id(rec.config)] = name
    return slugs
