"""The theorem instantiated on a run: every fact the proof of SIGNADAM Thm 5.3 uses, checked at every step.

Setting: full-batch normalised steepest descent from ``W_0 = 0`` (SignGD and the other entry-wise NSD of
SIGNADAM Thm 5.3 / Rem. 5.5; the Schatten norms and mini-batch runs at ``b = n`` of MINIBATCH Thm 4.1 at
``b = n``, whose chain is the same), docs/theory.md sections 1-3.

What the proof uses about the iterates, from its ``t_0`` on (the facts; each is checked at EVERY step by an
independent float64 stepper with log-domain losses, not at checkpoints):

* ``pairing``   -- the step direction's dual pairing: ``<grad L(W_s), Delta_s> >= gamma ||Delta_s|| G(W_s)``
  (exact for the steepest direction, where it is ``||grad L||_* >= gamma G``, SIGNADAM Lemma B.1; measured
  for any other direction, with ``||Delta_s||`` measured too);
* ``descent``   -- the descent inequality with the curvature at the iterate,
  ``L(W_{s+1}) <= L(W_s) - eta_s <grad L, Delta_s> + kappa_s eta_s^2 G(W_s)`` (SIGNADAM Lemma A.2/C.1 with
  the local ``kappa_s`` of :mod:`rates.symbolic.theorems.proof_chain`);
* ``half-margin`` -- the half-margin descent the ``t_0`` condition exists to give,
  ``L(W_{s+1}) <= L(W_s) - (gamma/2) eta_s G(W_s)`` (SIGNADAM eq. (20));
* ``low-loss``  -- ``L(W_s) <= log 2 / n`` (the ``t_1`` condition, Lemma B.3 (iii) / B.4);
* ``contraction`` -- ``L(W_s) <= 2 G(W_s)`` wherever ``L(W_s) <= log 2 / n`` (Lemma B.3 (iii));
* ``max-margin`` -- ``margin(W_s) <= gamma`` (the definition of ``gamma``; it catches a ``gamma`` set too low).

``pairing``, ``descent``, ``contraction`` and ``max-margin`` are lemmas about every ``W``: one failure anywhere
breaks the certificate. ``half-margin`` and ``low-loss`` are the proof's eventual conditions (its ``t_0`` and
``t_1``). For Adam (eps = 0, SIGNADAM Thm 6.3) the pairing is neither: its direction is not the steepest one, so
the pairing is measured at every step and its shortfall from the anchor on, ``sum eta_s (gamma ||Delta_s|| -
pi_s)^+``, is a term of ``B`` (the pairing deficit: Thm 6.3's ``c_adam eta_s^(1/2)`` replaced by what the run
shows; it certifies the chain on the run, never ``c_adam``).

Onsets: a fact's onset is one past its last failure (it holds from there through the horizon); ``s1``
is the onset of ``low-loss`` and ``s0`` the largest onset of the facts that anchor the chain (all but Adam's
measured pairing: all of them hold from ``s0`` through the horizon). The
explicit bound ``B(t)`` (:mod:`rates.symbolic.theorems.proof_chain`) is anchored at ``s0`` -- the chain needs
every fact from its anchor on, as the proof's ``t_1`` comes after its ``t_0`` (on the default preset, SignGD
a = 1/2: ``s1 = 5``, ``s0 = 238``) -- and the certificate is ``gap(t) <= B(t)`` at every step ``t > s0``. It
fails only if a rebuilt constant is wrong, the code does not run the algorithm, or rounding bites -- so the
stepper's iterates are also compared with the engine's at the engine's checkpoints (margin and log-loss, and
the weights where the file kept them).

Algorithm: one numba loop (:func:`_chain_run`) carries ``W_t``, the running last-failure index of each fact,
the anchor (reset to one past any failure) and the running sums of ``B`` from the anchor, and records the
gap and ``B`` at the requested times. Per step: logits, ``log l_i`` and ``log(1 - S_{y_i})`` in log domain,
gradient coefficients with one log-scale per class row (sign-type directions take each entry's sign whatever
its size, docs/theory.md section 7), the direction, its pairing and norm, ``kappa_s``, the step. O(n k d) per step,
O(1) memory besides the recorded times.

Why one module (about 700 lines): the facts are checked at every step inside one numba loop
(:func:`_chain_run`), and the loop, the table of first failures it fills and the :class:`Certificate` that reads
that table share the facts' indices; split, a fact added in one place would be read at the wrong index in another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from rates.numeric.run_config import RunConfig

FACTS = ("pairing", "descent", "half-margin", "low-loss", "contraction", "max-margin")
# lemmas that hold at every W (contraction: wherever L <= log 2 / n): one failure anywhere breaks the certificate;
# the other two are the eventual conditions t_0 and t_1 of the proof, whose onsets the run shows
UNIVERSAL = ("pairing", "descent", "contraction", "max-margin")
CERTIFICATE = len(FACTS)  # row of the failure table that holds the certificate's own failures

# direction kinds of the stepper (its own code, not the engine's kernels: the certificate compares the two)
SIGN, COORDINATE, FROBENIUS, ENTRYWISE, POLAR, NUCLEAR, SCHATTEN = range(7)
ADAM = -1  # Adam without eps (SIGNADAM eq. 3): not a steepest direction; its pairing and max-norm are measured
_LOG_LOG2 = math.log(math.log(2.0))


@njit(cache=True)
def _softplus(x):
    return x + math.log1p(math.exp(-x)) if x > 0.0 else math.log1p(math.exp(x))


@njit(cache=True)
def _phi(x):
    """(e^x - 1 - x)/x^2 >= 0, increasing; the series sum_j x^j/(j+2)! (an upper bound) near 0."""
    if x < 1e-4:
        return 0.5 + x / 6.0 + x * x / 24.0 + x * x * x / 119.0
    return (math.expm1(x) - x) / (x * x)


@njit(cache=True)
def _norm_of(W, kind, p):
    """||W|| in the algorithm's norm: entry-wise l_p (kind < POLAR) or Schatten-p (from the singular values)."""
    if kind >= POLAR:
        sigma = np.linalg.svd(np.ascontiguousarray(W))[1]
        if math.isinf(p):
            return sigma[0]
        if p == 1.0:
            return sigma.sum()
        return (sigma**p).sum() ** (1.0 / p)
    k, d = W.shape
    top, total = 0.0, 0.0
    for c in range(k):  # loops, not array expressions: this runs twice per step and must not allocate
        for j in range(d):
            top = max(top, abs(W[c, j]))
            total += abs(W[c, j])
    if math.isinf(p) or top == 0.0:
        return top
    if p == 1.0:
        return total
    total = 0.0
    for c in range(k):
        for j in range(d):
            total += (abs(W[c, j]) / top) ** p
    return top * total ** (1.0 / p)


