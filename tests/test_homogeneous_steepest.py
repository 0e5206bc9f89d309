"""FLAVORS eq. 1 steps: ||Delta|| = ||g||_*, <Delta, g> = -||g||_*^2, closed forms for GD / SD / CD, optimality
against random feasible directions, the modular spectral norm, and Adam's eps -> 0, beta -> 0 limit."""

import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.numeric.homogeneous.steepest import geometry_of, make_optimizer, two_point_subgradient


def random_grads(seed=0, runs=3):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(runs, 4, 3, generator=gen, dtype=torch.float64),
            torch.randn(runs, 1, 4, generator=gen, dtype=torch.float64)]


def numpy_dual(name, grads, r):
    """The dual norm of each algorithm's norm, computed independently with numpy."""
    flat = np.concatenate([g[r].numpy().ravel() for g in grads])
    if name == "gd":
        return np.linalg.norm(flat)
    if name == "sd":  # dual of l_inf is l1
        return np.abs(flat).sum()
    if name == "cd":  # dual of l1 is l_inf
        return np.abs(flat).max()
    # dual of max_l sigma_max(W_l) is sum_l ||G_l||_nuclear
    return sum(np.linalg.svd(g[r].numpy(), compute_uv=False).sum() for g in grads)


def step(name, grads, lr=1.0):
    """The eq. 1 step Delta: the optimiser returns the update U, applied as theta - U (the linear engine's way)."""
    opt = make_optimizer(name, lr)
    updates, _ = opt.update(grads, opt.init(grads))
    return [-u for u in updates]


@pytest.mark.parametrize("name", ["gd", "sd", "cd", "spectral"])
def test_eq1_step_has_dual_norm_length_and_steepest_slope(name):
    grads = random_grads()
    delta = step(name, grads)
    geometry = geometry_of(name)
    for r in range(3):
        dual = numpy_dual(name, grads, r)
        assert geometry.dual_value(grads)[r].item() == pytest.approx(dual, rel=1e-12)
        # ||Delta|| = ||g||_* and <Delta, g> = -||g||_*^2 (FLAVORS eq. 7)
        assert geometry.value(delta)[r].item() == pytest.approx(dual, rel=1e-12)
        slope = sum((d[r] * g[r]).sum().item() for d, g in zip(delta, grads))
        assert slope == pytest.approx(-dual ** 2, rel=1e-12)


@pytest.mark.parametrize("name", ["gd", "sd", "cd", "spectral"])
def test_no_feasible_direction_beats_the_eq1_step(name):
    grads = random_grads(1, runs=1)
    geometry = geometry_of(name)
    best = sum((d * g).sum().item() for d, g in zip(step(name, grads), grads))
    gen = torch.Generator().manual_seed(7)
    for _ in range(300):
        u = [torch.randn(g.shape, generator=gen, dtype=torch.float64) for g in grads]
        scale = geometry.dual_value(grads) / geometry.value(u)  # put u on the sphere of radius ||g||_*
        value = sum((scale[:, None, None] * a * g).sum().item() for a, g in zip(u, grads))
        assert value >= best - 1e-9


def test_closed_forms_gd_sd_cd():
    grads = random_grads(2, runs=1)
    flat = torch.cat([g.flatten() for g in grads])
    lr = 0.1
    gd = torch.cat([d.flatten() for d in step("gd", grads, lr)])
    torch.testing.assert_close(gd, -lr * flat, rtol=1e-14, atol=0)
    sd = torch.cat([d.flatten() for d in step("sd", grads, lr)])
    torch.testing.assert_close(sd, -lr * flat.abs().sum() * torch.sign(flat), rtol=1e-14, atol=0)
    cd = torch.cat([d.flatten() for d in step("cd", grads, lr)])
    j = int(flat.abs().argmax())
    assert torch.count_nonzero(cd) == 1
    # -||g||_inf sign(g_j) e_j = -g_j e_j: the largest coordinate takes a plain gradient step
    assert cd[j].item() == pytest.approx(-lr * flat[j].item(), rel=1e-14)


def test_spectral_step_is_shampoo_without_accumulation():
    # FLAVORS eq. 77: each layer moves along -U V^T; eq. 1 scales all layers by sum_l ||G_l||_nuc.
    grads = random_grads(3, runs=1)
    delta = step("spectral", grads)
    total = sum(np.linalg.svd(g[0].numpy(), compute_uv=False).sum() for g in grads)
    for d, g in zip(delta, grads):
        U, _, Vt = np.linalg.svd(g[0].numpy(), full_matrices=False)
        np.testing.assert_allclose(d[0].numpy(), -total * U @ Vt, rtol=1e-11, atol=1e-12)


def test_adam_without_momentum_and_eps_is_normalised_sign_descent():
    # FLAVORS App. C.1: beta1 = beta2 = eps = 0 gives the update eta sign(g) (theta - U moves along -sign g);
    # a coordinate with g = 0 stays put.
    grads = random_grads(4, runs=2)
    grads[0][0, 0, 0] = 0.0
    opt = make_optimizer("adam", 0.01, eps=0.0, beta1=0.0, beta2=0.0)
    state = opt.init(grads)
    for _ in range(3):
        updates, state = opt.update(grads, state)
        for u, g in zip(updates, grads):
            torch.testing.assert_close(u, 0.01 * torch.sign(g), rtol=1e-14, atol=0)
    assert updates[0][0, 0, 0].item() == 0.0


