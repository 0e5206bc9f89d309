"""The composition protocol of the optimisers (the optax habit of docs/design.md).

Setting: every algorithm of docs/theory.md section 2 (MINIBATCH section 3.1; SIGNADAM eq. 3-5) is
*signal -> direction -> step*. A gradient source (:mod:`rates.numeric.optim.sources`) produces a signal; a chain
of :class:`GradientTransformation` turns it into the update ``U`` with ``W <- W - U``.

A :class:`Signal` is a scaled tensor: its true value is ``exp(log_scale) * value`` with ``log_scale`` one
number per class row of each run (shape (R, k, 1); rows can lie 1e-400 apart, and sign-type directions
need each row's signs), or one per run (R, 1, 1) for directions that weigh entries against each other.
Gradients of separable data shrink like exp(-margin) and underflow float64 long before the asymptotic
regime (docs/theory.md section 7), so the scale is kept as a logarithm and ``value`` stays O(1).
Each transform documents why its output equals that of the exact algorithm.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import torch


class Signal(NamedTuple):
    """``exp(log_scale) * value``; ``value`` (R, k, d), ``log_scale`` (R, k, 1) or (R, 1, 1) (broadcasts).

    ``log_scale`` None means "an unknown positive factor per run": accepted only by transforms that are
    invariant to positive rescaling (steepest directions); sources produce it only when told so.
    """

    value: torch.Tensor
    log_scale: Optional[torch.Tensor]

    def true_value(self) -> torch.Tensor:
        """The unscaled tensor (may underflow: for tests and references only)."""
        return torch.exp(self.log_scale) * self.value


class GradientTransformation(NamedTuple):
    """``init(W) -> state`` and ``update(signal, state, t) -> (signal, state)`` at step t = 0, 1, ...

    The homogeneous-network optimisers (:mod:`rates.numeric.homogeneous.steepest`) use the same pair with
    ``update(grads, state)`` (no step index): :func:`chain` serves both. ``prepare(step, count)``, where
    given, readies device-side buffers for steps ``step .. step + count - 1`` before they are replayed
    (:mod:`rates.numeric.graphed`; the schedule's table of a non-polynomial schedule).
    """

    init: Callable[[torch.Tensor], Any]
    update: Callable[[Signal, Any, int], tuple[Signal, Any]]
    prepare: Optional[Callable[[int, int], None]] = None


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply transforms left to right, each with its own state (optax.chain); extra arguments of
    ``update`` (the step ``t`` of the linear engine) are passed on to every transform."""

    def init(W: Any) -> tuple:
        return tuple(tr.init(W) for tr in transforms)

    def update(signal: Any, state: tuple, *extra: Any) -> tuple[Any, tuple]:
        new_state = []
        for tr, st in zip(transforms, state):
            signal, st = tr.update(signal, st, *extra)
            new_state.append(st)
        return signal, tuple(new_state)

    hooks = [tr.prepare for tr in transforms if tr.prepare is not None]

    def prepare(step: int, count: int) -> None:
        for hook in hooks:
            hook(step, count)

    return GradientTransformation(init, update, prepare if hooks else None)


def renormalise(value: torch.Tensor, log_scale: torch.Tensor) -> Signal:
    """Move the largest |entry| of each class row into the row's log-scale (``log_scale`` (R, k, 1)), or of the
    whole run into its one log-scale (``log_scale`` (R, 1, 1)), so each row, or the run, has max |entry| 1.

    Exact up to one rounding per entry; keeps stored states from drifting towards under/overflow.
    """
    top = value.abs().amax(dim=-1 if log_scale.shape[-2] > 1 else (-2, -1), keepdim=True)
    safe = torch.where(top > 0, top, torch.ones_like(top))
    return Signal(value / safe, log_scale + torch.log(safe))