@njit(cache=True)
def _direction(R, scale, kind, q, D):
    """Steepest direction of the signal whose row c is ``R[c] e^{scale[c]}`` (docs/theory.md section 2)."""
    k, d = R.shape
    if kind == SIGN:  # each row's sign, whatever the row's scale
        for c in range(k):
            for j in range(d):
                D[c, j] = 1.0 if R[c, j] > 0.0 else (-1.0 if R[c, j] < 0.0 else 0.0)
        return
    top = scale.max()
    Z = np.empty((k, d))
    for c in range(k):
        Z[c] = R[c] * math.exp(scale[c] - top)
    big = np.abs(Z).max()
    D[:, :] = 0.0
    if big == 0.0:
        return
    Z /= big
    if kind == COORDINATE:
        flat = np.argmax(np.abs(Z))
        c, j = flat // d, flat % d
        D[c, j] = 1.0 if Z[c, j] > 0.0 else -1.0
    elif kind == FROBENIUS:
        D[:, :] = Z / math.sqrt((Z * Z).sum())
    elif kind == ENTRYWISE:
        weights = np.abs(Z) ** (q - 1.0)
        D[:, :] = np.sign(Z) * weights / ((np.abs(Z) ** q).sum() ** ((q - 1.0) / q))
    else:
        U, sigma, Vh = np.linalg.svd(np.ascontiguousarray(Z), full_matrices=False)
        keep = sigma > sigma[0] * (max(k, d) * 2.220446049250313e-16)
        weights = np.zeros(sigma.shape[0])
        if kind == POLAR:
            weights[keep] = 1.0
        elif kind == NUCLEAR:
            weights[0] = 1.0
        else:
            s = np.where(keep, sigma, 0.0)
            weights = s ** (q - 1.0) / ((s**q).sum() ** ((q - 1.0) / q))
        D[:, :] = (U * weights) @ Vh


@njit(cache=True)
def _adam_direction(R, log_scale, beta1, beta2, count, first, second, sigma, D):
    """Bias-corrected Adam without eps (SIGNADAM eq. 3) on the gradient whose row c is ``R[c] e^{log_scale[c]}``;
    the moments carry the row scales ``sigma`` and are renormalised after each update."""
    k, d = R.shape
    c1, c2 = 1.0 - beta1**count, 1.0 - beta2**count
    for c in range(k):
        top = max(sigma[c], log_scale[c])
        old = math.exp(sigma[c] - top) if sigma[c] > -np.inf else 0.0
        new = math.exp(log_scale[c] - top)
        largest = 0.0
        for j in range(d):
            g = R[c, j] * new
            first[c, j] = beta1 * first[c, j] * old + (1.0 - beta1) * g
            second[c, j] = beta2 * second[c, j] * old * old + (1.0 - beta2) * g * g
            largest = max(largest, abs(first[c, j]), math.sqrt(second[c, j]))
        if largest > 0.0:
            for j in range(d):
                first[c, j] /= largest
                second[c, j] /= largest * largest
            top += math.log(largest)
        sigma[c] = top
        for j in range(d):
            D[c, j] = (first[c, j] / c1) / math.sqrt(second[c, j] / c2) if second[c, j] > 0.0 else 0.0


@njit(cache=True)
def _products(A, H, i, out):
    """``out[c] = <A[c], h_i>`` (the logits of sample ``i`` under ``W``, or its step ``v_i`` under ``Delta``)."""
    for c in range(A.shape[0]):
        total = 0.0
        for j in range(A.shape[1]):
            total += A[c, j] * H[i, j]
        out[c] = total


