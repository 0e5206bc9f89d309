"""Gradient sources: full gradient, mini-batches under random reshuffling, SVRG-style variance reduction.

Setting (docs/theory.md section 2; MINIBATCH section 3.1): the signal of step t is the full gradient
``grad L(W_t)``; or the mean gradient over a batch B_t of size b, where each epoch splits a fresh random
permutation of the n samples into n/b disjoint batches (random reshuffling, MINIBATCH Thm 4.1); or the
variance-reduced signal ``grad_B(W_t) - grad_B(W~) + grad L(W~)`` with ``W~`` the iterate at the start of
the epoch (MINIBATCH Thm 4.6).

Every source returns a :class:`~rates.numeric.optim.base.Signal` whose true value is the exact signal: the
gradients come from :func:`rates.numeric.losses.scaled_gradient` (log-domain weights, docs/theory.md section 7).
Built with ``exact_scale=False`` (for recipes whose only consumer is a steepest direction) the signal is
the exact one times an unknown positive factor per run (``log_scale`` None), which saves two kernels.
With ``per_row`` (sign-type directions) each class row has its own log-scale
(:func:`rates.numeric.losses.coefficients`).

Randomness: run r draws its epoch permutations from its own ``torch.Generator`` seeded with its seed,
always on the CPU, so a run's batches do not depend on the other runs advanced with it nor on the
device; :func:`epoch_permutations` is that stream, exposed so tests can derive expected iterates.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional, Sequence

import torch

from rates.numeric.losses import (
    coefficients,
    direction_plan,
    folded_direction,
    folds_label_row,
    labels,
    logits_of,
    over_samples,
    sample_views,
    scaled_gradient,
)
from rates.numeric.optim.base import Signal, renormalise


def epoch_permutations(seed: int, n: int) -> Iterator[torch.Tensor]:
    """The permutations of [n] that a run seeded with ``seed`` uses, epoch after epoch."""
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    while True:
        yield torch.randperm(n, generator=gen)


class FullGradientState(NamedTuple):
    """The sample block laid out for the runs axis, made once: ``samples`` (R, d, n) for the logits, and
    ``mean_samples`` (R, n, d) = h_i / n for the gradient, or ``plan`` for the folded direction."""

    samples: torch.Tensor
    mean_samples: Optional[torch.Tensor] = None
    plan: Any = None


class BatchState(NamedTuple):
    """Per-run permutation streams and the current epoch's layout; the VR snapshot where there is one."""

    streams: list
    full_views: tuple
    perms: Optional[torch.Tensor] = None  # (R, n): this epoch's order of the samples, one row per run
    Ht: Optional[torch.Tensor] = None  # (R, d, n) samples in epoch order
    H_mean: Optional[torch.Tensor] = None  # (R, n, d) samples in epoch order, over the batch size
    labels: Any = None
    snapshot_full: Optional[torch.Tensor] = None  # grad L(W~) up to the snapshot's log-scale (VR)
    snapshot_coeff: Optional[torch.Tensor] = None  # per-sample coefficients at W~, epoch order (VR)
    snapshot_log_scale: Optional[torch.Tensor] = None


class FullGradient:
    """grad L(W_t) over all n samples, one (R, k, n) logits block per step.

    Without the exact scale and for small blocks (:func:`rates.numeric.losses.folds_label_row`, decided by the
    data's shape alone) the direction comes from :func:`rates.numeric.losses.folded_direction`.
    """

    def __init__(self, H: torch.Tensor, y: torch.Tensor, k: int, exact_scale: bool = True, per_row: bool = True):
        self.exact_scale, self.per_row = exact_scale, per_row
        self.Ht = H.transpose(0, 1).contiguous()
        self.y, self.k = y, k
        self.labels = labels(y, k, H.dtype)
        self.folded = not exact_scale and folds_label_row(k, H.shape[1], H.shape[0])

    def init(self, W: torch.Tensor) -> FullGradientState:
        samples, mean_samples = sample_views(self.Ht, W.shape[0])
        if self.folded:
            return FullGradientState(samples, plan=direction_plan(self.Ht, self.y, self.k, W.shape[0]))
        return FullGradientState(samples, mean_samples)

    def __call__(self, W: torch.Tensor, state: FullGradientState, t: int) -> tuple[Signal, FullGradientState]:
        if self.folded:
            return Signal(folded_direction(logits_of(W, state.samples), state.plan), None), state
        G, log_scale = scaled_gradient(logits_of(W, state.samples), self.labels, state.mean_samples,
                                       self.exact_scale, self.per_row)
        return Signal(G, log_scale), state


