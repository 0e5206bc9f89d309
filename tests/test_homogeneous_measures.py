"""Soft margin (FLAVORS eq. 5, App. A.3) and the margins of eq. 13 / 15 against hand-computed cases and mpmath."""

import math

import mpmath
import pytest
import torch

from rates.numeric.homogeneous.measures import accuracy, geometric_margins, inverse_loss, log_loss, soft_margin
from rates.numeric.homogeneous.models import Network, forward

T = lambda *rows: torch.tensor(rows, dtype=torch.float64)  # noqa: E731


def hand_net():
    # W = [[1, 0], [0, 2]], u = [3, -1]: f(x) = 3 relu(x1) - relu(2 x2).
    return Network([T([1.0, 0.0], [0.0, 2.0]).unsqueeze(0), T([3.0, -1.0]).unsqueeze(0)], (True, True))


def test_margins_of_eq13_and_eq15_by_hand():
    net = hand_net()
    X = T([1.0, 0.0], [0.0, 1.0], [2.0, 1.0]).unsqueeze(0)
    y = T([1.0, -1.0, 1.0]).unsqueeze(0)
    f = forward(net, X)
    assert f.tolist() == [[3.0, -2.0, 4.0]]  # 3*1; -2*1; 3*2 - 2
    q = y * f  # [3, 2, 4], min 2
    m = geometric_margins(q, net.parameters(), degree=2)
    # theta = (1, 0, 0, 2, 3, -1): ||.||_inf = 3, ||.||_2^2 = 1 + 4 + 9 + 1 = 15, ||.||_1 = 7
    assert m["gamma_1"].item() == pytest.approx(2 / 9, rel=1e-15)
    assert m["gamma_2"].item() == pytest.approx(2 / 15, rel=1e-14)
    assert m["gamma_inf"].item() == pytest.approx(2 / 49, rel=1e-15)
    # modular spectral norm: max(sigma_max(W) = 2, sigma_max(u) = sqrt(10)) = sqrt(10)
    assert m["gamma_spectral"].item() == pytest.approx(2 / 10, rel=1e-14)
    frozen = Network(net.layers, (True, False))
    m1 = geometric_margins(q, frozen.parameters(), degree=1)  # eq. 15: min yf / sigma_max(W)
    assert m1["gamma_spectral"].item() == pytest.approx(2 / 2, rel=1e-15)


def test_soft_margin_exponential_loss_survives_underflow():
    # q ~ 800 makes every e^{-q} underflow in float64; mpmath with 50 digits is the reference.
    q = T([800.0, 801.5, 950.0]).unsqueeze(0)
    log_L = log_loss(q, "exp")
    ref_L = sum(mpmath.exp(-mpmath.mpf(v)) for v in (800.0, 801.5, 950.0))
    with mpmath.workdps(50):
        assert log_L.item() == pytest.approx(float(mpmath.log(ref_L)), rel=1e-15)
        norm = torch.tensor([7.0], dtype=torch.float64)
        assert soft_margin(log_L, norm, 2, "exp").item() == pytest.approx(float(-mpmath.log(ref_L) / 49), rel=1e-15)
    # soft margin <= hard margin <= soft margin + log(m) / ||theta||^L (FLAVORS Lemma A.7)
    hard = 800.0 / 49
    assert (soft_margin(log_L, norm, 2, "exp").item() <= hard
            <= soft_margin(log_L, norm, 2, "exp").item() + math.log(3) / 49)


@pytest.mark.parametrize("qs", [(0.3, -0.2, 1.0), (40.0, 45.0), (700.0, 900.0)])
def test_logistic_inverse_against_mpmath(qs):
    q = torch.tensor([qs], dtype=torch.float64)
    log_L = log_loss(q, "logistic")
    with mpmath.workdps(60):
        L = sum(mpmath.log1p(mpmath.exp(-mpmath.mpf(v))) for v in qs)
        assert log_L.item() == pytest.approx(float(mpmath.log(L)), rel=1e-14, abs=1e-15)
        # l^{-1}(L) = -log(e^L - 1) is the u with log(1 + e^{-u}) = L
        expected = -mpmath.log(mpmath.expm1(L))
        assert inverse_loss(log_L, "logistic").item() == pytest.approx(float(expected), rel=1e-13)


def test_accuracy_counts_zero_output_as_error():
    f = T([1.0, -2.0, 0.0, 3.0]).unsqueeze(0)
    y = T([1.0, 1.0, 1.0, 1.0]).unsqueeze(0)
    assert accuracy(f, y).item() == 0.5
