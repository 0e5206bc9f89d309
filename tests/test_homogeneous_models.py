"""Bias-free ReLU nets: outputs against a plain numpy forward pass, and f(c theta) = c^L f(theta) (FLAVORS A2)."""

import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.numeric.homogeneous.measures import homogeneity_error, measured_degree
from rates.numeric.homogeneous.models import forward, relu_network


def numpy_forward(layers, trainable_scale, X):
    """f(x) = u . relu(W_k ... relu(W_1 x)), written out with numpy for one run."""
    h = X.T
    for W in layers[:-1]:
        h = np.maximum(W @ h, 0.0)
    return (layers[-1] @ h).ravel()


@pytest.mark.parametrize("widths,freeze,degree", [([5], False, 2), ([4, 3, 6], False, 4), ([7], True, 1)])
def test_forward_matches_numpy_and_is_homogeneous(widths, freeze, degree):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 6))
    net = relu_network(6, widths, seeds=[3, 4], init_scale=1.0, freeze_output=freeze)
    assert net.degree == degree
    out = forward(net, torch.as_tensor(X))
    for r in range(2):
        layers = [W[r].numpy() for W in net.layers]
        np.testing.assert_allclose(out[r].numpy(), numpy_forward(layers, None, X), rtol=1e-13, atol=1e-15)
        # Scaling only the trainable layers by c multiplies f by c^L, L = number of trainable layers.
        for c in (0.3, 2.5):
            scaled = [c * W if train else W for W, train in zip(layers, net.trainable)]
            np.testing.assert_allclose(numpy_forward(scaled, None, X), c ** degree * numpy_forward(layers, None, X),
                                       rtol=1e-12, atol=1e-14)
    assert homogeneity_error(net, torch.as_tensor(X)) < 1e-13
    assert measured_degree(net, torch.as_tensor(X)) == pytest.approx(degree, abs=1e-12)


def test_flavors_initialisation_bounds():
    # FLAVORS section 4.1: w ~ U[-alpha/d, alpha/d], u ~ U[-alpha/k', alpha/k']; CD: w ~ U[-alpha/k', alpha/k'].
    d, k, alpha = 10, 40, 0.5
    net = relu_network(d, [k], seeds=range(3), init_scale=alpha)
    W, u = net.layers
    assert W.abs().max() <= alpha / d and W.abs().max() > 0.8 * alpha / d
    assert u.abs().max() <= alpha / k and u.abs().max() > 0.8 * alpha / k
    cd = relu_network(d, [k], seeds=range(3), init_scale=alpha, init="width")
    assert cd.layers[0].abs().max() <= alpha / k
    again = relu_network(d, [k], seeds=range(3), init_scale=alpha)
    assert torch.equal(again.layers[0], W)  # a seed means the same network
    assert not torch.equal(W[0], W[1])  # and different seeds differ


def test_bad_width_is_refused():
    with pytest.raises(InputError) as err:
        relu_network(4, [0], seeds=[0], init_scale=1.0)
    assert err.value.option == "--width"