@njit(cache=True)
def _chain_run(H, y, k, etas, kind, p, q, gamma, record_at, perturbation, P, curvature_scale, betas, failures,
               state, recorded, W_rec):
    """Run ``len(etas)`` steps from W_0 = 0 and check the facts at every step (module docstring).

    ``failures[f] = (first, last, count)`` for each fact f and, in row CERTIFICATE, for ``gap > B`` after the
    anchor; ``state`` returns ``(anchor, N(0, anchor), L at anchor, worst gap/B after the anchor, its step,
    max kappa_s eta_s after the anchor, max worst-case alpha_s eta_s / gamma after the anchor,
    steps after the anchor where 2 B^2 e^{2 B eta_s} eta_s > gamma/2)``; ``recorded[j] = (t, gap, margin, log L,
    B(t), log G, ratio sum, curvature sum, N(0, t), pairing deficit sum)`` with ``margin`` unnormalised at
    ``record_at[j]``; ``W_rec[j]`` the iterate there.

    For ``kind == ADAM`` the pairing is measured, not a lemma: a step with ``pi_s < gamma ||Delta_s||`` does not move
    the anchor, its shortfall ``eta_s (gamma ||Delta_s|| - pi_s)`` is added to ``B``'s numerator instead (the pairing
    deficit sum; 0 for every steepest direction, whose pairing failing anywhere breaks the certificate as before).
    """
    n, d = H.shape
    T = etas.shape[0]
    log_n = math.log(n)
    log_level = math.log(math.log(2.0)) - log_n  # log(log 2 / n)
    data_bound = np.abs(H).sum(axis=1).max()
    W = np.zeros((k, d))
    R = np.empty((k, d))
    D = np.empty((k, d))
    scale = np.empty(k)
    log_abs = np.empty((k, n))
    signs = np.empty((k, n))
    log_g = np.empty(n)
    log_l = np.empty(n)
    # Adam's moments, row c scaled by e^{sigma[c]} (first) and e^{2 sigma[c]} (second): the direction m/sqrt(v)
    # does not change when both are rescaled row by row, so no row underflows (docs/theory.md section 7)
    first, second, sigma = np.zeros((k, d)), np.zeros((k, d)), np.full(k, -np.inf)
    z = np.empty(k)  # A h_i for one sample: its logits, or its step v_i
    grad = np.empty((k, d))  # grad L / G
    for f in range(failures.shape[0]):
        failures[f, 0], failures[f, 1], failures[f, 2] = -1, -1, 0
    anchor = 0
    initialised = False
    N_total = 0.0  # sum_{s<t} eta_s ||Delta_s||
    N_anchor = 0.0
    logL_anchor = 0.0
    ratio_sum = 0.0  # sum_{s>=anchor} eta_s ||Delta_s|| Lbar_s, Lbar the contraction envelope / L(anchor)
    envelope = 1.0
    curvature_sum = 0.0  # sum_{s>=anchor} kappa_s eta_s^2
    # sum_{s>=anchor} eta_s max(0, gamma ||Delta_s|| - pi_s): the pairing's measured shortfall (Adam only)
    deficit_sum = 0.0
    measured_pairing = kind == ADAM
    worst, worst_t, max_kappa_eta, max_alpha_ratio, vacuous = -np.inf, -1, 0.0, 0.0, 0
    prev_logL, prev_logG, prev_pairing, prev_kappa, prev_eta = 0.0, 0.0, 0.0, 0.0, 0.0
    next_record = 0
    eps = 2.220446049250313e-16
    for t in range(T + 1):
        # ---- quantities at W_t
        margin_min = np.inf
        for i in range(n):
            _products(W, H, i, z)
            zy = z[y[i]]
            m_i = np.inf
            for c in range(k):
                if c == y[i]:
                    continue
                log_abs[c, i] = z[c] - zy  # -u_c for now
                if zy - z[c] < m_i:
                    m_i = zy - z[c]
            total = 0.0
            for c in range(k):
                if c != y[i]:
                    total += math.exp(log_abs[c, i] + m_i)
            lx = -m_i + math.log(total)  # log sum_{c != y} e^{z_c - z_y}
            sp = _softplus(lx)
            log_g[i] = lx - sp
            # log(softplus(lx)) without underflow: for lx < -30, log1p(e^x)/e^x = 1 - e^x/2 + O(e^{2x})
            log_l[i] = lx - 0.5 * math.exp(lx) if lx < -30.0 else math.log(sp)
            for c in range(k):
                if c == y[i]:
                    log_abs[c, i], signs[c, i] = log_g[i], -1.0
                else:
                    log_abs[c, i], signs[c, i] = log_abs[c, i] - sp, 1.0
            if m_i < margin_min:
                margin_min = m_i
        top_l, top_g = log_l.max(), log_g.max()
        sum_l, sum_g = 0.0, 0.0
        for i in range(n):
            sum_l += math.exp(log_l[i] - top_l)
            sum_g += math.exp(log_g[i] - top_g)
        logL = top_l + math.log(sum_l) - log_n
        log_nG = top_g + math.log(sum_g)
        logG = log_nG - log_n
        size = _norm_of(W, kind, p)
        gap = gamma - margin_min / size if size > 0.0 else np.inf
        # ---- facts about the step t-1 -> t, then about W_t
        fail_step = False
        if t > 0:
            slack = 64.0 * eps * (1.0 + abs(prev_logL) + abs(logL))
            change = math.expm1(logL - prev_logL)  # L_t / L_{t-1} - 1
            ratio_prev = math.exp(prev_logG - prev_logL)
            if change > -prev_eta * (prev_pairing - prev_kappa * prev_eta) * ratio_prev + slack:
                fail_step = True
                _fail(failures, 1, t - 1)
            if change > -0.5 * gamma * prev_eta * ratio_prev + slack:
                fail_step = True
                _fail(failures, 2, t - 1)
        fail_here = False
        if logL > log_level:
            fail_here = True
            _fail(failures, 3, t)
        if logL <= log_level and logL > math.log(2.0) + logG + 1e-12:  # Lemma B.3 (iii) needs L <= log 2 / n
            fail_here = True
            _fail(failures, 4, t)
        if size > 0.0 and margin_min / size > gamma * (1.0 + 1e-10):  # no W beats the max margin
            fail_here = True
            _fail(failures, 5, t)
        if fail_step and anchor <= t:
            anchor, initialised = t, False
        if fail_here:
            anchor, initialised = t + 1, False
        if anchor == t and not initialised:
            initialised = True
            N_anchor, logL_anchor = N_total, logL
            ratio_sum, envelope, curvature_sum, deficit_sum = 0.0, 1.0, 0.0, 0.0
            worst, worst_t, max_kappa_eta, max_alpha_ratio, vacuous = -np.inf, -1, 0.0, 0.0, 0
            failures[CERTIFICATE, 0], failures[CERTIFICATE, 1], failures[CERTIFICATE, 2] = -1, -1, 0
        bound = np.nan
        if initialised and t > anchor:
            numerator = (gamma * N_anchor + gamma * 0.5 * n * math.exp(logL_anchor) * ratio_sum + curvature_sum
                         + deficit_sum + log_n + logL_anchor - _LOG_LOG2)
            bound = numerator / N_total
            tolerance = 1e-12 * (1.0 + gamma)
            if gap > bound + tolerance:
                _fail(failures, CERTIFICATE, t)
            if gap / bound > worst:
                worst, worst_t = gap / bound, t
        while next_record < record_at.shape[0] and record_at[next_record] == t:
            recorded[next_record, 0] = t
            recorded[next_record, 1] = gap
            recorded[next_record, 2] = margin_min
            recorded[next_record, 3] = logL
            recorded[next_record, 4] = bound
            recorded[next_record, 5] = logG
            recorded[next_record, 6] = ratio_sum
            recorded[next_record, 7] = curvature_sum
            recorded[next_record, 8] = N_total
            recorded[next_record, 9] = deficit_sum
            W_rec[next_record] = W
            next_record += 1
        if t == T:
            break
        # ---- the direction at W_t: rows with their own log-scale
        for c in range(k):
            scale[c] = log_abs[c].max()
            for j in range(d):
                R[c, j] = 0.0
            for i in range(n):
                w = signs[c, i] * math.exp(log_abs[c, i] - scale[c])
                for j in range(d):
                    R[c, j] += w * H[i, j]
        if kind == ADAM:
            _adam_direction(R, scale - log_n, betas[0], betas[1], t + 1, first, second, sigma, D)
        else:
            _direction(R, scale, kind, q, D)
        if perturbation != 0.0:
            D[:, :] = (1.0 - perturbation) * D + perturbation * P
        pairing = 0.0
        for c in range(k):
            factor = math.exp(scale[c] - log_nG)
            for j in range(d):
                grad[c, j] = R[c, j] * factor
                pairing += grad[c, j] * D[c, j]
        step_norm = _norm_of(D, kind, p)
        eta = etas[t]
        # measured pairing: its whole shortfall (even one inside the lemma's rounding allowance) is paid in B from
        # the anchor on -- the chain's step 3 with pi_s >= gamma ||Delta_s|| - delta_s
        shortfall = max(0.0, gamma * step_norm - pairing) if measured_pairing else 0.0
        if pairing < gamma * step_norm * (1.0 - 1e-12):
            _fail(failures, 0, t)
            if not measured_pairing:  # a lemma of the steepest direction: it failing moves the anchor (and breaks)
                anchor, initialised = t + 1, False
        # ---- local curvature: second-order term <= kappa eta^2 G
        kappa = 0.0
        for i in range(n):
            _products(D, H, i, z)  # v_i = Delta h_i
            vy = z[y[i]]
            spread, rise = 0.0, 0.0
            for c in range(k):
                if c == y[i]:
                    continue
                spread = max(spread, abs(z[c] - vy))
                rise = max(rise, vy - z[c])
            kappa += math.exp(log_g[i] - log_nG) * _phi(eta * rise) * spread * spread
        kappa *= curvature_scale
        if initialised:
            ratio_sum += eta * step_norm * envelope
            envelope *= max(1.0 - 0.25 * gamma * eta, 0.0)
            curvature_sum += kappa * eta * eta
            deficit_sum += eta * shortfall
            max_kappa_eta = max(max_kappa_eta, kappa * eta)
            worst_case = 2.0 * data_bound**2 * math.exp(2.0 * data_bound * eta) * eta
            max_alpha_ratio = max(max_alpha_ratio, worst_case / gamma)
            if worst_case > 0.5 * gamma:
                vacuous += 1
        prev_logL, prev_logG, prev_pairing, prev_kappa, prev_eta = logL, logG, pairing, kappa, eta
        N_total += eta * step_norm
        for c in range(k):
            for j in range(d):
                W[c, j] -= eta * D[c, j]
    state[0], state[1], state[2], state[3], state[4] = anchor, N_anchor, logL_anchor, worst, worst_t
    state[5], state[6], state[7] = max_kappa_eta, max_alpha_ratio, vacuous


