"""No data-dependent mismatch bound certifies mini-batch NSD without momentum below full batch (MINIBATCH Thm 4.1).

Setting: linear multiclass cross-entropy ``L(W) = (1/n) sum_i -log S_{y_i}(W h_i)``, proxy
``G(W) = (1/n) sum_i (1 - S_{y_i})``, a batch ``S`` of ``b < n`` samples, ``Delta_S`` steepest for
``grad_S L`` in the norm ``||.||`` (dual ``||.||_*``), max margin ``gamma`` in that norm.

The per-step proof of Thm 4.1 needs ``<grad L(W), Delta_S(W)> >= gamma_eff G(W)`` with ``gamma_eff > 0`` for
every ``W`` and every batch the sampler draws; through the mismatch ``E = grad_S L - grad L`` it gets
``gamma_eff = gamma - 2 rho`` with ``rho >= sup_W ||E||_* / G`` (Lemma C.11 gives ``rho = 2B c(n, b)``).
Any sharper, data-dependent ``rho(b)`` would have to beat the following witnesses [derived here].

Proposition. Let ``U`` be any matrix under which one sample ``i`` has the strictly smallest margin
``m_i(U) = min_{c != y_i} (e_{y_i} - e_c)^T U h_i`` and ``c_i`` the strictly smallest runner-up class; put
``W_r = r U``. As ``r -> infinity`` the proxy concentrates on ``i`` (``n G -> 1 - S_{y_i}``) and
``g_i / (1 - S_{y_i}) -> (e_{c_i} - e_{y_i}) h_i^T``, so

* for a batch ``S`` without ``i``: ``||E||_* / G -> ||(e_{c_i} - e_{y_i}) h_i^T||_* =: f_i``;
* for a batch ``S`` with ``i``: ``||E||_* / G -> (n/b - 1) f_i`` (max norm: Lemma C.11 attained when ``||h_i||_1 = B``).

And ``f_i >= gamma`` for every sample: ``gamma = max_{||W|| <= 1} min_j m_j(W) <= <(e_{y_i} - e_{c_i}) h_i^T,
W*> <= f_i`` (duality). Hence ``sup_W ||E||_* / G >= gamma > gamma / 2`` for every data set, norm and ``b < n``
(every sample sits outside some batch of a reshuffled epoch), so ``gamma - 2 rho(b) < 0``: no bound on the
mismatch, however data-dependent, certifies any ``b < n``. The same holds for ``W`` arbitrarily close in
direction to the max-margin ``W*`` (``U = W* + eps V`` concentrates on the support vector ``V`` ranks lowest).

Beyond the mismatch: with ``i`` outside ``S`` the batch direction is set by the batch's own lowest-margin
samples, and ``<grad L, Delta_S> / G -> <(e_{c_i} - e_{y_i}) h_i^T, Delta_S>`` can be negative: the step then
increases the full loss to first order, so no per-step effective margin ``> 0`` exists at all on such data.
:func:`concentrated_witness` evaluates both ratios exactly at a finite ``W_r`` (cancellation-free logs), and
the claim ``minibatch-mismatch-floor`` runs it on the presets.

Averaged over the batches the sampler draws: each batch of a reshuffled epoch is a uniform ``b``-subset, and
:func:`expected_descent_limit` gives ``lim_r E_S <grad L, Delta_S> / G`` in closed form (checked against exact
enumeration of batches in the tests). Where it is negative, the expected sum over an epoch's partition is
too, so some partition of an epoch ascends at first order. :func:`survey` tabulates all three quantities on
the presets (docs/findings.md F10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import logsumexp

from proofs.claims import MINIBATCH, Claim, SimulationOutcome, SimulationProblem
from rates.norms import Norm, parse_norm


def _log_complements(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log(1 - S_{y_i}(z_i))`` from the other classes' logits (no cancellation, no underflow refusal)."""
    rows = np.arange(len(y))
    masked = z.copy()
    masked[rows, y] = -np.inf
    return logsumexp(masked, axis=1) - logsumexp(z, axis=1)


