"""Where the descent step can first be trusted on a run: ``t_0`` with the curvature of the step actually taken.

Setting (docs/theory.md section 3, step 2) [derived]: every template's descent inequality
``L(W_{t+1}) <= L(W_t) - eta_t (gamma_ref - noise_t) G(W_t)`` holds with ``noise_t = sum_j c_j eta_t^{q_j}``, and the
curvature coefficient in ``c_j`` is ``alpha = 2 B^2 exp(2 B ||W_{t+1} - W_t||)``
(:func:`rates.symbolic.theorems.base.curvature_alpha`: SIGNADAM Lemma B.5 / MINIBATCH Lemma C.9 bound the proxy
ratio over the step). The rebuilt ``t_0`` bounds the step by ``eta_0`` once for all ``t``; a normalised step of
step ``t`` moves ``W`` by exactly ``eta_t`` in the algorithm's norm, so the same lemmas give the smaller
``alpha_t = 2 B^2 exp(2 B eta_t)``.

Some noise bounds need step sizes further back: the VR deviation at step ``t`` is bounded through the epoch's drift
``||W_t - W~||_max <= m eta_{t-m}`` (:func:`rates.symbolic.theorems.variance_reduction.vr_step_noise`). A template
states those in ``step_local`` with ``eta_lag = eta_{max(t - lag, 0)}``; on the schedule
``eta_lag = eta_0 max((eta_0/eta_t)^{1/a} - lag, 2)^{-a}``, increasing in ``eta_t``, so the search below is unchanged.

Quantity: the *descent start* ``t_d`` = first ``t`` from which ``c_j(eta_t) eta_t^{q_j} <= gamma_ref/(2J)`` for every
noise term whose coefficient is known on the data (each side is increasing in ``eta``, and ``eta_t`` is
non-increasing, so once it holds it holds for good). Terms with constants the data do not give (Adam's moment
mismatch ``c_adam``) are left out, which can only move ``t_d`` earlier: ``t_d`` is a lower bound of the step-local
``t_0``. Before ``t_d`` the descent lemma itself is not established, so no margin bound speaks yet.

Use: a ``violated`` verdict needs a window that starts at or after ``t_d``
(:func:`rates.studies.fitting.fit_group`). The scale matters exactly as it should: data multiplied by ``c`` is the
run with ``eta_0`` multiplied by ``c`` (logits ``W (c h) = (c W) h``); ``B`` and ``gamma`` scale by ``c``, the
condition ``2 B^2 e^{2 B eta_t} eta_t <= gamma/2`` by ``c e^{...}``, so a set scaled by 1e10 has ``t_d`` beyond any run
(the same set scaled by 1e-10 has ``t_d = 0``).

Algorithm: bisection on ``log eta`` (mpmath, 60 digits) for the largest ``eta*`` meeting every condition, then the
schedule's inverse ``t_d = ceil((eta_0/eta*)^{1/a} - 2)`` (kept as ``log10`` when it exceeds every float).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import mpmath
import sympy as sp

from rates.symbolic.theorems.base import B, _subs, alpha, curvature_alpha, eta_lag, eta_step

_STEP = eta_step


@dataclass(frozen=True)
class DescentStart:
    """``t_d`` (None with ``why`` when it cannot be computed), ``log10(t_d + 2)`` always when known."""

    t: Optional[float]
    log10: Optional[float]
    eta_star: Optional[float]
    terms: tuple[str, ...]
    left_out: tuple[str, ...]
    why: Optional[str] = None
    lag: float = 0.0  # steps back of the lagged step size the noise bound uses (0: the step's own size only)

    @property
    def complete(self) -> bool:
        """Whether ``t_d`` is known: computed, with no noise term left out (otherwise it is only a lower bound)."""
        return self.log10 is not None and not self.left_out

    def missing(self) -> str:
        """What keeps ``t_d`` from being known (empty when it is complete)."""
        if self.log10 is None:
            return self.why or "not computed"
        if self.left_out:
            return (f"left out (constants unknown): {', '.join(self.left_out)}; the known terms alone give "
                    + (f"t >= {self.t:.3g}" if self.t is not None else f"t >= 10^({self.log10:.4g})"))
        return ""

    def text(self) -> str:
        if self.log10 is None:
            return f"descent start unknown ({self.why})"
        where = f"t_d = {self.t:.3g}" if self.t is not None else f"t_d ~ 10^({self.log10:.4g})"
        omitted = f"; left out (constants unknown): {', '.join(self.left_out)}" if self.left_out else ""
        lagged = f" and eta_(t-{self.lag:g}), {self.lag:g} steps back" if self.lag else ""
        return (f"{where}: first t with {' and '.join(self.terms)} at the step's own size eta_t{lagged} "
                f"(eta_t <= {self.eta_star:.3g}) [derived]{omitted}")

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "log10": self.log10, "eta_star": self.eta_star, "terms": list(self.terms),
                "left_out": list(self.left_out), "why": self.why, "lag": self.lag}


def descent_start(template, constants: dict[str, Any], a: Fraction, eta0: float) -> DescentStart:
    """The descent start ``t_d`` of ``template`` on the data's ``constants`` (module docstring).

    With ``gamma = B = 1`` (NSD, J = 1) the condition is ``2 e^{2 eta} eta <= 1/2``, so ``eta* < 1/4``:

    >>> from rates.symbolic.theorems.nsd import template
    >>> start = descent_start(template(), {"gamma": 1.0, "B": 1.0}, Fraction(1, 2), 1.0)
    >>> start.eta_star < 0.25 and (1.0 / start.eta_star) ** 2 - 2 <= start.t
    True
    """
    if not (eta0 > 0 and 0 < a <= 1):
        return DescentStart(None, None, None, (), (), f"needs eta_0 > 0 and a in (0, 1], got {eta0}, {a}")
    values = _subs({"eta_0": eta0, **constants})
    step_local = {**template.definitions, **template.step_local, alpha: curvature_alpha(B, _STEP)}
    lag = sp.sympify(template.lag).subs(values) if template.step_local else sp.Integer(0)
    if lag.free_symbols:
        return DescentStart(None, None, None, (), (), "needs " + _names(lag))
    lag = float(lag)
    a_value = mpmath.mpf(a.numerator) / a.denominator
    gamma_ref = _resolved(template.gamma_ref, template.definitions).subs(values)
    if gamma_ref.free_symbols:
        return DescentStart(None, None, None, (), (), "needs " + _names(gamma_ref))
    gamma_ref = mpmath.mpf(str(sp.N(gamma_ref, 40)))
    if not gamma_ref > 0:
        return DescentStart(None, None, None, (), (), f"the reference margin is {mpmath.nstr(gamma_ref, 4)} <= 0")
    J = len(template.noise)
    conditions, used, left_out = [], [], []
    for term in template.noise:
        coefficient = _resolved(term.coefficient, step_local).subs(values)
        if coefficient.free_symbols - {_STEP, eta_lag}:
            left_out.append(f"{term.meaning} (needs {_names(coefficient, skip={_STEP, eta_lag})})")
            continue
        f = _at_step(sp.lambdify((_STEP, eta_lag), coefficient * _STEP**term.q, "mpmath"), eta0, a_value, lag)
        conditions.append((f, gamma_ref / (2 * J)))
        used.append(f"{term.coefficient} eta_t^{term.q} <= gamma_ref/{2 * J}")
    if not conditions:
        return DescentStart(None, None, None, (), tuple(left_out), "no noise term has known constants")
    with mpmath.workdps(60):
        def meets(eta) -> bool:
            return all(f(eta) <= bound for f, bound in conditions)

        top = mpmath.mpf(eta0)
        if meets(top):
            return DescentStart(0.0, float(mpmath.log10(2)), float(top), tuple(used), tuple(left_out), lag=lag)
        lo, hi = mpmath.log(mpmath.mpf(10) ** -300), mpmath.log(top)
        if not meets(mpmath.exp(lo)):
            return DescentStart(None, None, None, tuple(used), tuple(left_out), "no step size above 1e-300 meets it",
                                lag=lag)
        for _ in range(200):  # log eta to far below a part in 1e15
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if meets(mpmath.exp(mid)) else (lo, mid)
        eta_star = mpmath.exp(lo)
        # eta_0 (t+2)^(-a) <= eta*  <=>  t + 2 >= (eta_0/eta*)^(1/a)
        log10_x = mpmath.log10(mpmath.mpf(eta0) / eta_star) / (mpmath.mpf(a.numerator) / a.denominator)
        t = float(mpmath.ceil(mpmath.power(10, log10_x) - 2)) if log10_x < 300 else None
        return DescentStart(t, float(log10_x), float(eta_star), tuple(used), tuple(left_out), lag=lag)


def _at_step(f, eta0: float, a, lag: float):
    """``f(eta_t, eta_lag)`` as a function of ``eta_t`` alone on ``eta_s = eta_0 (s+2)^{-a}``:
    ``eta_lag = eta_{max(t - lag, 0)} = eta_0 max(t + 2 - lag, 2)^{-a}`` with ``t + 2 = (eta_0/eta_t)^{1/a}``."""
    def at(eta):
        if not lag:
            return f(eta, eta)
        x = mpmath.power(mpmath.mpf(eta0) / eta, 1 / a)
        return f(eta, mpmath.mpf(eta0) * mpmath.power(max(x - lag, mpmath.mpf(2)), -a))
    return at


def _resolved(expr, definitions: dict) -> sp.Expr:
    for _ in range(3):  # definitions may refer to one another (alpha_beta -> alpha)
        expr = sp.sympify(expr).subs(definitions)
    return expr


def _names(expr, skip=frozenset()) -> str:
    return ", ".join(sorted(str(s) for s in expr.free_symbols - set(skip)))
