"""What a request will cost, said before it starts: memory (refused when it cannot fit) and time (announced
when over an hour).

The per-run figures are measured, not derived: ``rates run --algo signgd --steps 2000`` on the default data
(n = 30, k = 3, d = 5, 60 checkpoints) peaked at 418 MB resident for 1000 seeds and 329 MB for 10, so
~90 KB per run, almost all of it the checkpoint arrays as numpy, Python lists and JSON text while the
Trajectory is saved. The estimate doubles that (fragmentation, JSON built in one string) and adds the
engine's tensors (~40 float64 copies of the logits and of W per run). Time: the same runs took 0.47 ms per
step plus 7.2 us per run and step (scaled by n k d / 450); other algorithms cost up to ~5x more per step.
Those time constants are the torch engine's; the fused kernels are one to three orders of magnitude faster,
so a request the constants put over the hour is timed by a short probe (:func:`measured_seconds`; a task
list: one probe per recipe, :mod:`rates.numeric.duration`) before the announcement, which then gives the
probe's figure.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Optional

from rates.errors import InputError

BASE_BYTES = 350 * 2**20  # interpreter, torch, numpy, sympy
CHECKPOINT_BYTES_PER_RUN = 3000  # per checkpoint: 8 arrays as numpy + list + JSON text, x2 margin (1500 measured)
TENSOR_COPIES = 40
STEP_SECONDS = 4.7e-4
RUN_STEP_SECONDS = 7.2e-6
REFERENCE_SIZE = 30 * 3 * 5
MEMORY_SHARE = 0.5  # refuse a request estimated above this share of the memory available now
ANNOUNCE_SECONDS = 3600.0


@dataclass(frozen=True)
class Estimate:
    bytes: int
    seconds: float
    runs: int
    steps: int

    def text(self) -> str:
        return (f"{self.runs} run(s) x {self.steps} steps: about {self.bytes / 2**30:.2f} GiB and "
                f"{_duration(self.seconds)}")


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def available_memory() -> Optional[int]:
    """Bytes available to a new allocation now (Linux ``MemAvailable``; else free physical pages)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def estimate_linear_runs(runs: int, steps: int, checkpoints: int, n: int, k: int, d: int,
                         calls: int = 1) -> Estimate:
    """Peak memory and wall time of ``runs`` linear-model runs (``calls`` separate simulate calls); a run
    keeps at most one checkpoint per step."""
    checkpoints = min(checkpoints, max(steps, 1))
    size = max(n * k + k * d + n, 1)
    per_run = CHECKPOINT_BYTES_PER_RUN * checkpoints + TENSOR_COPIES * 8 * size
    seconds = steps * (calls * STEP_SECONDS + runs * RUN_STEP_SECONDS * max(n * k * d, 1) / REFERENCE_SIZE)
    return Estimate(BASE_BYTES + runs * per_run, seconds, runs, steps)


def check(estimate: Estimate, option: str = "seeds", available: Optional[int] = None,
          advice: str = "ask for fewer runs, steps or checkpoints",
          measure: Optional[Callable[[], float]] = None) -> None:
    """Refuse (exit 2, naming ``option``) a request that would not fit in memory; announce one over an hour.

    ``measure()``, when given, returns the request's seconds from a timed probe (:func:`measured_seconds`); it
    replaces the constants' figure before the announcement, and runs only when that figure is over the hour
    (so a refusal, and a short request, cost no probe)."""
    free = available_memory() if available is None else available
    if free is not None and estimate.bytes > MEMORY_SHARE * free:
        raise InputError(option, f"{estimate.text()}, more than {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB "
                                 f"available; {advice}")
    if estimate.seconds > ANNOUNCE_SECONDS and measure is not None:
        estimate = replace(estimate, seconds=measure())
    if estimate.seconds > ANNOUNCE_SECONDS:
        print(f"rates: note: this request is estimated at {estimate.text()} (rough; Ctrl-C stops it)",
              file=sys.stderr)


MIN_CHECKPOINTS = 2  # the fewest checkpoints any command records for a run


def check_count(count: int, option: str, runs_per_seed: int = 1, checkpoints: int = MIN_CHECKPOINTS,
                what: str = "seed(s)", available: Optional[int] = None) -> None:
    """Refuse (exit 2, naming ``option``) ``count`` seeds whose runs' records alone would not fit in memory.

    A floor checked before anything is built (a seed list, the tasks, the data draws): each seed costs at least
    ``runs_per_seed`` run records of ``checkpoints`` checkpoints (:data:`CHECKPOINT_BYTES_PER_RUN` each), so a
    request refused here would be refused, far later, by the full estimate too."""
    need = BASE_BYTES + int(count) * int(runs_per_seed) * CHECKPOINT_BYTES_PER_RUN * int(checkpoints)
    free = available_memory() if available is None else available
    if free is not None and need > MEMORY_SHARE * free:
        runs = f" x {runs_per_seed} runs" if runs_per_seed > 1 else ""
        raise InputError(option, f"{count} {what}{runs}: the runs' records alone need about {need / 2**30:.1f} GiB, "
                                 f"more than {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB available; ask for "
                                 "fewer")


# generated data: H and one same-sized draw of noise as float64, the labels as int64
DATA_COPIES = 2


