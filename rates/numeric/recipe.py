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

from rates.numeric.optim.alias import Composition


@dataclass(frozen=True)
class Recipe:
    """What code a run executes: the chain of pieces of :mod:`rates.numeric.optim.alias` (its name's line
    with the run's options applied), the batch size and the polar method. The torch program
    (:func:`rates.numeric.optim.compose.build`) and the mpmath reference are built from ``composition``; the
    fused kernels read the properties below."""

    composition: Composition
    batch: Optional[int]
    polar: str

    @property
    def source(self) -> str:
        """``full``, ``minibatch`` or ``vr``."""
        return self.composition.source

    @property
    def norm(self) -> str:
        return self.composition.norm

    @property
    def adam(self) -> bool:
        return self.composition.adam

    @property
    def momentum(self) -> bool:
        return self.composition.momentum
