"""MINIBATCH Thm 4.9: per-sample SignSGD / N-SGD are biased towards the class-frequency matrix M.

Setting (MINIBATCH section 4.4, Def. 4.8; docs/theory.md section 5): orthogonal scale-skewed data ``d = k``,
``h_i = s_i e_{y_i}`` with arbitrary scales and imbalanced class counts; ``W_0 = 0``; schedule
``eta_t = eta_0 (t+2)^(-a)``; per-sample updates under random reshuffling (b = 1) versus full batch.

Claim [given in words, formulas rebuilt]: per-sample SignSGD and N-SGD converge in direction to
``M/||M||`` (:func:`rates.symbolic.theorems.per_sample.bias_matrix`, the project's rebuilt Def. 4.8), whose margin
falls short of the max margin under imbalance, while full-batch SignGD / NGD reach the max margin.

Check (a small direct simulation, independent of :mod:`rates.numeric.engine`): directions from the log-domain
gradient (:func:`_log_gradient`: every sign exact, nothing underflows); max margins in closed
form for this data (max-norm ``2 min_i s_i``; Frobenius ``kappa / sqrt(sum_c 1/m_c^2)``,
``kappa = sqrt(k/(k-1))``, ``m_c`` the smallest scale of class c). Worst ratio is the larger of
``(1 - cos(W_T, M)) / 0.02`` and ``gap_full(T) / (gap(M)/2)``: above 1 means the per-sample iterate is not
near ``M`` or the full-batch run did not get twice as close to the max margin as ``M`` is.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from proofs.claims import MINIBATCH, Claim, SimulationOutcome, SimulationProblem
from rates.symbolic.theorems.per_sample import bias_matrix

DIRECTION_TOLERANCE = 0.02


def _log_gradient(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log |grad L(W)|, sign grad L(W)) `` entry-wise, without forming any term that can underflow.

    Term ``(i, r, j)`` of the gradient is ``(1 - S_{y_i}) (q_{ir} - [r = y_i]) h_{ij}`` with ``q_i`` the softmax
    over the wrong classes; its logarithm is finite whatever the logits, and scipy's signed ``logsumexp``
    adds the terms. SignSGD needs this: ``sign`` of an entry of size 1e-400 is still +-1, but a float64
    gradient would have rounded it to 0.
    """
    z = H @ W.T
    rows = np.arange(len(y))
    wrong = z.copy()
    wrong[rows, y] = -np.inf
    log_wrong_total = logsumexp(wrong, axis=1)
    log_coeff = wrong - log_wrong_total[:, None]  # log q_ir; the label entry is replaced below
    log_coeff[rows, y] = 0.0  # |q_iy - 1| = 1
    coeff_sign = np.ones_like(z)
    coeff_sign[rows, y] = -1.0
    log_weights = -np.logaddexp(0.0, z[rows, y] - log_wrong_total)  # log(1 - S_{y_i})
    with np.errstate(divide="ignore"):
        log_h = np.log(np.abs(H))
    log_terms = log_weights[:, None, None] + log_coeff[:, :, None] + log_h[:, None, :]  # (n, k, d)
    signs = coeff_sign[:, :, None] * np.sign(H)[:, None, :]
    return logsumexp(log_terms, axis=0, b=signs, return_sign=True)


def _direction(log_abs: np.ndarray, sign: np.ndarray, algorithm: str) -> np.ndarray:
    if algorithm == "signsgd":
        return -sign
    G = sign * np.exp(log_abs - np.max(log_abs))  # the gradient up to a positive factor
    return -G / np.linalg.norm(G)


def _norm(W: np.ndarray, algorithm: str) -> float:
    return float(np.abs(W).max()) if algorithm == "signsgd" else float(np.linalg.norm(W))


def _margin(W: np.ndarray, H: np.ndarray, y: np.ndarray, algorithm: str) -> float:
    z = H @ W.T
    rows = np.arange(len(y))
    gaps = z[rows, y][:, None] - z
    gaps[rows, y] = np.inf
    return float(gaps.min() / _norm(W, algorithm))


