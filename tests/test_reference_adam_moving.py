"""Adam (eps = 0) past float64's range: the engine keeps moving and matches 50-digit mpmath; naive stalls.

docs/theory.md section 7. With the default betas (0.9, 0.999) exact Adam itself barely moves once the gradient
is e^-1000 smaller than the moments' memory (v forgets at rate beta2), so a naive run and the exact run
coincide there (tests/test_reference.py). With a short memory (beta1 = 0.2, beta2 = 0.3, still Adam with
eps = 0, SIGNADAM eq. 3) the exact update m_hat/sqrt(v_hat) keeps unit size while the logits pass 1000:
the naive float64 gradient underflows entry by entry and its run freezes, the log-scaled engine does not.
"""

import numpy as np
import torch

from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group
from rates.numeric.reference import ReferenceConfig, to_float
from rates.numeric.reference import run as reference_run

BETA1, BETA2, STEPS = 0.2, 0.3, 2000


def _problem():
    rng = np.random.default_rng(0)
    H = 500.0 * (np.repeat(np.eye(3), 2, axis=0) + 0.3 * rng.standard_normal((6, 3)))
    return H, np.repeat(np.arange(3), 2)


def _naive_adam(H, y, steps):
    """Textbook float64 Adam (softmax gradient, eps = 0); returns W after 10 steps, final W, zero counts."""
    Ht, yt = torch.tensor(H), torch.tensor(y)
    W = torch.zeros(3, 3, dtype=torch.float64)
    m, v = torch.zeros_like(W), torch.zeros_like(W)
    zero_entries, W_early = [], None
    for t in range(steps):
        S = torch.softmax(Ht @ W.T, dim=1)
        S[torch.arange(len(y)), yt] -= 1.0
        G = S.T @ Ht / len(y)
        zero_entries.append(int((G == 0).sum()))
        m = BETA1 * m + (1 - BETA1) * G
        v = BETA2 * v + (1 - BETA2) * G * G
        m_hat, v_hat = m / (1 - BETA1 ** (t + 1)), v / (1 - BETA2 ** (t + 1))
        W = W - (t + 2.0) ** -0.5 * torch.where(v_hat > 0, m_hat / v_hat.sqrt(), torch.zeros_like(m_hat))
        if t == 9:
            W_early = W.clone()
    return W_early.numpy(), W.numpy(), zero_entries


def test_short_memory_adam_matches_mpmath_while_naive_float64_freezes():
    H, y = _problem()
    spec = resolve_spec(RunSpec("adam", "1/2", adam_beta1=BETA1, adam_beta2=BETA2), len(y))
    W_engine = run_group([spec], torch.tensor(H), torch.tensor(y), 3, STEPS, checkpoint_times(STEPS, 2))[0][0].numpy()
    W_ref = np.array(to_float(reference_run(H, y, 3, ReferenceConfig(adam=True, a="1/2", beta1=BETA1, beta2=BETA2),
                                            STEPS)))

    assert np.abs(H @ W_ref.T).max() > 1000  # logits far beyond exp's float64 range (~745)
    scale = np.abs(W_ref).max()
    assert np.abs(W_engine - W_ref).max() / scale < 1e-10

    W_early, W_naive, zero_entries = _naive_adam(H, y, STEPS)
    assert max(zero_entries[:10]) >= 6  # most gradient entries underflow to exactly 0 within 10 steps
    # The naive run freezes: after step 10 it moves less than 1% of what the exact run moves ...
    assert np.abs(W_naive - W_early).max() < 0.01 * np.abs(W_ref - W_early).max()
    # ... and ends far from the exact iterate.
    assert np.abs(W_naive - W_ref).max() / scale > 0.1