@njit(cache=True)
def _fail(failures, f, t):
    if failures[f, 0] < 0:
        failures[f, 0] = t
    failures[f, 1] = t
    failures[f, 2] += 1


# --------------------------------------------------------------------------------------------------------------
# the wrapper: which runs the chain covers, the stepper's call, the comparison with the engine

# CPU seconds one certificate may take by default (``rates fit`` runs it on every covered run): the stepper costs
# about 4 ns per step, sample, class and (feature + 8) -- 4.0-5.5 us a step on the default preset (30 x 3 x 5),
# measured on 2e6-step SignGD and NGD runs on an idle machine, up to 7 us under load
BUDGET_S = 600.0
SECONDS_PER_UNIT = 4e-9
MATCH_TOLERANCE = 1e-7  # relative: margins and log-losses of two float64 runs of one algorithm agree far better
# relative to the largest |W| entry: Adam's m/sqrt(v) of an entry whose gradient changes sign amplifies rounding
# (engine vs stepper on the default preset, a = 2/3, 1e5 steps: W 3.9e-7 apart, loss and margin 5.6e-9)
WEIGHTS_TOLERANCE = 1e-5
# Adam's margin and log-loss, relative: the same amplification through m/sqrt(v) reaches them over long runs (the
# SIGNADAM study's Adam runs, default preset, 1e7 steps, a = 1/2, 2/3, 4/5, 1: 1.2e-7, 2.4e-7, 2.4e-7, 8.5e-8, above
# MATCH_TOLERANCE), while a SignGD stepper on those runs differs by 14, 4.5, 2.0, 2.0; so the weights' tolerance.
# With beta2 = 0.99 on small random sets the two runs part by 1e-5 to 8e-5 within 1e4 steps: DIFFER, no onset there
ADAM_MATCH_TOLERANCE = WEIGHTS_TOLERANCE
ADAM_SOURCE = ("SIGNADAM Thm 6.3's chain with Adam's pairing and max-norm measured on the run, the pairing's "
               "shortfall paid in B: it certifies the chain, never Thm 6.3's constant c_adam, which the paper's lost "
               "lemma constants do not let us rebuild")