class ReshuffledBatches:
    """Mean gradient over the batch of step t; batches are consecutive b-slices of the epoch permutation."""

    def __init__(self, H: torch.Tensor, y: torch.Tensor, k: int, batch: int, seeds: Sequence[int],
                 exact_scale: bool = True, per_row: bool = True):
        n = H.shape[0]
        self.exact_scale, self.per_row = exact_scale, per_row
        if batch < 1 or n % batch:
            raise ValueError(f"batch {batch} must divide n = {n}")
        self.H, self.y, self.k, self.batch = H, y, k, batch
        self.Ht = H.transpose(0, 1).contiguous()
        self.seeds = [int(s) for s in seeds]
        self.steps_per_epoch = n // batch

    def init(self, W: Optional[torch.Tensor]) -> BatchState:
        return BatchState(streams=[epoch_permutations(s, self.H.shape[0]) for s in self.seeds],
                          full_views=sample_views(self.Ht, len(self.seeds)))

    def _new_epoch(self, W: torch.Tensor, state: BatchState) -> BatchState:
        perms = torch.stack([next(stream) for stream in state.streams]).to(self.H.device)  # (R, n)
        Ht = self.H[perms].transpose(-2, -1).contiguous()  # (R, d, n), epoch order
        return state._replace(perms=perms, Ht=Ht, H_mean=(Ht / self.batch).transpose(-2, -1),
                              labels=labels(self.y[perms], self.k, self.H.dtype))

    def _batch(self, state: BatchState, t: int) -> tuple[slice, torch.Tensor, torch.Tensor]:
        j = t % self.steps_per_epoch
        cols = slice(j * self.batch, (j + 1) * self.batch)
        return cols, state.Ht[..., cols], state.H_mean[:, cols]

    def __call__(self, W: torch.Tensor, state: BatchState, t: int) -> tuple[Signal, BatchState]:
        if t % self.steps_per_epoch == 0:
            state = self._new_epoch(W, state)
        cols, HBt, HB_mean = self._batch(state, t)
        lab = state.labels
        batch_labels = type(lab)(lab.onehot[..., cols], lab.mask[..., cols])
        G, log_scale = scaled_gradient(logits_of(W, HBt), batch_labels, HB_mean, self.exact_scale, self.per_row)
        return Signal(G, log_scale), state


class VarianceReduced(ReshuffledBatches):
    """SVRG-style signal ``grad_B(W_t) - grad_B(W~) + grad L(W~)``, snapshot W~ at each epoch start.

    The snapshot's per-sample coefficients (``S_i - e_{y_i}`` up to one shared scale) are stored, so
    ``grad_B(W~)`` and ``grad L(W~)`` share the snapshot's log-scale; the batch term at W_t has its own.
    The two are combined at the larger scale: ``e^{s1-m} A + e^{s0-m} (C - B)`` with ``m = max(s1, s0)``,
    which is the exact signal times ``e^{-m}`` (a term that underflows is below 1e-308 of the other).
    """

    def __init__(self, H: torch.Tensor, y: torch.Tensor, k: int, batch: int, seeds: Sequence[int],
                 per_row: bool = True):
        super().__init__(H, y, k, batch, seeds, exact_scale=True, per_row=per_row)  # the combination needs both

    def _new_epoch(self, W: torch.Tensor, state: BatchState) -> BatchState:
        state = super()._new_epoch(W, state)
        Ht_view, H_mean = state.full_views
        coeff, log_scale = coefficients(logits_of(W, Ht_view), labels(self.y, self.k, self.H.dtype), self.per_row)
        return state._replace(
            snapshot_full=over_samples(coeff, H_mean),
            snapshot_coeff=coeff.gather(-1, state.perms.unsqueeze(-2).expand_as(coeff)),
            snapshot_log_scale=log_scale,
        )

    def __call__(self, W: torch.Tensor, state: BatchState, t: int) -> tuple[Signal, BatchState]:
        signal, state = super().__call__(W, state, t)
        cols, _, HB_mean = self._batch(state, t)
        snapshot_batch = over_samples(state.snapshot_coeff[..., cols], HB_mean)
        s1, s0 = signal.log_scale, state.snapshot_log_scale
        top = torch.maximum(s1, s0)
        value = (torch.exp(s1 - top) * signal.value
                 + torch.exp(s0 - top) * (state.snapshot_full - snapshot_batch))
        return renormalise(value, top), state
