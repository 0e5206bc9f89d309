"""Bias-free ReLU networks, homogeneous in their parameters, batched over independent runs.

Setting (FLAVORS, section 2, assumption (A2)): a feed-forward ReLU net
without biases, ``f(x; W_1, ..., W_{L-1}, u) = <u, relu(W_{L-1} ... relu(W_1 x))>``, is L-homogeneous:
``f(x; c theta) = c^L f(x; theta)`` for c > 0, because relu(c z) = c relu(z) and every layer is linear in its
own weights. One hidden layer gives L = 2 (the nets of FLAVORS section 4); freezing the output layer u
(FLAVORS section 4.3) leaves a model that is 1-homogeneous in the trainable W. In general the degree is the
number of *trainable* layers, which is what every margin divides by (``||theta||^L``).

Every layer is stored as a matrix with a leading runs axis, ``(R, out, in)`` (the output row u is
``(R, 1, k)``), so R seeds train as one stream of batched kernels (docs/design.md, "Batched by default").

Initialisation (FLAVORS section 4.1): ``w_jl ~ U[-alpha/d, alpha/d]``, ``u_j ~ U[-alpha/k', alpha/k']``,
i.e. bound alpha / fan-in; for coordinate descent the paper uses ``U[-alpha/k', alpha/k']`` for the first
layer too "to keep all the individual parameters to the same scale" (``init="width"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from rates.errors import InputError
from rates.numeric.homogeneous.options import INIT_RULES


@dataclass
class Network:
    """Weights ``layers[l]`` of shape (R, out_l, in_l); ``trainable[l]`` says whether training moves it."""

    layers: list[torch.Tensor]
    trainable: tuple[bool, ...]

    @property
    def runs(self) -> int:
        return self.layers[0].shape[0]

    @property
    def degree(self) -> int:
        """Homogeneity degree L in the trainable parameters (one per trainable bias-free layer)."""
        return sum(self.trainable)

    def parameters(self) -> list[torch.Tensor]:
        """The trainable layers, in order (the theta of FLAVORS eq. 1)."""
        return [W for W, train in zip(self.layers, self.trainable) if train]

    def with_parameters(self, params: Sequence[torch.Tensor]) -> Network:
        """The same architecture with the trainable layers replaced by ``params``."""
        it = iter(params)
        layers = [next(it) if train else W for W, train in zip(self.layers, self.trainable)]
        return Network(layers, self.trainable)

    def scaled(self, c: float) -> Network:
        """theta -> c theta on the trainable layers (frozen layers unchanged)."""
        return self.with_parameters([c * W for W in self.parameters()])

    def detached(self) -> Network:
        return Network([W.detach().clone() for W in self.layers], self.trainable)


def forward(net: Network, X: torch.Tensor) -> torch.Tensor:
    """Outputs f(x_i; theta_r), shape (R, n), for inputs X of shape (R, n, d) (or (n, d), shared by runs)."""
    H = X.transpose(-2, -1)
    if H.dim() == 2:
        H = H.expand(net.runs, *H.shape)
    for W in net.layers[:-1]:
        H = torch.relu(W @ H)
    return (net.layers[-1] @ H).squeeze(-2)


def relu_network(
    input_dim: int,
    hidden_widths: Sequence[int],
    seeds: Sequence[int],
    init_scale: float,
    init: str = "fan-in",
    freeze_output: bool = False,
    device: str | torch.device = "cpu",
) -> Network:
    """A bias-free ReLU net ``d -> hidden_widths... -> 1``, one independent initialisation per seed.

    ``init="fan-in"`` draws each layer from U[-alpha/fan_in, alpha/fan_in] (FLAVORS section 4.1 for GD/SD);
    ``init="width"`` draws every layer from U[-alpha/k', alpha/k'] with k' the last hidden width (FLAVORS
    section 4.1 for CD). Weights are drawn on the CPU from per-seed generators so that a seed means the same
    network on every device.
    """
    if not hidden_widths or any(int(k) <= 0 for k in hidden_widths):
        raise InputError("width", f"hidden widths must be positive integers, got {list(hidden_widths)}")
    if input_dim <= 0:
        raise InputError("data", f"input dimension must be positive, got {input_dim}")
    if not init_scale > 0:
        raise InputError("init_scale", f"must be > 0, got {init_scale}")
    if init not in INIT_RULES:
        raise InputError("init", f"must be one of {', '.join(INIT_RULES)}, got {init!r}")
    sizes = [int(input_dim), *map(int, hidden_widths), 1]
    shapes = list(zip(sizes[1:], sizes[:-1]))
    layers_per_run = []
    for seed in seeds:
        gen = torch.Generator().manual_seed(int(seed))
        per_layer = []
        for out_dim, in_dim in shapes:
            bound = init_scale / (in_dim if init == "fan-in" else sizes[-2])
            per_layer.append((2 * torch.rand(out_dim, in_dim, generator=gen, dtype=torch.float64) - 1) * bound)
        layers_per_run.append(per_layer)
    layers = [torch.stack([run[l] for run in layers_per_run]).to(device) for l in range(len(shapes))]
    trainable = tuple(not (freeze_output and l == len(shapes) - 1) for l in range(len(shapes)))
    return Network(layers, trainable)