@dataclass
class Certificate:
    """The chain of SIGNADAM Thm 5.3 checked on one run (module docstring). ``why`` is set when it does not apply."""

    applies: bool
    why: Optional[str] = None
    source: str = ""
    steps: int = 0
    onsets: dict[str, int] = field(default_factory=dict)  # fact -> first step from which it holds for good
    failures: dict[str, dict[str, int]] = field(default_factory=dict)  # fact -> first, last, count
    s0: Optional[int] = None
    s1: Optional[int] = None
    anchor_loss: Optional[float] = None  # log L(W_{s0})
    worst_ratio: Optional[float] = None  # max gap(t)/B(t) over t in (s0, horizon]
    worst_at: Optional[int] = None
    certified: Optional[bool] = None  # gap <= B at every step after s0 (None: no anchor before the horizon)
    engine_agrees: Optional[bool] = None
    engine_difference: Optional[float] = None  # worst relative difference of margin / log L at the checkpoints
    engine_weights_difference: Optional[float] = None
    engine_gap_over_bound: int = 0  # engine checkpoints after s0 whose recorded gap exceeds B(t)
    max_kappa_eta: Optional[float] = None  # max kappa_s eta_s after s0 (the t0 condition asks <= gamma/2)
    max_worst_case_ratio: Optional[float] = None  # max 2 B^2 e^{2 B eta_s} eta_s / gamma after s0
    vacuous_worst_case_steps: Optional[int] = None  # steps after s0 where the worst case exceeds gamma/2
    t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gap: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bound: np.ndarray = field(default_factory=lambda: np.zeros(0))  # B(t) (proof_chain) at the recorded t > s0
    kernel_bound: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the stepper's own B(t), the same
    n_total: np.ndarray = field(default_factory=lambda: np.zeros(0))  # N(0, t)
    terms: dict[str, np.ndarray] = field(default_factory=dict)  # B's numerator terms at the recorded t
    measured_pairing: bool = False  # Adam: the pairing's shortfall is paid in B (its "pairing deficit" term)

    @property
    def universal(self) -> tuple[str, ...]:
        """The facts whose failure anywhere breaks the certificate (a measured pairing is not a lemma)."""
        return tuple(name for name in UNIVERSAL if not (self.measured_pairing and name == "pairing"))

    @property
    def match_tolerance(self) -> float:
        """Engine vs stepper, relative (margin, log-loss): Adam's own where its pairing is measured."""
        return ADAM_MATCH_TOLERANCE if self.measured_pairing else MATCH_TOLERANCE

    @property
    def broken(self) -> bool:
        """A lemma failed at some step, ``gap > B`` after the anchor, or the engine ran something else: a constant,
        the code or rounding is wrong."""
        return self.applies and bool(self.breaches() or self.certified is False or self.engine_agrees is False
                                     or self.engine_gap_over_bound)

    def breaches(self) -> list[str]:
        """The universal lemmas that failed somewhere, with their first step and count."""
        return [f"{name} fails at {self.failures[name]['count']} step(s) (first t = {self.failures[name]['first']})"
                for name in self.universal if self.failures.get(name, {}).get("count")]

    def anchoring(self) -> tuple[str, ...]:
        """The facts whose onsets set ``s0``: all but a measured pairing, which never moves the anchor."""
        return tuple(name for name in FACTS if not (self.measured_pairing and name == "pairing"))

    def bound_at(self, t: float) -> float:
        """B at the recorded time ``t`` (NaN where not recorded or not past ``s0``)."""
        hits = np.nonzero(self.t == t)[0]
        return float(self.bound[hits[0]]) if len(hits) else math.nan

    def verdict_text(self) -> str:
        if not self.applies:
            return f"not applicable ({self.why})"
        breaches = self.breaches()
        if breaches:
            return ("BROKEN: a lemma that holds at every W failed on this run: " + "; ".join(breaches)
                    + " -- a rebuilt constant is wrong, the code does not run the algorithm, or rounding bites"
                    + ("" if self.engine_agrees is not False else f"; the engine's checkpoints differ from the "
                       f"stepper (worst relative difference {self.engine_difference:.1e})"))
        if self.s0 is None:
            return f"no certificate: {self.why}" + ("" if self.engine_agrees is not False else
                                                    f"; the engine's checkpoints DIFFER from the stepper (worst "
                                                    f"relative difference {self.engine_difference:.1e} > "
                                                    f"{self.match_tolerance:g})")
        if self.engine_agrees is None:
            agree = "no engine checkpoint to compare"
        else:
            worst = max(self.engine_difference, self.engine_weights_difference or 0.0)
            agree = (f"the engine's checkpoints agree with the stepper (loss, unnormalised margin, W up to a common "
                     f"row: worst relative difference {worst:.1e})" if self.engine_agrees else
                     f"the engine's checkpoints DIFFER from the stepper (worst relative difference {worst:.1e} > "
                     f"{self.match_tolerance:g}): the engine does not run this algorithm, or a near-tie of the "
                     "direction (an argmax, a sign, a small singular value) was decided by rounding")
        if self.engine_gap_over_bound:
            agree += (f"; the engine's recorded gap exceeds B(t) at {self.engine_gap_over_bound} checkpoint(s) "
                      "after s0")
        if self.certified and not self.broken:
            head = (f"certified: gap(t) <= B(t) at every step t in ({self.s0}, {self.steps}] (worst gap/B = "
                    f"{self.worst_ratio:.3g} at t = {self.worst_at})")
        elif self.certified:
            head = (f"BROKEN: gap(t) <= B(t) holds on the stepper's run after s0 = {self.s0} (worst gap/B = "
                    f"{self.worst_ratio:.3g}) but the engine's run is not the stepper's")
        else:
            head = (f"BROKEN: gap(t) > B(t) at {self.failures['certificate']['count']} step(s) after s0 = {self.s0} "
                    f"(first t = {self.failures['certificate']['first']}, worst gap/B = {self.worst_ratio:.3g} at "
                    f"t = {self.worst_at}): a rebuilt constant is wrong, the code does not run the algorithm, or "
                    "rounding bites")
        return f"{head}; {agree}"

    def to_json(self) -> dict[str, Any]:
        if not self.applies:
            return {"applies": False, "why": self.why, "source": self.source}
        keep = slice(None) if self.s0 is None else self.t > self.s0
        return {"applies": True, "why": self.why, "source": self.source, "steps": self.steps, "s0": self.s0,
                "s1": self.s1, "onsets": self.onsets, "failures": self.failures, "anchor_log_loss": self.anchor_loss,
                "certified": self.certified, "broken": self.broken, "worst_gap_over_bound": self.worst_ratio,
                "worst_at": self.worst_at, "engine_agrees": self.engine_agrees,
                "engine_difference": self.engine_difference,
                "engine_weights_difference": self.engine_weights_difference,
                "engine_gap_over_bound": self.engine_gap_over_bound,
                "max_kappa_eta": self.max_kappa_eta, "measured_pairing": self.measured_pairing,
                "pairing_deficit": [float(v) for v in self.terms["pairing deficit"][keep]] if self.terms else [],
                "engine_tolerance": self.match_tolerance,
                "max_worst_case_alpha_eta_over_gamma": self.max_worst_case_ratio,
                "worst_case_vacuous_steps": self.vacuous_worst_case_steps, "verdict": self.verdict_text(),
                "t": [int(v) for v in self.t[keep]], "gap": [float(v) for v in self.gap[keep]],
                "bound": [float(v) for v in self.bound[keep]]}


