"""The sweep directory: what the grid was, which configurations are done, one Trajectory per task.

Setting
    ``DIR/sweep.json`` records the grid digests this directory accepts (the first run's, plus any added
    with ``--merge``) and their normalised grids; ``DIR/trajectories/task-<key>.json`` holds one finished
    task (its ``meta.sweep.configurations`` lists the configuration key of each run, in run order);
    ``DIR/index.jsonl`` lists finished tasks, one JSON line each (with the file's sha256), appended after the
    file is in place; ``DIR/failed.jsonl`` lists configurations whose run failed (diverged, or the engine
    raised), with the message, so that they are reported instead of rerun on every resume.

Guarantee
    The trajectory files are the truth: a file is written atomically (``rates.io``), so it is either
    complete or absent, and a configuration counts as done exactly when a complete file lists it. The
    index is rebuilt from the files a killed run left unindexed, and a line that is not a record (cut short
    by a kill, edited by hand) is removed. A task file whose bytes no longer match its index line's sha256
    (or that no longer parses) is moved to ``DIR/damaged/`` and its configurations are run again. Every such
    repair is reported (``notes``). Configurations already done are never planned again, so no configuration
    is run twice; an exclusive lock on ``DIR/sweep.lock`` keeps a second sweep out of a directory in use.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Optional

from rates.errors import InputError
from rates.numeric.trajectory import Run, Trajectory, load, save

SWEEP_SCHEMA = "rates.sweep/1"
MANIFEST = "sweep.json"
INDEX = "index.jsonl"
FAILED = "failed.jsonl"
DAMAGED = "damaged"
LOCK = "sweep.lock"
TRAJECTORIES = "trajectories"
GRID_OPTION_NAME = "GRID"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SweepStore:
    """One sweep directory; use as a context manager to hold its lock."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._lock_file = None
        self.notes: list[str] = []  # what resuming had to repair (damaged files moved aside), for the user

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
        except (OSError, ValueError, RecursionError) as err:  # ValueError: bad JSON or bad UTF-8
            raise InputError("out", f"{path} is unreadable ({err}); remove it or use another --out") from None
        if not isinstance(data, dict) or data.get("schema") != SWEEP_SCHEMA:
            raise InputError("out", f"{path} is not a rates sweep manifest (schema {SWEEP_SCHEMA!r})")
        grids = data.get("grids", {})
        if not isinstance(grids, dict) or not all(isinstance(g, dict) and isinstance(g.get("grid", {}), dict)
                                                  for g in grids.values()):
            raise InputError("out", f"{path}: \"grids\" must map grid digests to grids, got "
                             f"{json.dumps(grids, default=str)[:60]}; the file was edited by hand: restore or "
                             "remove it")
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
        """Index lines by file name; a line that is not a task record (a torn last line after a kill
        mid-append, a line edited by hand) is removed, with a note."""
        def is_entry(entry: Any) -> bool:
            return (isinstance(entry, dict) and isinstance(entry.get("file"), str)
                    and isinstance(entry.get("configurations"), list)
                    and all(isinstance(key, str) for key in entry["configurations"]))

        return {entry["file"]: entry for entry in self._records(self.root / INDEX, is_entry, "task records")}

    def _records(self, path: Path, valid, what: str) -> list[dict[str, Any]]:
        """The JSON lines of ``path`` that ``valid`` accepts. The others are removed from the file (rewritten
        atomically) and the repair is noted for the user: nothing is dropped silently."""
        kept, dropped = [], []
        for number, line in enumerate(self._lines(path), 1):
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                entry = None
            if entry is not None and valid(entry):
                kept.append((line, entry))
            elif line.strip():
                dropped.append((number, line))
        if dropped:
            from rates.io import write_text_atomic

            write_text_atomic(path, "".join(line + "\n" for line, _ in kept))
            number, line = dropped[0]
            shown = line if len(line) <= 40 else line[:37] + "..."
            self._note(f"{path.name}: removed {len(dropped)} line(s) that are not {what} (line {number}: "
                       f"{shown!r}); the task files are the truth, so nothing else is lost")
        return [entry for _, entry in kept]

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _lines(self, path: Path) -> list[str]:
        """The lines of a JSON-lines file of the store; [] when absent; InputError when it cannot be one."""
        if not path.exists():
            return []
        if not path.is_file():
            raise InputError("out", f"{path} is not a file (it should be the sweep's JSON-lines record); "
                             "move it away and rerun: the record is rebuilt from the task files")
        try:
            return path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as err:
            raise InputError("out", f"cannot read {path}: {err.strerror}") from None

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
            if entry is not None and not self._intact(path, entry):
                self._move_damaged(path, "its bytes differ from the sha256 of its index line")
                continue
            if entry is None:
                keys = self._keys_in(path)
                if keys is None:
                    self._move_damaged(path, "it is not a complete sweep task file")
                    continue
                entry = self._append_index(name, keys, {"recovered": True, "sha256": _sha256(path)})
                self._note(f"{name} was not in {INDEX} (a run stopped between writing and recording it); "
                           "recorded now")
            for key in entry["configurations"]:
                if key in found:
                    raise InputError("out", f"configuration {key} appears in both {found[key]} and {name}; "
                                     "the sweep directory was edited by hand")
                found[key] = name
        return found

    def _intact(self, path: Path, entry: dict[str, Any]) -> bool:
        """The file is the one the index line was written for: its sha256, or (a line without one) it parses
        and lists the same configurations."""
        digest = entry.get("sha256")
        if isinstance(digest, str):
            return _sha256(path) == digest
        return self._keys_in(path) == list(entry["configurations"])

    def _move_damaged(self, path: Path, why: str) -> None:
        target = self.root / DAMAGED / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)
        self._note(f"{path.relative_to(self.root)} was damaged ({why}); moved to "
                   f"{target.relative_to(self.root)}, its configurations run again")

    @staticmethod
    def _keys_in(path: Path) -> Optional[list[str]]:
        try:
            trajectory = load(path)
        except (InputError, RecursionError):
            return None
        sweep = trajectory.meta.get("sweep")
        keys = sweep.get("configurations") if isinstance(sweep, dict) else None
        return keys if isinstance(keys, list) and len(keys) == len(trajectory.runs) else None

    def save_task(self, task_key: str, trajectory: Trajectory, configuration_keys: list[str]) -> Path:
        """Write the task's Trajectory atomically, then append its index line."""
        trajectory.meta["sweep"] = {"task": task_key, "configurations": list(configuration_keys)}
        path = save(trajectory, self.task_path(task_key))
        self._append_index(f"{TRAJECTORIES}/{path.name}", configuration_keys,
                           {"task": task_key, "wall_s": trajectory.meta.get("wall_s"), "sha256": _sha256(path)})
        return path

    # ------------------------------------------------------------------------------------ failed cells
    def record_failures(self, failures: dict[str, tuple[str, str]]) -> None:
        """Append ``key -> (configuration description, message)`` to ``failed.jsonl``."""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(self.root / FAILED, "a", encoding="utf-8") as handle:
            for key, (described, message) in failures.items():
                handle.write(json.dumps({"configuration": key, "options": described, "message": message,
                                         "failed": when}) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def failed(self) -> dict[str, tuple[str, str]]:
        """Configuration key -> (description, message) of the failed configurations no task file holds."""
        found: dict[str, tuple[str, str]] = {}
        for entry in self._records(self.root / FAILED, _is_failure, "failure records"):
            found[entry["configuration"]] = (str(entry.get("options", "")), str(entry.get("message", "")))
        done = self.done()
        return {key: value for key, value in found.items() if key not in done}

    def forget_failures(self, keys: set[str]) -> None:
        """Drop ``keys`` from ``failed.jsonl`` (they are about to be run again)."""
        path = self.root / FAILED
        kept = [json.dumps(entry) for entry in self._records(path, _is_failure, "failure records")
                if entry["configuration"] not in keys]
        if path.exists():
            from rates.io import write_text_atomic

            write_text_atomic(path, "".join(line + "\n" for line in kept))

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


def _is_failure(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("configuration"), str)
