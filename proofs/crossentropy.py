"""Cross-entropy facts evaluated without cancellation (numpy float64), for the claims' two sides.

The claims are tight where one class dominates (``1 - S_y`` tiny); computing ``1 - S_y`` as ``1 - S_y``
would lose all digits there and report round-off as a counterexample. Here complements are formed from
the other classes' logits (``log(1 - S_y) = logsumexp_{c != y} z_c - logsumexp z``), so ratios stay
accurate to a few ulps at any logit scale. Independent of :mod:`rates.numeric.losses` on purpose: a claim checks
the lemma, not the engine's implementation of it.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import logsumexp

from rates.norms import parse_norm

# "every norm" of MINIBATCH Lemma C.1 / C.5: the named ones and two members of each p-family.
NORM_NAMES = ("max", "sum", "frobenius", "spectral", "nuclear", "lp:3", "lp:1.5", "schatten:3", "schatten:1.5")


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def label_gap(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``u_i = z_{i,y_i} - logsumexp_{c != y_i} z_{i,c}``; then ``-log S_y = log(1 + e^-u)`` and
    ``1 - S_y = 1/(1 + e^u)``, both without cancellation."""
    masked = z.copy()
    masked[np.arange(z.shape[0]), y] = -np.inf
    return z[np.arange(z.shape[0]), y] - logsumexp(masked, axis=-1)


_MAX_GAP = 700.0  # exp(-700) ~ 1e-304: beyond it 1 - S_y is subnormal and loses its digits


def _in_float64_range(u: np.ndarray) -> np.ndarray:
    """Refuse instances whose ``1 - S_y`` or per-sample loss is subnormal in float64: a ratio of two such
    numbers is round-off, not mathematics (the search treats the instance as outside the domain)."""
    if np.any(u > _MAX_GAP):
        raise FloatingPointError("1 - S_y underflows float64 (label gap > 700)")
    return u


def log_complement(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log(1 - S_{y_i}(z_i))`` for logits ``z`` (n, k) and labels ``y`` (n,)."""
    return -np.logaddexp(0.0, label_gap(z, y))


def complements(z: np.ndarray) -> np.ndarray:
    """``1 - S_j(z)`` for every class j of one logit vector, from the other classes' logits."""
    total = logsumexp(z)
    return np.array([np.exp(logsumexp(np.delete(z, j)) - total) for j in range(z.shape[-1])])


def logits(W: np.ndarray, H: np.ndarray) -> np.ndarray:
    return H @ W.T


def proxy(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> float:
    """``G(W) = (1/n) sum_i (1 - S_{y_i}(W h_i))``."""
    return float(np.mean(np.exp(-np.logaddexp(0.0, _in_float64_range(label_gap(logits(W, H), y))))))


def loss(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> float:
    """``L(W) = (1/n) sum_i -log S_{y_i}(W h_i)``."""
    return float(np.mean(np.logaddexp(0.0, -_in_float64_range(label_gap(logits(W, H), y)))))


def sample_gradients(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample gradients ``g_i = (S(z_i) - e_{y_i}) h_i^T`` (n, k, d), the label entry as ``-(1 - S_y)``."""
    z = logits(W, H)
    s = softmax(z)
    rows = np.arange(len(y))
    coeff = s.copy()
    coeff[rows, y] = -np.exp(-np.logaddexp(0.0, _in_float64_range(label_gap(z, y))))
    return coeff[:, :, None] * H[:, None, :]


def data_bound(H: np.ndarray) -> float:
    """``B = max_i ||h_i||_1`` (SIGNADAM Ass. 3.5, MINIBATCH Ass. 3.2)."""
    return float(np.abs(H).sum(axis=1).max())


def norm_value(name: str, A: np.ndarray, dual: bool = False) -> float:
    norm = parse_norm(name, "claim")
    tensor = torch.as_tensor(A, dtype=torch.float64)
    return float(norm.dual_value(tensor) if dual else norm.value(tensor))


def loss_torch(W: torch.Tensor, H: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = H @ W.T
    return (torch.logsumexp(z, dim=-1) - z[torch.arange(len(y)), y]).mean()


AUTOGRAD_MIN_PROXY = 1e-10  # below it autograd's S_y - 1 cancels to 0 and the gradient loses all digits


def _autograd_accurate(W, H, y) -> None:
    if proxy(W, H, y) < AUTOGRAD_MIN_PROXY:
        raise FloatingPointError("G(W) < 1e-10: autograd's S_y - 1 cancels (outside the searched domain)")


def autograd_gradient(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``grad L(W)`` by reverse-mode autodiff of the loss (an independent route to the gradient)."""
    _autograd_accurate(W, H, y)
    Wt = torch.as_tensor(W, dtype=torch.float64).clone().requires_grad_(True)
    value = loss_torch(Wt, torch.as_tensor(H, dtype=torch.float64), torch.as_tensor(y))
    (grad,) = torch.autograd.grad(value, Wt)
    return grad.numpy()


def autograd_curvature(W: np.ndarray, Delta: np.ndarray, H: np.ndarray, y: np.ndarray) -> float:
    """``d^2/de^2 L(W + e Delta)`` at ``e = 0`` by double backward (no Hessian formula involved)."""
    _autograd_accurate(W, H, y)
    eps = torch.zeros((), dtype=torch.float64, requires_grad=True)
    Wt = torch.as_tensor(W, dtype=torch.float64) + eps * torch.as_tensor(Delta, dtype=torch.float64)
    value = loss_torch(Wt, torch.as_tensor(H, dtype=torch.float64), torch.as_tensor(y))
    (first,) = torch.autograd.grad(value, eps, create_graph=True)
    (second,) = torch.autograd.grad(first, eps)
    return float(second)


def random_problem(rng: np.random.Generator, n_range=(1, 6), k_range=(2, 5), d_range=(1, 4)):
    """Shapes and labels for a random instance (every class need not be present: the facts hold anyway)."""
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    k = int(rng.integers(k_range[0], k_range[1] + 1))
    d = int(rng.integers(d_range[0], d_range[1] + 1))
    y = rng.integers(0, k, size=n)
    return n, k, d, y


def split(params: np.ndarray, n: int, k: int, d: int, matrices: int) -> list[np.ndarray]:
    """Cut a search vector into data ``H`` (n, d) and ``matrices`` weight matrices of shape (k, d)."""
    sizes = [n * d] + [k * d] * matrices
    pieces = np.split(params, np.cumsum(sizes)[:-1])
    return [pieces[0].reshape(n, d)] + [piece.reshape(k, d) for piece in pieces[1:]]


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))