def _kind_of(norm: str, polar: str) -> tuple[int, float, float]:
    from rates.norms import parse_norm

    parsed = parse_norm(norm)
    p, q = float(parsed.p), float(parsed.q)
    if parsed.kind == "entrywise" or p == 2.0:
        if math.isinf(p):
            return SIGN, p, q
        if p == 1.0:
            return COORDINATE, p, q
        return (FROBENIUS if p == 2.0 else ENTRYWISE), p, q
    if parsed.kind != "schatten":
        raise ValueError(f"norm kind {parsed.kind!r} has no stepper")
    if math.isinf(p):
        return POLAR, p, q
    return (NUCLEAR if p == 1.0 else SCHATTEN), p, q


def coverage(config: RunConfig, n: Optional[int]) -> tuple[Optional[str], str]:
    """``(why not, source)``: None when the chain of SIGNADAM Thm 5.3 (MINIBATCH Thm 4.1 at b = n) covers the run."""
    from rates.symbolic.theorems.nsd import source_for

    algo = str(config.algo or "")
    if config.vr:
        return "variance reduction (MINIBATCH Thm 4.6) has its own chain, not instantiated here", "MINIBATCH Thm 4.6"
    if config.momentum:
        return "momentum (MINIBATCH Thm 4.3) has its own chain, not instantiated here", "MINIBATCH Thm 4.3"
    batch = config.batch
    if batch is not None and n is not None and int(batch) < n:
        return (f"mini-batch b = {batch} < n = {n}: only b = n is the full-batch chain (MINIBATCH Thm 4.1 at b = n)",
                "MINIBATCH Thm 4.1")
    if config.init_scale:
        return "W_0 != 0: the chain bounds ||W_t|| by the steps taken from W_0 = 0", ""
    if (config.polar or "exact") != "exact":
        return "the Newton-Schulz polar factor: the stepper runs the exact steepest direction", ""
    if "adam" in algo:
        if float(config.adam_eps or 0.0) != 0.0:
            return ("Adam with eps > 0: SIGNADAM's theorem is for eps = 0 (its sec. 7 only reports eps > 0 runs as "
                    "consistent)", "SIGNADAM Thm 6.3")
        return None, ADAM_SOURCE
    source = source_for(str(config.norm or "max")).text
    if batch is not None:
        source = "MINIBATCH Thm 4.1/D.4 at b = n, beta = 0"
    return None, source


