"""Compiled step kernels: every recipe of the engine, many steps per call, one configuration per thread.

Setting: THEORY.md sections 1, 2 and 7; the same algorithms as :mod:`rates.optim` (signal -> [momentum] ->
steepest direction | Adam -> ``W <- W - eta_t * direction``, ``eta_t = eta0 (t+2)^-a``), float64.

Algorithm: :func:`advance` moves every configuration r of a group from step ``t0`` to ``t1`` without
returning to Python. Each configuration is a plain scalar loop, so a run's arithmetic does not depend on
the others and is the same alone or in a batch, and from one call to the next. The kernel releases the
GIL; :mod:`rates.fused.group` runs slices of the configuration axis on one thread per core (this gives
the parallelism of numba's ``prange`` without its parallel-compilation pass, which made the first
compile several times longer). Per step:

* signal (:func:`_scaled_gradient`): ``grad = e^s G`` over the step's samples, with only wrong-class
  probabilities exponentiated, ``S_y - 1 = -sum_{c != y} S_c``, and the shift ``s`` = the largest
  wrong-class ``log S_c`` (so the largest coefficient is 1): the log-domain gradient of
  :mod:`rates.losses`, written per sample. A sample whose weights are below ``e^-746`` of the largest
  contributes exactly 0 in float64; it is skipped before its exponentials are formed, using the bound
  ``a_i <= t_i - max(z_y, t_i)`` (``t_i`` the top wrong logit), which changes no bit of the result;
* mini-batches: the batch of step t is the slice ``perm[j b : (j+1) b]`` of the epoch's permutation,
  drawn on the Python side with the torch generator of :func:`rates.optim.sources.epoch_permutations`
  (so the batches are those of the torch path); VR keeps the epoch-start coefficients, as
  :class:`rates.optim.sources.VarianceReduced`;
* momentum and Adam carry a log-scale exactly as :mod:`rates.optim.transforms` does (same formulas, same
  order of operations); steepest directions are those of :mod:`rates.norms` (sign, one coordinate,
  Frobenius, entry-wise l_p, polar factor by SVD or Newton-Schulz, nuclear, Schatten-p).

Guarantee: the iterates equal the torch engine's to rounding (tests/test_fused.py: 1e-12 relative after
2,000 steps for every recipe, and the mpmath reference of :mod:`rates.reference` to 1e-12).

Why one file: numba's on-disk cache (``cache=True``) is keyed on the file of the compiled entry point
only; a kernel calling a changed function in another file would load a stale binary. Every compiled
function therefore lives here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

SOURCE_FULL, SOURCE_MINIBATCH, SOURCE_VR = 0, 1, 2
(DIRECTION_SIGN, DIRECTION_COORDINATE, DIRECTION_FROBENIUS, DIRECTION_LP, DIRECTION_POLAR, DIRECTION_NUCLEAR,
 DIRECTION_SCHATTEN, DIRECTION_NEWTON_SCHULZ, DIRECTION_ADAM) = range(9)

# exp(x) is exactly 0.0 in float64 for x < -745.14; a weight this far below the largest one is 0.
_UNDERFLOW = -746.0
# While every z_y - t_j stays below this, 1 / P_j < e^700 k: no logarithms needed (see _scaled_gradient).
_LINEAR_LIMIT = 700.0
_TINY = np.finfo(np.float64).tiny
_EPS = np.finfo(np.float64).eps
# Muon's quintic Newton-Schulz coefficients, as rates.norms._NS_COEFFS
_NS_A, _NS_B, _NS_C = 3.4445, -4.7750, 2.0315
_NS_STEPS = 5


@njit(cache=True)
def _scaled_gradient(W, H, y, samples, offset, count, logits, log_top, top_class, G):
    """``G`` (k, d) and s with ``e^s G`` = the mean gradient over ``samples[offset:offset + count]``; returns s.

    Sample j's wrong-class probabilities are ``S_c = e^{z_c - t_j} P_j`` with ``t_j`` its top wrong logit and
    ``P_j = 1 / (sum_{c != y} e^{z_c - t_j} + e^{z_y - t_j})`` its largest wrong-class probability; the shift
    s is ``max_j log P_j``. While every ``z_y - t_j < LINEAR_LIMIT`` the P_j are normal numbers and are
    formed directly (two transcendental calls fewer per sample); beyond, in logarithms. ``logits``
    (k, count), ``log_top`` (count,) and ``top_class`` (count,) are scratch.
    """
    k, d = W.shape
    bound_max = -np.inf
    lead_max = -np.inf
    for j in range(count):
        i = samples[offset + j]
        label = y[i]
        top_wrong = -np.inf
        best = 0
        for c in range(k):
            z = 0.0
            for l in range(d):
                z += W[c, l] * H[i, l]
            logits[c, j] = z
            if c != label and z > top_wrong:
                top_wrong, best = z, c
        top_class[j] = best
        lead = logits[label, j] - top_wrong
        for c in range(k):
            logits[c, j] -= top_wrong  # z_c - t_j: 0 at the top wrong class
        # log P_j is at most -max(lead, 0) and at least that minus log k
        log_top[j] = -max(lead, 0.0)
        bound_max = max(bound_max, log_top[j])
        lead_max = max(lead_max, lead)
    if lead_max < _LINEAR_LIMIT:
        top = 0.0
        for j in range(count):
            label = y[samples[offset + j]]
            total = 0.0
            for c in range(k):
                if c == top_class[j]:
                    logits[c, j] = 1.0
                else:
                    logits[c, j] = math.exp(logits[c, j])
                total += logits[c, j]  # the label's e^{z_y - t_j} included
            log_top[j] = 1.0 / total  # P_j itself on this path
            top = max(top, log_top[j])
        for j in range(count):
            log_top[j] /= top
        log_scale = math.log(top)
    else:
        # samples below this cut have every weight below e^-746 of the largest: exactly 0, skipped
        cut = bound_max - math.log(k) + _UNDERFLOW
        log_scale = -np.inf
        for j in range(count):
            if log_top[j] < cut:
                continue
            label = y[samples[offset + j]]
            wrong_sum = 0.0
            for c in range(k):
                if c == top_class[j]:
                    logits[c, j] = 1.0
                    wrong_sum += 1.0
                elif c != label:
                    logits[c, j] = math.exp(logits[c, j])
                    wrong_sum += logits[c, j]
            lead = logits[label, j]
            if lead > 0.0:
                log_total = lead + math.log1p(wrong_sum * math.exp(-lead))
            else:
                log_total = math.log(wrong_sum + math.exp(lead))
            log_top[j] = -log_total
            log_scale = max(log_scale, log_top[j])
        for j in range(count):
            log_top[j] = math.exp(log_top[j] - log_scale) if log_top[j] - log_scale >= _UNDERFLOW else 0.0
    for c in range(k):
        for l in range(d):
            G[c, l] = 0.0
    inv_count = 1.0 / count
    for j in range(count):
        if log_top[j] == 0.0:  # a weight that underflowed: exactly 0
            continue
        i = samples[offset + j]
        label = y[i]
        factor = log_top[j] * inv_count
        label_coeff = 0.0
        for c in range(k):
            if c != label:
                coeff = logits[c, j] * factor
                label_coeff -= coeff
                for l in range(d):
                    G[c, l] += coeff * H[i, l]
        for l in range(d):
            G[label, l] += label_coeff * H[i, l]
    return log_scale


@njit(cache=True)
def _coefficients(W, H, y, count, coeff, log_top):
    """Per-sample coefficients ``(S_i - e_{y_i}) e^-s`` (k, n) over all n samples; returns s (VR snapshot)."""
    k, d = W.shape
    log_scale = -np.inf
    for i in range(count):
        label = y[i]
        top_wrong = -np.inf
        for c in range(k):
            z = 0.0
            for l in range(d):
                z += W[c, l] * H[i, l]
            coeff[c, i] = z
            if c != label and z > top_wrong:
                top_wrong = z
        wrong_sum = 0.0
        for c in range(k):
            if c != label:
                e = math.exp(coeff[c, i] - top_wrong)
                coeff[c, i] = e
                wrong_sum += e
        lead = coeff[label, i] - top_wrong
        if lead > 0.0:
            log_total = lead + math.log1p(wrong_sum * math.exp(-lead))
        else:
            log_total = math.log(wrong_sum + math.exp(lead))
        log_top[i] = -log_total
        if log_top[i] > log_scale:
            log_scale = log_top[i]
    for i in range(count):
        factor = math.exp(log_top[i] - log_scale)
        label = y[i]
        total = 0.0
        for c in range(k):
            if c != label:
                coeff[c, i] *= factor
                total += coeff[c, i]
        coeff[label, i] = -total
    return log_scale


@njit(cache=True)
def _renormalise(value):
    """Divide by the largest |entry| (when non-zero); returns the log of the factor (rates.optim.base)."""
    k, d = value.shape
    top = 0.0
    for c in range(k):
        for l in range(d):
            if abs(value[c, l]) > top:
                top = abs(value[c, l])
    if not top > 0.0:
        return 0.0
    for c in range(k):
        for l in range(d):
            value[c, l] /= top
    return math.log(top)


@njit(cache=True)
def _sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@njit(cache=True)
def _entrywise_direction(Z, direction, q, D):
    """Steepest direction of the entry-wise l_p ball (q = dual exponent), as rates.norms."""
    k, d = Z.shape
    if direction == DIRECTION_SIGN:
        for c in range(k):
            for l in range(d):
                D[c, l] = _sign(Z[c, l])
        return
    top = 0.0
    best_c, best_l = 0, 0
    for c in range(k):
        for l in range(d):
            if abs(Z[c, l]) > top:
                top, best_c, best_l = abs(Z[c, l]), c, l
    if direction == DIRECTION_COORDINATE:
        for c in range(k):
            for l in range(d):
                D[c, l] = 0.0
        D[best_c, best_l] = _sign(Z[best_c, best_l])
        return
    if direction == DIRECTION_FROBENIUS:
        safe = max(top, _TINY)
        total = 0.0
        for c in range(k):
            for l in range(d):
                total += (Z[c, l] / safe) ** 2
        fro = max(math.sqrt(total), _TINY)
        for c in range(k):
            for l in range(d):
                D[c, l] = Z[c, l] / safe / fro
        return
    safe = top if top > 0.0 else 1.0
    total = 0.0
    for c in range(k):
        for l in range(d):
            total += (abs(Z[c, l]) / safe) ** q
    denom = total ** ((q - 1.0) / q)
    if not denom > 0.0:
        denom = 1.0
    for c in range(k):
        for l in range(d):
            D[c, l] = _sign(Z[c, l]) * (abs(Z[c, l]) / safe) ** (q - 1.0) / denom


@njit(cache=True)
def _schatten_direction(Z, direction, q, D):
    """Steepest direction of the Schatten-p ball from the SVD of Z (polar factor, top pair, general p)."""
    k, d = Z.shape
    U, sigma, Vh = np.linalg.svd(np.ascontiguousarray(Z), full_matrices=False)
    rank = sigma.shape[0]
    weights = np.zeros(rank)
    top = sigma[0]
    if direction == DIRECTION_POLAR:
        tol = top * (max(k, d) * _EPS)
        for j in range(rank):
            weights[j] = 1.0 if sigma[j] > tol else 0.0
    elif direction == DIRECTION_NUCLEAR:
        weights[0] = 1.0 if sigma[0] > 0.0 else 0.0
    else:
        # As for the polar factor, singular values within the SVD's rounding of 0 are 0. Kept, they would
        # weigh sigma^(q-1) ~ eps^(q-1) (1e-8 at q = 3/2): the gradient's rows sum to 0, so for k <= d one
        # singular value is exactly 0 and the SVD returns rounding noise for it.
        tol = top * (max(k, d) * _EPS)
        safe = top if top > 0.0 else 1.0
        total = 0.0
        for j in range(rank):
            if sigma[j] > tol:
                total += (sigma[j] / safe) ** q
        denom = total ** ((q - 1.0) / q)
        if not denom > 0.0:
            denom = 1.0
        for j in range(rank):
            weights[j] = (sigma[j] / safe) ** (q - 1.0) / denom if sigma[j] > tol else 0.0
    for c in range(k):
        for l in range(d):
            total = 0.0
            for j in range(rank):
                total += U[c, j] * weights[j] * Vh[j, l]
            D[c, l] = total


@njit(cache=True)
def _newton_schulz_direction(Z, D):
    """Muon's quintic Newton-Schulz approximation of the polar factor (rates.norms.newton_schulz_polar)."""
    k, d = Z.shape
    transpose = k > d
    rows, cols = (d, k) if transpose else (k, d)
    X = np.empty((rows, cols))
    total = 0.0
    for i in range(rows):
        for j in range(cols):
            X[i, j] = Z[j, i] if transpose else Z[i, j]
            total += X[i, j] * X[i, j]
    fro = math.sqrt(total)
    if fro > 0.0:
        for i in range(rows):
            for j in range(cols):
                X[i, j] /= fro
    A = np.empty((rows, rows))
    B = np.empty((rows, rows))
    Y = np.empty((rows, cols))
    for _ in range(_NS_STEPS):
        for i in range(rows):
            for j in range(rows):
                s = 0.0
                for l in range(cols):
                    s += X[i, l] * X[j, l]
                A[i, j] = s
        for i in range(rows):
            for j in range(rows):
                s = 0.0
                for l in range(rows):
                    s += A[i, l] * A[l, j]
                B[i, j] = _NS_B * A[i, j] + _NS_C * s
        for i in range(rows):
            for j in range(cols):
                s = 0.0
                for l in range(rows):
                    s += B[i, l] * X[l, j]
                Y[i, j] = _NS_A * X[i, j] + s
        X[:, :] = Y
    for i in range(rows):
        for j in range(cols):
            if transpose:
                D[j, i] = X[i, j]
            else:
                D[i, j] = X[i, j]


