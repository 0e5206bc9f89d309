"""Signal transforms: momentum, Adam, the steepest direction of a norm, and the step-size schedule.

Each is a :class:`~rates.numeric.optim.base.GradientTransformation` acting on a whole runs axis at once; its
per-run hyper-parameters are (R,) tensors (schedules: one :class:`~rates.schedule.Schedule` per run) so runs with
different beta, eta0 or schedules advance together.

Exactness under the log-scale (docs/theory.md section 7). A signal is ``e^s * value``.

* Momentum ``M_t = beta M_{t-1} + (1 - beta) Z_t`` (MINIBATCH section 3.1) is linear, so (row by row) with
  ``M_{t-1} = e^{s_M} M~`` and ``Z_t = e^{s_Z} Z~`` we store ``M_t = e^{m} (e^{s_M + log beta - m} M~ +
  e^{s_Z + log(1-beta) - m} Z~)`` with ``m`` the larger exponent: the same number, only the split between
  mantissa tensor and log-scale differs. beta = 0 passes Z through unchanged.
* Adam with eps = 0 (SIGNADAM eq. 3) is invariant to a rescaling ``m -> c m``, ``v -> c^2 v`` of each entry;
  we keep ``m = e^s m~`` and ``v = e^{2s} v~`` (stored as sqrt(v~)) with an s shared by m and v per class
  row (the signal's rows have their own log-scales: :mod:`rates.numeric.optim.base`). Bias correction
  and the ratio ``m^/sqrt(v^)`` do not see s. With eps > 0 the update is ``m~^ / (sqrt(v~^) + eps e^{-s})``, again the
  exact value. With beta1 = beta2 = 0 the update is g / |g| = sign(g): SignGD.
* A steepest direction (docs/theory.md section 2) maximises <Z, Delta> over the unit ball, which is invariant
  to positive rescaling of Z, so it only needs the mantissa.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import torch

from rates.norms import Norm
from rates.numeric.optim.base import GradientTransformation, Signal, renormalise
from rates.schedule import Schedule


def _per_run(value: torch.Tensor) -> torch.Tensor:
    """(R,) hyper-parameters as (R, 1, 1), once, so that they broadcast against (R, k, d) every step."""
    return value.reshape(-1, 1, 1)


def _fresh_scale(W: torch.Tensor, per_row: bool) -> torch.Tensor:
    """The log-scale of a zero state, -inf, in the shape the signal's log-scales have: (R, k, 1) per class row,
    else (R, 1, 1). A state keeps its shapes from step to step, which replaying recorded steps needs
    (:mod:`rates.numeric.graphed` copies each step's state into the buffers the graph reads)."""
    return torch.full((W.shape[0], W.shape[1] if per_row else 1, 1), -math.inf, dtype=W.dtype, device=W.device)


class MomentumState(NamedTuple):
    """The running average ``M_t = exp(log_scale) * value`` (``log_scale`` -inf before the first step)."""

    value: torch.Tensor
    log_scale: torch.Tensor


class AdamState(NamedTuple):
    """Adam's moments sharing one log-scale ``s`` per class row: ``m = e^s mu``, ``sqrt(v) = e^s root_nu``."""

    mu: torch.Tensor
    root_nu: torch.Tensor
    log_scale: torch.Tensor


class SteepestDirectionState(NamedTuple):
    """The zero log-scale (R, 1, 1) of every direction (a unit-norm direction needs no scale), made once."""

    unit_scale: torch.Tensor


class ScheduleState(NamedTuple):
    """The step sizes of steps ``start .. start + block - 1``, one (R, 1, 1) view each."""

    start: int
    rates: list


def momentum(beta: torch.Tensor, per_row: bool = False) -> GradientTransformation:
    """``M_t = beta M_{t-1} + (1 - beta) Z_t`` from ``M_{-1} = 0`` (MINIBATCH section 3.1, Thm 4.3);
    ``per_row``: the signals come with one log-scale per class row."""
    log_beta = _per_run(torch.log(beta))
    log_rest = _per_run(torch.log1p(-beta))

    def init(W: torch.Tensor) -> MomentumState:
        return MomentumState(torch.zeros_like(W), _fresh_scale(W, per_row))

    def update(signal: Signal, state: MomentumState, t: int) -> tuple[Signal, MomentumState]:
        old = state.log_scale + log_beta
        new = signal.log_scale + log_rest
        top = torch.maximum(old, new)
        value = torch.exp(old - top) * state.value + torch.exp(new - top) * signal.value
        out = renormalise(value, top)
        return out, MomentumState(*out)

    return GradientTransformation(init, update)


def adam(beta1: torch.Tensor, beta2: torch.Tensor, eps: torch.Tensor, per_row: bool = False) -> GradientTransformation:
    """Bias-corrected Adam (SIGNADAM eq. 3; eps = 0 as in the theory, eps > 0 as in practice).

    ``m_t = beta1 m_{t-1} + (1-beta1) g_t``, ``v_t = beta2 v_{t-1} + (1-beta2) g_t^2`` from zero, and the
    direction ``m_t/(1-beta1^{t+1}) / (sqrt(v_t/(1-beta2^{t+1})) + eps)``; entries with v = 0 move by 0.

    ``sqrt(v)`` is what is stored, updated as ``hypot(sqrt(beta2) sqrt(v), sqrt(1-beta2) g)``: squaring the
    mantissa would underflow for entries below ~1e-162 of the largest (v = 0 while m is not, so exact
    Adam's +-1-sized step became 0); kept as a root, an entry has the same range as m and the gradient.
    """
    log_eps = _per_run(torch.log(eps))
    beta1, beta2 = _per_run(beta1), _per_run(beta2)
    root_beta2, root_rest2 = beta2.sqrt(), (1.0 - beta2).sqrt()

    def init(W: torch.Tensor) -> AdamState:
        return AdamState(torch.zeros_like(W), torch.zeros_like(W), _fresh_scale(W, per_row))

    def update(signal: Signal, state: AdamState, t: int | torch.Tensor) -> tuple[Signal, AdamState]:
        m, root_v, s = state
        top = torch.maximum(s, signal.log_scale)
        keep = torch.exp(s - top)
        take = torch.exp(signal.log_scale - top)
        g = take * signal.value
        m = beta1 * keep * m + (1.0 - beta1) * g
        root_v = torch.hypot(root_beta2 * keep * root_v, root_rest2 * g)  # sqrt(beta2 v + (1-beta2) g^2)
        # Shared renormalisation of m and sqrt(v), row by row: Adam (eps = 0) is invariant to any rescaling
        # m -> c m, v -> c^2 v per entry, so per class row in particular.
        dims = -1 if top.shape[-2] > 1 else (-2, -1)
        r = torch.maximum(m.abs().amax(dim=dims, keepdim=True), root_v.amax(dim=dims, keepdim=True))
        r = torch.where(r > 0, r, torch.ones_like(r))
        m, root_v, s = m / r, root_v / r, top + torch.log(r)
        m_hat = m / (1.0 - beta1 ** (t + 1))
        root_v_hat = root_v / torch.sqrt(1.0 - beta2 ** (t + 1))
        denom = root_v_hat + torch.exp(log_eps - s)
        direction = torch.where(denom > 0, m_hat / torch.where(denom > 0, denom, torch.ones_like(denom)),
                                torch.zeros_like(m_hat))
        return Signal(direction, torch.zeros_like(s)), AdamState(m, root_v, s)

    return GradientTransformation(init, update)


def steepest_direction(norm: Norm, polar: str = "exact") -> GradientTransformation:
    """Delta in argmax_{||Delta|| <= 1} <Z, Delta> for the norm (docs/theory.md section 2; rates.norms).

    The sign (max-norm) is taken entry by entry from the signal's rows as they are, whatever their
    log-scales; every other norm weighs entries against each other, so its rows are first brought to the
    run's largest log-scale (a row ~1e-308 below the largest becomes 0 there, below its rounding).
    """
    entrywise = takes_signs(norm)

    def init(W: torch.Tensor) -> SteepestDirectionState:
        return SteepestDirectionState(torch.zeros((W.shape[0], 1, 1), dtype=W.dtype, device=W.device))

    def update(signal: Signal, state: SteepestDirectionState, t: int) -> tuple[Signal, SteepestDirectionState]:
        value = signal.value
        if not entrywise and signal.log_scale is not None and signal.log_scale.shape[-2] > 1:
            value = value * torch.exp(signal.log_scale - signal.log_scale.amax(dim=-2, keepdim=True))
        return Signal(norm.steepest(value, polar=polar), state.unit_scale), state

    return GradientTransformation(init, update)


def takes_signs(norm: Norm) -> bool:
    """Whether the norm's steepest direction is the entry-wise sign (the max-norm): scale-free entry by entry."""
    return norm.kind == "entrywise" and math.isinf(norm.p)


def scale_by_schedule(eta0: torch.Tensor, schedules: Sequence[Schedule], block: int = 4096) -> GradientTransformation:
    """Multiply the (true-scale) direction by ``eta_t = eta0 f(t)``, run r's schedule (docs/theory.md section 2;
    ``f(t) = (t + 2)^(-a)`` for the polynomial family).

    The rates are tabulated ``block`` steps at a time and kept as a list of (R, 1, 1) views, so a step
    costs one multiplication; a non-polynomial schedule's ``f`` comes from
    :meth:`rates.schedule.Schedule.unit_values` (float64, the values the fused kernels read), once per distinct
    schedule and block. A step index given as a 0-d tensor (the recorded steps of :mod:`rates.numeric.graphed`)
    is not looked up on the host: the polynomial family's ``eta_t`` is computed from it on the device, the
    others' read from a device table of ``block`` steps that ``prepare(step, count)`` (called by the replaying
    stepper before each replay, outside the recorded graph) refills when the next steps leave it.
    """
    a = torch.tensor([float(s.a) if s.is_polynomial else 0.0 for s in schedules], dtype=eta0.dtype,
                     device=eta0.device)
    tabled = [not s.is_polynomial for s in schedules]

    def columns(start: int) -> list[torch.Tensor]:
        t = torch.arange(start + 2, start + 2 + block, dtype=a.dtype, device=a.device)
        values: dict[Schedule, torch.Tensor] = {}  # f on this block, once per distinct schedule
        out = []
        for r, schedule in enumerate(schedules):
            if schedule.is_polynomial:
                # One column per run: a (block, R) broadcast pow rounds differently with R (vector vs tail path).
                out.append(eta0[r] * torch.pow(t, -a[r]))
                continue
            if schedule not in values:
                values[schedule] = torch.from_numpy(schedule.unit_values(start, start + block)).to(a.device)
            out.append(eta0[r] * values[schedule])
        return out

    def table(start: int) -> list[torch.Tensor]:
        return list(torch.stack(columns(start), dim=1)[:, :, None, None].unbind(0))

    def init(W: torch.Tensor) -> ScheduleState:
        return ScheduleState(0, table(0))

    eta0_col, a_col = eta0.reshape(-1, 1, 1), a.reshape(-1, 1, 1)
    device_table: dict[str, Any] = {}  # the replayed steps' table: "values" (R, block), "start" (0-d), "first"

    def prepare(step: int, count: int) -> None:
        if not any(tabled):
            return
        first = device_table.get("first")
        if first is not None and first <= step and step + count <= first + block:
            return
        if count > block:
            raise ValueError(f"a replay of {count} steps needs a schedule table longer than {block}")
        fresh = torch.stack(columns(step), dim=0)  # (R, block)
        if first is None:  # allocated once: the recorded graph reads these buffers
            device_table.update(values=fresh, start=torch.tensor(float(step), dtype=a.dtype, device=a.device),
                                mask=torch.tensor(tabled, device=a.device).reshape(-1, 1, 1))
        else:
            device_table["values"].copy_(fresh)
            device_table["start"].fill_(float(step))
        device_table["first"] = step

    def update(signal: Signal, state: ScheduleState, t: int | torch.Tensor) -> tuple[Signal, ScheduleState]:
        if isinstance(t, torch.Tensor):  # a device-side step index (rates.numeric.graphed): no host table lookup
            rates = eta0_col * torch.pow(t + 2.0, -a_col)
            if any(tabled):
                if "first" not in device_table:
                    prepare(0, 1)
                index = (t - device_table["start"]).to(torch.long).reshape(1)
                looked_up = torch.index_select(device_table["values"], 1, index).reshape(-1, 1, 1)
                rates = torch.where(device_table["mask"], looked_up, rates)
            return Signal(rates * signal.value, signal.log_scale), state
        if not state.start <= t < state.start + block:
            start = t - t % block
            state = ScheduleState(start, table(start))
        return Signal(state.rates[t - state.start] * signal.value, signal.log_scale), state

    return GradientTransformation(init, update, prepare)


def learning_rate(eta0: float, a: float | Schedule, t: int) -> float:
    """eta_t of the schedule (``a``: the polynomial family's exponent, or a :class:`~rates.schedule.Schedule`) as
    a Python float (for references and naive loops)."""
    if isinstance(a, Schedule):
        return eta0 * a.unit_value(t)
    return eta0 * float(t + 2) ** (-a)
