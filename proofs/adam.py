"""Adam's moment lemmas: SIGNADAM Lemmas D.1, 6.1/D.2, 6.2/D.3 and the entry-wise core of D.4.

Setting (SIGNADAM ``003_35ca27fd72435096.txt`` section 6, App. D; THEORY.md section 2): Adam without
``eps``, ``m_t = beta1 m_{t-1} + (1 - beta1) g_t``, ``v_t = beta2 v_{t-1} + (1 - beta2) g_t^2`` from
``m_{-1} = v_{-1} = 0``, ``g_s = grad L(W_s)`` at any iterates ``W_0..W_t`` (the lemmas do not use how the
iterates were produced, only how far apart they are).

The seed kept the lemma names and proof steps ("by Lemma D.10", "by (3c) and triangle inequality", "by
Lemma D.1 and the definition of", "by the Assumption 3.4"), not the formulas. The statements below are
[rebuilt] from those steps and from the lemmas they cite (Zhang, Zou, Cao 2024, *The implicit bias of Adam
on separable data*, Lemmas 6.1-6.5 and A.3-A.4; Xie & Li 2024, Lemma 4.2). They are the source of the
``sum eta^{3/2}`` term: the second moment is off by ``O(eta_t) G^2`` (D.3), its square root by
``O(sqrt(eta_t)) G`` -- and of the constant's ``d``-dependence: the entry-wise errors are summed over the
``k d`` entries with Cauchy-Schwarz (D.4), which costs ``sqrt(k d)`` here (the seed's per-class proxies
bring it to a ``d``-dependence; the rebuilt version keeps the cruder ``sqrt(k d)``).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from proofs.claims import SIGNADAM, Claim, ScalarProblem, SearchProblem
from proofs.crossentropy import data_bound, log_uniform, proxy, random_problem, sample_gradients
from proofs.derivation import cited, derivation, identity, lazy, lemma, scalar
from proofs.softmax import proxy_ratio
from proofs.stochastic import gradient_stability

beta1, beta2 = sp.symbols("beta1 beta2", positive=True)
ZHANG = "Zhang, Zou, Cao (2024), The implicit bias of Adam on separable data"


def moment_ratio_constant(b1, b2):
    """``C_D1 = (1 - beta1) / sqrt((1 - beta2)(1 - beta1^2/beta2))``: ``|m_t| <= C_D1 sqrt(v_t)`` (Lemma D.1)."""
    if isinstance(b1, sp.Basic) or isinstance(b2, sp.Basic):
        return (1 - b1) / sp.sqrt((1 - b2) * (1 - b1**2 / b2))
    return (1 - b1) / math.sqrt((1 - b2) * (1 - b1**2 / b2))


def _moments(grads: np.ndarray, b1: float, b2: float) -> tuple[np.ndarray, np.ndarray]:
    m = np.zeros_like(grads[0])
    v = np.zeros_like(grads[0])
    for g in grads:
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
    return m, v


def _betas(rng) -> tuple[float, float]:
    b2 = float(rng.choice([0.999, 0.99, 0.9, rng.uniform(0.05, 0.9999)]))
    limit = math.sqrt(b2)
    b1 = float(rng.choice([0.0, 0.9 * limit, limit * (1 - log_uniform(rng, 1e-4, 0.5)), rng.uniform(0, limit)]))
    return b1, b2


def moment_ratio() -> Claim:
    """SIGNADAM Lemma D.1 (= Zhang et al. 2024 Lemma 6.5) [rebuilt].

    Claim: for ``beta1^2 < beta2``, any gradients ``g_0..g_t`` and every entry, ``|m_t| <= C_D1 sqrt(v_t)`` with
    ``C_D1 = (1 - beta1)/sqrt((1 - beta2)(1 - beta1^2/beta2))``. Proof: ``m_t = (1 - beta1) sum_tau beta1^tau g_{t-tau}
    = (1 - beta1) sum_tau (beta1/sqrt(beta2))^tau * beta2^(tau/2) g_{t-tau}``, Cauchy-Schwarz, and the geometric sum
    ``sum_tau (beta1^2/beta2)^tau <= 1/(1 - beta1^2/beta2)``. Tight as ``t -> inf`` with ``g_{t-tau}`` proportional
    to ``(beta1/beta2)^tau``.
    """

    def sample(rng):
        b1, b2 = _betas(rng)
        t = int(rng.integers(0, 40))
        grads = rng.standard_normal(t + 1) * np.exp(rng.uniform(-3, 3, size=t + 1))
        if rng.random() < 0.4:  # the Cauchy-Schwarz equality case
            grads = (b1 / b2) ** np.arange(t + 1)[::-1] * (1 + 0.01 * rng.standard_normal(t + 1))
        return grads, (b1, b2)

    def ratio(grads, betas):
        b1, b2 = betas
        m, v = _moments(grads[:, None], b1, b2)
        if v[0] <= 0:
            return -math.inf
        return float(abs(m[0]) / (moment_ratio_constant(b1, b2) * math.sqrt(v[0])))

    r, t = sp.symbols("r u", positive=True)
    j = sp.Symbol("j", integer=True, nonnegative=True)
    return Claim(
        name="adam-moment-ratio",
        source=f"{SIGNADAM} Lemma D.1 ({ZHANG}, Lemma 6.5)",
        statement="|m_t| <= (1 - beta1)/sqrt((1 - beta2)(1 - beta1^2/beta2)) sqrt(v_t) entry-wise, beta1^2 < beta2",
        latex=r"|m_t| \le \frac{1-\beta_1}{\sqrt{(1-\beta_2)(1-\beta_1^2/\beta_2)}}\sqrt{v_t}",
        status="rebuilt",
        domain="beta1^2 < beta2 < 1, any t and gradients, m_{-1} = v_{-1} = 0 (search: t < 40)",
        search=SearchProblem(sample, ratio, lambda g, b: {"grads": g.tolist(), "beta1": b[0], "beta2": b[1]}),
        symbolic_proof=lazy(lambda: derivation(
            identity("m_t = (1 - beta1) sum_tau (beta1/sqrt(beta2))^tau (beta2^(tau/2) g_(t-tau)) (regrouping)",
                     (beta1 / sp.sqrt(beta2)) ** 2 * beta2 - beta1**2),
            cited("Cauchy-Schwarz: m_t^2 <= (1 - beta1)^2 sum_tau (beta1^2/beta2)^tau * sum_tau beta2^tau "
                  "g_(t-tau)^2 and "
                  "the last sum is v_t/(1 - beta2)", "Cauchy-Schwarz inequality"),
            identity("sum_{j<=t} r^j = (1 - r^(t+1))/(1 - r) for r = beta1^2/beta2 in (0, 1)",
                     sp.simplify(sp.Sum(r**j, (j, 0, 5)).doit() - (1 - r**6) / (1 - r))),
            scalar("(1 - u)/(1 - r) <= 1/(1 - r) for u = r^(t+1) in [0, 1], r in [0, 1/2] (and any r < 1 by the "
                   "same sign argument: -u <= 0)", ScalarProblem([r, t], [(0, sp.Rational(1, 2)), (0, 1)],
                                                                (1 - t) / (1 - r), 1 / (1 - r))),
        )),
        constants={"C_D1": moment_ratio_constant(beta1, beta2)},
    )


def _iterate_search(moment: str):
    """Random data and a sequence of nearby iterates ``W_0..W_t`` (the lemmas hold for any sequence)."""

    def sample(rng):
        n, k, d, y = random_problem(rng, n_range=(1, 5), k_range=(2, 4), d_range=(1, 3))
        t = int(rng.integers(0, 12))
        H = rng.standard_normal((n, d))
        W = rng.standard_normal((k, d)) * log_uniform(rng, 0.1, 6.0)
        steps = rng.standard_normal((t + 1, k, d)) * log_uniform(rng, 1e-3, 0.5)
        b1, b2 = _betas(rng)
        return np.concatenate([H.ravel(), W.ravel(), steps.ravel()]), (n, k, d, t, y, b1, b2)

    def unpack(params, context):
        n, k, d, t, y, b1, b2 = context
        H = params[:n * d].reshape(n, d)
        W0 = params[n * d:n * d + k * d].reshape(k, d)
        steps = params[n * d + k * d:].reshape(t + 1, k, d)
        iterates = W0 + np.cumsum(steps, axis=0) - steps[0]  # W_0 = W0
        return H, iterates, y, b1, b2

    def ratio(params, context):
        H, iterates, y, b1, b2 = unpack(params, context)
        grads = np.stack([sample_gradients(W, H, y).mean(axis=0) for W in iterates])
        Wt = iterates[-1]
        t = len(iterates) - 1
        B, G = data_bound(H), proxy(Wt, H, y)
        distances = np.array([np.abs(iterates[t - tau] - Wt).max() for tau in range(t + 1)])
        if moment == "first":
            m, _ = _moments(grads, b1, b1)
            lhs = np.abs(m - (1 - b1 ** (t + 1)) * grads[-1]).sum()
            rhs = 2 * B * (1 - b1) * np.sum(b1 ** np.arange(t + 1) * np.expm1(2 * B * distances)) * G
        else:
            _, v = _moments(grads, b2, b2)
            lhs = np.abs(v - (1 - b2 ** (t + 1)) * grads[-1] ** 2).sum()
            rhs = 2 * B**2 * (1 - b2) * np.sum(b2 ** np.arange(t + 1) * np.expm1(4 * B * distances)) * G**2
        return lhs / rhs if rhs > 0 else (math.inf if lhs > 1e-15 else -math.inf)

    def describe(params, context):
        H, iterates, y, b1, b2 = unpack(params, context)
        return {"H": H.tolist(), "y": y.tolist(), "iterates": iterates.tolist(), "beta1": b1, "beta2": b2}

    return SearchProblem(sample, ratio, describe, starts=80, polish=2, max_evaluations=100)


def _geometric_identity(beta):
    t = 4  # the identity (1 - beta) sum_{tau <= t} beta^tau = 1 - beta^(t+1), checked at t = 4 ...
    j = sp.Symbol("j", integer=True, nonnegative=True)
    return sp.simplify((1 - beta) * sp.Sum(beta**j, (j, 0, t)).doit() - (1 - beta ** (t + 1)))


def first_moment() -> Claim:
    """SIGNADAM Lemma 6.1 / D.2 [rebuilt] (after Zhang et al. 2024 Lemma 6.1).

    Claim: ``||m_t - (1 - beta1^(t+1)) grad L(W_t)||_sum <= 2 B (1 - beta1) sum_{tau=0}^{t} beta1^tau
    (exp(2 B ||W_{t-tau} - W_t||_max) - 1) G(W_t)``. With Adam's steps ``||W_{s+1} - W_s||_max <= C_D1 eta_s``
    (D.1) and Ass. 3.4 with ``c_1 = 2 B C_D1`` the sum is ``<= K_1 eta_t``: the first moment is
    ``O(eta_t) G``-close to the current gradient.
    """
    return Claim(
        name="adam-first-moment",
        source=f"{SIGNADAM} Lemma 6.1 / D.2 ({ZHANG}, Lemma 6.1)",
        statement="||m_t - (1-beta1^(t+1)) grad L(W_t)||_sum <= 2B(1-beta1) sum_tau beta1^tau "
                  "(exp(2B||W_(t-tau) - W_t||_max) - 1) G(W_t)",
        latex=r"\|m_t-(1-\beta_1^{t+1})\nabla L(W_t)\|_{\mathrm{sum}} \le 2B(1-\beta_1)\sum_\tau\beta_1^\tau"
              r"(e^{2B\|W_{t-\tau}-W_t\|_{\max}}-1)G(W_t)",
        status="rebuilt",
        domain="any data, any iterates W_0..W_t, beta1 in [0, 1) (search: n <= 5, k <= 4, d <= 3, t < 12)",
        search=_iterate_search("first"),
        symbolic_proof=lazy(lambda: derivation(
            identity("(1 - beta1) sum_{tau<=t} beta1^tau = 1 - beta1^(t+1) (t = 4 shown; geometric sum), so "
                     "m_t - (1 - beta1^(t+1)) g_t = (1 - beta1) sum_tau beta1^tau (g_(t-tau) - g_t)",
                     _geometric_identity(beta1)),
            cited("triangle inequality", "norm axioms"),
            lemma("||grad L(W') - grad L(W)||_sum <= 2 B (exp(2 B ||W' - W||_max) - 1) G(W) (C.10, b = n)",
                  gradient_stability()),
        )),
    )


def second_moment() -> Claim:
    """SIGNADAM Lemma 6.2 / D.3 [rebuilt] (after Zhang et al. 2024 Lemma 6.2).

    Claim: ``||v_t - (1 - beta2^(t+1)) g_t (.) g_t||_sum <= 2 B^2 (1 - beta2) sum_tau beta2^tau
    (exp(4 B ||W_{t-tau} - W_t||_max) - 1) G(W_t)^2``. Derivation: ``|a^2 - b^2| <= |a - b| (|a| + |b|)``,
    ``||grad L(W)||_max <= B G(W)`` (every entry is an average of ``(S_c - [c = y_i]) h_ij`` with
    ``|S_c - [c = y]| <= 1 - S_y``), ``G(W_s) <= e^(2 B delta) G(W_t)`` (C.9) and C.10, then
    ``(e^x - 1)(e^x + 1) = e^(2x) - 1``. With Ass. 3.4 (``c_1 = 4 B C_D1``) the sum is ``<= K_2 eta_t``, so
    ``|sqrt(v_t) - |g_t|| = O(sqrt(eta_t)) G``: the origin of Adam's ``eta^{3/2}`` term.
    """
    x = sp.Symbol("x", positive=True)
    s0, s1 = sp.symbols("s0 s1", nonnegative=True)
    return Claim(
        name="adam-second-moment",
        source=f"{SIGNADAM} Lemma 6.2 / D.3 ({ZHANG}, Lemma 6.2)",
        statement="||v_t - (1-beta2^(t+1)) g_t^2||_sum <= 2B^2(1-beta2) sum_tau beta2^tau "
                  "(exp(4B||W_(t-tau) - W_t||_max) - 1) G(W_t)^2",
        latex=r"\|v_t-(1-\beta_2^{t+1})g_t^{\odot 2}\|_{\mathrm{sum}} \le 2B^2(1-\beta_2)\sum_\tau\beta_2^\tau"
              r"(e^{4B\|W_{t-\tau}-W_t\|_{\max}}-1)G(W_t)^2",
        status="rebuilt",
        domain="any data, any iterates W_0..W_t, beta2 in [0, 1) (search: n <= 5, k <= 4, d <= 3, t < 12)",
        search=_iterate_search("second"),
        symbolic_proof=lazy(lambda: derivation(
            identity("(1 - beta2) sum_{tau<=t} beta2^tau = 1 - beta2^(t+1) (t = 4 shown)", _geometric_identity(beta2)),
            cited("triangle inequality and |a^2 - b^2| = |a - b| |a + b| <= |a - b| (|a| + |b|)", "norm axioms"),
            identity("|S_c - [c = y]| <= 1 - S_y: for c = y it is 1 - S_y; for c != y, S_c <= sum_{c' != y} S_c' = "
                     "1 - S_y (k = 2 shown), so ||grad L(W)||_max <= B G(W)", (1 - s0) - s1 - (1 - s0 - s1)),
            lemma("G(W_s) <= e^(2 B delta) G(W_t)", proxy_ratio()),
            lemma("||g_s - g_t||_sum <= 2 B (e^(2 B delta) - 1) G(W_t)", gradient_stability()),
            identity("(e^x - 1)(e^x + 1) = e^(2x) - 1 with x = 2 B delta", sp.expand((sp.exp(x) - 1) * (sp.exp(x) + 1))
                     - (sp.exp(2 * x) - 1)),
        )),
    )


def entry_alignment() -> Claim:
    """The entry-wise core of SIGNADAM Lemma D.4 (after Zhang et al. 2024 Lemma A.3) [rebuilt].

    Claim: for vectors ``g, m, v`` (``v > 0``) in R^N with ``C = max_j |m_j|/sqrt(v_j)``,
    ``e = sum_j |m_j - g_j|`` and ``V = sum_j |v_j - g_j^2|``:

        sum_j |g_j| - sum_j g_j m_j / sqrt(v_j) <= (1 + C) (e + 2 sqrt(N V)).

    Per entry (WLOG ``g >= 0`` by the symmetry ``(g, m) -> (-g, -m)``), with ``e_j = |m_j - g_j|`` and
    ``s_j = sqrt|v_j - g_j^2|``: if ``g <= e_j + 2 s_j`` then ``g m/sqrt(v) >= -C g >= g - (1+C)(e_j + 2 s_j)``;
    otherwise ``m >= g - e_j > 0`` and ``sqrt(v) <= g + s_j``, and
    ``g (g - e)/(g + s) = g - (e + s) + s(e + s)/(g + s)``.
    Summing, ``sum_j s_j <= sqrt(N V)`` (Cauchy-Schwarz). Used with D.2/D.3 (``e <= K_1 eta G``,
    ``V <= K_2 eta G^2``) it gives ``<grad L, m/sqrt(v)> >= ||grad L||_1 - (1 + C)(K_1 eta + 2 sqrt(k d K_2 eta)) G``.
    """
    g, e, s_, C = sp.symbols("g e s C", nonnegative=True)

    def sample(rng):
        N = int(rng.integers(1, 7))
        g0 = rng.standard_normal(N) * np.exp(rng.uniform(-4, 2, size=N))
        m0 = g0 + rng.standard_normal(N) * log_uniform(rng, 1e-4, 3.0)
        v0 = np.maximum(g0**2 + rng.standard_normal(N) * log_uniform(rng, 1e-6, 3.0), 1e-12)
        return np.concatenate([g0, m0, np.log(v0)]), N

    def ratio(params, N):
        g0, m0, v0 = params[:N], params[N:2 * N], np.exp(params[2 * N:])
        C0 = float(np.max(np.abs(m0) / np.sqrt(v0)))
        gap = float(np.abs(g0).sum() - np.sum(g0 * m0 / np.sqrt(v0)))
        allowance = (1 + C0) * (np.abs(m0 - g0).sum() + 2 * math.sqrt(N * np.abs(v0 - g0**2).sum()))
        return gap / allowance if allowance > 0 else (math.inf if gap > 1e-12 else -math.inf)

    return Claim(
        name="adam-entry-alignment",
        source=f"{SIGNADAM} Lemma D.4 (entry-wise core; {ZHANG}, Lemma A.3)",
        statement="sum|g| - sum g m/sqrt(v) <= (1 + max|m|/sqrt(v)) (sum|m - g| + 2 sqrt(N sum|v - g^2|))",
        latex=r"\|g\|_1-\sum_j \tfrac{g_j m_j}{\sqrt{v_j}} \le (1+C)\big(\|m-g\|_1+2\sqrt{N\|v-g^{\odot2}\|_1}\big)",
        status="rebuilt",
        domain="g, m in R^N, v in (0, inf)^N, any N (search: N <= 6)",
        search=SearchProblem(sample, ratio, lambda p, N: {"g": p[:N].tolist(), "m": p[N:2 * N].tolist(),
                                                          "v": np.exp(p[2 * N:]).tolist()}),
        symbolic_proof=lazy(lambda: derivation(
            identity("case g <= e + 2s: g m/sqrt(v) >= -C g, and -C g - (g - (1+C)(e + 2s)) = (1+C)(e + 2s - g) >= 0",
                     -C * g - (g - (1 + C) * (e + 2 * s_)) - (1 + C) * (e + 2 * s_ - g)),
            identity("case g > e + 2s: g (g - e)/(g + s) = g - (e + s) + s (e + s)/(g + s) >= g - (1+C)(e + 2s)",
                     g * (g - e) / (g + s_) - (g - (e + s_) + s_ * (e + s_) / (g + s_))),
            cited("v <= g^2 + s^2 <= (g + s)^2 and m >= g - e > 0 in the second case; sum_j s_j <= sqrt(N sum_j s_j^2)",
                  "monotonicity of sqrt; Cauchy-Schwarz"),
        )),
    )


CLAIMS = [moment_ratio(), first_moment(), second_moment(), entry_alignment()]
