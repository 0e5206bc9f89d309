"""Named algorithm resolution: the family a configuration falls under, and refusals with reasons."""

import pytest

from rates.errors import InputError
from rates.numeric.algorithms import ALGORITHMS, resolve_algorithm


@pytest.mark.parametrize(
    "kwargs, family, norm",
    [
        (dict(name="signgd"), "nsd", "max"),
        (dict(name="spectral-gd"), "nsd", "spectral"),
        (dict(name="nsd", norm="lp:3"), "nsd", "lp:3"),
        (dict(name="adam"), "adam", "max"),
        (dict(name="signsgd", n=100, batch=10), "minibatch", "max"),
        (dict(name="signgd", n=100, batch=10), "minibatch", "max"),
        (dict(name="signgd", n=100, batch=100), "nsd", "max"),
        (dict(name="muon"), "momentum", "spectral"),
        (dict(name="vr-nsgd", n=100, batch=10), "vr", "frobenius"),
        (dict(name="signum", momentum=0.5, vr=True), "vr", "max"),
    ],
)
def test_family_resolution(kwargs, family, norm):
    cfg = resolve_algorithm(**kwargs)
    assert (cfg.family, cfg.norm) == (family, norm)


@pytest.mark.parametrize(
    "kwargs, option",
    [
        (dict(name="sgd"), "--algo"),
        (dict(name="nsd"), "--norm"),
        (dict(name="nsd", norm="bogus"), "--norm"),
        (dict(name="signgd", norm="spectral"), "--norm"),
        (dict(name="signum", momentum=1.0), "--momentum"),
        (dict(name="signum", momentum=-0.1), "--momentum"),
        (dict(name="signsgd", n=100, batch=7), "--batch"),
        (dict(name="signsgd", n=100, batch=0), "--batch"),
    ],
)
def test_refusals_name_the_option(kwargs, option):
    with pytest.raises(InputError) as err:
        resolve_algorithm(**kwargs)
    assert err.value.option == option


def test_every_stochastic_or_momentum_name_has_a_vr_twin():
    for name, spec in ALGORITHMS.items():
        if (spec.stochastic or spec.momentum) and not spec.vr:
            assert f"vr-{name}" in ALGORITHMS
