"""Which theorem family covers a configuration: the families' ``covers`` predicates, without sympy.

Setting: each theorem family module (:mod:`rates.symbolic.theorems.nsd`, ``adam``, ``minibatch``, ``momentum``,
``variance_reduction``, ``per_sample_family``) declares a :class:`rates.symbolic.theorems.hypotheses.FamilyDeclaration`
whose ``covers(config)`` says whether the resolved algorithm (``rates.numeric.algorithms.AlgorithmConfig``) is the one
its theorem is about; the predicates are disjoint. They read only the configuration, so they live here, apart
from the families' sympy bound templates: every ``rates run`` resolves its family (:mod:`rates.numeric.algorithms`),
and importing sympy costs ~0.6 s of a start-up meant to stay near 2 s.

Guarantee: :func:`family_name` is the name of the one family whose predicate holds (None: no theorem covers
the configuration). The family modules take their ``covers`` from :data:`COVERS`, and
:func:`rates.symbolic.theorems.registry.family_of` answers through :func:`family_name`, so "which family" is decided
here only (tests/test_verdicts.py checks that the registry's declarations carry these predicates).
"""

from __future__ import annotations

from typing import Callable, Optional

from rates.symbolic.theorems.hypotheses import PER_SAMPLE_NORMS


def is_per_sample(config) -> bool:
    """b = 1 without momentum or VR in a norm MINIBATCH Thm 4.9 treats: the per-sample family's setting."""
    return (config.batch == 1 and not (config.adam or config.vr or config.momentum > 0)
            and config.norm in PER_SAMPLE_NORMS)


def covers_nsd(config) -> bool:
    """Full-batch normalised steepest descent in any norm: no momentum, no VR, not Adam, not stochastic."""
    return not (config.adam or config.vr or config.momentum > 0 or config.stochastic)


def covers_adam(config) -> bool:
    return bool(config.adam)


def covers_minibatch(config) -> bool:
    """Mini-batch steepest descent without momentum or VR (b = 1 in a per-sample norm belongs to Thm 4.9)."""
    return bool(config.stochastic and not (config.adam or config.vr or config.momentum > 0)
                and not is_per_sample(config))


def covers_momentum(config) -> bool:
    """Heavy-ball momentum (any batch size) without VR, not Adam."""
    return bool(config.momentum > 0 and not (config.adam or config.vr))


def covers_vr(config) -> bool:
    return bool(config.vr and not config.adam)


# family name -> predicate, in the registry's order (rates.symbolic.theorems.registry.DECLARATIONS)
COVERS: dict[str, Callable[[object], bool]] = {
    "nsd": covers_nsd, "adam": covers_adam, "minibatch": covers_minibatch, "momentum": covers_momentum,
    "vr": covers_vr, "per-sample": is_per_sample,
}


# plug-in families (rates.plugins.register_family): asked before the built-in ones, so a plug-in may claim a
# configuration a built-in family would otherwise cover (its own optimiser, say); kept apart from COVERS so
# that the built-in declarations stay exactly what tests/test_verdicts.py holds them to
PLUGIN_COVERS: dict[str, Callable[[object], bool]] = {}


def family_name(config) -> Optional[str]:
    """The name of the family covering ``config``, or None: a plug-in family's when one claims it, else the
    built-in family whose predicate holds."""
    claimed = [name for name, covers in PLUGIN_COVERS.items() if covers(config)]
    if len(claimed) > 1:
        from rates.errors import InputError

        raise InputError("plugin", f"{config.name}: claimed by the plug-in families {', '.join(claimed)}; "
                                   "their covers(config) must not overlap")
    if claimed:
        return claimed[0]
    covering = [name for name, covers in COVERS.items() if covers(config)]
    if len(covering) > 1:  # the predicates are meant to be disjoint; two claims would make the gate ambiguous
        raise AssertionError(f"{config.name}: covered by {', '.join(covering)}")
    return covering[0] if covering else None
