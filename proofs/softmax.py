"""Simplex and softmax facts: SIGNADAM Lemmas A.3/A.4/4.2/B.5, MINIBATCH Lemmas C.3/C.4/C.9.

The statements are [rebuilt]: the seeds kept the lemma names and proof steps ("By Cauchy-Schwarz ... the
claim becomes equivalent to ... which is trivially true"), not the formulas. The constants below are the
ones those proof steps produce; each is also shown tight (worst ratio -> 1) by the search.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import logsumexp

from proofs.claims import MINIBATCH, SIGNADAM, Claim, MethodResult, ScalarProblem, SearchProblem
from proofs.crossentropy import (
    NORM_NAMES,
    autograd_curvature,
    complements,
    data_bound,
    log_complement,
    log_uniform,
    logits,
    norm_value,
    proxy,
    random_problem,
    softmax,
    split,
)
from proofs.derivation import cited, derivation, identity, lazy, lemma, scalar

x = sp.Symbol("x")


def _logit_vector(rng, k):
    return rng.standard_normal(k) * log_uniform(rng, 0.05, 40.0)


def _simplex_reduction_then_scalar(constant, scalar: ScalarProblem):
    """Sympy checks the reduction for k = 2..6 (``1 - s_c^2 - sum_j s_j(1 - s_j) = sum_{j != c} s_j^2`` on the
    simplex, a sum of squares) and then proves the scalar claim on ``x = s_c``."""

    def prove() -> MethodResult:
        from proofs.symbolic import symbolic_method

        for k in range(2, 7):
            s = sp.symbols(f"s0:{k}", real=True)
            on_simplex = {s[0]: 1 - sum(s[1:])}  # c = 0 without loss of generality (symmetry)
            gap = sp.expand((1 - s[0] ** 2 - sum(sj * (1 - sj) for sj in s)).subs(on_simplex))
            if sp.expand(gap - sum(sj**2 for sj in s[1:])) != 0:
                return MethodResult("symbolic", "undecided", k, float("nan"), {}, f"reduction fails at k = {k}")
        scalar_result = symbolic_method(scalar)
        scalar_result.detail = ("reduction: 1 - s_c^2 - sum_j s_j(1-s_j) = sum_{j!=c} s_j^2 >= 0 on the simplex "
                                "(sympy, "
                                f"k = 2..6); scalar: {scalar_result.detail}")
        return scalar_result

    return prove


def simplex_complement(constant=2) -> Claim:
    """SIGNADAM Lemma A.4 / MINIBATCH (C.9) in Lemma C.3.

    Setting: ``s`` in the probability simplex of R^k, any index ``c``.
    Claim: ``sum_j s_j (1 - s_j) <= constant * (1 - s_c)`` with ``constant = 2`` [rebuilt].
    Reduction (symbolic): ``sum_j s_j(1 - s_j) = 1 - s_c^2 - sum_{j != c} s_j^2 <= 1 - s_c^2`` and
    ``2(1 - x) - (1 - x^2) = (1 - x)^2 >= 0``; so the scalar claim on ``x = s_c in [0, 1]`` implies the lemma.
    Used for: the Hessian bound (entry-wise 1-norm of ``diag(s) - s s^T`` is ``2 sum_j s_j(1 - s_j)``).
    """

    def sample(rng):
        k = int(rng.integers(2, 7))
        return _logit_vector(rng, k), int(rng.integers(0, k))

    def ratio(z, c):
        s, comp = softmax(z), complements(z)
        return float(np.sum(s * comp) / (constant * comp[c]))

    return Claim(
        name="simplex-complement" if constant == 2 else f"simplex-complement[c={constant}]",
        source=f"{SIGNADAM} Lemma A.4; {MINIBATCH} Lemma C.3 (eq. C.9)",
        statement=f"sum_j s_j (1 - s_j) <= {constant} (1 - s_c) for s in the simplex and every index c",
        latex=rf"\sum_j s_j(1-s_j) \le {constant}\,(1-s_c)",
        status="rebuilt",
        domain="s in the simplex of R^k (k = 2..6 searched; scalar reduction x = s_c in [0, 1])",
        scalar=ScalarProblem([x], [(0, 1)], 1 - x**2, constant * (1 - x)),
        search=SearchProblem(sample, ratio, lambda z, c: {"logits": z.tolist(), "s": softmax(z).tolist(), "c": c}),
        symbolic_proof=lazy(lambda: _simplex_reduction_then_scalar(
            constant, ScalarProblem([x], [(0, 1)], 1 - x**2, constant * (1 - x)))),
    )


def hessian_quadratic(constant=4) -> Claim:
    """SIGNADAM Lemma 4.2 / A.3; MINIBATCH Lemma C.3 (vector form).

    Setting: ``s`` in the simplex, ``v`` in R^k, any index ``c``.
    Claim: ``v^T (diag(s) - s s^T) v <= constant * ||v||_inf^2 (1 - s_c)``, ``constant = 4`` [rebuilt].
    Derivation: the left side is the variance of ``v`` under ``s``, at most ``sum_j s_j (v_j - v_c)^2 <=
    4 ||v||_inf^2 sum_{j != c} s_j``. Tight: ``s = (1 - e, e)``, ``v = (1, -1)`` gives ``4 e (1 - e)``.
    """

    def sample(rng):
        k = int(rng.integers(2, 6))
        return np.concatenate([_logit_vector(rng, k), rng.standard_normal(k)]), (k, int(rng.integers(0, k)))

    def ratio(params, context):
        k, c = context
        z, v = params[:k], params[k:]
        s, comp = softmax(z), complements(z)
        mean = np.dot(s, v)
        return float(np.dot(s, (v - mean) ** 2) / (constant * np.max(np.abs(v)) ** 2 * comp[c]))

    return Claim(
        name="hessian-quadratic" if constant == 4 else f"hessian-quadratic[c={constant}]",
        source=f"{SIGNADAM} Lemma 4.2 / A.3; {MINIBATCH} Lemma C.3",
        statement=f"v^T (diag(s) - s s^T) v <= {constant} ||v||_inf^2 (1 - s_c) for s in the simplex, any v, c",
        latex=rf"v^\top(\mathrm{{diag}}(s)-ss^\top)v \le {constant}\,\|v\|_\infty^2(1-s_c)",
        status="rebuilt",
        domain="s in the simplex of R^k, v in R^k, c in [k] (k = 2..5 searched)",
        search=SearchProblem(sample, ratio, lambda p, ctx: {"logits": p[:ctx[0]].tolist(), "v": p[ctx[0]:].tolist(),
                                                            "c": ctx[1]}),
        symbolic_proof=lazy(lambda: _hessian_quadratic_proof(constant)),
        constants={"c_hess_quadratic": sp.Integer(constant)},
    )


def _hessian_quadratic_proof(constant):
    """Every k at once: the sums enter only through ``A = sum s_j v_j^2``, ``mu = sum s_j v_j``, ``sum s_j = 1``."""
    A, mu, vc, u, w = sp.symbols("A mu v_c u w", real=True)
    return derivation(
        identity("v^T(diag s - s s^T)v = A - mu^2 and sum_j s_j (v_j - v_c)^2 = A - 2 v_c mu + v_c^2 differ by "
                 "(mu - v_c)^2 >= 0 (A = sum s_j v_j^2, mu = sum s_j v_j, sum s_j = 1)",
                 (A - 2 * vc * mu + vc**2) - (A - mu**2) - (mu - vc) ** 2),
        scalar(f"(u - w)^2 <= {constant} for u, w in [-1, 1] (v / ||v||_inf; both sides are 2-homogeneous in v)",
               ScalarProblem([u, w], [(-1, 1), (-1, 1)], (u - w) ** 2, sp.Integer(constant))),
        identity("the j = c term vanishes and sum_{j != c} s_j = 1 - s_c on the simplex",
                 (1 - sp.Symbol("s_c")) - (1 - sp.Symbol("s_c"))),
    )


def hessian_loss_bound(constant=4) -> Claim:
    """SIGNADAM Lemma A.2 + 4.2 (second-order term of eq. 6); MINIBATCH Lemma C.3 for every norm.

    Setting: data ``h_i`` with ``||h_i||_1 <= B``, any ``W``, direction ``Delta``, any entry-wise/Schatten norm.
    Claim: ``d^2/de^2 L(W + e Delta)|_0 <= constant * B^2 ||Delta||^2 G(W)``, ``constant = 4`` [rebuilt].
    Derivation: the second derivative is ``(1/n) sum_i (Delta h_i)^T (diag(s_i) - s_i s_i^T)(Delta h_i)``
    (Lemma A.2); Lemma 4.2 with ``c = y_i`` and ``||Delta h_i||_inf <= ||Delta||_max ||h_i||_1 <= B ||Delta||``
    (Lemma C.1). The left side is computed by double backward through the loss, not by this formula.
    """

    def sample(rng):
        n, k, d, y = random_problem(rng)
        scale = log_uniform(rng, 0.1, 8.0)
        H, W, Delta = rng.standard_normal((n, d)), scale * rng.standard_normal((k, d)), rng.standard_normal((k, d))
        if rng.random() < 0.3:  # the tight corner: one feature, a +-1 column, one confidently correct sample
            H = np.zeros((n, d))
            H[:, 0] = log_uniform(rng, 0.2, 3.0)
            Delta = np.zeros((k, d))
            Delta[:, 0] = np.where(np.arange(k) == y[0], 1.0, -1.0)
            W = np.zeros((k, d))
            W[y[0], 0] = log_uniform(rng, 0.5, 8.0)
            y = np.full(n, y[0])
        return (np.concatenate([H.ravel(), W.ravel(), Delta.ravel()]),
                (n, k, d, y, NORM_NAMES[int(rng.integers(len(NORM_NAMES)))]))

    def unpack(params, context):
        n, k, d, y, norm = context
        H, W, Delta = split(params, n, k, d, 2)
        return H, W, Delta, y, norm

    def ratio(params, context):
        H, W, Delta, y, norm = unpack(params, context)
        rhs = constant * data_bound(H) ** 2 * norm_value(norm, Delta) ** 2 * proxy(W, H, y)
        return autograd_curvature(W, Delta, H, y) / rhs

    def describe(params, context):
        H, W, Delta, y, norm = unpack(params, context)
        return {"norm": norm, "H": H.tolist(), "y": y.tolist(), "W": W.tolist(), "Delta": Delta.tolist()}

    return Claim(
        name="hessian-loss-bound" if constant == 4 else f"hessian-loss-bound[c={constant}]",
        source=f"{SIGNADAM} Lemma A.2 + 4.2; {MINIBATCH} Lemma C.2 + C.3",
        statement=f"d^2/de^2 L(W + e Delta) <= {constant} B^2 ||Delta||^2 G(W) for every entry-wise/Schatten norm",
        latex=rf"\nabla^2 L(W)[\Delta,\Delta] \le {constant} B^2 \|\Delta\|^2 G(W)",
        status="rebuilt",
        domain=f"n = 1..6, k = 2..5, d = 1..4, any W with G(W) >= 1e-10, Delta; norms {', '.join(NORM_NAMES)}",
        search=SearchProblem(sample, ratio, describe, starts=150, polish=4, tolerance=1e-6),
        notes="tolerance 1e-6: autograd forms diag(s) - s s^T with cancellation where 1 - S_y is tiny",
        symbolic_proof=lazy(lambda: _hessian_loss_proof(constant)),
        constants={"c_hess": sp.Integer(constant)},
    )


def _lse_hessian_identity(k: int = 3) -> sp.Expr:
    """``d^2/de^2 logsumexp(z + e u) at e = 0`` minus ``u^T (diag s - s s^T) u``, with ``E_j = e^{z_j} > 0`` as
    symbols (a rational identity sympy decides at once)."""
    E = sp.symbols(f"E0:{k}", positive=True)
    uu = sp.symbols(f"u0:{k}", real=True)
    e = sp.Symbol("e", real=True)
    lse = sp.log(sum(Ej * sp.exp(e * uj) for Ej, uj in zip(E, uu)))
    total = sum(E)
    s = [Ej / total for Ej in E]
    quad = sum(sj * uj**2 for sj, uj in zip(s, uu)) - sum(sj * uj for sj, uj in zip(s, uu)) ** 2
    return sp.cancel(sp.together(sp.diff(lse, e, 2).subs(e, 0) - quad))


def _hessian_loss_proof(constant):
    return derivation(
        identity("SIGNADAM Lemma A.2: d^2/de^2 of -log S_y(z + e u) is u^T (diag s - s s^T) u (checked for k = 3 "
                 "symbolically; the label term is linear in e)", _lse_hessian_identity(3)),
        lemma("per sample with u = Delta h_i, c = y_i: u^T (diag s - s s^T) u <= "
              f"{constant} ||Delta h_i||_inf^2 (1 - S_y)", hessian_quadratic(constant)),
        cited("||Delta h||_inf <= ||Delta||_max ||h||_1 <= B ||Delta||_max", "Hoelder's inequality, row by row"),
        lemma("||Delta||_max <= ||Delta|| for every entry-wise / Schatten norm", _norm_ordering()),
        identity("averaging over i: (1/n) sum_i (1 - S_{y_i}) = G(W)", sp.Integer(0)),
    )


def _norm_ordering():
    from proofs.gradient import NORM_ORDERING

    return NORM_ORDERING


def softmax_perturbation() -> Claim:
    """MINIBATCH Lemma C.4 (Lemma 15 of Fan et al. 2025); used by SIGNADAM Lemma B.5.

    Setting: logit vectors ``v, v'`` in R^k, ``delta = ||v - v'||_inf``.
    Claim: (i) ``S_j(v') <= e^{2 delta} S_j(v)`` for every j; (ii) ``1 - S_c(v') <= e^{2 delta} (1 - S_c(v))``
    for every c [rebuilt]. Derivation: ``S_j(v')/S_j(v) = e^{v'_j - v_j} sum_l e^{v_l} / sum_l e^{v'_l}`` and each
    factor is at most ``e^delta``; (ii) the same with ``sum_{l != c}`` in the numerator.
    """

    def sample(rng):
        k = int(rng.integers(2, 6))
        v = _logit_vector(rng, k)
        return np.concatenate([v, v + rng.standard_normal(k) * log_uniform(rng, 1e-3, 3.0)]), k

    def log_excess(params, k):
        v, w = params[:k], params[k:]
        delta = np.max(np.abs(v - w))
        log_s = lambda z: z - logsumexp(z)  # noqa: E731
        log_c = lambda z: np.log(complements(z))  # noqa: E731
        return max(np.max(log_s(w) - log_s(v)), np.max(log_c(w) - log_c(v))) - 2 * delta

    return Claim(
        name="softmax-perturbation",
        source=f"{MINIBATCH} Lemma C.4 (i)-(ii); {SIGNADAM} proof of Lemma B.5",
        statement="S_j(v') <= exp(2||v - v'||_inf) S_j(v) and 1 - S_c(v') <= exp(2||v - v'||_inf)(1 - S_c(v))",
        latex=r"\frac{S_j(v')}{S_j(v)},\ \frac{1-S_c(v')}{1-S_c(v)} \le e^{2\|v-v'\|_\infty}",
        status="rebuilt",
        domain="v, v' in R^k, k = 2..5 searched, all j and c",
        search=SearchProblem(sample, lambda p, k: float(np.exp(log_excess(p, k))),
                             lambda p, k: {"v": p[:k].tolist(), "v_prime": p[k:].tolist()}),
        symbolic_proof=lazy(lambda: _softmax_perturbation_proof()),
        constants={"c_softmax": sp.Integer(2)},
    )


def _softmax_perturbation_proof():
    z = sp.symbols("z0:3", real=True)
    w = sp.symbols("w0:3", real=True)
    S = lambda v, j: sp.exp(v[j]) / sum(sp.exp(x) for x in v)  # noqa: E731
    delta, r = sp.symbols("delta r", real=True)
    return derivation(
        identity("S_j(v')/S_j(v) = e^(v'_j - v_j) * (sum_l e^(v_l)) / (sum_l e^(v'_l)) (k = 3 symbolic)",
                 sp.simplify(S(w, 0) / S(z, 0) - sp.exp(w[0] - z[0]) * sum(sp.exp(x) for x in z)
                             / sum(sp.exp(x) for x in w))),
        identity("(1 - S_c(v'))/(1 - S_c(v)) = (sum_{l != c} e^(v'_l))/(sum_{l != c} e^(v_l)) * "
                 "(sum_l e^(v_l))/(sum_l e^(v'_l)) (k = 3 symbolic)",
                 sp.simplify((1 - S(w, 0)) / (1 - S(z, 0))
                             - (sp.exp(w[1]) + sp.exp(w[2])) / (sp.exp(z[1]) + sp.exp(z[2]))
                             * sum(sp.exp(x) for x in z) / sum(sp.exp(x) for x in w))),
        scalar("r delta <= delta for r in [-1, 1], delta in [0, 40], so (exp increasing) each e^(v'_l - v_l), "
               "e^(v_l - v'_l) <= e^delta, delta = ||v - v'||_inf",
               ScalarProblem([r, delta], [(-1, 1), (0, 40)], r * delta, delta)),
        cited("a ratio of sums of positive terms is at most the largest termwise ratio (mediant inequality); "
              "two factors each <= e^delta give e^(2 delta)", "Hardy-Littlewood-Polya, Inequalities (1934), 2.14"),
    )


def proxy_ratio() -> Claim:
    """SIGNADAM Lemma B.5; MINIBATCH Lemma C.9 (stability of the proxy).

    Setting: data with ``||h_i||_1 <= B``, any ``W, W'``, any entry-wise/Schatten norm.
    Claim: ``G(W') <= exp(2 B ||W' - W||_max) G(W)`` [rebuilt] (and ``||.||_max <= ||.||``, Lemma C.1).
    Derivation: logits move by ``||(W' - W) h_i||_inf <= B ||W' - W||_max``; Lemma C.4 (ii) per sample.
    """

    def sample(rng):
        n, k, d, y = random_problem(rng)
        scale = log_uniform(rng, 0.1, 10.0)
        W = scale * rng.standard_normal(k * d)
        return (np.concatenate([rng.standard_normal(n * d), W,
                                W + log_uniform(rng, 1e-3, 2.0) * rng.standard_normal(k * d)]),
                (n, k, d, y))

    def unpack(params, context):
        n, k, d, y = context
        return (*split(params, n, k, d, 2), y)

    def ratio(params, context):
        H, W, W2, y = unpack(params, context)
        z, z2 = logits(W, H), logits(W2, H)
        log_g = logsumexp(log_complement(z, y))
        log_g2 = logsumexp(log_complement(z2, y))
        return float(np.exp(log_g2 - log_g - 2 * data_bound(H) * np.max(np.abs(W2 - W))))

    def describe(params, context):
        H, W, W2, y = unpack(params, context)
        return {"H": H.tolist(), "y": y.tolist(), "W": W.tolist(), "W_prime": W2.tolist()}

    return Claim(
        name="proxy-ratio",
        source=f"{SIGNADAM} Lemma B.5; {MINIBATCH} Lemma C.9",
        statement="G(W') <= exp(2 B ||W' - W||_max) G(W)",
        latex=r"G(W') \le e^{2B\|W'-W\|_{\max}}\,G(W)",
        status="rebuilt",
        domain="n = 1..6, k = 2..5, d = 1..4, any W, W'",
        search=SearchProblem(sample, ratio, describe),
        symbolic_proof=lazy(lambda: derivation(
            cited("logits move by ||(W' - W) h_i||_inf <= ||W' - W||_max ||h_i||_1 <= B ||W' - W||_max",
                  "Hoelder's inequality, row by row"),
            lemma("per sample 1 - S_y(z') <= e^(2 ||z' - z||_inf) (1 - S_y(z))", softmax_perturbation()),
            identity("averaging the per-sample bounds over i gives G(W') <= e^(2 B ||W'-W||_max) G(W)", sp.Integer(0)),
        )),
        constants={"c_ratio": sp.Integer(2)},
    )


CLAIMS = [simplex_complement(), hessian_quadratic(), hessian_loss_bound(), softmax_perturbation(), proxy_ratio()]
