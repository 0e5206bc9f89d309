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
from rates.theorems.base import SEED_MINIBATCH, Source

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
