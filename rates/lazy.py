"""Import a heavy module on first use, so that ``rates --help`` and ``rates predict`` start in well under 1 s.

``torch = lazy_module("torch", globals())`` binds a placeholder; the first attribute read imports the module
and rebinds the name in the owning module's namespace, so later reads cost nothing extra.
"""

from __future__ import annotations

import importlib
from typing import Any


class _Placeholder:
    def __init__(self, name: str, namespace: dict[str, Any], alias: str):
        self._name, self._namespace, self._alias = name, namespace, alias

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        self._namespace[self._alias] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str, namespace: dict[str, Any], alias: str | None = None) -> Any:
    """A stand-in for ``import name`` (as ``alias``) in the module whose ``globals()`` is ``namespace``."""
    return _Placeholder(name, namespace, alias or name.rpartition(".")[2])
