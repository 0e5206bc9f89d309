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


# plug-in families (rates.plugins.register_family): asked before the built-in ones about a plug-in's optimiser,
# and about a built-in optimiser only when the user chose the family by name (--family); kept apart from COVERS so
# that the built-in declarations stay exactly what tests/test_verdicts.py holds them to
PLUGIN_COVERS: dict[str, Callable[[object], bool]] = {}


def _plugin_covers(name: str, config) -> bool:
    """A plug-in family's ``covers(config)``, its failure or a non-boolean answer reported against the plug-in."""
    from rates.errors import PluginError
    from rates.symbolic.theorems.provenance import call, origin_of

    origin = origin_of("family", name) or "unknown"
    answer = call(origin, f"family {name!r}: covers(config) for {config.name}", PLUGIN_COVERS[name], config)
    if type(answer).__name__ not in ("bool", "bool_"):  # True/False, or numpy's
        raise PluginError(origin, f"family {name!r}: covers(config) for {config.name} returned {answer!r}, "
                                  "not True or False")
    return bool(answer)


def family_name(config) -> Optional[str]:
    """The name of the family covering ``config``, or None: a plug-in family's when one claims it -- any plug-in
    family for a plug-in's optimiser, only the families chosen with ``--family`` for a built-in one -- else the
    built-in family whose predicate holds."""
    from rates.symbolic.theorems.provenance import chosen_families, origin_of

    if PLUGIN_COVERS:
        built_in = origin_of("optimizer", config.name) is None
        asked = [name for name in PLUGIN_COVERS if not built_in or name in chosen_families()]
        claimed = [name for name in asked if _plugin_covers(name, config)]
        if len(claimed) > 1:
            from rates.errors import PluginError

            origins = " and ".join(dict.fromkeys(origin_of("family", name) or "unknown" for name in claimed))
            raise PluginError(origins, f"{config.name}: claimed by the plug-in families {', '.join(claimed)}; "
                                       "their covers(config) must not overlap")
        if claimed:
            return claimed[0]
    covering = [name for name, covers in COVERS.items() if covers(config)]
    if len(covering) > 1:  # the predicates are meant to be disjoint; two claims would make the gate ambiguous
        raise AssertionError(f"{config.name}: covered by {', '.join(covering)}")
    return covering[0] if covering else None