def _scaled_gradients(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample gradients ``g_i = (S(z_i) - e_{y_i}) h_i^T`` and proxies ``1 - S_{y_i}``, both divided by a
    common scale ``s``.

    Ratios ``||E||_* / G`` and ``<grad L, Delta> / G`` are invariant under a common scale of every ``g_i``
    and of ``G``; dividing by ``s = max_i (1 - S_{y_i})`` keeps them in float64 range at any logit scale."""
    z = H @ W.T
    rows = np.arange(len(y))
    log_comp = _log_complements(z, y)
    log_scale = float(log_comp.max())
    log_probs = z - logsumexp(z, axis=1, keepdims=True)
    log_probs[rows, y] = -np.inf  # S_c <= 1 - S_y for c != y, so these stay below 1 after the scale
    coeff = np.exp(log_probs - log_scale)
    coeff[rows, y] = -np.exp(log_comp - log_scale)
    return coeff[:, :, None] * H[:, None, :], np.exp(log_comp - log_scale)


@dataclass(frozen=True)
class BatchRatios:
    mismatch: float  # ||grad_S L - grad L||_* / G
    descent: float  # <grad L, Delta_S> / G, Delta_S steepest (unit norm) for grad_S L
    top_share: float  # the largest sample's share of n G (1 = concentrated on one sample)


def batch_ratios(W: np.ndarray, H: np.ndarray, y: np.ndarray, batch, norm: Norm) -> BatchRatios:
    """The two quantities the per-step proof of MINIBATCH Thm 4.1 bounds, evaluated exactly at ``W``."""
    grads, weights = _scaled_gradients(W, H, y)
    if not np.all(np.isfinite(grads)):
        raise FloatingPointError("non-finite gradient")
    G = float(np.mean(weights))  # G / s
    full = grads.mean(axis=0)
    partial = grads[list(batch)].mean(axis=0)
    Z_full = torch.as_tensor(full)
    Z_batch = torch.as_tensor(partial)
    mismatch = float(norm.dual_value(Z_batch - Z_full)) / G
    direction = norm.steepest(Z_batch)
    descent = float((Z_full * direction).sum()) / G
    return BatchRatios(mismatch, descent, float(weights.max() / weights.sum()))


def mismatch_floor(H: np.ndarray, y: np.ndarray, k: int, sample: int, runner_up: int, norm: Norm) -> float:
    """``f_i = ||(e_{c_i} - e_{y_i}) h_i^T||_*``: the limit of ``||E||_*/G`` for a batch without sample ``i``."""
    a = np.zeros((k, H.shape[1]))
    a[runner_up] += H[sample]
    a[y[sample]] -= H[sample]
    return float(norm.dual_value(torch.as_tensor(a)))


def sample_margins(U: np.ndarray, H: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample margins ``m_j(U)`` and runner-up classes ``c_j``."""
    z = H @ U.T
    rows = np.arange(len(y))
    others = z.copy()
    others[rows, y] = -np.inf
    runner = others.argmax(axis=1)
    return z[rows, y] - others[rows, runner], runner


@dataclass(frozen=True)
class Witness:
    sample: int  # the sample the proxy concentrates on
    scale: float  # r in W = r U
    floor: float  # f_i, the limit of the mismatch ratio without i in the batch
    without: BatchRatios  # a batch of size b that leaves sample i out
    with_sample: BatchRatios | None  # a batch of size b that contains i (None when b = n)
    batch_without: tuple[int, ...]


def concentrated_witness(U: np.ndarray, H: np.ndarray, y: np.ndarray, k: int, b: int, norm: Norm,
                         gap: float = 40.0) -> Witness:
    """``W = r U`` with ``r`` such that the two lowest margins differ by ``gap`` in logits (the proxy's share
    outside the lowest sample is then about ``n e^-gap``); batches of size ``b``: the ``b`` lowest-margin
    samples other than ``i`` (they steer ``Delta_S``) and, for ``b < n``, ``i`` with the ``b - 1`` next."""
    margins, runner = sample_margins(U, H, y)
    order = np.argsort(margins, kind="stable")
    i = int(order[0])
    spread = float(margins[order[1]] - margins[order[0]])
    if not spread > 0:
        raise ValueError("the lowest margin is tied: the proxy does not concentrate on one sample")
    r = gap / spread
    W = r * U
    n = len(y)
    without = tuple(int(j) for j in order[1:b + 1]) if b < n else tuple(range(n))
    with_i = tuple(int(j) for j in order[:b])
    return Witness(i, r, mismatch_floor(H, y, k, i, int(runner[i]), norm),
                   batch_ratios(W, H, y, without, norm),
                   batch_ratios(W, H, y, with_i, norm) if b < n else None, without)


# the data sets and norms the claim runs on: the presets of the mini-batch and default studies, SignSGD's and
# NSGD's norms; batch sizes every divisor b < n (what random reshuffling draws)
_PRESETS = ("default", "minibatch")
_NORMS = ("max", "frobenius")
_DIRECTION_SPREADS = (0.01, 0.1)  # U = W*/||W*|| + eps V/||V||: W's direction within eps of the max-margin W*


def _divisors_below(n: int) -> list[int]:
    return [b for b in range(1, n) if n % b == 0]


def floor_ratio(gamma: float, witness: Witness) -> float:
    """``gamma / (||E||_*/G)`` for the batch without the concentrated sample: ``<= 1`` where the witness beats
    every mismatch bound below ``gamma``; ``inf`` where there is no mismatch (``b = n``)."""
    attained = witness.without.mismatch
    return gamma / attained if attained > 0 else math.inf



def _solved_cases(presets, norms):
    """``(preset, data, norm name, norm, certified max margin, W* of unit norm)`` for each preset and norm."""
    from rates.numeric.data import PRESETS
    from rates.numeric.margins import max_margin

    for preset in presets:
        ds = PRESETS[preset](None)
        for norm_name in norms:
            norm = parse_norm(norm_name)
            solved = max_margin(ds, norm)
            yield preset, ds, norm_name, norm, solved, solved.W / float(norm.value(torch.as_tensor(solved.W)))


def _near(W_star: np.ndarray, spread: float, rng: np.random.Generator, norm) -> np.ndarray:
    """A direction at ``spread`` (in the norm) from ``W*`` along a Gaussian perturbation."""
    V = rng.standard_normal(W_star.shape)
    return W_star + spread * V / float(norm.value(torch.as_tensor(V)))

def mismatch_floor_simulation(thorough: bool, seed: int) -> SimulationOutcome:
    """For each preset, norm, divisor ``b < n`` and drawn direction ``U`` near ``W*``: the ratio
    ``gamma / (||grad_S L - grad L||_* / G)`` at :func:`concentrated_witness` with a batch leaving the
    concentrated sample out. Every ratio ``<= 1`` is the proposition (no ``rho(b) < gamma/2`` can exist);
    the instance records the worst ratio's case and the most negative descent ratio found."""
    rng = np.random.default_rng(seed)
    draws = 20 if thorough else 4
    trials, worst, instance = 0, -math.inf, {}
    most_negative = {"descent_over_G": math.inf}
    most_negative_expected = {"expected_descent_over_G": math.inf}
    for preset, ds, norm_name, norm, solved, W_star in _solved_cases(_PRESETS, _NORMS):
        for b in _divisors_below(ds.n):
            for eps in _DIRECTION_SPREADS:
                for _ in range(draws):
                    U = _near(W_star, eps, rng, norm)
                    witness = concentrated_witness(U, ds.H, ds.y, ds.k, b, norm)
                    trials += 1
                    ratio = floor_ratio(solved.upper, witness)
                    case = {"preset": preset, "norm": norm_name, "n": ds.n, "b": b, "eps": eps,
                            "gamma_upper": solved.upper, "sample": witness.sample,
                            "mismatch_over_G": witness.without.mismatch, "floor_f_i": witness.floor,
                            "descent_over_G": witness.without.descent,
                            "proxy_share_of_sample": witness.without.top_share,
                            "mismatch_over_G_with_sample": witness.with_sample.mismatch}
                    if ratio > worst:
                        worst, instance = ratio, case
                    if witness.without.descent < most_negative["descent_over_G"]:
                        most_negative = case
                    expected = expected_descent_limit(U, ds.H, ds.y, ds.k, b, norm)
                    if expected < most_negative_expected["expected_descent_over_G"]:
                        most_negative_expected = dict(case, expected_descent_over_G=expected)
    instance = dict(instance, most_negative_descent=most_negative,
                    most_negative_expected_descent=most_negative_expected)
    return SimulationOutcome(trials, worst, instance, worst > 1.0)


def minibatch_mismatch_floor() -> Claim:
    """The proposition of this module as a ``rates check`` claim (see the module docstring)."""
    return Claim(
        name="minibatch-mismatch-floor",
        source=f"{MINIBATCH} Thm 4.1 / Lemma C.11 (effective margin; derived in proofs.effective_margin)",
        statement="gamma <= ||grad_S L(W) - grad L(W)||_* / G(W) at W = r U concentrating G on one sample outside "
                  "S, every b < n: so gamma - 2 rho(b) < 0 for any mismatch bound rho(b), however data-dependent",
        latex=r"\gamma \le \|\nabla_S L(W_r)-\nabla L(W_r)\|_*/G(W_r),\quad "
              r"\sup_W \|\nabla_S L-\nabla L\|_*/G \ge \gamma > \gamma/2",
        status="rebuilt",
        domain="presets default (n=30) and minibatch (n=64), max and Frobenius norms, every divisor b < n, "
               "directions within 0.01 and 0.1 of the max-margin W*",
        simulation=SimulationProblem(mismatch_floor_simulation),
        notes="a lower bound shown by construction: the worst ratio is gamma over the mismatch attained; the "
              "instance also records the most negative <grad L, Delta_S>/G found (the batch step ascends L)",
    )


CLAIMS = [minibatch_mismatch_floor()]


def pair_margins(U: np.ndarray, H: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``mu_{j,c} = (e_{y_j} - e_c)^T U h_j`` (``+inf`` at ``c = y_j``): for ``W = rU`` the batch gradient is
    ``sum_{j, c} e^{-r mu_{j,c}} (1 + o(1)) (e_c - e_{y_j}) h_j^T`` as ``r -> infinity`` (all ``mu > 0``)."""
    z = H @ U.T
    rows = np.arange(len(y))
    mu = z[rows, y][:, None] - z
    mu[rows, y] = np.inf
    return mu


def _lead_probabilities(n: int, b: int) -> np.ndarray:
    """``P(the t-th lowest of the n - 1 samples other than i leads S)``, ``S`` a uniform ``b``-subset without
    ``i``, ``t = 1..n-1``: ``C(n-1-t, b-1) / C(n-1, b)`` (zero past ``n - b``; the sum is 1, hockey stick)."""
    total = math.comb(n - 1, b)
    return np.array([math.comb(n - 1 - t, b - 1) / total for t in range(1, n)])


def expected_descent_limit(U: np.ndarray, H: np.ndarray, y: np.ndarray, k: int, b: int, norm: Norm) -> float:
    """``lim_r E_S <grad L(rU), Delta_S(rU)> / G(rU)`` over a uniformly random batch ``S`` of size ``b`` (the
    law of every batch of a reshuffled epoch), in closed form; needs every ``mu_{j,c} > 0`` except possibly
    sample ``i``'s and no ties among the ``mu``.

    In the limit ``grad L / G -> a_i = (e_{c_i} - e_{y_i}) h_i^T`` (``i`` the lowest-margin sample, ``c_i`` its
    runner-up). With ``i`` in ``S`` (probability ``b/n``) ``Delta_S -> steepest(a_i)`` and the inner product
    is ``f_i = ||a_i||_*``. Otherwise: for a smooth norm (entry-wise or Schatten ``1 < p < inf``)
    ``Delta_S -> steepest(a_j)``, ``j`` the lowest-margin sample of ``S``; for the max norm each row ``c`` of
    ``Delta_S = sign(grad_S L)`` is set by the sample of ``S`` with the smallest pair margin touching row ``c``
    (``mu_{j,c}`` if ``y_j != c``, row ``+h_j``; ``min_c' mu_{j,c'}`` if ``y_j = c``, row ``-h_j``), and only the
    rows ``y_i`` and ``c_i`` meet ``a_i``. Either way the leader of a uniform batch is the ``t``-th lowest
    with the probabilities of :func:`_lead_probabilities`.
    """
    n = len(y)
    mu = pair_margins(U, H, y)
    lowest = mu.min(axis=1)
    i = int(np.argmin(lowest))
    runner = int(np.argmin(mu[i]))
    a_i = np.zeros((k, H.shape[1]))
    a_i[runner] += H[i]
    a_i[y[i]] -= H[i]
    f_i = float(norm.dual_value(torch.as_tensor(a_i)))
    if b >= n:
        return f_i
    others = np.array([j for j in range(n) if j != i])
    lead = _lead_probabilities(n, b)
    if norm.kind == "entrywise" and math.isinf(norm.p):
        expected = 0.0
        for row in (y[i], runner):
            touch = np.where(y[others] == row, lowest[others], mu[others, row])
            sign = np.where(y[others] == row, -1.0, 1.0)
            ranked = others[np.argsort(touch, kind="stable")]
            inner = np.array([sign_j * np.sign(H[j]) @ a_i[row]
                              for j, sign_j in zip(ranked, sign[np.argsort(touch, kind="stable")])])
            expected += float(lead @ inner)
    elif norm.kind in ("entrywise", "schatten") and 1 < norm.p < math.inf:
        ranked = others[np.argsort(lowest[others], kind="stable")]
        runners = mu.argmin(axis=1)
        a = np.zeros((len(ranked), k, H.shape[1]))
        a[np.arange(len(ranked)), runners[ranked]] += H[ranked]
        a[np.arange(len(ranked)), y[ranked]] -= H[ranked]
        directions = norm.steepest(torch.as_tensor(a)).numpy()
        expected = float(lead @ np.einsum("kd,jkd->j", a_i, directions))
    else:
        raise ValueError(f"no closed-form limit of the steepest direction for the {norm.name} norm")
    return b / n * f_i + (1 - b / n) * expected


def survey(presets=_PRESETS, norms=_NORMS, draws: int = 200, seed: int = 7) -> list[dict]:
    """The table of docs/findings.md (F10): per preset, norm and divisor ``b < n``, the smallest mismatch
    ratio, per-step descent ratio and expected descent limit over ``draws`` directions within 0.01 or 0.1
    (alternately) of ``W*``."""
    rng = np.random.default_rng(seed)
    rows = []
    for preset, ds, norm_name, norm, solved, W_star in _solved_cases(presets, norms):
        for b in _divisors_below(ds.n):
            mismatch, descent, expected = [], [], []
            for t in range(draws):
                U = _near(W_star, _DIRECTION_SPREADS[t % 2], rng, norm)
                witness = concentrated_witness(U, ds.H, ds.y, ds.k, b, norm)
                mismatch.append(witness.without.mismatch)
                descent.append(witness.without.descent)
                expected.append(expected_descent_limit(U, ds.H, ds.y, ds.k, b, norm))
            rows.append({"preset": preset, "n": ds.n, "norm": norm_name, "gamma": solved.gamma, "b": b,
                         "min_mismatch_over_G": min(mismatch), "min_descent_over_G": min(descent),
                         "min_expected_descent_over_G": min(expected)})
    return rows
