"""What code a run executes: :class:`Recipe`, the part of a configuration that fixes the program.

Setting: docs/theory.md section 2. Seventeen named algorithms (rates.numeric.algorithms) are points of one recipe:
source kind (full gradient, reshuffled mini-batches, VR), batch size, norm, polar method, Adam or steepest
direction, momentum or not. All runs sharing a recipe advance together (one batched torch program,
:func:`rates.numeric.optim.compose.build`, or one compiled kernel call, :mod:`rates.numeric.fused`) and differ only
in per-run
numbers (eta0, a, beta, Adam betas, eps, seed). The recipe is a function of one run's configuration alone,
so a run takes the same code path whether it is advanced alone or with others.

Why its own module: the engine resolves every run's recipe before choosing a stepper, and the fused CPU
stepper must not import torch (:mod:`rates.numeric.optim` is torch throughout; ``rates run`` start-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rates.numeric.optim.alias import Composition, run_composition


@dataclass(frozen=True)
class Recipe:
    """What code a run executes. ``source`` is ``full``, ``minibatch`` or ``vr``."""

    source: str
    batch: Optional[int]
    norm: str
    polar: str
    adam: bool
    momentum: bool

    def composition(self) -> Composition:
        """The chain of pieces this recipe runs (:mod:`rates.numeric.optim.alias`): what the torch program
        (:func:`rates.numeric.optim.compose.build`) and the mpmath reference are built from."""
        return run_composition(self.source, self.norm, self.momentum, self.adam)
