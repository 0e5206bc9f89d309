"""Where numba keeps the compiled kernels: one user-wide folder keyed by the source's content, not its path.

numba's own cache (``cache=True``) lives next to the source (``__pycache__``) or, with ``NUMBA_CACHE_DIR``, under a
folder named after the source's absolute path; either way a second virtualenv of the same release (the same files
at another path) compiles every kernel again (~50 s of CPU). Its index is already keyed by content: the source's
sha256, the numba version and each function's bytecode, signature and target CPU. So a folder named by the
source's sha256 is safe to share between environments: the same bytes give the same kernels.

Where: ``$RATES_NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/rates-numba``, else ``~/.cache/rates-numba``; inside, one
folder per numba version, Python version and source hash. Separate from the result cache of :mod:`rates.cache`, so
that emptying that one (``RATES_CACHE_DIR``) does not recompile. A user who sets ``NUMBA_CACHE_DIR`` keeps numba's
own placement; a folder that cannot be written falls back to it too (``__pycache__``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Optional

ENVIRONMENT = "RATES_NUMBA_CACHE_DIR"
_ROOTS: list[str] = []  # the source folders whose compiled functions use this cache (this package's, by default)


def root() -> Optional[Path]:
    """The user-wide folder of compiled kernels, or None (no home directory to put it in)."""
    chosen = os.environ.get(ENVIRONMENT, "").strip()
    try:
        if chosen:
            return Path(chosen).expanduser()
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(base).expanduser() if base else Path.home() / ".cache") / "rates-numba"
    except (RuntimeError, KeyError):
        return None


def _file_hash(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:20]


def _locator_class():
    from numba import __version__ as numba_version
    from numba.core import caching

    class ContentCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """numba's locator interface: the cache folder of a source file inside one of :data:`_ROOTS`."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            version = f"numba-{numba_version}-py{sys.version_info[0]}{sys.version_info[1]}"
            self._cache_path = str(root() / version / f"{Path(py_file).stem}-{_file_hash(py_file)}")

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.environ.get("NUMBA_CACHE_DIR") or root() is None:
                return None
            path = os.path.abspath(py_file)
            if not any(path.startswith(folder + os.sep) for folder in _ROOTS):
                return None
            return super().from_function(py_func, py_file)

    return ContentCacheLocator


def install(folder: Optional[str] = None) -> None:
    """Put the content-keyed locator first for the compiled functions of ``folder`` (default: this package); call
    before the ``@njit(cache=True)`` decorators run. Idempotent."""
    from numba.core import caching

    path = os.path.abspath(folder or os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    if path not in _ROOTS:
        _ROOTS.append(path)
    classes = caching.CacheImpl._locator_classes
    if not any(getattr(cls, "__name__", "") == "ContentCacheLocator" for cls in classes):
        classes.insert(0, _locator_class())
