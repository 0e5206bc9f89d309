"""A group of configurations of one recipe, advanced by the compiled kernel between checkpoints.

Setting: :class:`rates.numeric.optim.compose.Recipe` fixes the code a run executes; the kernel
(:func:`rates.numeric.fused.kernels.advance`) takes that code as integer switches and the per-run numbers
(eta0, a, beta, Adam constants) as arrays, so one compiled function serves every recipe. A schedule outside the
polynomial family reaches the kernel as a table of its values ``f(t)`` (:meth:`rates.schedule.Schedule.unit_values`,
one row per distinct schedule), filled here ``TABLE_STEPS`` steps at a time: the kernel reads one number where
it would compute ``(t + 2)^-a``, so any expression costs what the polynomial family costs, plus the table's
filling shared by every run of the schedule.

Algorithm: :meth:`FusedGroup.advance_to` calls the kernel in chunks of at most ``CHUNK_CONFIG_STEPS``
configuration-steps (so progress is reported and Ctrl-C is seen within seconds, and the epoch
permutations of one chunk stay small). Each chunk splits the configurations into contiguous, near-equal
slices, one per core, run on threads (the kernel releases the GIL); within a slice the kernel takes 64
configurations at a time as the lanes of one vectorised block (:mod:`rates.numeric.fused.kernels`), so R = 256
on two cores is two blocks per thread. Threads rather than numba's ``prange``: the same parallelism
without its parallel-compilation pass, which made the first compile several times longer. Mini-batch
and VR runs draw their epoch permutations here, one per epoch, from the stream
:func:`rates.numeric.optim.sources.epoch_permutations` (a CPU ``torch.Generator`` seeded with the run's seed),
exactly when the torch path draws them, so both paths see the same batches.

Data: one dataset for every run (``H`` (n, d), ``y`` (n,)), or one per run (``H`` (R, n, d), ``y`` (R, n)):
draws of a dataset of one shape advance in one kernel call, each lane of a 64-lane block reading its own
samples (the kernel's mini-batch layout), instead of one call per draw; VR runs, whose snapshot reads the
one dataset of the call, take one dataset per group (:func:`rates.numeric.engine.run_group` splits them).

Guarantee: after ``advance_to(t)``, ``W`` holds every run's iterate after t steps; the state (momentum,
Adam moments, VR snapshot, current permutation) carries over between calls, so splitting the steps
into segments, and the runs into threads and blocks, changes no bit of the result.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence

import numpy as np

from rates.norms import parse_norm
from rates.numeric.fused import kernels

# Per call ~0.4 s (R = 256, two threads) to ~2.5 s (R = 1) of kernel time on the 2-core machine.
CHUNK_CONFIG_STEPS = 1 << 20
# Steps of a non-polynomial schedule's table per filling (128 KiB per distinct schedule).
TABLE_STEPS = 1 << 14
_SOURCES = {"full": kernels.SOURCE_FULL, "minibatch": kernels.SOURCE_MINIBATCH, "vr": kernels.SOURCE_VR}


BUILT_IN_NORM_KINDS = ("entrywise", "schatten")


# the roles of the pieces (rates.numeric.optim.alias) the kernels were written for
KERNEL_PIECES = ("source", "momentum", "adam", "direction", "schedule")


def supports(recipe: Any) -> bool:
    """Whether the kernels have this recipe's direction: Adam, or a built-in norm kind. A norm kind registered
    later (``rates.norms.register_norm``) has only its torch ``steepest`` method, so it runs on the torch path,
    as does a chain with a kind of piece the kernels were not written for."""
    if any(piece.role not in KERNEL_PIECES for piece in recipe.composition.pieces):
        return False
    return bool(recipe.adam) or parse_norm(recipe.norm).kind in BUILT_IN_NORM_KINDS


def direction_of(recipe: Any) -> tuple[int, float]:
    """The kernel's direction switch and dual exponent q for a recipe (Adam, or the norm's steepest direction)."""
    if recipe.adam:
        return kernels.DIRECTION_ADAM, 1.0
    norm = parse_norm(recipe.norm)
    q = norm.q
    if norm.kind == "entrywise" or norm.p == 2.0:  # Schatten-2 is the Frobenius norm
        if q == 1.0:
            return kernels.DIRECTION_SIGN, q
        if math.isinf(q):
            return kernels.DIRECTION_COORDINATE, q
        if q == 2.0:
            return kernels.DIRECTION_FROBENIUS, q
        return kernels.DIRECTION_LP, q
    if math.isinf(norm.p):
        if recipe.polar == "newton-schulz":
            return kernels.DIRECTION_NEWTON_SCHULZ, q
        return kernels.DIRECTION_POLAR, q
    if norm.p == 1.0:
        return kernels.DIRECTION_NUCLEAR, q
    return kernels.DIRECTION_SCHATTEN, q


def available_cores() -> int:
    """CPU cores this process may use (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _split(count: int, parts: int, filled: int = kernels.LANES) -> list[slice]:
    """Contiguous slices of the configuration axis, one per thread (the kernel releases the GIL).

    A slice of m configurations costs, in single runs, ``filled`` per 64-lane block (a block costs as much as
    ``filled`` single runs: :func:`rates.numeric.fused.kernels.filled_lanes`) plus its remainder, which runs as
    one more block from ``filled`` configurations on and one at a time below. Of three candidates -- near-equal
    slices, whole blocks dealt round-robin with the remainder on the least loaded thread, and the slices of
    least largest cost -- the split taken has the least largest cost (the wall clock) plus its total cost
    (the CPU time) over twice the threads, so that a few percent of wall clock do not cost twice the CPU: 64
    runs sharing their samples are one block on one thread, 64 data draws (break-even 48) two slices of 32
    single runs, 256 runs two slices of two full blocks. With ``filled`` = 64 (no blocks) slices are
    near-equal."""
    parts = max(1, min(parts, count))
    lanes = kernels.LANES
    filled = min(filled, lanes)

    def cost(m: int) -> int:
        return filled * (m // lanes) + min(m % lanes, filled)

    def most(budget: int) -> int:  # the most configurations a slice holds at this cost
        return lanes * (budget // filled) + budget % filled

    edges = np.linspace(0, count, parts + 1).round().astype(int)
    candidates = [[int(hi - lo) for lo, hi in zip(edges[:-1], edges[1:])]]
    blocks = [0] * parts
    for b in range(count // lanes):
        blocks[b % parts] += lanes
    blocks[min(range(parts), key=lambda i: cost(blocks[i]))] += count % lanes
    candidates.append(blocks)
    low, high = 0, cost(count)
    while low < high:  # the least cost at which ``parts`` slices hold every configuration
        middle = (low + high) // 2
        low, high = (low, middle) if parts * most(middle) >= count else (middle + 1, high)
    candidates.append([max(0, min(most(low), count - most(low) * i)) for i in range(parts)])
    sizes = min(candidates, key=lambda c: max(map(cost, c)) + sum(map(cost, c)) / (2 * parts))
    starts = np.concatenate([[0], np.cumsum([m for m in sizes if m > 0])])
    return [slice(int(lo), int(hi)) for lo, hi in zip(starts[:-1], starts[1:])]


class FusedGroup:
    """Runs sharing one recipe, from ``W_0 = 0``; ``runs`` are :class:`rates.numeric.engine.ResolvedRun`; ``H`` (n, d)
    and ``y`` (n,) for all runs, or (R, n, d) and (R, n): run r's own data (see the module docstring)."""

    def __init__(self, runs: Sequence[Any], H: np.ndarray, y: np.ndarray, k: int, threads: Optional[int] = None):
        recipe = runs[0].recipe
        H = np.ascontiguousarray(H, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        R = len(runs)
        if H.ndim == 3:  # one dataset per run
            if H.shape[0] != R or y.shape != H.shape[:2]:
                raise ValueError(f"per-run data must be (R, n, d) and (R, n) with R = {R}, got {H.shape}, {y.shape}")
            if recipe.source == "vr":
                raise ValueError("VR runs take one dataset per group: their snapshot reads the group's data")
            self.lane_H, self.lane_y = H, y
            H, y = H[0], y[0]  # the kernel's shape source; no lane reads it
        else:
            self.lane_H, self.lane_y = np.zeros((0,) + H.shape), np.zeros((0,) + y.shape, dtype=np.int64)
        self.H, self.y = H, y
        n, d = self.H.shape
        self.t = 0
        self.source = _SOURCES[recipe.source]
        self.batch = int(recipe.batch) if recipe.batch is not None else n
        self.steps_per_epoch = n // self.batch
        self.direction, self.q = direction_of(recipe)
        self.use_momentum = bool(recipe.momentum)

        def column(values: list[float]) -> np.ndarray:
            return np.ascontiguousarray(values, dtype=np.float64)

        self.eta0 = column([r.spec.eta0 for r in runs])
        # the polynomial family by its exponent; any other schedule by its row of the table (-1: none)
        self.tabled = list(dict.fromkeys(r.schedule for r in runs if not r.schedule.is_polynomial))
        self.a = column([float(r.schedule.a) if r.schedule.is_polynomial else 0.0 for r in runs])
        self.schedule_row = np.array([-1 if r.schedule.is_polynomial else self.tabled.index(r.schedule) for r in runs],
                                     dtype=np.int64)
        self.table = np.zeros((len(self.tabled), 0))
        self.table_t0 = 0
        self.beta = column([r.algorithm.momentum for r in runs])
        self.beta1 = column([r.spec.adam_beta1 for r in runs])
        self.beta2 = column([r.spec.adam_beta2 for r in runs])
        self.eps = column([r.spec.adam_eps for r in runs])
        self.W = np.zeros((R, k, d))

        def state(shape: tuple, used: bool) -> np.ndarray:
            return np.zeros(shape if used else (R,) + (0,) * (len(shape) - 1))

        self.mom = state((R, k, d), self.use_momentum)
        self.adam_m = state((R, k, d), recipe.adam)
        self.adam_v = state((R, k, d), recipe.adam)
        self.snap_coeff = state((R, k, n), self.source == kernels.SOURCE_VR)
        self.snap_full = state((R, k, d), self.source == kernels.SOURCE_VR)
        self.mom_scale = np.full((R, k), -np.inf)
        self.adam_s = np.full((R, k), -np.inf)
        self.snap_scale = np.full((R, k), -np.inf)
        self.streams = None
        if self.source != kernels.SOURCE_FULL:  # torch's generator: imported for mini-batch and VR runs only
            from rates.numeric.optim.sources import epoch_permutations

            self.streams = [epoch_permutations(r.spec.seed, n) for r in runs]
        self.current: Optional[np.ndarray] = None  # (R, n): the permutation of the epoch in progress
        threads = max(1, min(R, threads if threads is not None else available_cores()))
        own_samples = self.lane_H.shape[0] > 0 or self.source != kernels.SOURCE_FULL
        filled = int(kernels.filled_lanes(own_samples, n if self.source == kernels.SOURCE_FULL else self.batch, k, d))
        self.slices = _split(R, threads, filled)  # the runs of each thread, the same in every chunk
        from rates.numeric.exact_sign import takes_exact_signs

        # plain full-batch SignGD: the kernel stops where a sign is undecided, settled here (_settle)
        self.certify = takes_exact_signs(recipe) and self.direction == kernels.DIRECTION_SIGN
        lanes_H = self.lane_H if self.lane_H.shape[0] else self.H[None]
        self.column_max = np.ascontiguousarray(np.broadcast_to(np.abs(lanes_H).max(axis=1), (R, d)))
        self.signs = np.zeros((R, k, d) if self.certify else (R, 0, 0))
        self.stopped = np.zeros(R, dtype=np.int64)

    def _permutations(self, t0: int, t1: int) -> tuple[np.ndarray, int]:
        """(R, E, n) permutations of the epochs that steps t0 .. t1-1 touch, and the first epoch's index."""
        R, n = self.W.shape[0], self.H.shape[0]
        if self.streams is None:
            return np.zeros((R, 1, n), dtype=np.int64), 0
        first, last = t0 // self.steps_per_epoch, (t1 - 1) // self.steps_per_epoch
        out = np.empty((R, last - first + 1, n), dtype=np.int64)
        start = 0
        if t0 % self.steps_per_epoch:  # the epoch in progress was drawn by an earlier call
            out[:, 0] = self.current
            start = 1
        for r, stream in enumerate(self.streams):
            for e in range(start, out.shape[1]):
                out[r, e] = next(stream).numpy()
        self.current = out[:, -1].copy()
        return out, first

    def _chunk_steps(self) -> int:
        R, n = self.W.shape[0], self.H.shape[0]
        steps = max(1, CHUNK_CONFIG_STEPS // R)
        if self.streams is not None:  # the chunk's permutations stay below ~32 MB
            steps = min(steps, max(1, (1 << 22) // (R * n)) * self.steps_per_epoch)
        return steps

    def _kernel(self, part: slice, t1: int, perms: np.ndarray, epoch0: int) -> None:
        """The kernel over the runs ``part`` from ``self.t`` to ``t1``; where it stops at an undecided sign
        (``certify``), the step is settled and taken here, and the kernel called again from the next step."""
        pending = [(part, self.t)]
        while pending:
            runs, t0 = pending.pop()
            if t0 >= t1:
                continue
            kernels.advance(self.W[runs], t0, t1, self.H, self.y, self.source, self.batch, self.direction, self.q,
                            self.use_momentum, self.eta0[runs], self.a[runs], self.beta[runs], self.beta1[runs],
                            self.beta2[runs], self.eps[runs], self.mom[runs], self.mom_scale[runs], self.adam_m[runs],
                            self.adam_v[runs], self.adam_s[runs], perms[runs], epoch0, self.snap_coeff[runs],
                            self.snap_full[runs], self.snap_scale[runs], self._lanes(self.lane_H, runs),
                            self._lanes(self.lane_y, runs), self.schedule_row[runs],
                            self.table if self.tabled else None, self.table_t0, self.certify,
                            self.column_max[runs], self.signs[runs], self.stopped[runs])
            lo = runs.start
            while lo < runs.stop:  # runs of one block stop together: contiguous ranges of one step
                step = int(self.stopped[lo])
                hi = lo + 1
                while hi < runs.stop and self.stopped[hi] == step:
                    hi += 1
                if step < t1:
                    for r in range(lo, hi):
                        self._settle(r, step)
                    pending.append((slice(lo, hi), step + 1))
                lo = hi

    def _settle(self, r: int, t: int) -> None:
        """Run r's SignGD step t from the kernel's signs, its undecided (NaN) ones decided exactly
        (:func:`rates.numeric.exact_sign.decide`), with the kernel's step size (the same float64 operations)."""
        from rates.numeric.exact_sign import decide

        D = self.signs[r].copy()
        entries = [tuple(e) for e in np.argwhere(np.isnan(D)).tolist()]
        H, y = (self.lane_H[r], self.lane_y[r]) if self.lane_H.shape[0] else (self.H, self.y)
        for (c, l), sign in zip(entries, decide(self.W[r], H, y, entries)):
            D[c, l] = sign
        row = self.schedule_row[r]
        unit = (t + 2.0) ** (-self.a[r]) if row < 0 else self.table[row, t - self.table_t0]
        self.W[r] -= (self.eta0[r] * unit) * D

    def _cover(self, t1: int) -> int:
        """Fill the schedules' table so that it covers the steps from ``self.t`` on (refilled only when they
        leave it); returns ``t1`` cut to the steps it covers."""
        width = self.table.shape[1]
        if not (self.table_t0 <= self.t < self.table_t0 + width):
            width = TABLE_STEPS
            self.table = np.ascontiguousarray([s.unit_values(self.t, self.t + width) for s in self.tabled])
            self.table_t0 = self.t
        return min(t1, self.table_t0 + width)

    @staticmethod
    def _lanes(values: np.ndarray, part: slice) -> np.ndarray:
        """The runs ``part`` of per-run data, or the empty placeholder (no per-run data) as it is."""
        return values[part] if values.shape[0] else values

    def advance_to(self, t_end: int, progress: Optional[Callable[[int], None]] = None) -> None:
        """Advance every run to step ``t_end`` (>= the current step)."""
        chunk = self._chunk_steps()
        while self.t < t_end:
            t1 = min(t_end, self.t + chunk)
            if self.tabled:
                t1 = self._cover(t1)
            perms, epoch0 = self._permutations(self.t, t1)
            if len(self.slices) == 1:
                self._kernel(self.slices[0], t1, perms, epoch0)
            else:
                with ThreadPoolExecutor(len(self.slices)) as pool:
                    list(pool.map(lambda part, t1=t1, perms=perms, epoch0=epoch0: self._kernel(part, t1, perms, epoch0),
                                  self.slices))
            if progress is not None:
                progress(t1 - self.t)
            self.t = t1
