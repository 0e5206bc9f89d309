"""Optimiser compositions (rates.numeric.optim): each transform against an independent implementation."""


import mpmath as mp
import numpy as np
import pytest
import torch

from rates.norms import parse_norm
from rates.numeric.data import orthogonal_skewed, parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group, single_thread_on_cpu
from rates.numeric.optim import ReshuffledBatches, Signal, VarianceReduced, adam, epoch_permutations, momentum


def tensors(ds):
    return torch.tensor(np.asarray(ds.H)), torch.tensor(np.asarray(ds.y))


def final_W(specs, ds, steps):
    H, y = tensors(ds)
    W, _ = run_group([resolve_spec(s, ds.n) for s in specs], H, y, ds.k, steps, checkpoint_times(steps, 2))
    return W.numpy()


def autograd_gradient(W, H, y):
    W = W.detach().clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(H @ W.T, y).backward()
    return W.grad


@pytest.fixture(scope="module")
def data():
    return parse_data("default")


def test_adam_with_zero_betas_is_signgd(data):
    """SIGNADAM eq. 3 with beta1 = beta2 = 0: m/sqrt(v) = g/|g| = sign(g)."""
    W_adam = final_W([RunSpec("adam", "1/2", adam_beta1=0.0, adam_beta2=0.0)], data, 300)
    W_sign = final_W([RunSpec("signgd", "1/2")], data, 300)
    np.testing.assert_allclose(W_adam, W_sign, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_adam_matches_torch_optim_adam(data, eps):
    H, y = tensors(data)
    steps, eta0, a = 150, 0.05, 0.5
    W_engine = final_W([RunSpec("adam", "1/2", eta0=eta0, adam_eps=eps)], data, steps)[0]
    W = torch.zeros(data.k, data.d, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([W], lr=eta0, betas=(0.9, 0.999), eps=eps)
    with single_thread_on_cpu(torch.device("cpu")):  # tiny products: threads only add barrier waits
        for t in range(steps):
            opt.param_groups[0]["lr"] = eta0 * (t + 2.0) ** (-a)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(H @ W.T, y).backward()
            opt.step()
    np.testing.assert_allclose(W_engine, W.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_momentum_signgd_matches_a_direct_loop(data):
    H, y = tensors(data)
    steps, beta = 200, 0.9
    W_engine = final_W([RunSpec("signum", "1/2", momentum=beta)], data, steps)[0]
    W = torch.zeros(data.k, data.d, dtype=torch.float64)
    M = torch.zeros_like(W)
    with single_thread_on_cpu(torch.device("cpu")):
        for t in range(steps):
            M = beta * M + (1 - beta) * autograd_gradient(W, H, y)
            W = W - (t + 2.0) ** -0.5 * torch.sign(M)
    np.testing.assert_allclose(W_engine, W.numpy(), rtol=1e-12, atol=1e-12)


def test_momentum_log_scale_is_exact_beyond_float64_range():
    """Signals e^{-900 t} Z_t (all but the first underflow float64) against the same sums in mpmath."""
    gen = torch.Generator().manual_seed(3)
    values = [torch.randn(2, 2, 3, dtype=torch.float64, generator=gen) for _ in range(4)]
    scales = [torch.tensor([-900.0 * t, -450.0 * t], dtype=torch.float64).reshape(2, 1, 1) for t in range(4)]
    beta = torch.tensor([0.9, 0.5], dtype=torch.float64)
    tr = momentum(beta)
    state = tr.init(values[0])
    for t, (v, s) in enumerate(zip(values, scales)):
        out, state = tr.update(Signal(v, s), state, t)
    with mp.workdps(40):
        for r in range(2):
            expected = [[mp.mpf(0)] * 3 for _ in range(2)]
            for v, s in zip(values, scales):
                b = mp.mpf(float(beta[r]))
                expected = [[b * expected[i][j] + (1 - b) * mp.exp(mp.mpf(float(s[r]))) * mp.mpf(float(v[r, i, j]))
                             for j in range(3)] for i in range(2)]
            row_scales = out.log_scale.expand(2, 2, 1)  # one per class row, or one per run broadcast over rows
            got = [[mp.exp(mp.mpf(float(row_scales[r, i, 0]))) * mp.mpf(float(out.value[r, i, j])) for j in range(3)]
                   for i in range(2)]
            for i in range(2):
                for j in range(3):
                    assert (abs(got[i][j] - expected[i][j])
                            <= mp.mpf(1e-14) * max(abs(x) for row in expected for x in row))


def test_adam_eps0_is_invariant_to_a_common_scale():
    """Adam (eps = 0) sees only m/sqrt(v): the same gradients at scale e^-5000 give the same directions.

    Tolerance 1e-11: the log-scales are numbers near -5000, so each e^{s - s'} carries ~ulp(5000) ~ 1e-12
    of relative error; without the shared log-scale the result would be 0/0."""
    gen = torch.Generator().manual_seed(4)
    grads = [torch.randn(1, 3, 2, dtype=torch.float64, generator=gen) for _ in range(6)]
    zero = torch.zeros(1, 1, 1, dtype=torch.float64)
    b1, b2 = torch.tensor([0.9], dtype=torch.float64), torch.tensor([0.999], dtype=torch.float64)
    plain, tiny = adam(b1, b2, zero), adam(b1, b2, zero)
    sp, st = plain.init(grads[0]), tiny.init(grads[0])
    for t, g in enumerate(grads):
        out_plain, sp = plain.update(Signal(g, zero), sp, t)
        out_tiny, st = tiny.update(Signal(g, zero - 5000.0), st, t)
        np.testing.assert_allclose(out_tiny.value.numpy(), out_plain.value.numpy(), rtol=1e-11, atol=1e-12)


def test_variance_reduced_signal_matches_its_definition(data):
    """MINIBATCH Thm 4.6 signal grad_B(W_t) - grad_B(W~) + grad L(W~), W~ = iterate at the epoch start."""
    H, y = tensors(data)
    source = VarianceReduced(H, y, data.k, batch=5, seeds=[11])
    gen = torch.Generator().manual_seed(6)
    W_tilde = torch.randn(1, data.k, data.d, dtype=torch.float64, generator=gen)
    W_now = W_tilde + 0.3 * torch.randn(1, data.k, data.d, dtype=torch.float64, generator=gen)
    state = source.init(W_tilde)
    _, state = source(W_tilde, state, 0)  # t = 0 starts the epoch: snapshot at W_tilde
    signal, state = source(W_now, state, 1)
    batch = state.perms[0, 5:10]
    expected = (autograd_gradient(W_now[0], H[batch], y[batch]) - autograd_gradient(W_tilde[0], H[batch], y[batch])
                + autograd_gradient(W_tilde[0], H, y))
    np.testing.assert_allclose(signal.true_value()[0].numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)


def test_reshuffling_covers_each_sample_once_per_epoch_with_per_run_streams(data):
    H, y = tensors(data)
    source = ReshuffledBatches(H, y, data.k, batch=6, seeds=[0, 1, 2])
    alone = ReshuffledBatches(H, y, data.k, batch=6, seeds=[2])
    state, state_alone = source.init(None), alone.init(None)
    W = torch.zeros(3, data.k, data.d, dtype=torch.float64)
    streams = [epoch_permutations(s, data.n) for s in (0, 1, 2)]
    for epoch in range(3):
        _, state = source(W, state, epoch * source.steps_per_epoch)
        _, state_alone = alone(W[:1], state_alone, epoch * alone.steps_per_epoch)
        perms = state.perms
        for r in range(3):
            assert sorted(perms[r].tolist()) == list(range(data.n))
            assert torch.equal(perms[r], next(streams[r]))
        assert torch.equal(perms[2], state_alone.perms[0])  # a run's batches do not depend on its neighbours


@pytest.mark.parametrize("name", ["max", "sum", "frobenius", "spectral", "nuclear", "lp:3", "schatten:3"])
def test_steepest_directions_ignore_the_signal_scale(name):
    """The engine feeds mantissas only (log-scale dropped): valid because argmax <cZ, D> = argmax <Z, D>."""
    gen = torch.Generator().manual_seed(8)
    Z = torch.randn(4, 3, 5, dtype=torch.float64, generator=gen)
    norm = parse_norm(name)
    base = norm.steepest(Z)
    for c in (1e-300, 1e300):
        np.testing.assert_allclose(norm.steepest(c * Z).numpy(), base.numpy(), rtol=1e-12, atol=1e-12)


def per_sample_epoch(algo, ds, seed, a="1/2", eta0=1.0):
    H, y = tensors(ds)
    W, _ = run_group([resolve_spec(RunSpec(algo, a, eta0=eta0, seed=seed, batch=1), ds.n)], H, y, ds.k, ds.n,
                     checkpoint_times(ds.n, 2))
    order = next(epoch_permutations(seed, ds.n)).tolist()
    etas = [eta0 * (t + 2.0) ** (-float(eval(a))) for t in range(ds.n)]
    return W[0].numpy(), [int(ds.y[i]) for i in order], etas


def test_one_epoch_of_per_sample_signsgd_is_the_predicted_sum():
    """docs/theory.md section 5 (MINIBATCH Def. 4.8, Thm 4.9): on h_i = s_i e_{y_i}, -sign(grad l_i(W)) =
    (2 e_{y_i} - 1) e_{y_i}^T for every W and scale, so W after one epoch is sum_t eta_t (2e_c - 1) e_c^T
    over the classes c met in the reshuffled order; the scales s_i play no role."""
    ds = orthogonal_skewed([6, 3, 1], [1.0, 0.5, 2.0])
    W, classes, etas = per_sample_epoch("signsgd", ds, seed=3)
    expected = np.zeros((3, 3))
    for c, eta in zip(classes, etas):
        expected[:, c] += eta * (2 * np.eye(3)[c] - 1)
    np.testing.assert_allclose(W, expected, rtol=0, atol=1e-15 * np.abs(expected).max())


@pytest.mark.parametrize("algo", ["nsgd", "spectral-sgd"])
def test_one_epoch_of_per_sample_nsgd_and_spectral_sgd_is_the_predicted_sum(algo):
    """docs/theory.md section 5: -grad l_i / ||grad l_i||_F = u_{y_i} e_{y_i}^T with u_c = (e_c - 1/k)/||e_c - 1/k||
    along the whole path from 0 (by symmetry); rank-one gradients make the spectral step the same."""
    ds = orthogonal_skewed([4, 2, 2, 1], [1.0, 3.0, 0.25, 2.0])
    W, classes, etas = per_sample_epoch(algo, ds, seed=5)
    k = 4
    expected = np.zeros((k, k))
    for c, eta in zip(classes, etas):
        u = np.eye(k)[c] - 1.0 / k
        expected[:, c] += eta * u / np.linalg.norm(u)
    np.testing.assert_allclose(W, expected, rtol=0, atol=1e-14 * np.abs(expected).max())


@pytest.mark.parametrize("algo, batch, momentum_beta", [("signsgd", 8, None), ("vr-nsgd", 16, None),
                                                        ("vr-signum", 16, 0.5), ("signum", 8, 0.9),
                                                        ("momentum-ngd", 16, 0.5), ("vr-momentum-ngd", 8, 0.9)])
def test_stochastic_runs_match_a_direct_loop_over_the_same_batches(algo, batch, momentum_beta):
    """Random reshuffling (MINIBATCH section 3.1), VR (Thm 4.6) and momentum on top, written out by hand."""
    ds = parse_data("minibatch")
    H, y = tensors(ds)
    steps, seed = 3 * ds.n // batch, 9
    spec = RunSpec(algo, "1/2", seed=seed, batch=batch, momentum=momentum_beta)
    W_engine = final_W([spec], ds, steps)[0]
    norm = parse_norm("max" if "sign" in algo else "frobenius")
    stream = epoch_permutations(seed, ds.n)
    W = torch.zeros(ds.k, ds.d, dtype=torch.float64)
    M = torch.zeros_like(W)
    with single_thread_on_cpu(torch.device("cpu")):
        for t in range(steps):
            if t % (ds.n // batch) == 0:
                order, snapshot = next(stream), W.clone()
                snapshot_full = autograd_gradient(snapshot, H, y)
            j = t % (ds.n // batch)
            idx = order[j * batch:(j + 1) * batch]
            Z = autograd_gradient(W, H[idx], y[idx])
            if algo.startswith("vr-"):
                Z = Z - autograd_gradient(snapshot, H[idx], y[idx]) + snapshot_full
            if momentum_beta is not None:
                M = momentum_beta * M + (1 - momentum_beta) * Z
                Z = M
            W = W - (t + 2.0) ** -0.5 * norm.steepest(Z[None])[0]
    np.testing.assert_allclose(W_engine, W.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eps", [1e-8, 1e-2])
def test_mini_batch_adam_with_eps_matches_a_direct_loop(eps):
    """Adam (eps > 0) on reshuffled batches: the shared log-scale of m and v must cancel exactly, which a
    wrong eps e^{-s} term or a scale mismatch between batches would break (here nothing underflows)."""
    ds = parse_data("minibatch")
    H, y = tensors(ds)
    batch, seed, b1, b2, eta0 = 8, 4, 0.8, 0.95, 0.1
    steps = 3 * ds.n // batch
    W_engine = final_W([RunSpec("adam", "1/2", eta0=eta0, seed=seed, batch=batch, adam_beta1=b1, adam_beta2=b2,
                                adam_eps=eps)], ds, steps)[0]
    stream = epoch_permutations(seed, ds.n)
    W = torch.zeros(ds.k, ds.d, dtype=torch.float64)
    m, v = torch.zeros_like(W), torch.zeros_like(W)
    with single_thread_on_cpu(torch.device("cpu")):
        for t in range(steps):
            if t % (ds.n // batch) == 0:
                order = next(stream)
            j = t % (ds.n // batch)
            idx = order[j * batch:(j + 1) * batch]
            g = autograd_gradient(W, H[idx], y[idx])
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
            step = (m / (1 - b1 ** (t + 1))) / ((v / (1 - b2 ** (t + 1))).sqrt() + eps)
            W = W - eta0 * (t + 2.0) ** -0.5 * step
    np.testing.assert_allclose(W_engine, W.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eps", [0.0, 1e-250])
def test_adam_keeps_entries_far_below_the_largest(eps):
    """Adam is entry-wise: an entry 1e-170 .. 1e-300 of the largest still takes an O(1) step (its first
    step is sign(g), SIGNADAM eq. 3). Squared, such an entry underflows float64; the engine must not
    drop it. Expected: the same five Adam steps in 60-digit mpmath on the true (unscaled) gradients."""
    b1, b2 = 0.9, 0.999
    values = torch.tensor([[[1.0, -1e-170, 3e-200, -2e-300], [0.5, 1e-160, -1e-180, 4e-290]]], dtype=torch.float64)
    signs = torch.tensor([[[1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, 1.0]]], dtype=torch.float64)
    scales = [0.0, -50.0, -400.0, -400.0, -2000.0]  # log-scales of the signals: later gradients are tinier
    tr = adam(torch.tensor([b1], dtype=torch.float64), torch.tensor([b2], dtype=torch.float64),
              torch.tensor([eps], dtype=torch.float64))
    state = tr.init(values)
    with mp.workdps(60):
        m = [[mp.mpf(0)] * 4 for _ in range(2)]
        v = [[mp.mpf(0)] * 4 for _ in range(2)]
        for t, log_scale in enumerate(scales):
            g_mantissa = values * (signs if t % 2 else 1.0)
            out, state = tr.update(Signal(g_mantissa, torch.full((1, 1, 1), log_scale, dtype=torch.float64)), state, t)
            for i in range(2):
                for j in range(4):
                    g = mp.exp(log_scale) * mp.mpf(float(g_mantissa[0, i, j]))
                    m[i][j] = b1 * m[i][j] + (1 - b1) * g
                    v[i][j] = b2 * v[i][j] + (1 - b2) * g * g
                    expected = (m[i][j] / (1 - mp.mpf(b1) ** (t + 1))
                                / (mp.sqrt(v[i][j] / (1 - mp.mpf(b2) ** (t + 1))) + mp.mpf(eps)))
                    assert float(out.value[0, i, j]) == pytest.approx(float(expected), rel=1e-12, abs=1e-300)
