"""Optimisers as compositions (docs/design.md, optax habit): gradient source -> transforms -> step.

* :mod:`rates.numeric.optim.alias` -- the named optimisers, one line each: the one definition (torch-free);
* :mod:`rates.numeric.optim.base` -- the Signal (mantissa + log-scale) and the transform protocol, ``chain``;
* :mod:`rates.numeric.optim.sources` -- full gradient, random-reshuffling mini-batches, SVRG-style VR;
* :mod:`rates.numeric.optim.transforms` -- momentum, Adam (eps = 0 or > 0), steepest direction, schedule;
* :mod:`rates.numeric.optim.compose` -- the torch optimiser a run's composition builds.

The torch names below are imported on first use, so that reading :mod:`~rates.numeric.optim.alias` (``rates
predict``, a CPU ``rates run``) does not import torch.
"""

from importlib import import_module
from typing import Any

_HOMES = {
    "GradientTransformation": "base", "Signal": "base", "chain": "base",
    "Hyper": "compose", "Optimizer": "compose", "Recipe": "compose", "build": "compose",
    "FullGradient": "sources", "ReshuffledBatches": "sources", "VarianceReduced": "sources",
    "epoch_permutations": "sources",
    "adam": "transforms", "learning_rate": "transforms", "momentum": "transforms",
    "scale_by_schedule": "transforms", "steepest_direction": "transforms",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"rates.numeric.optim.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