def certify(run: Any, dataset: Any = None, perturbation: float = 0.0, perturbation_seed: int = 0,
            gamma: Optional[float] = None, norm: Optional[str] = None, curvature_scale: float = 1.0,
            extra_times: int = 200, budget_s: Optional[float] = BUDGET_S) -> Certificate:
    """Check the chain of SIGNADAM Thm 5.3 at every step of ``run`` (a :class:`rates.numeric.trajectory.Run`).

    ``dataset`` defaults to the run's recorded data (preset or generator and its seed). ``perturbation``,
    ``gamma``, ``curvature_scale`` and ``norm`` exist for the negative controls: a direction mixed with a fixed
    random sign matrix, a wrong max margin, a curvature constant too small, another algorithm's direction --
    each must break the certificate. A run whose stepper pass would take more than ``budget_s`` CPU seconds (an
    estimate; None: no limit) is not checked, and the certificate says so with the estimate.
    """
    from rates.symbolic.theorems.proof_chain import bound_terms

    config = run.config
    if dataset is None:
        from rates.numeric.data import parse_data

        why, source = coverage(config, (config.data_facts or {}).get("n"))
        if why is not None or config.data is None:
            return Certificate(False, why or "the run records no dataset to run the stepper on", source)
        try:
            dataset = parse_data(str(config.data), config.draw_seed)
        except Exception as error:  # a data file that moved: no certificate, and the reason
            return Certificate(False, f"the run's data {config.data!r} cannot be rebuilt ({error})", source)
    why, source = coverage(config, dataset.n)
    if why is not None:
        return Certificate(False, why, source)
    steps = int(config.steps)
    estimate = steps * dataset.n * dataset.k * (dataset.d + 8) * SECONDS_PER_UNIT
    if budget_s is not None and estimate > budget_s:
        return Certificate(False, f"not checked: the stepper would take about {estimate:.3g} CPU-s for {steps} steps "
                                  f"on n = {dataset.n}, k = {dataset.k}, d = {dataset.d}, over its budget of "
                                  f"{budget_s:g} s", source)
    adam = "adam" in str(config.algo or "") and norm is None
    kind, p, q = (ADAM, math.inf, 1.0) if adam else _kind_of(norm or str(config.norm or "max"),
                                                                 str(config.polar or "exact"))
    betas = np.array([float(0.9 if config.adam_beta1 is None else config.adam_beta1),
                      float(0.999 if config.adam_beta2 is None else config.adam_beta2)])
    gamma_value = float(run.gamma["value"]) if gamma is None else float(gamma)
    etas = float(config.eta0) * config.schedule.unit_values(0, steps)
    engine_t = np.asarray(run.t, dtype=np.int64)
    grid = np.unique(np.round(np.logspace(0, math.log10(max(steps, 1)), extra_times)).astype(np.int64))
    times = np.unique(np.concatenate([engine_t[engine_t <= steps], grid[grid <= steps]]))
    P = np.sign(np.random.default_rng(perturbation_seed).standard_normal((dataset.k, dataset.d)))
    failures = np.zeros((len(FACTS) + 1, 3), dtype=np.int64)
    state = np.zeros(8)
    recorded = np.full((len(times), 10), np.nan)
    W_rec = np.zeros((len(times), dataset.k, dataset.d))
    H = np.ascontiguousarray(dataset.H, dtype=np.float64)
    y = np.ascontiguousarray(dataset.y, dtype=np.int64)
    _chain_run(H, y, int(dataset.k), etas, kind, p, q, gamma_value, times, float(perturbation), P,
               float(curvature_scale), betas, failures, state, recorded, W_rec)
    table = {name: {"first": int(row[0]), "last": int(row[1]), "count": int(row[2])}
             for name, row in zip(FACTS + ("certificate",), failures)}
    onsets = {name: table[name]["last"] + 1 for name in FACTS}
    anchor = int(state[0])
    cert = Certificate(True, None, source, steps, onsets, table)
    # Adam's direction is not the steepest one: its pairing is measured, its shortfall paid in B
    cert.measured_pairing = adam
    cert.t, cert.gap, cert.kernel_bound = recorded[:, 0].astype(np.int64), recorded[:, 1], recorded[:, 4]
    cert.n_total = recorded[:, 8]
    cert.s1 = onsets["low-loss"]
    if anchor >= steps:
        late = sorted((name for name in cert.anchoring() if onsets[name] >= steps), key=FACTS.index)
        cert.why = f"{', '.join(late)} still fail(s) at the horizon t = {steps}: no step anchors the chain"
        cert.s0 = None
        cert.s1 = None if cert.s1 >= steps else cert.s1
    else:
        cert.s0 = anchor
        cert.anchor_loss = float(state[2])
        cert.worst_ratio, cert.worst_at = float(state[3]), int(state[4])
        cert.certified = table["certificate"]["count"] == 0
        cert.max_kappa_eta, cert.max_worst_case_ratio = float(state[5]), float(state[6])
        cert.vacuous_worst_case_steps = int(state[7])
        cert.terms = bound_terms(gamma_value, dataset.n, float(state[1]), cert.anchor_loss, recorded[:, 6],
                                 recorded[:, 7], recorded[:, 9])
        cert.bound = sum(cert.terms.values()) / cert.n_total
        cert.bound[cert.t <= anchor] = np.nan
    _compare_with_engine(cert, run, recorded, W_rec, times)
    return cert


