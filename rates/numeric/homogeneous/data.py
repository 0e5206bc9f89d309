"""Binary data sets of FLAVORS section 4, one independent draw per seed, stacked on a leading runs axis.

* ``teacher-student`` (FLAVORS eq. 14 [given]): ``x ~ N(0, I_d)``, ``y = sgn(sum_j u*_j relu(<w*_j, x>))``
  with a sparse teacher (``active`` non-zero coordinates per neuron, u*_j = +1, -1, +1, ...). A point with
  ``f_teacher(x) = 0`` (every teacher neuron off; probability 2^-k per point) has ``sgn = 0``, i.e. no label:
  a training sample containing one is refused as non-separating (:class:`NotSeparableError`); such test
  points are redrawn, since they carry no label to predict.
* ``digits:A,B``: the pair (A -> +1, B -> -1) from scikit-learn's bundled 8x8 digits, pixels scaled to
  [0, 1], ``n_train`` training points per seed and the rest of the pair as test set -- the offline stand-in
  for the MNIST pairs (3 vs 6, 2 vs 7) of FLAVORS section 4.2-4.3 and App. D (100 training points).

Separability by a bias-free ReLU net (needed by FLAVORS (A3)): f(c x) = c f(x) for c > 0 and f(0) = 0, so a
sample with x = 0, or with two positively collinear points of opposite labels, cannot be separated by any
such net; :func:`check_homogeneous_separable` refuses those. The teacher itself (width k) certifies
separability of a teacher sample for students of width >= k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from rates.errors import InputError, NotSeparableError
from rates.numeric.homogeneous.options import parse_data_spec  # noqa: F401 - read here by callers


@dataclass
class Dataset:
    """Per-run data: ``X_train`` (R, n, d), ``y_train`` (R, n) in {+-1}; likewise the test split."""

    name: str
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    info: dict = field(default_factory=dict)

    @property
    def input_dim(self) -> int:
        return self.X_train.shape[-1]

    def to(self, device: str | torch.device) -> Dataset:
        return Dataset(self.name, self.X_train.to(device), self.y_train.to(device), self.X_test.to(device),
                       self.y_test.to(device), dict(self.info))


def check_homogeneous_separable(X: np.ndarray, y: np.ndarray, option: str = "data") -> None:
    """Refuse samples no bias-free ReLU net separates: x_i = 0, or x_i = c x_j (c > 0) with y_i != y_j."""
    norms = np.linalg.norm(X, axis=1)
    if np.any(norms == 0):
        raise NotSeparableError(option, f"{int(np.sum(norms == 0))} training point(s) are x = 0, where every "
                                        "bias-free ReLU net outputs 0; no such net separates this sample")
    directions = np.round(X / norms[:, None], 12)
    _, inverse = np.unique(directions, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for group in np.unique(inverse):
        labels = np.unique(y[inverse == group])
        if labels.size > 1:
            raise NotSeparableError(option, "two training points on one ray from 0 carry opposite labels; a "
                                            "bias-free ReLU net (f(cx) = c f(x)) cannot separate them")


def _teacher_draw(gen: np.random.Generator, d: int, width: int, active: int) -> tuple[np.ndarray, np.ndarray]:
    W = np.zeros((width, d))
    for j in range(width):
        W[j, gen.choice(d, size=active, replace=False)] = gen.standard_normal(active)
    # Alternating output signs keep the classes roughly balanced; with all u*_j > 0 every label would be +1.
    u = np.where(np.arange(width) % 2 == 0, 1.0, -1.0)
    return W, u


def _teacher_outputs(X: np.ndarray, W: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.maximum(X @ W.T, 0.0) @ u


def teacher_student(seeds: Sequence[int], n_train: int = 32, n_test: int = 2000, d: int = 8,
                    teacher_width: int = 8, active: int = 3) -> Dataset:
    """FLAVORS eq. 14 with a sparse teacher; one teacher and one sample per seed."""
    if n_train < 2:  # one point has one label: no binary sample, whatever the teacher
        raise InputError("n_train", f"must be an integer >= 2 (a sample with both labels), got {n_train}")
    if n_test <= 0:
        raise InputError("n_test", f"must be a positive integer, got {n_test}")
    if d <= 0:
        raise InputError("dim", f"must be a positive integer, got {d}")
    if teacher_width <= 0:
        raise InputError("teacher_width", f"must be a positive integer, got {teacher_width}")
    if not (1 <= active <= d):
        raise InputError("teacher_active", f"must be in 1..{d} (the input dimension), got {active}")
    Xs, ys, Xt, yt = [], [], [], []
    for seed in seeds:
        gen = np.random.default_rng(int(seed))
        W, u = _teacher_draw(gen, d, teacher_width, active)
        X = gen.standard_normal((n_train, d))
        f = _teacher_outputs(X, W, u)
        unlabeled = int(np.sum(f == 0))
        if unlabeled or np.unique(np.sign(f)).size < 2:
            detail = (f"{unlabeled} of {n_train} training points have f_teacher(x) = 0 (sgn 0: no label)"
                      if unlabeled else "all training labels are equal")
            # few points all on one side say nothing about the teacher: name the option that fixes it
            option = "n_train" if not unlabeled and n_train < 8 else "teacher_width"
            raise NotSeparableError(option, f"teacher sample (seed {seed}) is not a separable binary sample: "
                                    f"{detail}; use more training points (--n-train) or a wider teacher "
                                    "(--teacher-width, FLAVORS eq. 14)")
        Xs.append(X)
        ys.append(np.sign(f))
        test = np.empty((0, d))
        while test.shape[0] < n_test:  # redraw the (rare) unlabeled test points
            cand = gen.standard_normal((n_test, d))
            test = np.vstack([test, cand[_teacher_outputs(cand, W, u) != 0]])
        test = test[:n_test]
        Xt.append(test)
        yt.append(np.sign(_teacher_outputs(test, W, u)))
    info = {"d": d, "teacher_width": teacher_width, "active": active, "n_train": n_train, "n_test": n_test,
            "source": "FLAVORS eq. 14 (arXiv:2410.22069)"}
    return _stack("teacher-student", Xs, ys, Xt, yt, info)


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.data.astype(np.float64) / 16.0, bunch.target.astype(int)


def digits_pair(pair: tuple[int, int], seeds: Sequence[int], n_train: int = 100) -> Dataset:
    """Digits ``pair[0]`` (+1) vs ``pair[1]`` (-1); ``n_train`` random training points per seed, rest test."""
    a, b = pair
    for digit in pair:
        if not (isinstance(digit, (int, np.integer)) and 0 <= digit <= 9):
            raise InputError("data", f"digits:A,B needs digits in 0..9, got {pair}")
    if a == b:
        raise InputError("data", f"digits:A,B needs two different digits, got {pair}")
    X_all, target = _digits()
    mask = (target == a) | (target == b)
    X_pair, y_pair = X_all[mask], np.where(target[mask] == a, 1.0, -1.0)
    if not (2 <= n_train <= X_pair.shape[0] - 1):
        raise InputError("n_train", f"must be in 2..{X_pair.shape[0] - 1} for digits {a},{b}, got {n_train}")
    Xs, ys, Xt, yt = [], [], [], []
    for seed in seeds:
        order = np.random.default_rng(int(seed)).permutation(X_pair.shape[0])
        train, test = order[:n_train], order[n_train:]
        check_homogeneous_separable(X_pair[train], y_pair[train])
        Xs.append(X_pair[train])
        ys.append(y_pair[train])
        Xt.append(X_pair[test])
        yt.append(y_pair[test])
    info = {"pair": [a, b], "n_train": n_train, "n_test": int(X_pair.shape[0] - n_train),
            "source": "sklearn.datasets.load_digits (8x8), stand-in for FLAVORS section 4.2-4.3 MNIST pairs"}
    return _stack(f"digits:{a},{b}", Xs, ys, Xt, yt, info)


def load_dataset(spec: str, seeds: Sequence[int], n_train: int | None = None, **teacher_options) -> Dataset:
    kind, pair = parse_data_spec(spec)
    if kind == "digits":
        return digits_pair(pair, seeds, n_train=100 if n_train is None else n_train)
    return teacher_student(seeds, n_train=32 if n_train is None else n_train, **teacher_options)


def _stack(name, Xs, ys, Xt, yt, info) -> Dataset:
    as_t = lambda arrays: torch.as_tensor(np.stack(arrays), dtype=torch.float64)  # noqa: E731
    return Dataset(name, as_t(Xs), as_t(ys), as_t(Xt), as_t(yt), info)
