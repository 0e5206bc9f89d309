"""Log-domain cross-entropy, proxy and gradient (rates.numeric.losses) against autograd and mpmath."""

import mpmath as mp
import numpy as np
import pytest
import torch

from rates.numeric.losses import gradient, log_loss, log_proxy


@pytest.fixture
def moderate():
    gen = torch.Generator().manual_seed(5)
    H = torch.randn(12, 4, dtype=torch.float64, generator=gen)
    y = torch.tensor([0, 1, 2, 3] * 3)
    W = torch.randn(5, 4, 4, dtype=torch.float64, generator=gen)  # R = 5 runs, k = 4, d = 4
    return W, H, y


def test_gradient_matches_autograd(moderate):
    W, H, y = moderate
    G, log_scale = gradient(W, H, y)
    for r in range(W.shape[0]):
        Wr = W[r].clone().requires_grad_(True)
        torch.nn.functional.cross_entropy(H @ Wr.T, y).backward()
        np.testing.assert_allclose((G[r] * torch.exp(log_scale[r])).numpy(), Wr.grad.numpy(),
                                   rtol=1e-12, atol=1e-15)


def test_loss_and_proxy_match_direct_formulas(moderate):
    W, H, y = moderate
    logits = torch.einsum("rkd,nd->rnk", W, H)
    loss = torch.stack([torch.nn.functional.cross_entropy(z, y) for z in logits])
    proxy = (1 - torch.softmax(logits, dim=-1)[:, torch.arange(len(y)), y]).mean(dim=-1)
    np.testing.assert_allclose(log_loss(W, H, y).numpy(), loss.log().numpy(), rtol=1e-13)
    np.testing.assert_allclose(log_proxy(W, H, y).numpy(), proxy.log().numpy(), rtol=1e-13)
    assert torch.all(log_proxy(W, H, y) <= log_loss(W, H, y))  # G <= L (docs/theory.md section 1)


def mp_loss_and_proxy(W, H, y):
    with mp.workdps(60):
        losses, proxies = [], []
        for h, label in zip(H.tolist(), y.tolist()):
            z = [mp.fsum(mp.mpf(w) * mp.mpf(v) for w, v in zip(row, h)) for row in W.tolist()]
            wrong = mp.fsum(mp.exp(zc - z[label]) for c, zc in enumerate(z) if c != label)
            losses.append(mp.log1p(wrong))
            proxies.append(wrong / (1 + wrong))
        return float(mp.log(mp.fsum(losses) / len(losses))), float(mp.log(mp.fsum(proxies) / len(proxies)))


@pytest.mark.parametrize("scale", [30.0, 3000.0])
def test_log_loss_without_underflow_matches_mpmath(moderate, scale):
    """Margins of hundreds to hundreds of thousands: L itself is far below 1e-308, log L is not."""
    _, noise, y = moderate
    H = torch.eye(4, dtype=torch.float64)[y] + 0.1 * noise  # near the class basis vectors
    W = scale * torch.eye(4, dtype=torch.float64)[None]  # margins ~ 0.6 scale .. 1.4 scale
    expected_loss, expected_proxy = mp_loss_and_proxy(W[0], H, y)
    if scale > 100:
        assert expected_loss < -1000  # L < 1e-434: zero in float64
    assert float(log_loss(W, H, y)[0]) == pytest.approx(expected_loss, rel=1e-12)
    assert float(log_proxy(W, H, y)[0]) == pytest.approx(expected_proxy, rel=1e-12)


