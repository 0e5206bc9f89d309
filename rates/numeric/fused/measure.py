"""Checkpoint measurements of the fused CPU path in numpy, so that a default ``rates run`` never imports torch.

Setting: start-up (``rates run`` should start in about 2 s after the first use); ``import torch`` alone takes
~2.5 s there. The fused kernels (:mod:`rates.numeric.fused.kernels`) keep their iterates in numpy arrays, so only the
checkpoint measurements tied the CPU path to torch.

Quantities: those of ``rates.numeric.engine._Measure`` (the torch version, which the torch and graph steppers keep):
``log_loss`` (``log L(W)`` without underflow, :func:`rates.numeric.losses.log_loss_from_u`), ``norm`` (``||W||`` in
the run's norm), ``margin`` and ``margin:<N>`` for the reported norms (``min_{i, c != y_i} (z_{y_i} - z_c)``
over ``||W||_N``) and a copy of ``W``.

Algorithm: the torch formulas operation for operation (the logits, the masked class maximum, the
wrong-class log-sum-exp, the log-loss of :mod:`rates.numeric.losses`, the norms' ``value_array``). Each run's
logits are a product of its own (k, d) matrix with the (d, n) samples (numpy's stacked ``matmul`` calls the
BLAS once per matrix) and every reduction is within one run, so a run's record does not depend on the runs
measured with it (tests/test_engine.py checks alone == batched bit for bit).

Guarantee: equal to the torch ``_Measure`` up to the rounding of the two libraries' products, exponentials
and SVDs, which differ in the last bits: tests/test_fused.py holds every field to 1e-13 relative (the
margins relative to the logits they are differences of).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rates.norms import parse_norm

RATIO_IS_ONE = 2.0**-53  # rates.numeric.losses.RATIO_IS_ONE (that module imports torch)


def _softplus(x: np.ndarray) -> np.ndarray:
    """:func:`rates.numeric.losses.softplus`: log(1 + e^x) without overflow."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _logsumexp(x: np.ndarray) -> np.ndarray:
    """``torch.logsumexp`` over the last axis: shift by the maximum, unless it is infinite."""
    top = x.max(axis=-1, keepdims=True)
    top = np.where(np.isinf(top), 0.0, top)
    return np.log(np.exp(x - top).sum(axis=-1)) + top[..., 0]


def log_loss_from_u(u: np.ndarray) -> np.ndarray:
    """:func:`rates.numeric.losses.log_loss_from_u` in numpy: log((1/m) sum_i softplus(-u_i)) over the last axis
    (``log1p(x)/x`` taken as 1 below ``x = 2^-53``, where it rounds to 1)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # both branches are evaluated
        x = np.exp(-np.abs(u))
        small = x < RATIO_IS_ONE
        ratio = np.where(small, 1.0, np.log1p(x) / np.where(small, 1.0, x))
        log_terms = np.where(u > 0, -u + np.log(ratio), np.log(_softplus(-u)))
        return _logsumexp(log_terms) - math.log(u.shape[-1])


class NumpyMeasure:
    """``NumpyMeasure(H, y, k, norm, reported)(W)`` with ``W`` (R, k, d): a dict of (R, ...) arrays, the
    fields of ``rates.numeric.engine._Measure`` (``reported``: the norms with a ``margin:<N>`` field). ``H`` (n, d)
    and ``y`` (n,) for every run, or (R, n, d) and (R, n): each run's own data."""

    def __init__(self, H: np.ndarray, y: np.ndarray, k: int, norm: str, reported: Sequence[str]):
        self.Ht = np.ascontiguousarray(np.swapaxes(np.asarray(H, dtype=np.float64), -1, -2))
        y = np.asarray(y, dtype=np.int64)
        self.onehot = np.zeros(y.shape[:-1] + (k, y.shape[-1]))
        np.put_along_axis(self.onehot, y[..., None, :], 1.0, axis=-2)
        self.mask = np.where(self.onehot > 0, -math.inf, 0.0)
        self.norms = {name: parse_norm(name) for name in dict.fromkeys((norm, *reported))}
        self.norm, self.reported = norm, tuple(reported)

    def __call__(self, W: np.ndarray) -> dict[str, np.ndarray]:
        # silent as torch is: a diverged run (inf entries) records inf / NaN, refused before anything is saved
        # (rates.numeric.trajectory.require_finite)
        with np.errstate(all="ignore"):
            logits = np.matmul(W, self.Ht)  # (R, k, n)
            correct = (logits * self.onehot).sum(axis=-2)
            masked = logits + self.mask
            top = masked.max(axis=-2, keepdims=True)
            total = np.exp(masked - top).sum(axis=-2, keepdims=True)
            u = correct - (top + np.log(total))[..., 0, :]
            raw = (correct - top[..., 0, :]).min(axis=-1)
            values = {name: norm.value_array(W) for name, norm in self.norms.items()}
            out = {"log_loss": log_loss_from_u(u), "norm": values[self.norm], "margin": raw / values[self.norm]}
            for name in self.reported:
                out[f"margin:{name}"] = raw / values[name]
        out["W"] = np.array(W, dtype=np.float64)  # a copy: the kernels update W in place
        return out
