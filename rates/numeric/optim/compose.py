"""Build an optimiser for a group of runs: gradient source -> [momentum] -> direction | Adam -> schedule.

Setting: docs/theory.md section 2. Seventeen named algorithms (one line each in rates.numeric.optim.alias) are
points of one recipe;
:class:`Recipe` is the part of a configuration that fixes *which code* runs (source kind, batch size,
norm, polar method, Adam or steepest direction, momentum or not), so all runs sharing a recipe advance
as one batched tensor program and differ only in per-run numbers (eta0, schedule, beta, Adam betas, eps,
seed). The recipe is a function of one run's configuration alone, so a run takes the same code path
whether it is advanced alone or with others; it lives in :mod:`rates.numeric.recipe` (torch-free) and is
re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from rates.norms import parse_norm
from rates.numeric.optim.alias import Piece
from rates.numeric.optim.base import GradientTransformation, chain
from rates.numeric.optim.sources import FullGradient, ReshuffledBatches, VarianceReduced
from rates.numeric.optim.transforms import adam, momentum, scale_by_schedule, steepest_direction, takes_signs
from rates.numeric.recipe import Recipe
from rates.schedule import Schedule


@dataclass(frozen=True)
class Hyper:
    """Per-run numbers of a group, each a (R,) float64 tensor on the run device (seeds: ints; schedules: one
    :class:`~rates.schedule.Schedule` per run)."""

    eta0: torch.Tensor
    schedules: Sequence[Schedule]
    beta: torch.Tensor
    beta1: torch.Tensor
    beta2: torch.Tensor
    eps: torch.Tensor
    seeds: Sequence[int]


class Optimizer:
    """``W_{t+1} = W_t - U_t`` with ``U_t`` = transform(source(W_t)); all runs of one recipe at once.

    ``step`` updates ``W`` in place (one allocation fewer per step): pass a tensor the caller owns.
    """

    def __init__(self, source: Any, transform: GradientTransformation):
        self.source = source
        self.transform = transform

    def init(self, W: torch.Tensor) -> tuple:
        return self.source.init(W), self.transform.init(W)

    def prepare(self, step: int, count: int) -> None:
        """Ready the device-side buffers of steps ``step .. step + count - 1`` (before a replay of recorded steps)."""
        if self.transform.prepare is not None:
            self.transform.prepare(step, count)

    def step(self, W: torch.Tensor, state: tuple, t: int) -> tuple[torch.Tensor, tuple]:
        source_state, transform_state = state
        signal, source_state = self.source(W, source_state, t)
        update, transform_state = self.transform.update(signal, transform_state, t)
        return W.sub_(update.value), (source_state, transform_state)  # W is the engine's own buffer


def build(recipe: Recipe, H: torch.Tensor, y: torch.Tensor, k: int, hyper: Hyper) -> Optimizer:
    """Compose the optimiser of ``recipe`` for data ``H`` (n, d), labels ``y`` (n,) on one device: each
    piece of ``recipe.composition`` (:mod:`rates.numeric.optim.alias`) becomes its torch transform."""
    exact_scale, per_row = signal_scales(recipe)
    source = SOURCES[recipe.composition.source](recipe, H, y, k, hyper, exact_scale, per_row)
    return Optimizer(source, transform_of(recipe, hyper))


def signal_scales(recipe: Recipe) -> tuple[bool, bool]:
    """``(exact_scale, per_row)``: whether the recipe's signal must carry its true log-scale, and one per class row.

    Momentum and Adam mix signals of different times, so they need each signal's true scale; the sign
    needs each class row's own scale (rows can lie 1e-400 apart, and every entry's sign counts); another
    steepest direction alone is invariant to the scale, and skipping it saves two kernels per step.
    Directions that weigh entries against each other get one scale per run: per-row scales would add the
    rounding of the log-scales (~|s| eps) to the ratios of rows, which the polar factor's rank test sees."""
    composition = recipe.composition
    per_row = composition.adam or takes_signs(parse_norm(recipe.norm))
    return composition.momentum or per_row, per_row


def transform_of(recipe: Recipe, hyper: Hyper) -> GradientTransformation:
    """The chain of the recipe's pieces after its source (momentum, Adam or the steepest direction, schedule)."""
    _, per_row = signal_scales(recipe)
    return chain(*[TRANSFORMS[piece.role](piece, recipe, hyper, per_row)
                   for piece in recipe.composition.transforms()])


# piece role -> its torch transform (the pieces of rates.numeric.optim.alias)
SOURCES: dict[str, Callable[..., Any]] = {
    "full": lambda recipe, H, y, k, hyper, exact_scale, per_row: FullGradient(H, y, k, exact_scale, per_row),
    "minibatch": lambda recipe, H, y, k, hyper, exact_scale, per_row: ReshuffledBatches(
        H, y, k, recipe.batch, hyper.seeds, exact_scale, per_row),
    "vr": lambda recipe, H, y, k, hyper, exact_scale, per_row: VarianceReduced(
        H, y, k, recipe.batch, hyper.seeds, per_row),
}
# (``per_row``: the source gives each class row its own log-scale)
TRANSFORMS: dict[str, Callable[[Piece, Recipe, Hyper, bool], GradientTransformation]] = {
    "momentum": lambda piece, recipe, hyper, per_row: momentum(hyper.beta, per_row),
    "adam": lambda piece, recipe, hyper, per_row: adam(hyper.beta1, hyper.beta2, hyper.eps, per_row),
    "direction": lambda piece, recipe, hyper, per_row: steepest_direction(parse_norm(piece.kind), recipe.polar),
    "schedule": lambda piece, recipe, hyper, per_row: scale_by_schedule(hyper.eta0, hyper.schedules),
}
