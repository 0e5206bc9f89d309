"""Cross-entropy, its proxy G and its gradient in the log domain (batched torch, float64).

Setting (docs/theory.md section 1; SIGNADAM section 2, MINIBATCH section 2): logits ``z_i = W h_i`` for
``W`` in R^{k x d}, cross-entropy ``L(W) = (1/n) sum_i -log S_{y_i}(z_i)`` and proxy
``G(W) = (1/n) sum_i (1 - S_{y_i}(z_i))``. The gradient is

    grad L(W) = (1/n) sum_i (S(z_i) - e_{y_i}) h_i^T,   S_y - 1 = -sum_{c != y} S_c.

Written this way nothing cancels: only wrong-class probabilities are formed, as
``S_c = exp(log_softmax(z)_c)`` (accurate however small), and the label entry is minus their sum.
Loss and proxy use ``u_i = z_{i,y_i} - log sum_{c != y_i} exp(z_{i,c})``: ``1 - S_{y_i} =
exp(-softplus(u_i))`` and ``-log S_{y_i} = softplus(-u_i)``, both kept as logarithms.

Why (docs/theory.md section 7): logits grow like sum_s eta_s, so ``1 - S_y`` underflows float64 long before a
run ends and a naive gradient becomes exactly zero. We return the gradient as ``exp(log_scale) * G``
with one ``log_scale`` per class row: each row's log-coefficients are shifted by their maximum over the
run's samples (each row's largest coefficient is 1), so a row 1e-400 below another keeps its signs, which
sign-type directions (sign, Signum, Adam entry by entry) take whatever the entry's size. Steepest
directions of other norms only need ``G`` at one common scale (they are invariant to a positive rescaling
of the whole signal); transforms that mix signals of different times (momentum, VR, Adam) carry
``log_scale`` along row by row (see :mod:`rates.numeric.optim`). Limit: an entry that cancels to ~1e-12 of its own
terms has the sign of its rounding (see :func:`rates.numeric.fused.kernels._gradient_lanes` for why that does
not happen on data in general position).

Tensor layout: a leading runs axis R; logits ``(R, k, m)`` for m samples; labels of shape ``(k, m)``
or ``(R, k, m)`` (:class:`Labels`).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch


class Labels(NamedTuple):
    """Label encodings for a block of m samples: ``onehot`` (float, 1 on labels) and ``mask``
    (-inf on labels, 0 elsewhere), both ``(k, m)`` or ``(R, k, m)``; built once, used every step."""

    onehot: torch.Tensor
    mask: torch.Tensor


def labels(y: torch.Tensor, k: int, dtype: torch.dtype = torch.float64) -> Labels:
    """Encode labels ``y`` (m,) or (R, m) with classes on the second-to-last axis, as in the logits."""
    hot = torch.nn.functional.one_hot(y, k).transpose(-2, -1)
    return Labels(hot.to(dtype), torch.where(hot.bool(), -math.inf, 0.0).to(dtype))


def wrong_class_margins(logits: torch.Tensor, lab: Labels) -> torch.Tensor:
    """``u_i = z_{y_i} - log sum_{c != y_i} exp(z_c)`` (R, m): ``1 - S_{y_i} = exp(-softplus(u_i))``.

    ``torch.logsumexp`` and ``masked_fill`` are avoided on purpose: on small CPU tensors they cost several
    times more than the few plain kernels used here.
    """
    masked = logits + lab.mask
    top = masked.amax(dim=-2, keepdim=True)
    total = torch.exp(masked - top).sum(dim=-2, keepdim=True)
    return (logits * lab.onehot).sum(dim=-2) - (top + torch.log(total)).squeeze(-2)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """log(1 + e^x) without overflow and without torch's linear cut-off at x > 20 (which errs by e^-20)."""
    return torch.clamp(x, min=0.0) + torch.log1p(torch.exp(-x.abs()))


def log_sample_weights(u: torch.Tensor) -> torch.Tensor:
    """log(1 - S_{y_i}) = -softplus(u_i), exact in the log domain for any margin."""
    return -softplus(u)