def _compare_with_engine(cert: Certificate, run: Any, recorded: np.ndarray, W_rec: np.ndarray,
                         times: np.ndarray) -> None:
    """The stepper's margin and log-loss at the engine's checkpoints (and W, where the file kept it, up to a common
    row)."""
    where = {int(t): j for j, t in enumerate(times)}
    diffs, weight_diffs = [], []
    weights = getattr(run, "weights", None)
    over = 0
    for index, t in enumerate(np.asarray(run.t, dtype=np.int64)):
        j = where.get(int(t))
        if j is None:
            continue
        # logit quantities: the unnormalised margin and the loss (the norm of W may differ by a common row)
        margin, log_loss = recorded[j, 2], recorded[j, 3]
        engine_margin = run.margin[index] * run.norm[index]
        diffs.append(abs(margin - engine_margin) / max(abs(engine_margin), abs(margin), 1e-300))
        diffs.append(abs(log_loss - run.log_loss[index]) / (1.0 + abs(run.log_loss[index])))
        if cert.s0 is not None and t > cert.s0 and run.gap[index] > cert.bound[j] + 1e-12 * (1.0 + cert.bound[j]):
            over += 1  # the engine's own gap (its own ||W_t|| <= N(0, t) too) against B(t)
        if weights is not None and len(weights) == len(run.t):
            # modulo one vector added to every class row: it changes no logit difference, and a tie of the
            # steepest direction may resolve there (the polar factor of a gradient whose rows sum to 0 has a
            # zero singular value; the engine may keep its rounding noise, a maximiser too)
            difference = np.asarray(weights[index]) - W_rec[j]
            difference -= difference.mean(axis=0)
            weight_diffs.append(float(np.abs(difference).max() / max(np.abs(W_rec[j]).max(), 1e-300)))
    cert.engine_gap_over_bound = over
    if not diffs:  # no checkpoint to compare (a run without checkpoints inside the horizon)
        return
    cert.engine_difference = max(diffs) if all(np.isfinite(diffs)) else math.inf
    cert.engine_weights_difference = max(weight_diffs) if weight_diffs else None
    cert.engine_agrees = bool(cert.engine_difference <= cert.match_tolerance
                              and max(weight_diffs, default=0.0) <= WEIGHTS_TOLERANCE)


def certificates_of(runs: Sequence[Any]) -> list[Certificate]:
    return [certify(run) for run in runs]


def describe(cert: Certificate, descent_start: Any = None, label: str = "") -> list[str]:
    """The lines ``rates fit`` prints beside the slope verdict (every number with its source)."""
    head = f"  proof chain{label:<4}: "
    if not cert.applies:
        return [head + f"not instantiated - {cert.why}"] if cert.source else []
    t_d = "unknown" if descent_start is None or descent_start.log10 is None else (
        f"{descent_start.t:.3g}" if descent_start.t is not None else f"~10^{descent_start.log10:.3g}")
    lines = [head + f"{cert.source}: every fact its proof uses, checked at each of {cert.steps} steps by a float64 "
                    "stepper [derived, docs/theory.md section 3b]",
             "    onsets       : " + (f"s0 = {cert.s0} (all facts hold from here through the horizon)" if cert.s0
                                     is not None else "s0 = none before the horizon")
             + (f", s1 = {cert.s1} (L <= log 2/n from here on)" if cert.s1 is not None else ", s1 = none")
             + f"; rebuilt t_d = {t_d} [derived, worst-case curvature]"
             + ("" if descent_start is None or not descent_start.left_out else
                f" (a lower bound: left out {'; '.join(descent_start.left_out)})"),
             "    fact onsets  : " + ", ".join(f"{name} {onset}" + ("" if name in cert.anchoring() else
                                                                       " (measured, paid in B: does not set s0)")
                                            for name, onset in cert.onsets.items())]
    if cert.s0 is not None and cert.terms and np.isfinite(cert.bound[-1]):
        terms = {name: float(values[-1]) for name, values in cert.terms.items()}
        lines.append(f"    B(T)         : T = {cert.steps}: [gamma N(0,s0) {terms['before anchor']:.4g} + ratio "
                     f"{terms['ratio']:.3g} + curvature {terms['curvature']:.4g} + log(n L(s0)/log 2) "
                     f"{terms['anchor loss']:.4g}"
                     + (f" + pairing deficit {terms['pairing deficit']:.4g}" if cert.measured_pairing else "")
                     + f"] / N(0,t) {cert.n_total[-1]:.4g} = {cert.bound[-1]:.4g}; gap {cert.gap[-1]:.4g}")
        if cert.measured_pairing:
            pairing = cert.failures["pairing"]
            lines.append(f"    pairing      : measured (not the steepest direction): <grad L/G, Delta_s> < gamma "
                         f"||Delta_s||_max at {pairing['count']} step(s) (last t = {pairing['last']}); the shortfall "
                         "sum_(s >= s0) eta_s (gamma ||Delta_s|| - pairing)^+ is the pairing deficit in B -- the "
                         "chain of SIGNADAM Thm 6.3 with c_adam eta^(1/2) replaced by what the run shows [derived, "
                         "measured]; it certifies the chain on this run, never Thm 6.3's constant c_adam")
        lines.append(f"    curvature    : max kappa_s eta_s = {cert.max_kappa_eta:.3g} after s0 (local); the worst "
                     f"case 2B^2 e^(2B eta) eta exceeds gamma/2 on {cert.vacuous_worst_case_steps} of those steps")
    lines.append(f"    certificate  : {cert.verdict_text()}")
    return lines

