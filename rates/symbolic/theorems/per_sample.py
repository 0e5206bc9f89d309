"""Per-sample (b = 1) SignSGD / N-SGD / Spectral-SGD: a limit *direction*, not a rate.

Setting (MINIBATCH section 4.4, Def. 4.8, App. H.2.1) [given]: orthogonal
scale-skewed data, ``d = k``, ``h_i = s_i e_{y_i}`` with arbitrary scales ``s_i > 0``, class counts ``n_c``
(possibly unequal); per-sample updates under random reshuffling from ``W_0 = 0``, ``eta_t = eta_0 (t+2)^(-a)``.

Algorithm and the rebuilt step directions (docs/theory.md section 5) [rebuilt]:

* SignSGD: ``grad l_i(W) = (S(W h_i) - e_{y_i}) s_i e_{y_i}^T`` has one nonzero column, negative in row
  ``y_i`` and positive elsewhere, so ``-sign(grad l_i) = (2 e_{y_i} - 1) e_{y_i}^T`` for every ``W``.
* N-SGD: by induction ``W_t = sum_c w_c u_c e_c^T`` with ``u_c = (e_c - 1/k 1)/||e_c - 1/k 1||_2`` (column ``c``
  only moves on class-``c`` samples), so the logits of a class-``c`` sample are equal off class ``c``, the
  softmax is uniform there and ``-grad l_i/||grad l_i||_F = u_{y_i} e_{y_i}^T``. Spectral-SGD with ``b = 1`` is
  N-SGD: the gradient has rank one (Lemma H.1).

Guarantee (MINIBATCH Thm 4.9 / H.2 / H.3): ``W_t/||W_t|| -> M/||M||`` with the bias matrix
``M = sum_c (n_c/n) D_c e_c^T`` (``D_c = 2 e_c - 1`` for SignSGD, ``u_c`` for N-SGD / Spectral-SGD): it
depends on class frequencies, not on sample scales (each epoch adds ``n_c`` equal steps to column ``c``
and the per-epoch step sizes become equal as ``eta`` decays). The full-batch max-margin solution depends
on ``min_{i: y_i = c} s_i`` instead, so with imbalance the per-sample margin gap does not vanish.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rates.errors import InputError
from rates.symbolic.theorems.sources import SEED_MINIBATCH, Source

SOURCE = Source(SEED_MINIBATCH, "Thm 4.9/H.2/H.3, Def. 4.8, Lemma H.1")
PER_SAMPLE_ALGORITHMS = {"signsgd": "max", "nsgd": "frobenius", "spectral-sgd": "spectral"}


def class_directions(k: int, algorithm: str) -> np.ndarray:
    """Columns ``D_c`` (k x k): the per-sample step direction's column for a class-``c`` sample."""
    eye = np.eye(k)
    if algorithm == "signsgd":
        return 2 * eye - 1
    if algorithm in ("nsgd", "spectral-sgd"):
        centred = eye - 1.0 / k
        return centred / np.linalg.norm(centred, axis=0, keepdims=True)
    raise InputError("algo", f"per-sample theorem covers {', '.join(PER_SAMPLE_ALGORITHMS)}; got {algorithm!r}")


def bias_matrix(class_counts, algorithm: str) -> np.ndarray:
    """``M = sum_c (n_c/n) D_c e_c^T`` (docs/theory.md section 5, MINIBATCH Thm 4.9)."""
    counts = np.asarray(class_counts, dtype=np.float64)
    if counts.ndim != 1 or counts.size < 2 or np.any(counts < 1) or np.any(counts != np.round(counts)):
        raise InputError("class_counts", f"need at least two positive integer class counts, got {class_counts}")
    return class_directions(counts.size, algorithm) * (counts / counts.sum())[None, :]


def algorithm_norm(matrix: np.ndarray, algorithm: str) -> float:
    name = PER_SAMPLE_ALGORITHMS[algorithm]
    if name == "max":
        return float(np.abs(matrix).max())
    if name == "spectral":
        return float(np.linalg.norm(matrix, 2))
    return float(np.linalg.norm(matrix))