def test_log_loss_from_margins_is_exact_where_e_to_the_minus_u_is_subnormal():
    """u in (708, 745): x = e^-u is subnormal, where torch.log1p is inexact (log1p(1.33e-322) = 1.4e-322 made
    log L 0.036 too high at u = 741.16); log L = log softplus(-u) against 60-digit mpmath, torch and numpy."""
    from rates.numeric.fused.measure import log_loss_from_u as numpy_log_loss_from_u
    from rates.numeric.losses import log_loss_from_u

    u = np.array([[0.5], [36.0], [37.5], [500.0], [708.0], [709.5], [720.0], [741.15939526], [744.9], [746.0],
                  [1e4], [-3.0], [-800.0]])
    with mp.workdps(60):
        expected = np.array([float(mp.log(mp.log1p(mp.exp(-mp.mpf(float(v)))))) for v in u[:, 0]])
    np.testing.assert_allclose(log_loss_from_u(torch.from_numpy(u)).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(numpy_log_loss_from_u(u), expected, rtol=1e-15)


def test_scale_free_coefficients_are_a_positive_multiple_of_the_exact_ones():
    """What steepest-only recipes use: the same coefficients divided by one positive number per run."""
    from rates.numeric.losses import coefficients, direction_coefficients, labels

    gen = torch.Generator().manual_seed(9)
    logits = 300.0 * torch.randn(6, 4, 20, dtype=torch.float64, generator=gen)  # most S_c far below 1e-308
    lab = labels(torch.arange(20) % 4, 4)
    exact, log_scale = coefficients(logits, lab)
    free = direction_coefficients(logits, lab)
    factor = exact.abs().amax(dim=(-2, -1), keepdim=True) / free.abs().amax(dim=(-2, -1), keepdim=True)
    assert torch.all(factor >= 1) and torch.all(factor <= 4 * 20)  # the sum of the weights, max entry 1
    np.testing.assert_allclose((free * factor).numpy(), exact.numpy(), rtol=0, atol=1e-15)
    assert torch.all(exact.sum(dim=-2).abs() < 1e-15)  # every sample's coefficients sum to zero


def mp_gradient_direction(logits, y, H):
    """(1/m) sum_i (S(z_i) - e_{y_i}) h_i^T from float logits (k, m), in mpmath, over its largest |entry|."""
    k, m = logits.shape
    with mp.workdps(60):
        z = [[mp.mpf(v) for v in row] for row in logits.T.tolist()]  # per sample
        G = [[mp.mpf(0)] * H.shape[1] for _ in range(k)]
        for _i, (zi, label, h) in enumerate(zip(z, y.tolist(), H.tolist())):
            total = mp.fsum(mp.exp(v) for v in zi)
            for c in range(k):
                coeff = mp.exp(zi[c]) / total - (1 if c == label else 0)
                for j, hj in enumerate(h):
                    G[c][j] += coeff * mp.mpf(hj) / m
        top = max(abs(g) for row in G for g in row)
        return np.array([[float(g / top) for g in row] for row in G])


@pytest.mark.parametrize("k, d, m, scale", [(2, 3, 6, 1.0), (3, 5, 12, 300.0), (4, 2, 8, 3000.0)])
def test_folded_direction_is_the_gradient_direction_of_mpmath(k, d, m, scale):
    """The fast full-batch direction (label row folded into the product) against an exact computation,
    with logits large enough (scale 300, 3000) that the wrong-class S_c are far below 1e-308."""
    from rates.numeric.losses import direction_plan, folded_direction, logits_of, sample_views

    gen = torch.Generator().manual_seed(k * 100 + m)
    H = torch.randn(m, d, dtype=torch.float64, generator=gen)
    y = torch.arange(m) % k
    W = scale * torch.randn(3, k, d, dtype=torch.float64, generator=gen)
    Ht = H.T.contiguous()
    logits = logits_of(W, sample_views(Ht, 3)[0])
    G = folded_direction(logits, direction_plan(Ht, y, k, 3))
    assert G.shape == W.shape
    for r in range(3):
        expected = mp_gradient_direction(logits[r], y, H)
        np.testing.assert_allclose((G[r] / G[r].abs().max()).numpy(), expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("k, d, m", [(3, 5, 30), (2, 7, 50), (4, 8, 64)])
def test_folded_direction_of_a_run_is_the_same_alone_or_in_a_batch(k, d, m):
    from rates.numeric.losses import direction_plan, folded_direction, logits_of, sample_views

    gen = torch.Generator().manual_seed(m)
    Ht = torch.randn(d, m, dtype=torch.float64, generator=gen)
    y = torch.arange(m) % k
    W = 50.0 * torch.randn(7, k, d, dtype=torch.float64, generator=gen)
    batched = folded_direction(logits_of(W, sample_views(Ht, 7)[0]), direction_plan(Ht, y, k, 7))
    for r in range(7):
        alone = folded_direction(logits_of(W[r:r + 1], sample_views(Ht, 1)[0]), direction_plan(Ht, y, k, 1))
        assert torch.equal(alone[0], batched[r])
