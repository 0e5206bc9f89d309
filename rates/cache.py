"""An on-disk cache for results that are slow to derive and fixed by their inputs and the code deriving them.

Two users, both for start-up time (``rates run``, and a repeated ``rates predict`` in under 1 s): the certified max
margins of :mod:`rates.numeric.margins` (a warm ``rates run`` then needs neither cvxpy nor scipy, ~2.5 s of imports
and solves) and the answers of ``rates predict`` (a warm one needs no sympy). As with numba's cache of
compiled kernels, the first use pays the full cost and is timed separately (``benchmarks/startup.py``).

Keys: an entry's key hashes everything that decides its value -- the inputs, the source text of every module
of the packages that compute it (:func:`source_fingerprint`) and the versions of the libraries they call
(:func:`library_versions`). Editing any file of those packages or upgrading a library gives new keys, so a
stale entry is never read; it ages out, as each folder keeps its ``MAX_ENTRIES`` most recently used entries
(:func:`clear` empties a folder). Values are JSON: floats are written with Python's shortest round-trip
``repr``, so a cached float64 is bit-for-bit the computed one.

Where: ``$RATES_CACHE_DIR``, else ``$XDG_CACHE_HOME/rates``, else ``~/.cache/rates``; ``RATES_CACHE_DIR=off``
turns the cache off (everything is derived every time). The cache only saves time: an entry that cannot be
read is a miss and a directory that cannot be written is skipped, silently. Entries are written to a
temporary file and renamed into place, so concurrent commands never read half an entry.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

ENVIRONMENT = "RATES_CACHE_DIR"
OFF = "off"
FORMAT = 1  # bump when the layout of entries changes
MAX_ENTRIES = 2000  # per folder; the least recently used beyond this are deleted (an entry is ~1-200 kB)


def directory() -> Optional[Path]:
    """The cache's root, or ``None`` when ``RATES_CACHE_DIR=off``."""
    chosen = os.environ.get(ENVIRONMENT, "").strip()
    if chosen.lower() == OFF:
        return None
    try:
        if chosen:
            return Path(chosen).expanduser()
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(base).expanduser() if base else Path.home() / ".cache") / "rates"
    except (RuntimeError, KeyError):  # no home directory to expand ~ into (a bare container): no cache
        return None


@functools.cache
def source_fingerprint(*packages: str) -> str:
    """sha256 over the path (relative to the package) and bytes of every ``.py`` file of ``packages``.

    The packages are located without being imported (``rates`` and ``cli`` sit next to each other in a
    checkout and in site-packages alike); ~700 kB of source hash in ~10 ms.
    """
    import importlib.util

    digest = hashlib.sha256()
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"{package!r} is not a package")
        files = 0
        for location in spec.submodule_search_locations:
            root = Path(location)
            for path in sorted(root.rglob("*.py")):
                digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
                digest.update(b"\0")
                files += 1
        if not files:  # installed without its source (bytecode only): nothing would tell two versions apart
            raise ValueError(f"no source files found for {package!r}")
    return digest.hexdigest()


@functools.cache
def library_versions(*distributions: str) -> str:
    """``name==version`` of each installed distribution (``missing`` when absent) and the Python version."""
    from importlib import metadata

    parts = [f"python=={sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"]
    for name in distributions:
        try:
            parts.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name}==missing")
    return ";".join(parts)


def make_key(*parts: Any) -> str:
    """sha256 of the parts' ``repr`` (strings, numbers, tuples; bytes enter as themselves)."""
    digest = hashlib.sha256(f"format {FORMAT}\0".encode())
    for part in parts:
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def key_for(*parts: Any, packages: tuple[str, ...], libraries: tuple[str, ...]) -> Optional[str]:
    """:func:`make_key` of ``parts``, the source of ``packages`` and the versions of ``libraries``; ``None``
    (do not cache) when the cache is off or the packages' source cannot be read."""
    if directory() is None:
        return None  # off: not even the ~10 ms of hashing the source
    try:
        fingerprint = source_fingerprint(*packages)
    except (OSError, ValueError):
        return None
    return make_key(*parts, fingerprint, library_versions(*libraries))


def _entry(kind: str, key: str) -> Optional[Path]:
    root = directory()
    return None if root is None else root / kind / f"{key}.json"


def load(kind: str, key: str) -> Optional[Any]:
    """The value stored under ``key`` in the ``kind`` folder, or ``None`` (absent, off, unreadable)."""
    path = _entry(kind, key)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
        return None  # a truncated or foreign file: recompute (and overwrite it)
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: the last to be evicted
    return entry["value"]


def store(kind: str, key: str, value: Any) -> bool:
    """Save a JSON-able ``value`` under ``key``; ``False`` when the cache is off or cannot be written."""
    path = _entry(kind, key)
    if path is None:
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": key, "value": value}, handle)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except (OSError, TypeError, ValueError):
        return False
    _evict(path.parent)
    return True


def _evict(folder: Path) -> None:
    """Keep a folder at ``MAX_ENTRIES`` entries or fewer, dropping the least recently used (entries of code
    that has since changed are never read again, so they age out here)."""
    keep = MAX_ENTRIES
    try:
        entries = list(os.scandir(folder))
        if len(entries) <= keep:
            return
        aged = sorted((entry.stat().st_mtime_ns, entry.path) for entry in entries if entry.name.endswith(".json"))
    except OSError:
        return
    for _, path in aged[:max(0, len(aged) - keep)]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def clear(kind: str) -> int:
    """Delete every entry of ``kind``; returns how many were removed."""
    path = _entry(kind, "x")
    if path is None or not path.parent.is_dir():
        return 0
    removed = 0
    for entry in path.parent.glob("*.json"):
        with contextlib.suppress(OSError):
            entry.unlink()
            removed += 1
    return removed