def scaled_gradient(logits: torch.Tensor, lab: Labels, H_mean: torch.Tensor, exact_scale: bool = True,
                    per_row: bool = True) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """The mean gradient over the m samples of ``logits`` as ``(G, log_scale)``: grad = exp(log_scale) * G.

    ``H_mean`` (R, m, d) holds the block's samples divided by m (:func:`sample_views`: the 1/m is folded
    into data prepared once, which saves a kernel per step). ``log_scale`` has shape (R, k, 1), one per
    class row (:func:`coefficients`; (R, 1, 1) without ``per_row``).
    With ``exact_scale=False`` the scale is not computed (``None``): ``G`` is then the gradient times an
    unknown positive factor per run, which is all a normalised step needs (two kernels fewer) unless it
    takes each entry's sign (then a row ~1e-308 below the largest would be 0 there: see
    :func:`rates.numeric.optim.compose.build`).
    """
    if exact_scale:
        coeff, log_scale = coefficients(logits, lab, per_row)
        return over_samples(coeff, H_mean), log_scale
    return over_samples(direction_coefficients(logits, lab), H_mean), None


def coefficients(logits: torch.Tensor, lab: Labels, per_row: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample gradient coefficients ``(S_i - e_{y_i})``, class row c divided by ``exp(log_scale[c])``
    (R, k, m), and ``log_scale`` (R, k, 1): one per class row.

    ``grad = exp(log_scale) * coeff @ H / m`` (row by row). Only wrong-class probabilities are
    exponentiated: ``log S_c = z_c - logsumexp(z)`` is accurate for c != y however small ``S_c`` is (one
    fused log_softmax), and the label's ``log(1 - S_y) = logsumexp_{c != y} log S_c`` is formed from them,
    never as a difference with 1. ``log_scale[c]`` is the largest log-coefficient of row c, so each row's
    largest |entry| is 1: a row far below the others (a class far from every sample but its own, whose
    samples it classifies with a large margin) keeps its signs, which sign-type directions need. Without
    ``per_row``, one ``log_scale`` (R, 1, 1), the largest of all, and the label's entry is minus the sum of
    the others as rounded (each column sums to 0 to one rounding, so the gradient's rank deficiency stays
    at rounding level): what directions that weigh entries against each other need (per-row scales would
    add the rounding of the log-scales, ~|log_scale| eps, to the ratios of rows).
    """
    log_wrong = torch.log_softmax(logits, dim=-2).add_(lab.mask)
    if not per_row:  # the label's entry is minus the sum of the others as computed: columns sum to 0
        log_scale = log_wrong.amax(dim=(-2, -1), keepdim=True)
        wrong = torch.exp_(log_wrong.sub_(log_scale))
        return wrong.addcmul_(lab.onehot, wrong.sum(dim=-2, keepdim=True), value=-1.0), log_scale
    log_label = torch.logsumexp(log_wrong, dim=-2, keepdim=True)  # log(1 - S_y): -inf rows are masked
    log_coeff = torch.where(lab.onehot.bool(), log_label, log_wrong)
    log_scale = log_coeff.amax(dim=-1, keepdim=True)
    magnitude = torch.exp_(log_coeff.sub_(log_scale))
    return magnitude.addcmul_(lab.onehot, magnitude, value=-2.0), log_scale


def direction_coefficients(logits: torch.Tensor, lab: Labels) -> torch.Tensor:
    """:func:`coefficients` up to one positive factor per run (the sum of the wrong-class weights).

    One softmax over each run's flattened wrong-class ``log S_c`` replaces max, shift and exp; the
    entries are the same numbers divided by their sum (between 1 and k*m), so nothing underflows more.
    """
    runs = logits.shape[0]
    log_wrong = torch.log_softmax(logits, dim=-2).add_(lab.mask)
    wrong = torch.softmax(log_wrong.view(runs, -1), dim=-1).view(log_wrong.shape)
    return wrong.addcmul_(lab.onehot, wrong.sum(dim=-2, keepdim=True), value=-1.0)


# Up to this many multiply-adds per run, (k-1) m x k d, folding the label row into the gradient product
# (:func:`folded_direction`) was faster than forming it (2-core CI machine, one thread, R = 4 and 32):
# 0.7x the time at 900 (k=3, d=5, m=30), 0.8-1.0x at 6144 (k=4, d=8, m=64); from 20000 on the dense,
# k times larger product costs more (1.0-1.3x at 20000-36000, 13-15x at 4.5e6).
FOLDED_LIMIT = 8192


class DirectionPlan(NamedTuple):
    """Data of :func:`folded_direction`, made once per sample block and runs count R (:func:`direction_plan`).

    ``wrong`` (R, 1, L): the flat positions ``c * m + i`` of the L = (k-1) m wrong-class entries of a
    (k, m) block; ``folded`` (R, L, k*d): row ``(c, i)`` holds ``(e_c - e_{y_i}) (x) h_i / m`` in the same
    order (a broadcast transposed view, batch-independent as the products below); ``shape`` (R, k, d).
    """

    wrong: torch.Tensor
    folded: torch.Tensor
    shape: torch.Size


def folds_label_row(k: int, d: int, m: int) -> bool:
    """Whether :func:`folded_direction` is the faster way for a (k, m) block of d features.

    A function of the block's shape only, so a run takes the same path alone or in any batch.
    """
    return (k - 1) * m * k * d <= FOLDED_LIMIT


def direction_plan(Ht: torch.Tensor, y: torch.Tensor, k: int, runs: int) -> DirectionPlan:
    """The :class:`DirectionPlan` of samples ``Ht`` (d, m) with labels ``y`` (m,) for R = ``runs``."""
    d, m = Ht.shape
    classes = torch.arange(k, device=y.device)
    wrong = torch.nonzero((classes[:, None] != y[None, :]).flatten()).squeeze(-1)  # c * m + i, c != y_i
    cls, sample = wrong // m, wrong % m
    rows = (Ht / m).transpose(0, 1)[sample]  # h_i / m: the same numbers as sample_views' mean block
    entry = torch.arange(wrong.numel(), device=y.device)
    folded = torch.zeros((wrong.numel(), k, d), dtype=Ht.dtype, device=Ht.device)
    folded[entry, cls] = rows
    folded[entry, y[sample]] = -rows
    folded_t = folded.reshape(wrong.numel(), k * d).transpose(0, 1).contiguous()
    return DirectionPlan(wrong.view(1, 1, -1).expand(runs, 1, -1),
                         folded_t.expand(runs, *folded_t.shape).transpose(-2, -1), torch.Size((runs, k, d)))


def folded_direction(logits: torch.Tensor, plan: DirectionPlan) -> torch.Tensor:
    """``over_samples(direction_coefficients(logits, lab), H_mean)`` in fewer kernels (equal up to rounding).

    Setting: the gradient ``(1/m) sum_i sum_{c != y_i} S_c(z_i) (e_c - e_{y_i}) h_i^T`` (docs/theory.md section 1:
    ``S_y - 1 = -sum_{c != y} S_c``), needed up to one positive factor per run (steepest directions).
    Algorithm: only the L wrong-class ``log S_c`` are gathered (no -inf mask, no exp of it), one softmax
    per run turns them into weights (largest between 1/L and 1, as :func:`direction_coefficients`), and
    one product with the plan's ``(e_c - e_{y_i}) (x) h_i / m`` rows sums them with the label rows
    already subtracted. Guarantee: the same log-domain weights as :func:`direction_coefficients`, so
    nothing underflows that did not there (docs/theory.md section 7); cost (k-1) m k d per run, hence
    :func:`folds_label_row`.
    """
    log_probs = torch.log_softmax(logits, dim=-2).view(plan.shape[0], 1, -1)
    weights = torch.softmax(torch.gather(log_probs, -1, plan.wrong), dim=-1)
    return torch.bmm(weights, plan.folded).view(plan.shape)


RATIO_IS_ONE = 2.0**-53  # below this x, log1p(x)/x is 1 in float64 (1 - x/2 rounds to 1)


def log_loss_from_u(u: torch.Tensor) -> torch.Tensor:
    """log L = log((1/m) sum_i softplus(-u_i)) without underflow, over the last axis.

    For u > 0, ``log softplus(-u) = -u + log(log1p(x)/x)`` with ``x = e^-u``; the correction tends to 0
    (and is taken as 0 once ``x < 2^-53``, where ``log1p(x)/x = 1 - x/2 + ...`` rounds to 1), so log L stays
    finite for margins of any size. The cut-off also keeps subnormal x (u in ~(708, 745)) away from
    ``torch.log1p``, which is inexact there (``log1p(1.33e-322)`` gave 1.4e-322: a ratio of 1.037 and log L
    off by 0.036, measured; numpy's log1p was exact).
    """
    x = torch.exp(-u.abs())
    small = x < RATIO_IS_ONE
    ratio = torch.where(small, torch.ones_like(x), torch.log1p(x) / torch.where(small, torch.ones_like(x), x))
    log_terms = torch.where(u > 0, -u + torch.log(ratio), torch.log(softplus(-u)))
    return torch.logsumexp(log_terms, dim=-1) - math.log(u.shape[-1])


def log_proxy_from_u(u: torch.Tensor) -> torch.Tensor:
    """log G = log((1/m) sum_i (1 - S_{y_i})) without underflow, over the last axis."""
    return torch.logsumexp(log_sample_weights(u), dim=-1) - math.log(u.shape[-1])


# The two contractions of every step are written so that on the CPU each run's result does not depend
# on how many runs share the batch: MKL's GEMM rounds differently when R runs are folded into one
# (R*k)-row product, and a bmm against a batch-broadcast (m x d) operand varied with the batch count,
# while a bmm against the broadcast *transposed view* of the (d x m) array (for both products) was
# batch-independent on all 294 shapes tried (k 2-10, d 2-32, m 6-250); tests/test_engine.py checks a run
# alone against the same run in a batch, bit for bit, for every recipe.


def sample_views(Ht: torch.Tensor, runs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Views of a sample block for a runs axis of size R, made once: ``(R, d, m)`` for the logits and
    ``(R, m, d)`` holding ``h_i / m`` (the 1/m of the mean folded into the data) for the gradient."""
    Ht_mean = Ht / Ht.shape[-1]
    shape = (runs, *Ht.shape[-2:])
    return Ht.expand(shape), Ht_mean.expand(shape).transpose(-2, -1)


def logits_of(W: torch.Tensor, Ht_view: torch.Tensor) -> torch.Tensor:
    """Logits ``(R, k, m)`` of ``W`` (R, k, d) on samples ``Ht_view`` (R, d, m)."""
    return torch.bmm(W, Ht_view)


def over_samples(coeff: torch.Tensor, H_view: torch.Tensor) -> torch.Tensor:
    """``sum_i coeff[:, :, i] h_i^T`` (R, k, d) for ``coeff`` (R, k, m) and samples ``H_view`` (R, m, d)."""
    return torch.bmm(coeff, H_view)


def log_loss(W: torch.Tensor, H: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log L(W) for W (R, k, d): convenience wrapper for tests and checkpoints."""
    logits = logits_of(W, sample_views(H.transpose(0, 1), W.shape[0])[0])
    return log_loss_from_u(wrong_class_margins(logits, labels(y, W.shape[-2], W.dtype)))


def log_proxy(W: torch.Tensor, H: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log G(W) for W (R, k, d)."""
    logits = logits_of(W, sample_views(H.transpose(0, 1), W.shape[0])[0])
    return log_proxy_from_u(wrong_class_margins(logits, labels(y, W.shape[-2], W.dtype)))


def gradient(W: torch.Tensor, H: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Full gradient of L at W (R, k, d) as ``(G, log_scale)`` with grad = exp(log_scale) * G, scale (R, k, 1)."""
    Ht_view, H_mean = sample_views(H.transpose(0, 1), W.shape[0])
    return scaled_gradient(logits_of(W, Ht_view), labels(y, W.shape[-2], W.dtype), H_mean)