def test_adam_first_step_with_eps():
    # Bias correction makes m_hat = g and v_hat = g^2 at step 1: update = eta g / (|g| + eps).
    grads = random_grads(5, runs=1)
    opt = make_optimizer("adam", 0.5, eps=0.3, beta1=0.9, beta2=0.99)
    updates, _ = opt.update(grads, opt.init(grads))
    for u, g in zip(updates, grads):
        torch.testing.assert_close(u, 0.5 * g / (g.abs() + 0.3), rtol=1e-13, atol=0)


def test_two_point_subgradient_is_the_min_magnitude_point_of_the_interval():
    t = two_point_subgradient()
    first = [torch.tensor([[[2.0, -1.0, 3.0, 0.5]]], dtype=torch.float64)]
    second = [torch.tensor([[[-2.0, -0.4, 1.0, 0.0]]], dtype=torch.float64)]
    out, state = t.update(first, t.init(first))
    assert torch.equal(out[0], first[0])  # no previous sample yet
    out, _ = t.update(second, state)
    assert out[0].tolist() == [[[0.0, -0.4, 1.0, 0.0]]]


def test_bad_optimizer_options():
    for kwargs, option in [({"lr": 0.0}, "--lr"), ({"lr": 1.0, "eps": -1.0}, "--eps"),
                           ({"lr": 1.0, "beta1": 1.0}, "--beta1")]:
        lr = kwargs.pop("lr")
        with pytest.raises(InputError) as err:
            make_optimizer("adam", lr, **kwargs)
        assert err.value.option == option
    with pytest.raises(InputError) as err:
        geometry_of("newton")
    assert err.value.option == "--algo"


def test_shampoo_without_accumulation_is_the_polar_factor_at_any_gradient_scale():
    """FLAVORS sec. 4.3 / App. C.2 (Bernstein and Newhouse 2024): L^{-1/4} G R^{-1/4} with L = G G^T,
    R = G^T G equals U V^T for G = U S V^T; with accumulation two equal gradients give U V^T / sqrt(2)."""
    from rates.numeric.homogeneous.steepest import shampoo

    G = torch.randn(3, 4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    U, _, Vh = torch.linalg.svd(G, full_matrices=False)
    polar = U @ Vh
    plain = shampoo(accumulate=False)
    for scale in (1e-9, 1.0, 1e6):
        update, _ = plain.update([scale * G], plain.init([G]))
        torch.testing.assert_close(update[0], polar, rtol=0, atol=1e-10)
    accumulating = shampoo(accumulate=True)
    state = accumulating.init([G])
    _, state = accumulating.update([G], state)
    update, _ = accumulating.update([G], state)
    torch.testing.assert_close(update[0], polar / 2 ** 0.5, rtol=0, atol=1e-10)


def test_kkt_residual_is_zero_when_theta_is_the_steepest_direction_of_minus_the_gradient():
    from rates.numeric.homogeneous.steepest import geometry_of
    from rates.numeric.homogeneous.train import kkt_residual

    theta = [torch.tensor([[[1.0, -2.0]]], dtype=torch.float64), torch.tensor([[[3.0]]], dtype=torch.float64)]
    gd = geometry_of("gd")
    assert float(kkt_residual(theta, [-2.0 * p for p in theta], gd)[0]) == pytest.approx(0.0, abs=1e-15)
    assert float(kkt_residual(theta, theta, gd)[0]) == pytest.approx(2.0)
    # l_inf geometry (sign descent): theta = (1, -1, 1) is aligned with -g for any g of the same signs
    flat = [torch.tensor([[[1.0, -1.0, 1.0]]], dtype=torch.float64)]
    g = [torch.tensor([[[-0.5, 2.0, -3.0]]], dtype=torch.float64)]
    assert float(kkt_residual(flat, g, geometry_of("sd"))[0]) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("name, norm", [("gd", "frobenius"), ("sd", "max"), ("cd", "sum"), ("spectral", "spectral")])
def test_steps_are_the_linear_engines_directions_with_its_sign_convention(name, norm):
    """The update U of a network step is ||g||_* times the linear engine's steepest direction of g (the flattened
    parameter vector, or each layer for the modular spectral norm), bit for bit, and it is applied as theta - U,
    as the linear engine applies W - U: U points up the gradient (<U, g> = ||g||_*^2 > 0)."""
    from rates.norms import parse_norm
    from rates.numeric.optim.base import Signal
    from rates.numeric.optim.transforms import steepest_direction

    grads = random_grads(6)
    opt = make_optimizer(name, 1.0)
    updates, _ = opt.update(grads, opt.init(grads))
    transform = steepest_direction(parse_norm(norm))

    def linear(Z):
        return transform.update(Signal(Z, None), transform.init(Z), 0)[0].value

    if name == "spectral":
        directions = [linear(g) for g in grads]
    else:
        flat = linear(torch.cat([g.flatten(1) for g in grads], dim=1).unsqueeze(-2)).squeeze(-2)
        sizes = [g[0].numel() for g in grads]
        directions = [part.reshape(g.shape) for part, g in zip(flat.split(sizes, dim=1), grads)]
    dual = geometry_of(name).dual_value(grads)
    for r in range(3):
        inner = sum(float((u[r] * g[r]).sum()) for u, g in zip(updates, grads))
        assert inner == pytest.approx(float(dual[r]) ** 2, rel=1e-12) and inner > 0
    scale = sum((g * D).flatten(1).sum(dim=1) for g, D in zip(grads, directions))[:, None, None]
    for u, D in zip(updates, directions):
        assert torch.equal(u, scale * D)