def _max_margin(scales: np.ndarray, y: np.ndarray, k: int, algorithm: str) -> float:
    hardest = np.array([scales[y == c].min() for c in range(k)])
    if algorithm == "signsgd":
        return 2 * float(hardest.min())
    return math.sqrt(k / (k - 1)) / float(np.sqrt(np.sum(1 / hardest**2)))


def _instance(rng: np.random.Generator):
    k = 3
    while True:
        counts = rng.integers(1, 6, size=k)
        y = np.repeat(np.arange(k), counts)
        scales = np.exp(rng.uniform(-1.5, 1.5, size=len(y)))
        H = scales[:, None] * np.eye(k)[y]
        gaps = {alg: _max_margin(scales, y, k, alg) - _margin(bias_matrix(counts, alg), H, y, alg)
                for alg in ("signsgd", "nsgd")}
        if min(gaps.values()) > 0.05:  # imbalance that matters for both algorithms
            return counts, y, scales, H, gaps


def _run(H, y, algorithm: str, steps: int, per_sample: bool, rng, a=0.5, eta0=1.0) -> np.ndarray:
    n, k = len(y), H.shape[1]
    W = np.zeros((k, H.shape[1]))
    order = np.array([], dtype=int)
    for t in range(steps):
        if per_sample:
            if t % n == 0:
                order = rng.permutation(n)
            i = order[t % n]
            log_abs, sign = _log_gradient(W, H[i:i + 1], y[i:i + 1])
        else:
            log_abs, sign = _log_gradient(W, H, y)
        W = W + eta0 * (t + 2) ** (-a) * _direction(log_abs, sign, algorithm)
    return W


def _bias_runs(thorough: bool, seed: int) -> SimulationOutcome:
    rng = np.random.default_rng(seed)
    instances = 6 if thorough else 2
    epochs = 800 if thorough else 150
    trials, worst, worst_instance = 0, -math.inf, {}
    for _ in range(instances):
        counts, y, scales, H, gaps = _instance(rng)
        for algorithm in ("signsgd", "nsgd"):
            M = bias_matrix(counts, algorithm)
            steps = epochs * len(y)
            W_ps = _run(H, y, algorithm, steps, True, rng)
            W_fb = _run(H, y, algorithm, steps, False, rng)
            cosine = float(np.sum(W_ps * M) / (np.linalg.norm(W_ps) * np.linalg.norm(M)))
            gamma = _max_margin(scales, y, H.shape[1], algorithm)
            gap_full = gamma - _margin(W_fb, H, y, algorithm)
            ratio = max((1 - cosine) / DIRECTION_TOLERANCE, gap_full / (gaps[algorithm] / 2))
            trials += 1
            if ratio > worst:
                worst = ratio
                worst_instance = {"algorithm": algorithm, "class_counts": counts.tolist(), "scales": scales.tolist(),
                                  "steps": steps, "cosine_to_M": cosine, "gamma": gamma,
                                  "gap_of_M": gaps[algorithm], "gap_per_sample": gamma - _margin(W_ps, H, y, algorithm),
                                  "gap_full_batch": gap_full}
    return SimulationOutcome(trials, worst, worst_instance, refuted=worst > 1)


def per_sample_bias() -> Claim:
    return Claim(
        name="per-sample-bias",
        source=f"{MINIBATCH} Thm 4.9, Def. 4.8 (M: rates.symbolic.theorems.per_sample.bias_matrix)",
        statement="per-sample SignSGD/N-SGD: W_t/||W_t|| -> M/||M|| (class frequencies); full-batch runs reach the "
                  "max margin, M does not (imbalanced orthogonal data)",
        latex=r"\frac{W_t}{\|W_t\|}\to\frac{M}{\|M\|},\ M=\sum_c \tfrac{n_c}{n} D_c e_c^\top;\ "
              r"\gamma(W^{\mathrm{full}}_t)\to\gamma > \gamma(M)",
        status="rebuilt",
        domain=f"k = 3, class counts 1..5, scales e^U(-1.5, 1.5); a = 1/2, eta0 = 1; 150 epochs (thorough 800); "
               f"1 - cos <= {DIRECTION_TOLERANCE}, full-batch gap <= gap(M)/2",
        simulation=SimulationProblem(_bias_runs),
    )


CLAIMS = [per_sample_bias()]
