"""Where a theorem comes from: :class:`Source` (a paper's short name and a theorem number), without sympy.

Setting: every family cites its theorem as ``Source(seed, theorem)``; :mod:`rates.symbolic.papers` turns the seed
(the paper's short name) into a citation. Kept apart from :mod:`rates.symbolic.theorems.base` (the sympy bound
templates) so that what a run records about its data and per-sample limit direction
(:mod:`rates.symbolic.theorems.per_sample`) costs no sympy import (``rates run`` start-up).
"""

from __future__ import annotations

from dataclasses import dataclass

from rates.symbolic.papers import reference_for

SEED_SIGNADAM = "SIGNADAM"
SEED_MINIBATCH = "MINIBATCH"


@dataclass(frozen=True)
class Source:
    seed: str
    theorem: str

    def to_json(self) -> dict:
        return {"seed": self.seed, "theorem": self.theorem}

    @property
    def text(self) -> str:
        return f"{self.seed} {self.theorem}"

    @property
    def reference(self):
        """The paper this source cites (:mod:`rates.symbolic.papers`), or None for a seed name it does not know."""
        return reference_for(self.seed)