def check_generated_data(n: int, k: int, d: int, what: str, available: Optional[int] = None) -> None:
    """Refuse (exit 2, ``--data``) generated data that, with the max-norm LP that checks its separability, would
    not fit in the memory available now; before any array is allocated."""
    need = BASE_BYTES + DATA_COPIES * 8 * n * d + 8 * n
    need += estimate_max_margin_bytes(n, k, d, semidefinite=False, conic=False) - BASE_BYTES
    free = available_memory() if available is None else available
    if free is not None and need > MEMORY_SHARE * free:
        raise InputError("data", f"{what}: n = {n} points of d = {d} features with k = {k} classes need about "
                                 f"{need / 2**30:.1f} GiB (the data and the max-margin LP that checks separability), "
                                 f"more than {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB available; ask for "
                                 "fewer points or features")


PROBE_SECONDS = 0.1  # a probe long enough that timer noise and per-call costs are small against it


def measured_seconds(run_steps, steps: int, calls: int = 1, clock: Optional[Callable[[], float]] = None) -> float:
    """Wall time of ``calls`` x ``steps`` steps from the engine's measured rate on this machine, not from
    constants: ``run_steps(s)`` runs ``s`` steps of the real configuration. After a two-step warm-up (max
    margin, compiled kernels), probes double until one takes :data:`PROBE_SECONDS`; the rate is the
    difference of the last two probes per step, so each call's fixed cost (checkpoints, set-up) cancels.
    ``clock`` (seconds; default :func:`time.perf_counter`) times the probes: a test's fake clock gives exact
    expectations."""
    from time import perf_counter

    now = perf_counter if clock is None else clock

    def timed(s: int) -> float:
        start = now()
        run_steps(s)
        return now() - start

    timed(2)
    probe, previous = 64, timed(64)
    while previous < PROBE_SECONDS and probe * 2 <= steps:
        probe *= 2
        current = timed(probe)
        rate = max(current - previous, 0.0) / (probe // 2)
        previous = current
        if current >= PROBE_SECONDS:
            return calls * (rate * steps + current - rate * probe)
    return calls * previous * steps / probe  # too short to measure a difference: scale the whole probe

# The max-margin programs (rates.numeric.margins): the sparse constraint matrix has 2 d nonzeros in each of its
# n (k - 1) rows; the LPs add an identity block of k d entries and HiGHS keeps a few copies (presolve, the
# scaled matrix, its transpose), ~12 bytes per nonzero each. Measured (k = 3, n = 60, max norm, whole
# `rates run`): d = 2000 peaked at 0.50 GB, d = 20000 at 2.1 GB with the interior-point dual.
LP_COPIES = 24
# cvxpy's canonicalisation and Clarabel's KKT system hold the constraint data several times over
CONIC_COPIES = 60
# the spectral / nuclear norms' semidefinite cone: Clarabel's scaling of a PSD cone of order k + d is a dense
# block over its svec, (k + d)(k + d + 1)/2 squared, in the KKT matrix; it and its factor are held
SDP_DENSE_COPIES = 2


DENSE_COPIES = 3  # a dense working-set block (NNLS): the matrix, its QR work space and a product


def estimate_max_margin_bytes(n: int, k: int, d: int, semidefinite: bool, conic: bool, dense_rows: int = 0) -> int:
    """Peak bytes of one max-margin solve of data (n, d) with k classes, beside the interpreter; ``dense_rows``
    rows of a dense k d + 1 block on top (a working set solved by dense linear algebra)."""
    nonzeros = 2 * d * n * (k - 1) + k * d
    bytes_ = (CONIC_COPIES if conic else LP_COPIES) * 12 * nonzeros + DENSE_COPIES * 8 * dense_rows * (k * d + 1)
    if semidefinite:
        svec = (k + d) * (k + d + 1) // 2
        bytes_ += SDP_DENSE_COPIES * 8 * svec ** 2
    return int(BASE_BYTES + bytes_)


def check_max_margin(n: int, k: int, d: int, norm_name: str, semidefinite: bool, conic: bool,
                     available: Optional[int] = None, dense_rows: int = 0) -> None:
    """Refuse (exit 2, ``--data``) a max-margin program that would not fit in the memory available now."""
    need = estimate_max_margin_bytes(n, k, d, semidefinite, conic, dense_rows)
    free = available_memory() if available is None else available
    if free is not None and need > MEMORY_SHARE * free:
        raise InputError("data", f"the {norm_name} max-margin program of n = {n}, k = {k}, d = {d} needs about "
                                 f"{need / 2**30:.1f} GiB, more than {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB "
                                 "available; reduce d (e.g. a projection or PCA of the features) or n"
                                 + ("" if not conic else ", or use a norm solved as an LP (max, sum)"))


# Homogeneous ReLU nets (rates homogeneous): the parameters of all seeds, trained together, with ~20 copies
# (gradients, optimiser state, the two-point estimate's perturbed copy, float64), plus the activations of
# every layer for the training points; ~5 multiply-adds per weight, training point and step at ~1 GFLOP/s.
NET_COPIES = 20
NET_FLOPS_PER_SECOND = 1e9


def estimate_homogeneous(seeds: int, width: int, depth: int, dim: int, n_train: int, steps: int) -> Estimate:
    """Peak memory and time of training ``seeds`` nets of ``depth`` hidden layers of ``width`` on ``n_train``
    points of dimension ``dim``."""
    weights = width * dim + (depth - 1) * width * width + width
    bytes_ = BASE_BYTES + seeds * 8 * (NET_COPIES * weights + 4 * n_train * width * depth)
    seconds = steps * seeds * 5.0 * weights * n_train / NET_FLOPS_PER_SECOND
    return Estimate(int(bytes_), seconds, seeds, steps)