@dataclass(frozen=True)
class LimitDirection:
    """Predicted ``lim W_t/||W_t||`` in the algorithm's norm, with provenance; not a rate."""

    algorithm: str
    class_counts: tuple
    bias: np.ndarray
    direction: np.ndarray
    source: Source = SOURCE
    status: str = "rebuilt"

    def to_json(self) -> dict:
        return {"family": "per-sample", "algorithm": self.algorithm, "class_counts": list(self.class_counts),
                "bias_matrix": self.bias.tolist(), "direction": self.direction.tolist(),
                "norm": PER_SAMPLE_ALGORITHMS[self.algorithm], "source": self.source.to_json(), "status": self.status}


def limit_direction(class_counts, algorithm: str) -> LimitDirection:
    """The per-sample theorem's prediction ``M/||M||`` for ``algorithm`` in {signsgd, nsgd, spectral-sgd}."""
    M = bias_matrix(class_counts, algorithm)
    return LimitDirection(algorithm, tuple(int(c) for c in class_counts), M, M / algorithm_norm(M, algorithm))


# ---------------------------------------------------------------------------------------------------------
# hypotheses and the data-specific prediction

# The per-sample algorithm whose bias matrix goes with a norm (Spectral-SGD with b = 1 is N-SGD).
ALGORITHM_OF_NORM = {norm: name for name, norm in PER_SAMPLE_ALGORITHMS.items()}
NOT_PREDICTED = (
    "no rate: Thm 4.9 states the limit direction only (how fast 1 - cos(W_t, M) falls is measured, not predicted)",
    "the margin gap need not vanish: it tends to gamma - margin(M/||M||), > 0 unless M is itself a max-margin "
    "solution (with imbalance it is not, in general)",
)
OTHER_DATA = ("b = 1 on data that are not orthogonal scale-skewed (d = k, h_i = s_i e_{y_i}): no theorem "
              "(MINIBATCH Thm 4.9 needs that structure; the mini-batch Thm 4.1 needs gamma_eff(b) > 0, which "
              "b = 1 does not give in general)")


def orthogonal_structure(data) -> tuple[bool, str]:
    """Does ``data`` meet Def. 4.8's setting (``d = k``, ``h_i = s_i e_{y_i}``, ``s_i > 0``)? With the reason."""
    H, y, k = np.asarray(data.H, dtype=np.float64), np.asarray(data.y), int(data.k)
    if H.shape[1] != k:
        return False, f"d = {H.shape[1]} differs from k = {k}"
    rows = np.arange(len(y))
    on_label = H[rows, y]
    off_label = H.copy()
    off_label[rows, y] = 0.0
    if np.any(off_label != 0):
        i = int(np.flatnonzero(np.any(off_label != 0, axis=1))[0])
        return False, f"sample {i} has a nonzero feature off its label's axis"
    if np.any(~(on_label > 0)):
        i = int(np.flatnonzero(~(on_label > 0))[0])
        return False, f"sample {i} has scale {on_label[i]:g} <= 0 on its label's axis"
    return True, f"orthogonal scale-skewed: d = k = {k}, class counts {'/'.join(map(str, np.bincount(y, minlength=k)))}"


def covers(algorithm: str, batch, momentum: float = 0.0, vr: bool = False) -> tuple[bool, str]:
    """Thm 4.9's hypotheses on the optimiser: SignSGD / N-SGD / Spectral-SGD, b = 1, no momentum, no VR."""
    if algorithm not in PER_SAMPLE_ALGORITHMS:
        return False, f"{algorithm} is not one of {', '.join(PER_SAMPLE_ALGORITHMS)}"
    if batch != 1:
        return False, f"batch {batch} is not 1"
    if momentum or vr:
        return False, "momentum or variance reduction is outside Thm 4.9"
    return True, "per-sample (b = 1) steepest descent without momentum"
