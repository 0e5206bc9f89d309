"""The sweep directory: what the grid was, which configurations are done, one Trajectory per task.

Setting
    ``DIR/sweep.json`` records the grid digests this directory accepts (the first run's, plus any added
    with ``--merge``) and their normalised grids; ``DIR/trajectories/task-<key>.json`` holds one finished
    task (its ``meta.sweep.configurations`` lists the configuration key of each run, in run order);
    ``DIR/index.jsonl`` lists finished tasks, one JSON line each, appended after the file is in place.

Guarantee
    The trajectory files are the truth: a file is written atomically (``rates.io``), so it is either
    complete or absent, and a configuration counts as done exactly when a complete file lists it. The
    index is rebuilt from the files a killed run left unindexed, and a line cut short by a kill is
    ignored. Configurations already done are never planned again, so no configuration is run twice; an
    exclusive lock on ``DIR/sweep.lock`` keeps a second sweep out of a directory in use.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Optional

from rates.errors import InputError
from rates.trajectory import Run, Trajectory, load, save

SWEEP_SCHEMA = "rates.sweep/1"
MANIFEST = "sweep.json"
INDEX = "index.jsonl"
LOCK = "sweep.lock"
TRAJECTORIES = "trajectories"
GRID_OPTION_NAME = "GRID"


class SweepStore:
    """One sweep directory; use as a context manager to hold its lock."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._lock_file = None

    # ------------------------------------------------------------------------------------ lock
    def __enter__(self) -> SweepStore:
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.root / LOCK, "a+")
        try:
            import fcntl

            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - not POSIX: no lock, as before
            pass
        except OSError:
            self._lock_file.close()
            self._lock_file = None
            raise InputError("out", f"{self.root} is in use by another rates sweep (lock {LOCK} held)") from None
        return self

    def __exit__(self, *exc) -> bool:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None
        return False

    # ------------------------------------------------------------------------------------ manifest
    @staticmethod
    def check_target(root: str | os.PathLike) -> None:
        """Refuse a path that is a file, or a non-empty directory that is not a sweep (before any work)."""
        path = Path(root)
        if path.exists() and not path.is_dir():
            raise InputError("out", f"{path} exists and is not a directory")
        if path.is_dir() and any(p.name != LOCK for p in path.iterdir()) and not (path / MANIFEST).exists():
            raise InputError("out", f"{path} is a non-empty directory without {MANIFEST}; give a new or empty "
                             "directory, or the directory of an earlier rates sweep to resume it")

    def manifest(self) -> Optional[dict[str, Any]]:
        path = self.root / MANIFEST
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise InputError("out", f"{path} is unreadable ({err}); remove it or use another --out") from None
        if not isinstance(data, dict) or data.get("schema") != SWEEP_SCHEMA:
            raise InputError("out", f"{path} is not a rates sweep manifest (schema {SWEEP_SCHEMA!r})")
        return data

    def accept_grid(self, digest: str, grid: dict[str, list[Any]], source: str, configurations: int,
                    merge: bool) -> bool:
        """Record the grid; refuse one that differs from the accepted grids unless ``merge``.

        Returns True when this grid is new to the directory (first run or merged).
        """
        manifest = self.manifest()
        if manifest is None:
            manifest = {"schema": SWEEP_SCHEMA, "grids": {}}
        grids = manifest.setdefault("grids", {})
        if digest in grids:
            return False
        if grids and not merge:
            known = ", ".join(f"{d} ({g.get('configurations')} configurations, from {g.get('source')})"
                              for d, g in grids.items())
            raise InputError(GRID_OPTION_NAME, f"{source} describes another grid ({configurations} configurations, "
                             f"digest {digest}) than the sweep in {self.root} (digest {known}); give --merge to add "
                             "its configurations to this sweep, or choose another --out")
        grids[digest] = {"source": source, "configurations": configurations, "grid": grid,
                         "accepted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        from rates.io import write_text_atomic

        write_text_atomic(self.root / MANIFEST, json.dumps(manifest, indent=1, default=str) + "\n")
        return True

    # ------------------------------------------------------------------------------------ results
    def task_path(self, task_key: str) -> Path:
        return self.root / TRAJECTORIES / f"task-{task_key}.json"

    def indexed(self) -> dict[str, dict[str, Any]]:
        """Index lines by file name; a torn last line (a kill mid-append) is skipped."""
        entries: dict[str, dict[str, Any]] = {}
        path = self.root / INDEX
        if not path.exists():
            return entries
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("file"), str):
                entries[entry["file"]] = entry
        return entries

    def done(self) -> dict[str, str]:
        """Configuration key -> the file that holds it, from the complete trajectory files on disk.

        A file the index does not list (a run killed between the rename and the append) is indexed now.
        """
        entries = self.indexed()
        found: dict[str, str] = {}
        folder = self.root / TRAJECTORIES
        for path in sorted(folder.glob("task-*.json")) if folder.is_dir() else []:
            name = f"{TRAJECTORIES}/{path.name}"
            entry = entries.get(name)
            if entry is None:
                keys = self._keys_in(path)
                if keys is None:
                    continue
                entry = self._append_index(name, keys, {"recovered": True})
            for key in entry["configurations"]:
                if key in found:
                    raise InputError("out", f"configuration {key} appears in both {found[key]} and {name}; "
                                     "the sweep directory was edited by hand")
                found[key] = name
        return found

    @staticmethod
    def _keys_in(path: Path) -> Optional[list[str]]:
        try:
            trajectory = load(path)
        except InputError:
            return None
        keys = trajectory.meta.get("sweep", {}).get("configurations")
        return keys if isinstance(keys, list) and len(keys) == len(trajectory.runs) else None

    def save_task(self, task_key: str, trajectory: Trajectory, configuration_keys: list[str]) -> Path:
        """Write the task's Trajectory atomically, then append its index line."""
        trajectory.meta["sweep"] = {"task": task_key, "configurations": list(configuration_keys)}
        path = save(trajectory, self.task_path(task_key))
        self._append_index(f"{TRAJECTORIES}/{path.name}", configuration_keys,
                           {"task": task_key, "wall_s": trajectory.meta.get("wall_s")})
        return path

    def _append_index(self, name: str, keys: list[str], extra: dict[str, Any]) -> dict[str, Any]:
        entry = {"file": name, "configurations": list(keys), **extra,
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with open(self.root / INDEX, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return entry

    def runs(self, keys: Optional[set[str]] = None) -> list[tuple[str, Run]]:
        """(configuration key, run) for every finished run, or only those whose key is in ``keys``."""
        out = []
        by_file: dict[str, list[str]] = {}
        for key, name in self.done().items():
            by_file.setdefault(name, []).append(key)
        for name in sorted(by_file):
            trajectory = load(self.root / name)
            for key, run in zip(trajectory.meta["sweep"]["configurations"], trajectory.runs):
                if keys is None or key in keys:
                    out.append((key, run))
        return out
