"""CUDA-graph replay of the torch engine: a segment of steps recorded once, replayed between checkpoints.

Setting: docs/theory.md sections 2 and 7; the optimiser is the torch program of :mod:`rates.numeric.optim` (the one
definition the cuda path runs), unchanged. On a GPU a step of the small problems this tool studies is a
few dozen kernels of microseconds each, so launching them from Python costs more than running them.
A CUDA graph records the kernels of ``segment`` consecutive steps once and replays them with
one launch.

Algorithm: the step index lives on the device (a 0-d float64 tensor ``t``), so the recorded kernels need
no host value that changes from step to step: the schedule computes ``eta_t = eta0 (t+2)^-a`` (a
non-polynomial schedule reads ``eta0 f(t)`` from a device table that the optimiser's ``prepare`` refills
between replays, never inside one) and Adam its bias corrections from that tensor
(:func:`rates.numeric.optim.transforms.scale_by_schedule` and
:func:`~rates.numeric.optim.transforms.adam` accept either an int or such a tensor). Two graphs are recorded on
the same static buffers (``W``, the optimiser state, ``t``): ``segment`` steps and one step; advancing to
a checkpoint replays the first as often as it fits and the second for the rest. At the end of each
recorded segment the state the steps produced is copied back into the static buffers, so a replay starts
where the previous one ended.

Scope (:func:`graphable`): recipes whose step has no host synchronisation and no host-side randomness,
i.e. the full-batch source with an entry-wise steepest direction (sign, coordinate, Frobenius, l_p),
Newton-Schulz polar factors, or Adam, with or without momentum. Mini-batch and VR runs draw epoch
permutations on the host (so the batches are the same on every device), and SVD-based directions go
through cuSOLVER calls that synchronise; both run on the eager torch path.

Guarantee: the iterates are those of the eager torch program on the same device, up to the rounding of
``eta_t`` computed per step instead of from a table (tests/test_graphed.py: the tensor-index step against
the integer one on the CPU to 1e-13; on cuda, the graphed run against the CPU fused engine to 1e-12).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from rates.norms import parse_norm

# Steps per recorded segment: long enough that one launch amortises the replay overhead (~10 us), short
# enough that recording stays well under a second for every recipe.
SEGMENT_STEPS = 64
# Steps between two progress reports (each waits for the queued replays, so not every replay).
PROGRESS_STEPS = 16384


# Replaying pays while launches, not the GPU's arithmetic, limit a step: measured on one H100
# (benchmarks/gpu_engine.py, default preset k n = 90, 2,000 steps) SignGD gained 4.2x at R = 64, 1.6x at
# R = 1024 and lost 10% at R = 4096 and 30% from R = 16384 on; Adam gained 6.3x at 64, 2.5x at 4096, broke
# even at 16384 and lost 20% at 65536. ``engine="auto"`` records a group while R k n stays below this.
AUTO_RECORD_LIMIT = 1 << 19


def worth_recording(runs: int, k: int, n: int) -> bool:
    """Whether ``auto`` replays a group of ``runs`` configurations on k classes and n samples (results are
    the same either way: the graphed and eager steppers executed the same kernels, bit for bit, in every
    measurement; the choice is speed only)."""
    return runs * k * n <= AUTO_RECORD_LIMIT


def graphable(recipe: Any) -> bool:
    """Whether a recipe's step can be recorded (see the module docstring's scope)."""
    if recipe.source != "full":
        return False
    if recipe.adam:
        return True
    norm = parse_norm(recipe.norm)
    if norm.kind == "entrywise" or norm.p == 2.0:
        return True
    return norm.kind == "schatten" and norm.p == float("inf") and recipe.polar == "newton-schulz"


def _copy_into(static: Any, fresh: Any) -> None:
    """Copy every tensor of the state ``fresh`` into the same position of ``static`` (same structure)."""
    if isinstance(static, torch.Tensor):
        if static is not fresh:
            static.copy_(fresh)
    elif isinstance(static, (tuple, list)):
        for old, new in zip(static, fresh):
            _copy_into(old, new)


class GraphedSteps:
    """Advance ``W`` (R, k, d, on cuda) with ``optimizer`` by replaying recorded segments of steps."""

    def __init__(self, optimizer: Any, W: torch.Tensor, segment: Optional[int] = None):
        self.optimizer = optimizer
        self.W = W
        self.state = optimizer.init(W)
        self.t = torch.zeros((), dtype=W.dtype, device=W.device)
        self.step = 0
        self.segment = segment or SEGMENT_STEPS
        optimizer.prepare(0, self.segment)  # device buffers (a schedule's table) exist before recording
        self._warm_up()
        self.long = self._record(self.segment)
        self.short = self._record(1)

    def _steps(self, count: int) -> None:
        state = self.state
        for _ in range(count):
            _, state = self.optimizer.step(self.W, state, self.t)
            self.t.add_(1.0)
        _copy_into(self.state, state)

    def _warm_up(self) -> None:
        """Run the step on copies, on a side stream (as recording requires), without touching the run."""
        W, state, t = self.W.clone(), self.optimizer.init(self.W), self.t.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                _, state = self.optimizer.step(W, state, t)
                t.add_(1.0)
        torch.cuda.current_stream().wait_stream(side)

    def _record(self, count: int) -> torch.cuda.CUDAGraph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._steps(count)
        return graph

    def advance_to(self, target: int, progress: Optional[Callable[[int], None]] = None) -> None:
        """Replay until ``W`` is the iterate after ``target`` steps (>= the current step)."""
        done = 0
        while target - self.step >= self.segment:
            self.optimizer.prepare(self.step, self.segment)
            self.long.replay()
            self.step += self.segment
            done += self.segment
            if progress is not None and done >= PROGRESS_STEPS:
                torch.cuda.current_stream().synchronize()  # report steps run, not steps queued
                progress(done)
                done = 0
        while self.step < target:
            self.optimizer.prepare(self.step, 1)
            self.short.replay()
            self.step += 1
            done += 1
        if progress is not None and done:
            progress(done)
