"""Theorem families (docs/theory.md section 3) and the one entry point :func:`predict`.

Registry: built from each family module's own declaration (:mod:`rates.symbolic.theorems.registry`): family name
(``rates.numeric.algorithms.AlgorithmConfig.family``) -> template builder, for the families that predict a rate.
Each family module holds its bound template, hypotheses, assumptions, source and derivation (docstrings in
the PEPit style). The per-sample theorem predicts a limit direction, not a rate: see
:mod:`rates.symbolic.theorems.per_sample`.

The names below live in :mod:`rates.symbolic.theorems.prediction` and are imported on first use: the sympy-free
modules of this package (:mod:`~rates.symbolic.theorems.coverage`, :mod:`~rates.symbolic.theorems.hypotheses`,
:mod:`~rates.symbolic.theorems.per_sample`, :mod:`~rates.symbolic.theorems.sources`) serve ``rates run``, which
must not pay
~0.6 s for sympy when it only names a run's family.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DECLARATIONS", "FAMILIES", "Prediction", "REGISTRY", "Source", "predict", "template_for"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        home = "rates.symbolic.theorems.sources" if name == "Source" else "rates.symbolic.theorems.prediction"
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
