"""What a request will cost, said before it starts: memory (refused when it cannot fit) and time (announced
when over an hour).

The per-run figures are measured, not derived: ``rates run --algo signgd --steps 2000`` on the default data
(n = 30, k = 3, d = 5, 60 checkpoints) peaked at 418 MB resident for 1000 seeds and 329 MB for 10, so
~90 KB per run, almost all of it the checkpoint arrays as numpy, Python lists and JSON text while the
Trajectory is saved. The estimate doubles that (fragmentation, JSON built in one string) and adds the
engine's tensors (~40 float64 copies of the logits and of W per run). Time: the same runs took 0.47 ms per
step plus 7.2 us per run and step (scaled by n k d / 450); other algorithms cost up to ~5x more per step.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Optional

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
    """Peak memory and wall time of ``runs`` linear-model runs (``calls`` separate simulate calls)."""
    size = max(n * k + k * d + n, 1)
    per_run = CHECKPOINT_BYTES_PER_RUN * checkpoints + TENSOR_COPIES * 8 * size
    seconds = steps * (calls * STEP_SECONDS + runs * RUN_STEP_SECONDS * max(n * k * d, 1) / REFERENCE_SIZE)
    return Estimate(BASE_BYTES + runs * per_run, seconds, runs, steps)


def check(estimate: Estimate, option: str = "seeds", available: Optional[int] = None) -> None:
    """Refuse (exit 2, naming ``option``) a request that would not fit in memory; announce one over an hour."""
    free = available_memory() if available is None else available
    if free is not None and estimate.bytes > MEMORY_SHARE * free:
        raise InputError(option, f"{estimate.text()}, more than {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB "
                                 f"available; ask for fewer runs, steps or checkpoints")
    if estimate.seconds > ANNOUNCE_SECONDS:
        print(f"rates: note: this request is estimated at {estimate.text()} (rough; Ctrl-C stops it)",
              file=sys.stderr)


PROBE_SECONDS = 0.1  # a probe long enough that timer noise and per-call costs are small against it


def measured_seconds(run_steps, steps: int, calls: int = 1) -> float:
    """Wall time of ``calls`` x ``steps`` steps from the engine's measured rate on this machine, not from
    constants: ``run_steps(s)`` runs ``s`` steps of the real configuration. After a two-step warm-up (max
    margin, compiled kernels), probes double until one takes :data:`PROBE_SECONDS`; the rate is the
    difference of the last two probes per step, so each call's fixed cost (checkpoints, set-up) cancels."""
    from time import perf_counter

    def timed(s: int) -> float:
        start = perf_counter()
        run_steps(s)
        return perf_counter() - start

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

