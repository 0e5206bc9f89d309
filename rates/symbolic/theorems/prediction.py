"""The one entry point :func:`predict` and the registry of rate-predicting families.

Registry: built from each family module's own declaration (:mod:`rates.symbolic.theorems.registry`): family name
(``rates.numeric.algorithms.AlgorithmConfig.family``) -> template builder, for the families that predict a rate.
The per-sample theorem predicts a limit direction, not a rate: see :mod:`rates.symbolic.theorems.per_sample`.
"""

from __future__ import annotations

from typing import Any, Callable

import sympy as sp

from rates.errors import InputError
from rates.symbolic.theorems.base import BoundTemplate, Prediction, make_prediction
from rates.symbolic.theorems.registry import DECLARATIONS, REGISTRY

# configurations are rates.numeric.algorithms.AlgorithmConfig; not imported: the symbolic layer comes before
# the numeric one (rates.numeric.algorithms resolves its family through this package's registry)
FAMILIES: dict[str, Callable[[Any], BoundTemplate]] = {
    family.name: family.template for family in DECLARATIONS if family.template is not None}


def plugin_template(family, config: Any) -> BoundTemplate:
    """A plug-in family's ``template(config)``: its failure, or anything but a :class:`BoundTemplate`, is the
    plug-in's error (:class:`rates.errors.PluginError`, naming its file or distribution)."""
    from rates.errors import PluginError
    from rates.symbolic.theorems.provenance import call

    template = call(family.origin, f"family {family.name!r}: template(config) for {config.name}", family.template,
                    config)
    if not isinstance(template, BoundTemplate):
        raise PluginError(family.origin, f"family {family.name!r}: template(config) for {config.name} returned "
                                         f"{template!r}, not a rates.plugins.BoundTemplate")
    return template


def template_for(config: Any) -> BoundTemplate:
    if config.family not in FAMILIES and config.family in REGISTRY and REGISTRY[config.family].template is not None:
        return plugin_template(REGISTRY[config.family], config)  # a plug-in family (rates.plugins.register_family)
    if config.family in REGISTRY and config.family not in FAMILIES:
        family = REGISTRY[config.family]
        raise InputError("batch", f"{config.name} with b = 1 is covered by the {family.name} family "
                                    f"({family.source.seed} {family.source.theorem}), which predicts a limit "
                                    "direction, not a rate")
    if config.family not in FAMILIES:
        raise InputError("algo", f"no theorem family {config.family!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[config.family](config)


def predict(config: Any, a: sp.Rational, constants: dict[str, float] | None = None) -> Prediction:
    """What the theory predicts for ``config`` with ``eta_t = eta_0 (t+2)^(-a)``.

    ``constants`` may hold ``gamma, B, eta_0, n, k, c_adam`` (``n``, ``b``, ``beta`` default to the config's);
    thresholds get numeric values when what they need is present.
    """
    a = sp.Rational(a)
    if not (0 < a <= 1):
        raise InputError("a", f"must be in (0, 1], got {a}")
    values = dict(constants or {})
    if values:
        values.setdefault("n", config.n)
        values.setdefault("b", config.batch if config.batch is not None else (None if config.stochastic else config.n))
        values.setdefault("beta", config.momentum)
    template = template_for(config)
    family = REGISTRY.get(config.family)
    if family is None or not family.origin:
        return make_prediction(template, config.name, config.norm, a, values or None)
    from rates.symbolic.theorems.provenance import call  # a plug-in's template: what fails deriving from it is its own

    return call(family.origin, f"family {family.name!r}: deriving the rate from its template for {config.name}",
                make_prediction, template, config.name, config.norm, a, values or None)
