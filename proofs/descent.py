"""Lemmas between the one-step facts and the theorems: MINIBATCH C.6 and C.14, SIGNADAM Lemma 5.2, and the
per-sample step direction (MINIBATCH Thm 4.9 / H.2).

Formulas [rebuilt] from the seeds' surviving proof steps ("By convexity of ... the last inequality is by
Lemma C.5"; "the inner term is exactly the deviation bound form. Applying Lemma C.13 ... relate ... using
Lemma C.9"; SIGNADAM C.2 "(a) ... by Lemma B.4 ... (b) is by (19)").
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from proofs.claims import MINIBATCH, SIGNADAM, Claim, ScalarProblem, SearchProblem, SimulationOutcome, SimulationProblem
from proofs.crossentropy import (
    NORM_NAMES,
    data_bound,
    log_uniform,
    loss,
    norm_value,
    proxy,
    random_problem,
    sample_gradients,
    split,
)
from proofs.derivation import cited, derivation, identity, lazy, lemma, scalar
from proofs.gradient import gradient_dual_lower, gradient_dual_upper
from proofs.proxy import low_loss_separability, proxy_below_loss
from proofs.softmax import _lse_hessian_identity, hessian_loss_bound, proxy_ratio
from proofs.stochastic import vr_deviation
from rates.symbolic.theorems.minibatch import batch_error_factor


def loss_lipschitz() -> Claim:
    """MINIBATCH Lemma C.6 (Lemma 17 of Fan et al. 2025) [rebuilt].

    Claim: ``L(W') - L(W) <= 2 B G(W') ||W' - W||`` for every entry-wise / Schatten norm, hence
    ``|L(W') - L(W)| <= 2 B ||W' - W||`` (``G <= 1``). Proof: convexity (``L(W) >= L(W') + <grad L(W'), W - W'>``),
    duality, C.5. The template's ``t_1`` uses it as ``L(W_{t_0}) <= log k + 2 B sum_{s<t_0} eta_s``.
    """

    def sample(rng):
        n, k, d, y = random_problem(rng)
        W = rng.standard_normal((k, d)) * log_uniform(rng, 0.05, 8.0)
        W2 = W + rng.standard_normal((k, d)) * log_uniform(rng, 1e-3, 3.0)
        return np.concatenate([rng.standard_normal(n * d), W.ravel(), W2.ravel()]), \
            (n, k, d, y, NORM_NAMES[int(rng.integers(len(NORM_NAMES)))])

    def ratio(params, context):
        n, k, d, y, norm = context
        H, W, W2 = split(params, n, k, d, 2)
        rhs = 2 * data_bound(H) * proxy(W2, H, y) * norm_value(norm, W2 - W)
        return (loss(W2, H, y) - loss(W, H, y)) / rhs if rhs > 0 else -math.inf

    def describe(params, context):
        n, k, d, y, norm = context
        H, W, W2 = split(params, n, k, d, 2)
        return {"norm": norm, "H": H.tolist(), "y": y.tolist(), "W": W.tolist(), "W_prime": W2.tolist()}

    return Claim(
        name="loss-lipschitz",
        source=f"{MINIBATCH} Lemma C.6 (Fan et al. 2025, Lemma 17)",
        statement="L(W') - L(W) <= 2 B G(W') ||W' - W|| <= 2 B ||W' - W|| for every entry-wise/Schatten norm",
        latex=r"L(W')-L(W) \le 2B\,G(W')\,\|W'-W\|",
        status="rebuilt",
        domain=f"any data, W, W' (search: n <= 6, k <= 5, d <= 4; norms {', '.join(NORM_NAMES)})",
        search=SearchProblem(sample, ratio, describe, starts=150, polish=3),
        symbolic_proof=lazy(lambda: derivation(
            identity("L is convex: its Hessian along u is a variance u^T (diag s - s s^T) u >= 0 (k = 3 identity)",
                     _lse_hessian_identity(3)),
            cited("convexity: L(W) >= L(W') + <grad L(W'), W - W'>; duality: <grad L, W' - W> <= ||grad L||_* "
                  "||W' - W||",
                  "first-order condition of convexity; definition of the dual norm"),
            lemma("||grad L(W')||_* <= 2 B G(W') <= 2 B", gradient_dual_upper()),
        )),
        constants={"c_lipschitz": sp.Integer(2)},
    )


def vr_momentum_error() -> Claim:
    """MINIBATCH Lemma C.14 (momentum approximation error for SVR) [rebuilt].

    Claim: for iterates ``W_0..W_t``, snapshots ``W~_tau`` (the epoch's first iterate, epochs of ``m = n/b``
    steps), batches ``S_tau`` and ``E_tau = (grad_S L(W_tau) - grad_S L(W~_tau)) - (grad L(W_tau) - grad L(W~_tau))``,

        ||sum_tau (1-beta) beta^(t-tau) E_tau||_sum
            <= sum_tau (1-beta) beta^(t-tau) 2B c(n,b) (e^(2B||W_tau - W~_tau||_max) - 1)
                   * e^(2B||W~_tau - W_t||_max) G(W_t).

    Proof: triangle inequality, C.13 at each ``tau``, C.9 from ``W~_tau`` to ``W_t`` (the seed's steps); the seed
    then bounds the distances by step sizes and Ass. 3.4 (the VR chain does that step).
    """

    def sample(rng):
        b = int(rng.integers(1, 3))
        m = int(rng.integers(2, 4))
        n, k, d = b * m, int(rng.integers(2, 4)), int(rng.integers(1, 3))
        t = int(rng.integers(0, 3 * m))
        y = rng.integers(0, k, size=n)
        batches = [rng.permutation(n).reshape(m, b)[tau % m] for tau in range(t + 1)]
        beta = float(rng.uniform(0, 0.99))
        W = rng.standard_normal((k, d)) * log_uniform(rng, 0.1, 4.0)
        steps = rng.standard_normal((t + 1, k, d)) * log_uniform(rng, 1e-3, 0.5)
        params = np.concatenate([rng.standard_normal(n * d), W.ravel(), steps.ravel()])
        return params, (n, k, d, b, m, t, y, batches, beta)

    def unpack(params, context):
        n, k, d, b, m, t, y, batches, beta = context
        H = params[:n * d].reshape(n, d)
        steps = params[n * d + k * d:].reshape(t + 1, k, d)
        iterates = params[n * d:n * d + k * d].reshape(k, d) + np.cumsum(steps, axis=0) - steps[0]
        return H, iterates

    def ratio(params, context):
        n, k, d, b, m, t, y, batches, beta = context
        H, iterates = unpack(params, context)
        B, Wt = data_bound(H), iterates[-1]
        total, allowance = 0.0, 0.0
        for tau in range(t + 1):
            snap = iterates[(tau // m) * m]
            diff = sample_gradients(iterates[tau], H, y) - sample_gradients(snap, H, y)
            weight = (1 - beta) * beta ** (t - tau)
            total = total + weight * (diff[list(batches[tau])].mean(axis=0) - diff.mean(axis=0))
            deviation = math.expm1(2 * B * np.abs(iterates[tau] - snap).max())
            growth = math.exp(2 * B * np.abs(snap - Wt).max())
            allowance += weight * 2 * B * batch_error_factor(n, b) * deviation * growth
        allowance *= proxy(Wt, H, y)
        lhs = float(np.abs(total).sum())
        return lhs / allowance if allowance > 0 else (math.inf if lhs > 1e-15 else -math.inf)

    def describe(params, context):
        n, k, d, b, m, t, y, batches, beta = context
        H, iterates = unpack(params, context)
        return {"n": n, "b": b, "beta": beta, "H": H.tolist(), "y": y.tolist(), "iterates": iterates.tolist(),
                "batches": [[int(i) for i in s] for s in batches]}

    return Claim(
        name="vr-momentum-error",
        source=f"{MINIBATCH} Lemma C.14",
        statement="||sum_tau (1-beta) beta^(t-tau) E_tau||_sum <= sum_tau (1-beta) beta^(t-tau) 2B c(n,b) "
                  "(e^(2B||W_tau - W~_tau||_max) - 1) e^(2B||W~_tau - W_t||_max) G(W_t)",
        latex=r"\Big\|\sum_\tau(1-\beta)\beta^{t-\tau}E_\tau\Big\|_{\mathrm{sum}} \le \sum_\tau(1-\beta)\beta^{t-\tau}"
              r"2Bc(n,b)(e^{2B\|W_\tau-\tilde W_\tau\|_{\max}}-1)e^{2B\|\tilde W_\tau-W_t\|_{\max}}G(W_t)",
        status="rebuilt",
        domain="b | n, any iterates, snapshots at epoch starts, beta in [0, 1) (search: m = n/b <= 3, t < 3 epochs)",
        search=SearchProblem(sample, ratio, describe, starts=80, polish=2, max_evaluations=80),
        symbolic_proof=lazy(lambda: derivation(
            cited("triangle inequality over tau", "norm axioms"),
            lemma("||E_tau||_sum <= 2B c(n,b) (e^(2B||W_tau - W~_tau||_max) - 1) G(W~_tau) (C.13)", vr_deviation()),
            lemma("G(W~_tau) <= e^(2B||W~_tau - W_t||_max) G(W_t) (C.9)", proxy_ratio()),
        )),
    )


def _signgd_runs(thorough: bool, seed: int) -> SimulationOutcome:
    """SignGD from W_0 = 0 on small random separable data; check Lemma 5.2's bound at every step after t_0."""
    from rates.errors import NotSeparableError
    from rates.numeric.data import Dataset
    from rates.numeric.margins import max_margin

    rng = np.random.default_rng(seed)
    trials, worst, instance = 0, -math.inf, {}
    runs = 12 if thorough else 3
    steps = 3000 if thorough else 600
    done = 0
    while done < runs:
        n, k, d = int(rng.integers(2, 6)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
        y = np.concatenate([np.arange(k), rng.integers(0, k, size=max(0, n - k))])
        H = rng.standard_normal((len(y), d))
        H /= np.abs(H).sum(axis=1, keepdims=True)  # B = 1
        try:
            gamma = max_margin(Dataset(H, y, k, "lemma-5.2"), "max").gamma
        except NotSeparableError:
            continue
        done += 1
        a, eta0 = float(rng.choice([0.3, 0.5, 0.75])), 1.0
        B = data_bound(H)
        alpha = 2 * B**2 * math.exp(2 * B * eta0)
        W = np.zeros((k, d))
        t0 = None
        drift, noise = 0.0, 0.0
        for t in range(steps):
            L = loss(W, H, y)
            if t0 is None and L <= math.log(2) / len(y):
                t0, L0 = t, L
            if t0 is not None:
                z = H @ W.T
                margins = z[np.arange(len(y)), y][:, None] - z
                margins[np.arange(len(y)), y] = np.inf
                bound = gamma * drift - alpha * noise - math.log(2 * len(y) * L0)
                trials += 1
                value = math.exp(min(bound - float(margins.min()), 700.0))
                if value > worst:
                    worst, instance = value, {"H": H.tolist(), "y": y.tolist(), "a": a, "t0": t0, "t": t,
                                              "bound": bound, "min_margin": float(margins.min())}
            eta = eta0 * (t + 2) ** (-a)
            if t0 is not None:
                drift += eta * proxy(W, H, y) / L
                noise += eta**2
            W = W - eta * np.sign(sample_gradients(W, H, y).mean(axis=0))
    return SimulationOutcome(trials, worst, instance, refuted=worst > 1 + 1e-9)


def signgd_unnormalized_margin() -> Claim:
    """SIGNADAM Lemma 5.2 / C.2 (SignGD unnormalized margin) [rebuilt].

    Claim: if ``L(W_s) <= log 2 / n`` for all ``s >= t_0`` then for ``t >= t_0``

        min_{i, c != y_i} (e_{y_i} - e_c)^T W_t h_i >= gamma sum_{s=t_0}^{t-1} eta_s G(W_s)/L(W_s)
                                                     - alpha sum_{s=t_0}^{t-1} eta_s^2 - log(2 n L(W_{t_0})),

    ``alpha = 2 B^2 exp(2 B eta_0)``. Derivation: the descent step (19) ``L_{s+1} <= L_s (1 - eta_s (gamma G_s - alpha
    eta_s G_s)/L_s) <= L_s exp(-gamma eta_s G_s/L_s + alpha eta_s^2)`` (``1 - y <= e^-y``, ``G <= L``); and C.8:
    ``e^(-margin) <= e^(n L) - 1 <= 2 n L`` for ``n L <= log 2``. Checked along SignGD runs (the statement is about
    the algorithm's iterates) and proven by the reduction.
    """
    y_, x_ = sp.symbols("y x", nonnegative=True)
    return Claim(
        name="signgd-unnormalized-margin",
        source=f"{SIGNADAM} Lemma 5.2 / C.2",
        statement="L(W_s) <= log2/n for s >= t0 implies min margin(W_t) >= gamma sum eta_s G_s/L_s "
                  "- alpha sum eta_s^2 - log(2 n L(W_t0))",
        latex=r"\min_{i,c\ne y_i}(e_{y_i}-e_c)^\top W_th_i \ge \gamma\sum_{s=t_0}^{t-1}\eta_s\tfrac{G(W_s)}{L(W_s)}"
              r"-\alpha\sum_{s=t_0}^{t-1}\eta_s^2-\log(2nL(W_{t_0}))",
        status="rebuilt",
        domain="SignGD iterates after t0 (proof: any data); simulation: n <= 5, k <= 3, d <= 3, B = 1, "
               "a in {0.3, 0.5, 0.75}, 3 runs of 600 steps (thorough 12 of 3000)",
        simulation=SimulationProblem(_signgd_runs),
        symbolic_proof=lazy(lambda: derivation(
            lemma("second-order term <= (eta^2/2) 4 B^2 G(W') (Hessian bound, ||sign||_max = 1)", hessian_loss_bound()),
            lemma("G(W') <= e^(2 B eta_0) G(W) along a step of max-norm eta <= eta_0", proxy_ratio()),
            lemma("first-order term: -eta ||grad L||_1 <= -eta gamma G (max-norm dual)", gradient_dual_lower()),
            scalar("1 - y <= e^(-y) for y in [0, 50] (so L_{s+1} <= L_s exp(-eta_s (gamma G_s - alpha eta_s G_s)/L_s))",
                   ScalarProblem([y_], [(0, 50)], 1 - y_, sp.exp(-y_))),
            lemma("G <= L, so alpha eta^2 G/L <= alpha eta^2", proxy_below_loss()),
            lemma("e^(-margin) <= e^(n L) - 1 (C.8)", low_loss_separability()),
            scalar("e^x - 1 <= 2x for x in [0, log 2]", ScalarProblem([x_], [(0, sp.log(2))], sp.exp(x_) - 1, 2 * x_)),
        )),
    )


def per_sample_step_direction() -> Claim:
    """MINIBATCH Thm 4.9 / H.2, the step behind the bias matrix [rebuilt, docs/theory.md section 5].

    Claim: for ``h = s e_y`` (``s > 0``), every ``W``: ``-sign(grad l(W)) = (2 e_y - 1) e_y^T``. Proof: ``grad l =
    (S(W h) - e_y) s e_y^T``; ``S_y - 1 < 0`` and ``S_c > 0`` for ``c != y``. Worst ratio: ``1 +`` the number of
    entries where the sign differs (1 = exact).
    """

    def sample(rng):
        k = int(rng.integers(2, 6))
        # logits stay below ~100 in size: beyond ~700 float64 rounds S_c to 0 and sign(0) = 0 is round-off
        return rng.standard_normal(k * k) * log_uniform(rng, 0.1, 5.0), (k, int(rng.integers(0, k)),
                                                                         log_uniform(rng, 1e-3, 10.0))

    def ratio(params, context):
        k, y, scale = context
        W = params.reshape(k, k)
        g = sample_gradients(W, scale * np.eye(k)[[y]], np.array([y]))[0]
        expected = np.zeros((k, k))
        expected[:, y] = 2 * np.eye(k)[y] - 1
        return 1.0 + float(np.sum(-np.sign(g) != expected))

    E1, E2 = sp.symbols("E1 E2", positive=True)
    return Claim(
        name="per-sample-step-direction",
        source=(f"{MINIBATCH} Thm 4.9 / Lemma H.2 "
                "(direction D_c of rates.symbolic.theorems.per_sample.class_directions)"),
        statement="h = s e_y, s > 0: -sign(grad l(W)) = (2 e_y - 1) e_y^T for every W",
        latex=r"-\mathrm{sign}\,\nabla\ell(W) = (2e_y-\mathbf 1)e_y^\top",
        status="rebuilt",
        domain="orthogonal data h = s e_y, any W, k = d (search: k <= 5, |logits| <~ 100)",
        search=SearchProblem(sample, ratio, lambda p, c: {"k": c[0], "y": c[1], "s": c[2], "W": p.tolist()},
                             starts=150, polish=2),
        symbolic_proof=lazy(lambda: derivation(
            identity("1 - S_y = sum_{c != y} S_c > 0 (k = 3, E_c = e^(z_c))",
                     sp.simplify(1 - 1 / (1 + E1 + E2) - (E1 + E2) / (1 + E1 + E2))),
            cited("so the gradient column y is (S - e_y) s: negative in row y, positive elsewhere; other columns 0 "
                  "(sign(0) = 0 there; the step moves column y only)", "softmax entries lie in (0, 1)"),
        )),
    )


CLAIMS = [loss_lipschitz(), vr_momentum_error(), signgd_unnormalized_margin(), per_sample_step_direction()]
