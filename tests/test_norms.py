"""Norms, duals and steepest directions (docs/theory.md section 2) against numpy's independent norms."""

import math

import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.norms import inner, newton_schulz_polar, parse_norm

ALL_NORMS = ["max", "sum", "frobenius", "spectral", "nuclear", "lp:3", "lp:1.5", "lp:7", "schatten:3", "schatten:1.5"]


@pytest.fixture
def batch():
    gen = torch.Generator().manual_seed(1234)
    return torch.randn(16, 5, 8, dtype=torch.float64, generator=gen)


@pytest.mark.parametrize("name", ALL_NORMS)
def test_steepest_direction_attains_dual_norm_on_unit_sphere(name, batch):
    norm = parse_norm(name)
    delta = norm.steepest(batch)
    assert torch.allclose(inner(batch, delta), norm.dual_value(batch), rtol=0, atol=1e-12)
    assert torch.allclose(norm.value(delta), torch.ones(16, dtype=torch.float64), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ALL_NORMS)
def test_dual_norm_bounds_every_unit_vector(name, batch):
    """Hoelder: <Z, D> <= ||Z||_* ||D|| for random D, the definition of the dual norm."""
    norm = parse_norm(name)
    gen = torch.Generator().manual_seed(7)
    D = torch.randn(16, 5, 8, dtype=torch.float64, generator=gen)
    assert torch.all(inner(batch, D) <= norm.dual_value(batch) * norm.value(D) + 1e-12)


def test_values_match_numpy(batch):
    Z = batch.numpy()
    ref = {
        "max": np.abs(Z).max(axis=(1, 2)),
        "sum": np.abs(Z).sum(axis=(1, 2)),
        "frobenius": np.linalg.norm(Z, "fro", axis=(1, 2)),
        "spectral": np.linalg.norm(Z, 2, axis=(1, 2)),
        "nuclear": np.linalg.norm(Z, "nuc", axis=(1, 2)),
        "lp:3": (np.abs(Z) ** 3).sum(axis=(1, 2)) ** (1 / 3),
        "schatten:3": (np.linalg.svd(Z, compute_uv=False) ** 3).sum(axis=1) ** (1 / 3),
    }
    for name, expected in ref.items():
        np.testing.assert_allclose(parse_norm(name).value(batch).numpy(), expected, rtol=1e-13)


def test_duals_and_names():
    assert parse_norm("max").dual().name == "sum"
    assert parse_norm("spectral").dual().name == "nuclear"
    assert parse_norm("lp:3").dual().p == pytest.approx(1.5)
    assert parse_norm("schatten:2").name == "frobenius"
    assert parse_norm("lp:inf").name == "max"
    assert math.isinf(parse_norm("sum").q)


@pytest.mark.parametrize("bad", ["l7", "schatten:0.5", "lp:x", "", "spectrum"])
def test_unknown_norms_are_refused(bad):
    with pytest.raises(InputError, match="--norm"):
        parse_norm(bad)


def test_newton_schulz_approximates_the_polar_factor(batch):
    # Muon's quintic iteration lands singular values in a band around 1, not exactly on 1.
    sv = torch.linalg.svdvals(newton_schulz_polar(batch, steps=5))
    assert sv.min() > 0.6 and sv.max() < 1.25


def test_large_entries_do_not_overflow_lp():
    Z = torch.tensor([[1e200, -3e199], [0.0, 2e199]], dtype=torch.float64)
    norm = parse_norm("lp:7")
    delta = norm.steepest(Z)
    assert torch.isfinite(delta).all()
    assert float(norm.value(delta)) == pytest.approx(1.0, abs=1e-12)
