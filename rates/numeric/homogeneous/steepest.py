"""Steepest descent on network parameters exactly as FLAVORS eq. 1, and Adam as FLAVORS eq. 75.

Setting: parameters theta = (W_1, ..., W_L) of a homogeneous net (:mod:`rates.numeric.homogeneous.models`), each
W_l of shape (R, out, in) with a leading runs axis; a gradient g of the same structure.

Algorithm (FLAVORS, eq. 1 [given]):
``theta_{t+1} = theta_t + eta Delta_t``, ``Delta_t in argmin_{||u|| <= ||g||_*} <u, g>``. Writing
``D = argmax_{||v|| <= 1} <v, g>`` gives ``Delta_t = -||g||_* D``: the step is *not* normalised.

One convention with the linear engine (:mod:`rates.numeric.optim`): a transform returns the update ``U`` and the
loop applies ``theta <- theta - U`` (so ``U = -eta Delta_t = eta ||g||_* D``), and ``D`` is the output of the
linear engine's own transform :func:`rates.numeric.optim.transforms.steepest_direction` (the directions of
:meth:`rates.norms.Norm.steepest`: sign, one signed coordinate, ``g/||g||_2``, the SVD polar factor per layer).

* ``gd``: l2 over all parameters -> ``Delta = -g`` (gradient descent);
* ``sd``: l_inf over all parameters -> ``Delta = -||g||_1 sign(g)`` (sign descent);
* ``cd``: l1 over all parameters -> ``Delta = -||g||_inf e_j sign(g_j)`` at the largest |g_j| (coordinate
  descent; one coordinate of the whole network per step);
* ``spectral``: the modular max-norm ``||theta||_S = max_l sigma_max(W_l)`` (FLAVORS section 3.2 and App. C.2,
  Bernstein and Newhouse 2024). Its dual is ``sum_l ||G_l||_nuclear`` and its unit maximiser is the polar
  factor ``U_l V_l^T`` in every layer at once, so ``Delta = -(sum_l ||G_l||_nuc) (U_l V_l^T)_l``: Shampoo with
  accumulation and momentum turned off (FLAVORS eq. 77, up to the eq. 1 scale ``||g||_*``).

Guarantee (FLAVORS Thm 3.1, for the flow eta -> 0): once the loss is below l(0), the soft margin in the
algorithm's own norm ``||.||`` is non-decreasing; Thm 3.4: limit directions are KKT points of
``min ||theta||^2/2 s.t. y_i f(x_i; theta) >= 1``.

Adam (FLAVORS eq. 75, App. C.1 [given]): bias-corrected moments, update ``U = eta m_hat / (sqrt(v_hat) + eps)``;
with ``beta1 = beta2 = eps = 0`` it is sign descent *normalised* (``U = eta sign(g)``), which is why FLAVORS
section 4.2 compares its margins with those of sign descent. With eps = 0 a coordinate whose gradient has
always been 0 (a dead ReLU) would give 0/0; it takes the value 0, the limit of the eps > 0 update.

Optimisers are small transforms chained like optax (docs/design.md): ``chain(steepest_direction(geometry),
scale(eta))`` and ``chain(adam_moments(b1, b2, eps), scale(eta))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from rates.errors import InputError
from rates.norms import Norm, parse_norm
from rates.numeric.homogeneous.options import (  # noqa: F401 - ALGORITHMS, SUBGRADIENTS: read here by callers
    ALGORITHMS,
    SHAMPOO_ALGORITHMS,
    STEEPEST_ALGORITHMS,
    SUBGRADIENTS,
    check_adam_constants,
    check_optimizer_constants,
)
from rates.numeric.optim.base import GradientTransformation as Transform  # update(grads, state): no step index
from rates.numeric.optim.base import chain

Params = list[torch.Tensor]


def _flatten(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """All entries of each run as one (R, 1, P) row, so that rates.norms treats them as one vector."""
    return torch.cat([t.flatten(1) for t in tensors], dim=1).unsqueeze(-2)


def _unit_direction(norm: Norm, Z: torch.Tensor) -> torch.Tensor:
    """``argmax_{||D|| <= 1} <Z, D>``: the norm's steepest direction, the one the linear engine's
    ``steepest_direction`` transform applies (for a signal of unknown scale it is exactly this call)."""
    return norm.steepest(Z, polar="exact")


def _unflatten(row: torch.Tensor, like: Sequence[torch.Tensor]) -> Params:
    out, start = [], 0
    flat = row.squeeze(-2)
    for t in like:
        size = t[0].numel()
        out.append(flat[:, start:start + size].reshape(t.shape))
        start += size
    return out


@dataclass(frozen=True)
class FlatGeometry:
    """An entry-wise l_p norm of the concatenated parameter vector (l2, l_inf, l1 of FLAVORS eq. 13)."""

    norm: Norm

    @property
    def name(self) -> str:
        return {"frobenius": "l2", "max": "linf", "sum": "l1"}.get(self.norm.name, self.norm.name)

    def value(self, params: Sequence[torch.Tensor]) -> torch.Tensor:
        return self.norm.value(_flatten(params))

    def dual_value(self, grads: Sequence[torch.Tensor]) -> torch.Tensor:
        return self.norm.dual_value(_flatten(grads))

    def direction(self, grads: Sequence[torch.Tensor]) -> Params:
        return _unflatten(_unit_direction(self.norm, _flatten(grads)), grads)


@dataclass(frozen=True)
class LayerwiseMaxGeometry:
    """The modular norm ``max_l ||W_l||_layer`` (FLAVORS section 3.2); dual ``sum_l ||G_l||_layer*``."""

    layer_norm: Norm

    @property
    def name(self) -> str:
        return f"max-{self.layer_norm.name}"

    def value(self, params: Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.stack([self.layer_norm.value(W) for W in params]).amax(dim=0)

    def dual_value(self, grads: Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.stack([self.layer_norm.dual_value(G) for G in grads]).sum(dim=0)

    def direction(self, grads: Sequence[torch.Tensor]) -> Params:
        # The ball of a max-norm is a product of balls, so the maximiser splits layer by layer.
        return [_unit_direction(self.layer_norm, G) for G in grads]


Geometry = FlatGeometry | LayerwiseMaxGeometry



def geometry_of(algorithm: str) -> Geometry:
    """The norm in which ``algorithm`` is steepest descent; Adam is measured in l_inf, its eps -> 0,
    beta -> 0 limit (FLAVORS App. C.1)."""
    if algorithm == "gd":
        return FlatGeometry(parse_norm("frobenius"))
    if algorithm in ("sd", "adam"):
        return FlatGeometry(parse_norm("max"))
    if algorithm == "cd":
        return FlatGeometry(parse_norm("sum"))
    if algorithm == "spectral" or algorithm in SHAMPOO_ALGORITHMS:
        return LayerwiseMaxGeometry(parse_norm("spectral"))
    raise InputError("algo", f"must be one of {'|'.join(ALGORITHMS)}, got {algorithm!r}")


def steepest_direction(geometry: Geometry) -> Transform:
    """``g -> ||g||_* argmax_{||v||<=1} <v, g>``, the update of FLAVORS eq. 1 without eta (applied as
    ``theta - U``)."""

    def update(grads: Params, state: Any) -> tuple[Params, Any]:
        directions = geometry.direction(grads)
        # <g, D> = ||g||_* for the unit maximiser D: no second SVD for the spectral geometry.
        dual = sum((g * D).flatten(1).sum(dim=1) for g, D in zip(grads, directions))[:, None, None]
        return [dual * D for D in directions], state

    return Transform(lambda params: None, update)


def adam_moments(beta1: float, beta2: float, eps: float) -> Transform:
    """``g -> m_hat / (sqrt(v_hat) + eps)`` with bias correction (FLAVORS eq. 75 without eta)."""
    check_adam_constants(beta1, beta2, eps)

    def init(params: Params) -> Any:
        return 0, [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]

    def update(grads: Params, state: Any) -> tuple[Params, Any]:
        step, ms, vs = state
        step += 1
        ms = [beta1 * m + (1 - beta1) * g for m, g in zip(ms, grads)]
        vs = [beta2 * v + (1 - beta2) * g * g for v, g in zip(vs, grads)]
        c1, c2 = 1 - beta1 ** step, 1 - beta2 ** step
        updates = []
        for m, v in zip(ms, vs):
            denom = torch.sqrt(v / c2) + eps
            safe = torch.where(denom > 0, denom, torch.ones_like(denom))
            updates.append(torch.where(denom > 0, (m / c1) / safe, torch.zeros_like(m)))
        return updates, (step, ms, vs)

    return Transform(init, update)


def two_point_subgradient() -> Transform:
    """Per coordinate, the smallest-magnitude point of the interval between the gradients at theta_{t-1} and
    theta_t: 0 where the partial derivative changed sign, else the smaller of the two.

    Why: along a first-layer weight a ReLU kink makes L V-shaped, so the partial derivative jumps from +c to
    -c; greedy coordinate descent then picks that coordinate forever and hops across the kink in a 2-cycle
    (observed: log L frozen for 20 000 steps on every teacher-student seed). The Clarke subdifferential that
    FLAVORS eq. 3 uses contains 0 in that coordinate; the interval between the two sampled gradients is a
    cheap outer estimate of it (gradient sampling, Burke-Lewis-Overton 2005, with two samples and a box
    hull). Where L is smooth the two gradients differ by O(step), so the steps are eq. 1 steps up to O(eta).
    """

    def update(grads: Params, state: Any) -> tuple[Params, Any]:
        if state is None:
            return grads, list(grads)
        out = [torch.where(g * h > 0, torch.sign(g) * torch.minimum(g.abs(), h.abs()), torch.zeros_like(g))
               for g, h in zip(grads, state)]
        return out, list(grads)

    return Transform(lambda params: None, update)


SHAMPOO_EPS = 1e-12


def shampoo(accumulate: bool, eps: float = SHAMPOO_EPS) -> Transform:
    """Shampoo (Gupta et al. 2018) for matrix parameters G (R, a, b): ``U = L_t^{-1/4} G R_t^{-1/4}`` with
    ``L_t = [L_{t-1} +] G G^T`` and ``R_t = [R_{t-1} +] G^T G``; without accumulation (``L = G G^T``,
    ``R = G^T G``) the update is the polar factor ``U V^T`` of ``G = U S V^T`` (Bernstein and Newhouse 2024;
    FLAVORS sec. 4.3, App. C.2): spectral steepest descent without the eq. 1 factor ``||g||_*``.

    Inverse fourth roots by an eigendecomposition; eigenvalues below ``eps`` times the largest are raised
    to it. Why relative: the gradient falls with the loss (to ~1e-7 here), so an absolute regulariser such as
    the 1e-4 of off-the-shelf implementations would swamp ``G G^T`` and turn the late phase into scaled GD,
    which is not the algorithm FLAVORS discusses.
    """

    def root(M: torch.Tensor) -> torch.Tensor:
        values, vectors = torch.linalg.eigh(M)
        floor = eps * values.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(M.dtype).tiny)
        return (vectors * values.clamp_min(floor).pow(-0.25)[..., None, :]) @ vectors.transpose(-2, -1)

    def init(params: Params) -> Any:
        return [(torch.zeros(p.shape[:-1] + (p.shape[-2],), dtype=p.dtype, device=p.device),
                 torch.zeros(p.shape[:-2] + (p.shape[-1], p.shape[-1]), dtype=p.dtype, device=p.device))
                for p in params]

    def update(grads: Params, state: Any) -> tuple[Params, Any]:
        new_state, updates = [], []
        for G, (left, right) in zip(grads, state):
            # rescale so the largest entry is 1: the preconditioned update is invariant to a common scale
            # of G when nothing is accumulated, and the products stay far from float64 underflow
            scale = G.abs().flatten(1).amax(dim=1).clamp_min(torch.finfo(G.dtype).tiny)[:, None, None]
            Gs = G / scale
            left_now, right_now = Gs @ Gs.transpose(-2, -1), Gs.transpose(-2, -1) @ Gs
            if accumulate:
                # accumulate the true G G^T (scale^2 restored) so that early, large gradients weigh as in Shampoo
                left_now, right_now = left + left_now * scale ** 2, right + right_now * scale ** 2
                new_state.append((left_now, right_now))
                updates.append(root(left_now) @ G @ root(right_now))
            else:
                new_state.append((left, right))
                updates.append(root(left_now) @ Gs @ root(right_now))
        return updates, new_state

    return Transform(init, update)


def scale(factor: float) -> Transform:
    return Transform(lambda params: None, lambda grads, state: ([factor * g for g in grads], state))


def make_optimizer(algorithm: str, lr: float, eps: float = 1e-8, beta1: float = 0.9,
                   beta2: float = 0.99, subgradient: str = "gradient") -> Transform:
    """The update map of ``algorithm``; apply as ``theta <- theta - updates`` (the linear engine's convention).

    ``subgradient="gradient"`` is FLAVORS eq. 1 exactly; ``"two-point"`` feeds eq. 1 the estimate of
    :func:`two_point_subgradient` instead of the gradient (needed by coordinate descent on ReLU nets).
    """
    check_optimizer_constants(lr, eps, beta1, beta2, subgradient, adam=False)  # Adam's: in adam_moments
    signal = [two_point_subgradient()] if subgradient == "two-point" else []
    if algorithm == "adam":
        return chain(*signal, adam_moments(beta1, beta2, eps), scale(lr))
    if algorithm in SHAMPOO_ALGORITHMS:
        return chain(*signal, shampoo(accumulate=algorithm == "shampoo"), scale(lr))
    return chain(*signal, steepest_direction(geometry_of(algorithm)), scale(lr))
