"""Theorem families (docs/theory.md section 3) and the one entry point :func:`predict`.

Registry: family name (``rates.algorithms.AlgorithmConfig.family``) -> template builder. Each family module
holds its bound template, thresholds' ingredients, assumptions, source and derivation (docstrings in the
PEPit style). The per-sample theorem predicts a limit direction, not a rate: see
:mod:`rates.theorems.per_sample`.
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from rates.algorithms import AlgorithmConfig
from rates.errors import InputError
from rates.theorems import adam, minibatch, momentum, nsd, variance_reduction
from rates.theorems.base import BoundTemplate, Prediction, Source, make_prediction

FAMILIES: dict[str, Callable[[AlgorithmConfig], BoundTemplate]] = {
    "nsd": lambda config: nsd.template(config.norm),
    "adam": lambda config: adam.template(config.norm),
    "minibatch": lambda config: minibatch.template(config.norm),
    "momentum": lambda config: momentum.template(config.norm),
    "vr": lambda config: variance_reduction.template(config.norm, with_momentum=config.momentum > 0),
}

# One representative configuration per family (for tables); the rate does not depend on the norm.
FAMILY_EXAMPLES = {
    "nsd": ("signgd, ngd, spectral-gd, cd, nsd (any entry-wise / Schatten-p norm)", "signgd"),
    "adam": ("adam", "adam"),
    "minibatch": ("signsgd, nsgd, spectral-sgd", "signsgd"),
    "momentum": ("signum, momentum-ngd, muon (+ mini-batch)", "signum"),
    "vr": ("vr-signsgd, vr-nsgd, vr-spectral-sgd, vr-signum, vr-muon, vr-momentum-ngd", "vr-signsgd"),
}


def template_for(config: AlgorithmConfig) -> BoundTemplate:
    if config.family not in FAMILIES:
        raise InputError("algo", f"no theorem family {config.family!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[config.family](config)


def predict(config: AlgorithmConfig, a: sp.Rational, constants: dict[str, float] | None = None) -> Prediction:
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
        values.setdefault("b", config.batch if config.batch is not None else (config.n if config.family in ("nsd", "adam") else None))
        values.setdefault("beta", config.momentum)
    return make_prediction(template_for(config), config.name, config.norm, a, values or None)


__all__ = ["FAMILIES", "FAMILY_EXAMPLES", "Prediction", "Source", "predict", "template_for"]
