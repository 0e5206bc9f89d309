"""Optimisers as compositions (docs/design.md, optax habit): gradient source -> transforms -> step.

* :mod:`rates.numeric.optim.base` -- the Signal (mantissa + log-scale) and the transform protocol, ``chain``;
* :mod:`rates.numeric.optim.sources` -- full gradient, random-reshuffling mini-batches, SVRG-style VR;
* :mod:`rates.numeric.optim.transforms` -- momentum, Adam (eps = 0 or > 0), steepest direction, schedule;
* :mod:`rates.numeric.optim.compose` -- the recipe of a run and the optimiser it builds.
"""

from rates.numeric.optim.base import GradientTransformation, Signal, chain
from rates.numeric.optim.compose import Hyper, Optimizer, Recipe, build
from rates.numeric.optim.sources import FullGradient, ReshuffledBatches, VarianceReduced, epoch_permutations
from rates.numeric.optim.transforms import adam, learning_rate, momentum, scale_by_schedule, steepest_direction

__all__ = [
    "GradientTransformation", "Signal", "chain", "Hyper", "Optimizer", "Recipe", "build",
    "FullGradient", "ReshuffledBatches", "VarianceReduced", "epoch_permutations",
    "adam", "learning_rate", "momentum", "scale_by_schedule", "steepest_direction",
]
