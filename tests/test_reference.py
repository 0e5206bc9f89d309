"""High precision (docs/theory.md section 7): the engine against the mpmath reference where float64 underflows.

The problem: 6 points near scaled basis vectors (k = d = 3, features ~ 500), so the logits pass 1000
within a few steps. A naive float64 SignGD's softmax gradient underflows to exactly zero and it stalls;
the engine's log-domain gradient keeps moving and agrees with a 50-digit mpmath run of the same steps.

Adam (eps = 0, default betas) on the same problem: the naive gradient also underflows to exactly zero,
and the engine agrees with mpmath to 1e-12 after 2000 steps with logits above 1000. Here the naive
Adam still ends near the exact iterate: once the gradient is e^-1000 times its early values, exact Adam's
steps are carried by the decaying moments alone (v remembers the early gradients), which is also what
the naive run does with its zero gradients. Problems where Adam keeps moving while the logits grow
gradually were found to be chaotic (rounding differences grow ~e^0.4 per step), so no float64 run can
match mpmath there; the test does not pretend otherwise.
"""

import numpy as np
import pytest
import torch

from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group, single_thread_on_cpu
from rates.numeric.losses import gradient as log_domain_gradient
from rates.numeric.reference import ReferenceConfig, steepest, to_float
from rates.numeric.reference import gradient as reference_gradient
from rates.numeric.reference import run as reference_run

STEPS = 2000


@pytest.fixture(scope="module")
def hard_problem():
    rng = np.random.default_rng(0)
    H = 500.0 * (np.repeat(np.eye(3), 2, axis=0) + 0.3 * rng.standard_normal((6, 3)))
    y = np.repeat(np.arange(3), 2)
    return H, y


def engine_W(H, y, spec, steps):
    W, _ = run_group([resolve_spec(spec, len(y))], torch.tensor(H), torch.tensor(y), 3, steps,
                     checkpoint_times(steps, 2))
    return W[0].numpy()


def naive_softmax_gradient(W, H, y):
    """The textbook float64 gradient (S - e_y) h^T averaged: S_c underflows once z_y - z_c > ~745."""
    S = torch.softmax(torch.tensor(H) @ W.T, dim=1)
    S[torch.arange(len(y)), torch.tensor(y)] -= 1.0
    return S.T @ torch.tensor(H) / len(y)


def naive_run(H, y, steps, eta0, a, direction):
    """Returns the final W, the first step whose gradient is exactly zero, and W at that step."""
    W = torch.zeros(3, H.shape[1], dtype=torch.float64)
    first_zero, W_at_zero = None, None
    with single_thread_on_cpu(torch.device("cpu")):
        for t in range(steps):
            G = naive_softmax_gradient(W, H, y)
            if first_zero is None and not torch.any(G != 0):
                first_zero, W_at_zero = t, W.numpy().copy()
            W = W - eta0 * (t + 2.0) ** (-a) * direction(G, t)
    return W.numpy(), first_zero, W_at_zero


def relative(A, B):
    return float(np.abs(np.asarray(A) - np.asarray(B)).max() / np.abs(np.asarray(B)).max())


def test_reference_gradient_matches_autograd_at_moderate_logits():
    rng = np.random.default_rng(1)
    H, y, W = rng.standard_normal((7, 4)), np.array([0, 1, 2, 0, 1, 2, 2]), rng.standard_normal((3, 4))
    Wt = torch.tensor(W, requires_grad=True)
    torch.nn.functional.cross_entropy(torch.tensor(H) @ Wt.T, torch.tensor(y)).backward()
    ref = np.array(to_float(reference_gradient([list(r) for r in W], [list(r) for r in H], list(y), range(7))))
    np.testing.assert_allclose(ref, Wt.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_reference_directions_attain_the_dual_norm():
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((3, 4))
    for norm, dual in [("max", np.abs(Z).sum()), ("sum", np.abs(Z).max()), ("frobenius", np.linalg.norm(Z)),
                       ("spectral", np.linalg.svd(Z, compute_uv=False).sum())]:
        D = np.array(to_float(steepest([list(map(float, r)) for r in Z], norm)))
        assert float((Z * D).sum()) == pytest.approx(dual, rel=1e-13)


def test_signgd_engine_matches_mpmath_where_naive_float64_stalls(hard_problem):
    H, y = hard_problem
    W_engine = engine_W(H, y, RunSpec("signgd", "1/2"), STEPS)
    assert np.abs(H @ W_engine.T).max() > 1000  # the logits really leave float64's softmax range
    W_ref = np.array(to_float(reference_run(H, y, 3, ReferenceConfig("max", "1/2"), STEPS)))
    assert relative(W_engine, W_ref) < 1e-10

    W_naive, first_zero, W_at_zero = naive_run(H, y, STEPS, 1.0, 0.5, lambda G, t: torch.sign(G))
    assert first_zero is not None and first_zero < 10  # the naive gradient is exactly zero ...
    np.testing.assert_array_equal(W_naive, W_at_zero)  # ... and it never moves again
    assert relative(W_naive, W_ref) > 0.1


def test_adam_eps0_engine_matches_mpmath_where_naive_float64_fails(hard_problem):
    H, y = hard_problem
    eta0 = 1.0
    W_engine = engine_W(H, y, RunSpec("adam", "1/2", eta0=eta0), STEPS)
    assert np.abs(H @ W_engine.T).max() > 1000
    W_ref = np.array(to_float(reference_run(H, y, 3, ReferenceConfig(adam=True, a="1/2", eta0=eta0), STEPS)))
    assert relative(W_engine, W_ref) < 1e-12  # as every recipe in tests/test_fused.py

    moments = {"m": torch.zeros(3, 3, dtype=torch.float64), "v": torch.zeros(3, 3, dtype=torch.float64)}

    def naive_adam(G, t):
        moments["m"] = 0.9 * moments["m"] + 0.1 * G
        moments["v"] = 0.999 * moments["v"] + 0.001 * G * G
        m_hat, v_hat = moments["m"] / (1 - 0.9 ** (t + 1)), moments["v"] / (1 - 0.999 ** (t + 1))
        return torch.where(v_hat > 0, m_hat / v_hat.sqrt(), torch.zeros_like(m_hat))

    _, first_zero, _ = naive_run(H, y, STEPS, eta0, 0.5, naive_adam)
    assert first_zero is not None and first_zero < 10  # the naive gradient underflows to exactly zero


def test_log_domain_gradient_matches_mpmath_at_huge_logits(hard_problem):
    H, y = hard_problem
    W = engine_W(H, y, RunSpec("signgd", "1/2"), 1500)
    G, log_scale = log_domain_gradient(torch.tensor(W)[None], torch.tensor(H), torch.tensor(y))
    import mpmath as mp

    with mp.workdps(50):
        exact = reference_gradient([[mp.mpf(v) for v in r] for r in W], [[mp.mpf(v) for v in r] for r in H], list(y),
                                   range(6))
        # one log-scale per class row
        expected = np.array([[float(v / mp.exp(mp.mpf(float(log_scale[0, c, 0])))) for v in row]
                             for c, row in enumerate(exact)])
    assert float(log_scale.max()) < -745  # the true gradient is below float64's range
    for c in range(3):
        assert np.abs(expected[c]).max() > 0.1  # every row is at its own scale
        np.testing.assert_allclose(G[0, c].numpy(), expected[c], rtol=1e-9, atol=1e-12 * np.abs(expected[c]).max())
