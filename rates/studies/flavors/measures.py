"""Measurements of ``rates report flavors`` taken from the trained histories and from single updates.

Which seeds count (:func:`_valid`), from which checkpoint train accuracy stays at 100%
(:func:`_full_accuracy_from`), and the App. C identities measured on random gradients (Adam at
beta1 = beta2 = eps = 0 against sign descent, Shampoo without accumulation against the polar factor of an SVD).
"""

from __future__ import annotations

import numpy as np

from rates.numeric.homogeneous.train import History
from rates.studies.flavors.rules import lasting_from


def _valid(*histories: History) -> np.ndarray:
    """Seeds in which every given run separated the training data and did not diverge."""
    ok = np.ones_like(histories[0].diverged, dtype=bool)
    for h in histories:
        ok &= ~h.diverged & (h.t_separated >= 0) & (h.final("train_acc") == 1.0)
    return ok


def _full_accuracy_from(h: History) -> np.ndarray:
    """Per seed, the checkpoint step from which train accuracy stays at 100% (-1: not at the end)."""
    return lasting_from(h.t, h.metrics["train_acc"] >= 1.0)


def identity_gradients(seed: int = 0) -> list:
    """Random per-layer gradients (2 runs, layers 8x5 and 1x8, entries of both signs), float64."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return [torch.randn((2, 8, 5), generator=gen, dtype=torch.float64),
            torch.randn((2, 1, 8), generator=gen, dtype=torch.float64)]


def adam_sign_difference(grads) -> float:
    """Largest |update - sign g| of Adam with beta1 = beta2 = eps = 0 (FLAVORS App. C.1: it is sign descent,
    SD without the eq. 1 factor ||g||_1)."""
    import torch

    from rates.numeric.homogeneous.steepest import make_optimizer

    adam = make_optimizer("adam", lr=1.0, eps=0.0, beta1=0.0, beta2=0.0)
    updates, _ = adam.update(grads, adam.init(grads))
    return max(float((u - torch.sign(g)).abs().max()) for u, g in zip(updates, grads))


def shampoo_polar_difference(grads, algorithm: str = "shampoo-no-acc", steps: int = 1) -> float:
    """Largest |update - U V^T| of Shampoo after ``steps`` identical gradients, U V^T the polar factor of
    G = U S V^T from an SVD (FLAVORS sec. 4.3, App. C.2: without accumulation Shampoo is the polar factor)."""
    import torch

    from rates.numeric.homogeneous.steepest import make_optimizer

    opt = make_optimizer(algorithm, lr=1.0)
    state = opt.init(grads)
    for _ in range(steps):
        updates, state = opt.update(grads, state)
    worst = 0.0
    for u, g in zip(updates, grads):
        U, _, Vh = torch.linalg.svd(g, full_matrices=False)
        worst = max(worst, float((u - U @ Vh).abs().max()))
    return worst