@njit(cache=True)
def _advance_one(W, t0, t1, H, y, source, batch, direction, q, use_momentum, eta0, a, beta, beta1, beta2, eps,
                 mom, mom_scale, adam_m, adam_v, adam_s, perms, epoch0, snap_coeff, snap_full, snap_scale):
    """Steps t0 .. t1-1 of one configuration; state arrays are updated in place, scalars returned."""
    k, d = W.shape
    n = H.shape[0]
    count = n if source == SOURCE_FULL else batch
    steps_per_epoch = n // count
    logits = np.empty((k, count))
    log_top = np.empty(n)
    top_class = np.empty(n, dtype=np.int64)
    G = np.empty((k, d))
    D = np.empty((k, d))
    snap_batch = np.empty((k, d))
    everyone = np.arange(n)
    log_beta = math.log(beta) if beta > 0.0 else -np.inf
    log_rest = math.log1p(-beta)
    log_eps = math.log(eps) if eps > 0.0 else -np.inf
    root_beta2, root_rest2 = math.sqrt(beta2), math.sqrt(1.0 - beta2)
    for t in range(t0, t1):
        if source == SOURCE_FULL:
            samples, offset = everyone, 0
        else:
            samples, offset = perms[t // steps_per_epoch - epoch0], (t % steps_per_epoch) * count
            if source == SOURCE_VR and t % steps_per_epoch == 0:
                snap_scale = _coefficients(W, H, y, n, snap_coeff, log_top)
                for c in range(k):
                    for l in range(d):
                        total = 0.0
                        for i in range(n):
                            total += snap_coeff[c, i] * (H[i, l] / n)
                        snap_full[c, l] = total
        scale = _scaled_gradient(W, H, y, samples, offset, count, logits, log_top, top_class, G)
        if source == SOURCE_VR:
            for c in range(k):
                for l in range(d):
                    total = 0.0
                    for j in range(count):
                        i = samples[offset + j]
                        total += snap_coeff[c, i] * (H[i, l] / count)
                    snap_batch[c, l] = total
            top = max(scale, snap_scale)
            fresh, old = math.exp(scale - top), math.exp(snap_scale - top)
            for c in range(k):
                for l in range(d):
                    G[c, l] = fresh * G[c, l] + old * (snap_full[c, l] - snap_batch[c, l])
            scale = top + _renormalise(G)
        if use_momentum:
            old_exp, new_exp = mom_scale + log_beta, scale + log_rest
            top = max(old_exp, new_exp)
            keep, take = math.exp(old_exp - top), math.exp(new_exp - top)
            for c in range(k):
                for l in range(d):
                    mom[c, l] = keep * mom[c, l] + take * G[c, l]
            mom_scale = top + _renormalise(mom)
            G[:, :] = mom
            scale = mom_scale
        if direction == DIRECTION_ADAM:
            top = max(adam_s, scale)
            keep, take = math.exp(adam_s - top), math.exp(scale - top)
            largest = 0.0
            for c in range(k):
                for l in range(d):
                    g = take * G[c, l]
                    adam_m[c, l] = beta1 * keep * adam_m[c, l] + (1.0 - beta1) * g
                    adam_v[c, l] = math.hypot(root_beta2 * keep * adam_v[c, l], root_rest2 * g)
                    largest = max(largest, abs(adam_m[c, l]), adam_v[c, l])
            if not largest > 0.0:
                largest = 1.0
            adam_s = top + math.log(largest)
            first, second = 1.0 - beta1 ** (t + 1), math.sqrt(1.0 - beta2 ** (t + 1))
            floor = math.exp(log_eps - adam_s)
            for c in range(k):
                for l in range(d):
                    adam_m[c, l] /= largest
                    adam_v[c, l] /= largest
                    denom = adam_v[c, l] / second + floor
                    D[c, l] = (adam_m[c, l] / first) / denom if denom > 0.0 else 0.0
        elif direction <= DIRECTION_LP:
            _entrywise_direction(G, direction, q, D)
        elif direction == DIRECTION_NEWTON_SCHULZ:
            _newton_schulz_direction(G, D)
        else:
            _schatten_direction(G, direction, q, D)
        eta = eta0 * (t + 2.0) ** (-a)
        for c in range(k):
            for l in range(d):
                W[c, l] -= eta * D[c, l]
    return mom_scale, adam_s, snap_scale


@njit(cache=True, nogil=True)
def advance(W, t0, t1, H, y, source, batch, direction, q, use_momentum, eta0, a, beta, beta1, beta2, eps,
            mom, mom_scale, adam_m, adam_v, adam_s, perms, epoch0, snap_coeff, snap_full, snap_scale):
    """Advance every configuration r of ``W`` (R, k, d) from step t0 to t1 (see the module docstring).

    Per-run arrays have a leading R axis: hyper-parameters (R,), momentum (R, k, d) with log-scales (R,),
    Adam's m and sqrt(v) (R, k, d) with one shared log-scale (R,), the epoch permutations (R, E, n) of
    epochs ``epoch0 .. epoch0 + E - 1``, the VR snapshot coefficients (R, k, n), full gradient (R, k, d)
    and log-scale (R,). Arrays a recipe does not use may be empty-shaped placeholders of the right rank.
    """
    for r in range(W.shape[0]):
        mom_scale[r], adam_s[r], snap_scale[r] = _advance_one(
            W[r], t0, t1, H, y, source, batch, direction, q, use_momentum, eta0[r], a[r], beta[r], beta1[r],
            beta2[r], eps[r], mom[r], mom_scale[r], adam_m[r], adam_v[r], adam_s[r], perms[r], epoch0,
            snap_coeff[r], snap_full[r], snap_scale[r])
