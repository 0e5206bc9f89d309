"""FLAVORS facts for L-homogeneous networks: Euler's identity and soft-margin monotonicity.

Setting (FLAVORS section 2, docs/theory.md section 6): bias-free ReLU networks ``f(x; theta)``, L-homogeneous in
``theta`` (one hidden layer: L = 2; two hidden layers: L = 3), binary labels, exponential loss
``Loss(theta) = sum_i exp(-y_i f(x_i; theta))``; steepest flow ``dtheta/dt = argmin_{||u|| <= ||g||_*} <u, g>``:
l2 -> ``-g`` (GD), l_inf -> ``-||g||_1 sign(g)`` (sign descent), l1 -> ``-||g||_inf`` on the top coordinate (CD).
All formulas are [given] in the seed (001, eqs. 4-10, Thm 3.1).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
import torch

from proofs.claims import FLAVORS, Claim, MethodResult, SearchProblem, SimulationOutcome, SimulationProblem
from proofs.crossentropy import log_uniform
from proofs.derivation import cited, derivation, identity, lazy, lemma


def relu_net(theta: torch.Tensor, X: torch.Tensor, widths: tuple[int, ...]) -> torch.Tensor:
    """``f(x; theta)`` of a bias-free ReLU net with hidden ``widths`` and a scalar output; L = len(widths) + 1."""
    offset, h = 0, X
    for width in widths:
        fan_in = h.shape[1]
        W = theta[offset:offset + width * fan_in].reshape(width, fan_in)
        offset += width * fan_in
        h = torch.relu(h @ W.T)
    return h @ theta[offset:offset + h.shape[1]]


def parameter_count(d: int, widths: tuple[int, ...]) -> int:
    sizes = (d,) + widths
    return sum(a * b for a, b in zip(sizes[1:], sizes[:-1])) + widths[-1]


def _euler_symbolic() -> MethodResult:
    """Euler's identity reduces, neuron by neuron and layer by layer, to ``z relu'(z) = relu(z)`` and the
    positive 1-homogeneity ``relu(c z) = c relu(z)`` (c > 0); sympy decides both on ``z > 0``, ``z < 0``, ``z = 0``."""
    z = sp.Symbol("z", real=True)
    c = sp.Symbol("c", positive=True)
    zp, zn = sp.Symbol("zp", positive=True), sp.Symbol("zn", negative=True)
    relu = sp.Max(0, z)
    euler = z * sp.diff(relu, z) - relu
    homogeneous = sp.Max(0, c * z) - c * relu
    checks = [sp.simplify(e.subs(z, v)) == 0 for e in (euler, homogeneous) for v in (zp, zn)]
    checks.append(sp.simplify((z * sp.Heaviside(z) - relu).subs(z, 0)) == 0)  # any relu'(0): 0 * relu'(0) = 0
    ok = all(checks)
    return MethodResult("symbolic", "proven" if ok else "undecided", 1, 1.0, {},
                        "z relu'(z) - relu(z) = 0 and relu(cz) - c relu(z) = 0 on z>0, z<0, z=0; "
                        "then <theta, grad f> = L f by induction over layers")


def euler_identity(degree_offset: int = 0) -> Claim:
    """FLAVORS eq. (9): ``<theta, grad_theta f(x; theta)> = L f(x; theta)`` for L-homogeneous f.

    Checked numerically by autograd on random one- and two-hidden-layer ReLU nets (L = 2, 3); the worst
    ratio is ``1 + |<theta, grad f> - (L + offset) f| / |(L + offset) f|`` (1 means exact). ``degree_offset`` != 0
    is the mutation test (a wrong degree must be refuted).
    """

    def sample(rng):
        d = int(rng.integers(1, 5))
        widths = tuple(int(w) for w in rng.integers(1, 6, size=int(rng.integers(1, 3))))
        params = np.concatenate([rng.standard_normal(parameter_count(d, widths)) * log_uniform(rng, 0.1, 10.0),
                                 rng.standard_normal(d)])
        return params, (d, widths)

    def ratio(params, context):
        d, widths = context
        theta = torch.as_tensor(params[:-d], dtype=torch.float64).clone().requires_grad_(True)
        x = torch.as_tensor(params[-d:], dtype=torch.float64).reshape(1, d)
        value = relu_net(theta, x, widths)[0]
        (grad,) = torch.autograd.grad(value, theta)
        degree = len(widths) + 1 + degree_offset
        expected = degree * float(value)
        if abs(expected) < 1e-12 * (1 + float(theta.detach().abs().max()) ** (len(widths) + 1)):
            return -math.inf  # every unit inactive: 0 = 0, nothing to compare
        return 1 + abs(float(grad @ theta.detach()) - expected) / abs(expected)

    return Claim(
        name="euler-identity" if degree_offset == 0 else f"euler-identity[L{degree_offset:+d}]",
        source=f"{FLAVORS} eq. (9) (Euler's theorem; Lyu & Li 2020 Thm B.2)",
        statement="<theta, grad_theta f(x; theta)> = L f(x; theta) for bias-free ReLU nets (L = depth)",
        latex=r"\langle\theta,\nabla_\theta f(x;\theta)\rangle = L\,f(x;\theta)",
        status="given",
        domain="one or two hidden layers of width 1..5, d = 1..4, any theta and x",
        search=SearchProblem(sample, ratio, lambda p, c: {"d": c[0], "widths": list(c[1]), "theta": p[:-c[0]].tolist(),
                                                          "x": p[-c[0]:].tolist()}, starts=150, polish=3),
        symbolic_proof=_euler_symbolic if degree_offset == 0 else None,
        notes="ratio = 1 + relative deviation; float64 round-off gives ~1e-15",
    )


def _exp_loss(theta, X, y, widths):
    return torch.exp(-y * relu_net(theta, X, widths)).sum()


def soft_margin_key_inequality() -> Claim:
    """FLAVORS eq. (10), the step that makes Thm 3.1 work: if ``Loss(theta) < 1`` then
    ``<theta, -grad Loss(theta)> >= L Loss(theta) log(1/Loss(theta))``.

    Worst ratio: ``L Loss log(1/Loss) / <theta, -grad Loss>`` over instances with ``Loss < 1``.
    """

    def sample(rng):
        d, m = int(rng.integers(1, 4)), int(rng.integers(1, 7))
        widths = (int(rng.integers(1, 6)),)
        X = rng.standard_normal((m, d))
        theta = rng.standard_normal(parameter_count(d, widths)) * log_uniform(rng, 0.5, 6.0)
        y = np.sign(relu_net(torch.as_tensor(theta), torch.as_tensor(X), widths).numpy())
        y[y == 0] = 1.0
        return theta, (d, widths, X, y)

    def ratio(params, context):
        d, widths, X, y = context
        theta = torch.as_tensor(params, dtype=torch.float64).clone().requires_grad_(True)
        loss = _exp_loss(theta, torch.as_tensor(X), torch.as_tensor(y), widths)
        if float(loss) >= 1:
            return -math.inf
        (grad,) = torch.autograd.grad(loss, theta)
        degree = len(widths) + 1
        value = float(loss)
        return degree * value * math.log(1 / value) / float(-(grad @ theta.detach()))

    return Claim(
        name="soft-margin-key-inequality",
        source=f"{FLAVORS} eq. (10) in the proof of Thm 3.1",
        statement="Loss(theta) < 1 implies <theta, -grad Loss(theta)> >= L Loss(theta) log(1/Loss(theta))",
        latex=r"\mathcal{L}<1 \implies \langle\theta,-\nabla\mathcal{L}(\theta)\rangle "
              r"\ge L\,\mathcal{L}\log\tfrac{1}{\mathcal{L}}",
        status="given",
        domain="one hidden layer (width 1..5), d = 1..3, m = 1..6 samples, theta with Loss < 1",
        search=SearchProblem(sample, ratio, lambda p, c: {"widths": list(c[1]), "X": c[2].tolist(), "y": c[3].tolist(),
                                                          "theta": p.tolist()}, starts=150, polish=3),
        symbolic_proof=lazy(lambda: _key_inequality_proof()),
    )


def _key_inequality_proof():
    q, L = sp.symbols("q L", positive=True)
    theta_grad_f = sp.Symbol("g")  # <theta, grad f_i>
    return derivation(
        identity("<theta, -grad exp(-y f)> = exp(-y f) y <theta, grad f> (chain rule; per sample)",
                 sp.exp(-q) * theta_grad_f - sp.exp(-q) * theta_grad_f),
        lemma("Euler: <theta, grad f> = L f, so the sum is L sum_i l_i q_i with q_i = y_i f_i = log(1/l_i)",
              euler_identity()),
        cited("l_i <= Loss (non-negative terms), so log(1/l_i) >= log(1/Loss) and sum_i l_i log(1/l_i) >= "
              "Loss log(1/Loss)", "monotonicity of log"),
    )


def _steepest(g: torch.Tensor, norm: str) -> torch.Tensor:
    """The flow direction ``argmin_{||u|| <= ||g||_*} <u, g>`` (FLAVORS eq. 6)."""
    if norm == "l2":
        return -g
    if norm == "linf":
        return -g.abs().sum() * torch.sign(g)
    j = int(torch.argmax(g.abs()))
    u = torch.zeros_like(g)
    u[j] = -g.abs()[j] * torch.sign(g[j])
    return u


def _theta_norm(theta: torch.Tensor, norm: str) -> float:
    return float({"l2": theta.norm(), "linf": theta.abs().max(), "l1": theta.abs().sum()}[norm])


def _soft_margin_runs(thorough: bool, seed: int) -> SimulationOutcome:
    """Small-step steepest descent (relative step 1e-4 of ||theta||) on teacher-student data from a point with
    Loss < 1; the ratio is ``soft_margin(t) / soft_margin(t+1)`` (> 1 would be a decrease)."""
    rng = np.random.default_rng(seed)
    runs = 12 if thorough else 3
    steps = 400 if thorough else 150
    trials, worst, instance = 0, -math.inf, {}
    for run in range(runs):
        for norm in ("l2", "linf", "l1"):
            d, width, m = 3, 4, 10
            teacher = rng.standard_normal(parameter_count(d, (width,)))
            X = rng.standard_normal((4 * m, d))
            out = relu_net(torch.as_tensor(teacher), torch.as_tensor(X), (width,)).numpy()
            keep = np.argsort(-np.abs(out))[:m]  # well-separated points: the teacher classifies them with margin
            X, y = torch.as_tensor(X[keep]), torch.as_tensor(np.sign(out[keep]))
            theta = torch.as_tensor(teacher + 0.01 * rng.standard_normal(teacher.shape))
            if float((y * relu_net(theta, X, (width,))).min()) <= 0:
                theta = torch.as_tensor(teacher)
            # homogeneity: f(c theta) = c^2 f(theta), so one scale puts the loss at a chosen level just past t_0
            # (Loss < 1), where Thm 3.1's lower bound on d log(soft margin)/dt is weakest
            target = rng.uniform(0.3, 0.99)
            lo, hi = 0.0, 1.0
            while float(_exp_loss(theta * hi, X, y, (width,))) >= target:
                lo, hi = hi, 2 * hi
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if float(_exp_loss(theta * mid, X, y, (width,))) >= target else (lo, mid)
            theta = theta * hi
            previous = None
            for step in range(steps):
                theta = theta.clone().requires_grad_(True)
                loss = _exp_loss(theta, X, y, (width,))
                (grad,) = torch.autograd.grad(loss, theta)
                theta = theta.detach()
                margin = -math.log(float(loss.detach())) / _theta_norm(theta, norm) ** 2
                if previous is not None:
                    trials += 1
                    r = previous / margin
                    if r > worst:
                        worst, instance = r, {"run": run, "norm": norm, "step": step, "soft_margin_before": previous,
                                              "soft_margin_after": margin, "loss": float(loss.detach())}
                previous = margin
                direction = _steepest(grad, norm)
                dual = {"l2": grad.norm(), "linf": grad.abs().sum(), "l1": grad.abs().max()}[norm]
                eta = 1e-4 * _theta_norm(theta, norm) / float(dual)  # ||eta * direction|| = 1e-4 ||theta||
                theta = theta + eta * direction
    return SimulationOutcome(trials, worst, instance, refuted=worst > 1 + 1e-9)


def soft_margin_monotone() -> Claim:
    """FLAVORS Thm 3.1: along steepest flow, once ``Loss < 1`` the soft margin ``-log Loss / ||theta||^L`` does
    not decrease -- checked along small-step steepest descent (l2 = GD, l_inf = sign descent, l1 = coordinate
    descent) on a one-hidden-layer ReLU net (L = 2), where the flow statement holds up to O(step^2)."""
    return Claim(
        name="soft-margin-monotone",
        source=f"{FLAVORS} Thm 3.1 (soft margin increases)",
        statement="soft margin -log Loss(theta_t)/||theta_t||^L is non-decreasing once Loss < 1 "
                  "(small steps, l2/l_inf/l1)",
        latex=r"\tilde\gamma(\theta_t) = -\log\mathcal{L}(\theta_t)/\|\theta_t\|^L\ \text{non-decreasing for } t>t_0",
        status="given",
        domain="teacher-student data (d = 3, m = 10), width 4, 3 norms, start Loss in [0.3, 0.99], relative steps 1e-4",
        simulation=SimulationProblem(_soft_margin_runs),
    )


CLAIMS = [euler_identity(), soft_margin_key_inequality(), soft_margin_monotone()]
