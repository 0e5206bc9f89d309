"""What FLAVORS measures on a homogeneous net: losses in log space, soft margin, geometric margins, accuracy.

Setting (FLAVORS, section 2 and App. A.3 [given]): labels y_i = +-1, outputs
f_i = f(x_i; theta), normalised outputs q_i = y_i f_i; loss ``L = sum_i l(q_i)`` with ``l(u) = e^{-u}``
(exponential) or ``l(u) = log(1 + e^{-u})`` (logistic, ``Phi(u) = -log log(1 + e^{-u})``).

* Soft margin (eq. 5, and its App. A.3 form for other losses): ``gamma_tilde = l^{-1}(L) / ||theta||^L``;
  for the exponential loss ``l^{-1}(L) = -log L``, for the logistic loss ``-log(e^L - 1)``. Thm 3.1: it is
  non-decreasing once ``L < l(0)`` (1 for exp, log 2 for logistic), in the algorithm's own norm.
* Geometric margins of a one-hidden-layer net (eq. 13): ``gamma_1 = min q / ||theta||_inf^2``,
  ``gamma_2 = min q / ||theta||_2^2``, ``gamma_inf = min q / ||theta||_1^2`` (named after the dual norm, as in
  FLAVORS footnote 1); spectral margin with a frozen output layer (eq. 15): ``min q / sigma_max(W)``. For a
  model of degree L the exponent 2 (resp. 1) is L, and the spectral margin uses the modular norm
  ``max_l sigma_max(W_l)`` -- which is eq. 15 exactly when W is the only trainable layer.

The loss itself underflows after separation (q grows without bound), so everything is computed from
``log L`` by log-sum-exp and ``gamma_tilde`` keeps full relative accuracy however small L gets.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from rates.errors import InputError
from rates.numeric.homogeneous.models import Network, forward
from rates.numeric.homogeneous.options import LOSSES, check_loss  # noqa: F401 - check_loss: read here by callers

# Below this the first-order expansions log log(1+e^z) = z - e^z/2 and log(e^L - 1) = log L + L/2 are exact
# to double precision (the next terms are O(e^{2z}), O(L^2)).
_EXPANSION_CUTOFF = -30.0


def _log_logistic_term(z: torch.Tensor) -> torch.Tensor:
    """log log(1 + e^z), accurate for very negative z where log1p(e^z) underflows."""
    small = z < _EXPANSION_CUTOFF
    z_big = torch.where(small, torch.zeros_like(z), z)
    return torch.where(small, z - 0.5 * torch.exp(z), torch.log(torch.nn.functional.softplus(z_big)))


def log_loss(q: torch.Tensor, loss: str) -> torch.Tensor:
    """log L = log sum_i l(q_i) over the last axis (differentiable)."""
    if loss == "exp":
        return torch.logsumexp(-q, dim=-1)
    if loss == "logistic":
        return torch.logsumexp(_log_logistic_term(-q), dim=-1)
    raise InputError("loss", f"must be one of {'|'.join(LOSSES)}, got {loss!r}")


def log_separation_level(loss: str) -> float:
    """log l(0): Thm 3.1's condition L < l(0) (A3 and its App. A.3 version) reads log L < this."""
    return 0.0 if loss == "exp" else math.log(math.log(2.0))


def inverse_loss(log_L: torch.Tensor, loss: str) -> torch.Tensor:
    """l^{-1}(L), the 'soft minimum' of q that the soft margin divides by ||theta||^L."""
    if loss == "exp":
        return -log_L
    small = log_L < _EXPANSION_CUTOFF
    L = torch.exp(torch.where(small, torch.zeros_like(log_L), log_L))
    return torch.where(small, -log_L - 0.5 * torch.exp(log_L), -torch.log(torch.expm1(L)))


def soft_margin(log_L: torch.Tensor, theta_norm: torch.Tensor, degree: int, loss: str) -> torch.Tensor:
    """gamma_tilde = l^{-1}(L) / ||theta||^L (FLAVORS eq. 5; App. A.3 for the logistic loss)."""
    return inverse_loss(log_L, loss) / theta_norm ** degree


def geometric_margins(q: torch.Tensor, params: Sequence[torch.Tensor], degree: int) -> dict[str, torch.Tensor]:
    """gamma_1, gamma_2, gamma_inf (FLAVORS eq. 13) and gamma_spectral (eq. 15) per run."""
    flat = torch.cat([p.flatten(1) for p in params], dim=1)
    spectral = torch.stack([torch.linalg.matrix_norm(p, ord=2) for p in params]).amax(dim=0)
    q_min = q.amin(dim=-1)
    return {
        "gamma_1": q_min / flat.abs().amax(dim=1) ** degree,
        "gamma_2": q_min / torch.linalg.vector_norm(flat, dim=1) ** degree,
        "gamma_inf": q_min / flat.abs().sum(dim=1) ** degree,
        "gamma_spectral": q_min / spectral ** degree,
    }


def accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of points with sign(f_i) = y_i per run (f_i = 0 counts as an error)."""
    return (torch.sign(f) == y).to(f.dtype).mean(dim=-1)


def homogeneity_error(net: Network, X: torch.Tensor, scales: Sequence[float] = (0.5, 2.0, 3.7)) -> float:
    """max_c max_i |f(x_i; c theta) - c^L f(x_i; theta)| / max_i |c^L f(x_i; theta)| (assumption A2)."""
    with torch.no_grad():
        base = forward(net, X)
        worst = 0.0
        for c in scales:
            expected = c ** net.degree * base
            err = (forward(net.scaled(c), X) - expected).abs().amax() / expected.abs().amax()
            worst = max(worst, float(err))
    return worst


def measured_degree(net: Network, X: torch.Tensor, c: float = 2.0) -> float:
    """The L with ||f(c theta)|| = c^L ||f(theta)||, read off the outputs (should equal ``net.degree``)."""
    with torch.no_grad():
        ratio = torch.linalg.vector_norm(forward(net.scaled(c), X)) / torch.linalg.vector_norm(forward(net, X))
    return float(torch.log(ratio) / math.log(c))
