"""The training loop for homogeneous nets: all seeds at once, log-spaced checkpoints, per-step margin watch.

Setting: a bias-free ReLU net (:mod:`~rates.numeric.homogeneous.models`) and a binary data set
(:mod:`~rates.numeric.homogeneous.data`), both with a leading runs axis (one run per seed).

Algorithm: full-batch FLAVORS eq. 1 steepest descent or Adam (eq. 75), :mod:`~rates.numeric.homogeneous.steepest`,
on the summed loss ``L = sum_i l(y_i f(x_i))``. The gradient is taken of ``log L`` (well scaled however small
L is) and multiplied back by ``L = exp(log L)``; eq. 1 steps are proportional to ``||grad L||_*`` and so
shrink with L as the theory says -- nothing here normalises them.

Measured (at log-spaced checkpoints): ``log L``, the soft margin gamma_tilde in the algorithm's own norm
(eq. 5), gamma_1 / gamma_2 / gamma_inf (eq. 13), gamma_spectral (eq. 15), the norm, train and test accuracy.
Measured at *every* step: the first step with 100% train accuracy, the first step with L < l(0), and after
that step the largest drop of gamma_tilde below its running maximum, in units of the largest gamma_tilde of
the run (so that the tiny values right after L < l(0) do not dominate), and the largest relative step
``rho = ||theta_{t+1} - theta_t|| / ||theta_t||`` (own norm; ``rho = eta ||g||_* / ||theta||`` for eq. 1).
FLAVORS Thm 3.1 says gamma_tilde is non-decreasing for the flow; for finite steps the drop is O(eta). The
tolerance used by the study is ``L * max rho``: log gamma_tilde = log l^{-1}(L) - L log ||theta|| and one
step moves L log ||theta|| by at most L rho, so a drop within one step's first-order change is
discretisation, a larger one would contradict the theorem's discrete counterpart.
A run whose loss becomes non-finite is marked diverged and frozen; a run whose log-loss falls below
``stop_log_loss`` is frozen at its last value, as FLAVORS App. D does for sign descent (loss < 1e-7).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from rates.errors import InputError
from rates.numeric.homogeneous.data import Dataset
from rates.numeric.homogeneous.measures import (
    accuracy,
    check_loss,
    geometric_margins,
    homogeneity_error,
    log_loss,
    log_separation_level,
    soft_margin,
)
from rates.numeric.homogeneous.models import Network, forward
from rates.numeric.homogeneous.options import check_device_name
from rates.numeric.homogeneous.steepest import geometry_of, make_optimizer

METRICS = ("log_loss", "soft_margin", "norm", "gamma_1", "gamma_2", "gamma_inf", "gamma_spectral",
           "train_acc", "test_acc", "kkt_residual", "kkt_residual_window", "kkt_window_radius")

# Gradients averaged by ``kkt_residual_window``: the current one and the KKT_WINDOW - 1 before it. Why: on a ReLU net
# the late iterates of a discrete run chatter across kinks of L (a ReLU switching on a data point, or the
# smallest margin changing hands), so one step's gradient swings by O(1) in direction while the average over a
# few steps -- an element of the convex hull of gradients at nearby points (Goldstein's epsilon-subdifferential,
# the gradient-sampling estimate of the Clarke subgradient that FLAVORS eq. 3 and Prop. A.13 use) -- is steady.
# Measured (GD, teacher-student, 5 seeds, log(1/L) ~ 200-350): one step's residual 0.02-0.25 from step to step,
# the 10-step average 0.003-0.009, the 100-step average 0.001-0.007.
KKT_WINDOW = 10
# iterates before the last compared with it for an exact cycle (History.cycle_period); CD's seed 0 on the Thm 3.4
# runs cycles with period 4 [measured]
CYCLE_WINDOW = 8


def pick_device(device: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; an explicit name is checked."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device_name(device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("device", "cuda requested but no CUDA device is available")
    return torch.device(device)


@dataclass(frozen=True)
class TrainConfig:
    algorithm: str
    lr: float
    steps: int
    loss: str = "exp"
    eps: float = 1e-8
    beta1: float = 0.9
    beta2: float = 0.99
    checkpoints: int = 60
    stop_log_loss: float = -math.inf
    subgradient: str = "gradient"
    lr_schedule: str = "constant"
    late_lr: float | None = None  # eta_late of the loss-scaled schedule (None: lr)
    # train with this algorithm (at lr) until L < l(0), then with ``algorithm``: FLAVORS sec. 4.1's switched runs
    # (GD until perfect train accuracy, then CD or SD); Thm 3.1 / 3.4 only ask L < l(0) at some t0
    warmup_algorithm: str | None = None


# ``constant``: eq. 1 with a fixed eta. ``loss-scaled``: eta until L < l(0), then
# eta_t = eta_late l(0) / (L max(1, log(l(0) / L))). Why: the flow's trajectory, and so every statement of FLAVORS
# Thm 3.4 and Lemma A.6 / Cor. A.8 about its limit, does not depend on its time parametrisation (Lyu and Li 2020
# schedule their rate for the same reason). With a fixed eta, log(1/L) grows like log t and a
# CPU-sized run ends a few units past L < l(0); with this rate one step moves each margin q_i by O(eta_late)
# whatever L is (degree 2: ||grad L|| ~ L log(1/L) / ||theta||), so the exponential weights e^{-q_i} change by a
# bounded factor per step, and log(1/L) grows linearly in t. The plain eta / L keeps the relative step fixed
# instead; then q_i moves by O(eta log(1/L)) per step and the iterates chatter between the smallest margins
# (measured, GD on teacher-student: the one-step alignment residual rose from 0.1 to 0.8 by log(1/L) ~ 1e6).
LR_SCHEDULES = ("constant", "loss-scaled")


@dataclass
class History:
    """Checkpoint arrays ``metrics[name]`` of shape (R, T) at steps ``t`` (T,), plus per-run step events."""

    config: TrainConfig
    geometry: str
    degree: int
    t: np.ndarray
    metrics: dict[str, np.ndarray]
    t_separated: np.ndarray  # first step with 100% train accuracy, -1 if never
    t_below_level: np.ndarray  # first step with L < l(0), -1 if never
    # max drop of gamma_tilde below its running max after t_below_level / max gamma_tilde
    max_soft_margin_drop: np.ndarray
    max_relative_step: np.ndarray  # max ||theta_{t+1} - theta_t|| / ||theta_t|| (own norm) after t_below_level
    diverged: np.ndarray
    homogeneity_error: float
    info: dict = field(default_factory=dict)
    # per run, the smallest p <= CYCLE_WINDOW with theta_T = theta_{T-p} bit for bit at the last step T (0: none).
    # A run that returns to an earlier iterate is no discretisation of a steepest flow, whose loss falls wherever
    # its min-norm subgradient is non-zero (FLAVORS Thm A.2, eq. 21): somewhere in the period the loss rose or
    # stood still.
    cycle_period: np.ndarray | None = None

    def final(self, name: str) -> np.ndarray:
        return self.metrics[name][:, -1]

    def to_dict(self) -> dict:
        return {
            "schema": "rates.homogeneous/1",
            "config": asdict(self.config),
            "geometry": self.geometry,
            "degree": self.degree,
            "t": self.t.tolist(),
            "metrics": {k: v.tolist() for k, v in self.metrics.items()},
            "t_separated": self.t_separated.tolist(),
            "t_below_level": self.t_below_level.tolist(),
            "max_soft_margin_drop": self.max_soft_margin_drop.tolist(),
            "max_relative_step": self.max_relative_step.tolist(),
            "diverged": self.diverged.tolist(),
            "homogeneity_error": self.homogeneity_error,
            "info": self.info,
            "cycle_period": None if self.cycle_period is None else self.cycle_period.tolist(),
        }


def cycle_periods(earlier: list[list[torch.Tensor]], params: list[torch.Tensor], frozen: torch.Tensor) -> torch.Tensor:
    """Per run, the smallest p with ``params`` equal bit for bit to ``earlier[-p]`` (the iterate p steps back;
    0: none of them). Frozen runs (diverged or stopped) do not move and count as no cycle."""
    period = torch.zeros(frozen.shape, dtype=torch.long, device=frozen.device)
    for back, old in enumerate(reversed(earlier), start=1):
        same = torch.stack([(o == p).flatten(1).all(dim=1) for o, p in zip(old, params)]).all(dim=0)
        period = torch.where((period == 0) & same & ~frozen, back, period)
    return period


def checkpoint_steps(steps: int, count: int) -> np.ndarray:
    """0 and about ``count`` log-spaced integer steps in [1, steps], always including ``steps``."""
    if steps <= 0:
        raise InputError("steps", f"must be a positive integer, got {steps}")
    grid = np.unique(np.round(np.logspace(0, math.log10(steps), max(count, 2))).astype(int))
    return np.unique(np.concatenate([[0], grid, [steps]]))


def kkt_residual(params, grads, geometry) -> torch.Tensor:
    """``1 - <theta, -g> / (||theta|| ||g||_*)`` in the algorithm's own norm, per run.

    FLAVORS Thm 3.4 (proof, App. A, eq. 46 and 62): the normalised iterate is an (eps(t), delta(t))-approximate
    KKT point of (MM) whose stationarity residual eps(t) vanishes when theta_t aligns with the steepest
    direction of -grad L, i.e. when this quantity goes to 0 (it lies in [0, 2]; 0 is exact alignment).
    """
    inner = sum((p * -g).flatten(1).sum(dim=1) for p, g in zip(params, grads))
    scale = geometry.value(params) * geometry.dual_value(list(grads))
    return 1.0 - inner / scale


def train(net: Network, data: Dataset, config: TrainConfig, advance=None) -> History:
    """Train ``net`` on ``data`` (same runs axis) with ``config``; return the measured history.

    ``advance(1)`` is called after every step when given (a progress bar's)."""
    check_loss(config.loss)
    if config.lr_schedule not in LR_SCHEDULES:
        raise InputError("lr_schedule", f"must be one of {'|'.join(LR_SCHEDULES)}, got {config.lr_schedule!r}")
    if config.steps <= 0:
        raise InputError("steps", f"must be a positive integer, got {config.steps}")
    geometry = geometry_of(config.algorithm)
    optimizer = make_optimizer(config.algorithm, config.lr, config.eps, config.beta1, config.beta2,
                               config.subgradient)
    level = log_separation_level(config.loss)
    degree = net.degree
    X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
    runs = net.runs
    params = [p.detach().clone().requires_grad_(True) for p in net.parameters()]
    state = optimizer.init(params)
    warmup = None
    if config.warmup_algorithm is not None:
        warmup = make_optimizer(config.warmup_algorithm, config.lr, config.eps, config.beta1, config.beta2)
        warmup_state = warmup.init(params)
    t_grid = checkpoint_steps(config.steps, config.checkpoints)
    records: dict[str, list[torch.Tensor]] = {name: [] for name in METRICS}

    device = X.device
    never = torch.full((runs,), -1, dtype=torch.long, device=device)
    t_separated, t_below = never.clone(), never.clone()
    running_max = torch.full((runs,), -math.inf, dtype=torch.float64, device=device)
    max_drop = torch.zeros(runs, dtype=torch.float64, device=device)
    max_step = torch.zeros(runs, dtype=torch.float64, device=device)
    frozen = torch.zeros(runs, dtype=torch.bool, device=device)
    diverged = torch.zeros(runs, dtype=torch.bool, device=device)
    next_checkpoint = 0
    recent_grads: list[list[torch.Tensor]] = []  # the gradients of log L at the last KKT_WINDOW iterates
    recent_steps: list[torch.Tensor] = []  # the relative steps between them
    last_iterates: list[list[torch.Tensor]] = []  # the CYCLE_WINDOW iterates before the last, for cycle_periods

    for step in range(config.steps + 1):
        current = net.with_parameters(params)
        f = forward(current, X)
        q = y * f
        logL = log_loss(q, config.loss)
        # the gradient of log L: a positive multiple of grad L, so steps and alignments see the same direction
        raw_grads = None if step == config.steps and step != t_grid[next_checkpoint] else \
            torch.autograd.grad(logL.sum(), params)
        if raw_grads is not None:  # a run that diverged has NaN gradients; zeros keep the SVDs of the measures finite
            raw_grads = [torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0) for g in raw_grads]
        with torch.no_grad():
            bad = ~torch.isfinite(logL)
            diverged |= bad
            frozen |= bad
            theta_norm = geometry.value(params)
            gamma_soft = soft_margin(logL, theta_norm, degree, config.loss)
            separated = (q > 0).all(dim=-1)
            t_separated = torch.where((t_separated < 0) & separated, step, t_separated)
            t_below = torch.where((t_below < 0) & (logL < level), step, t_below)
            watch = (t_below >= 0) & ~frozen
            running_max = torch.where(watch, torch.maximum(running_max, gamma_soft), running_max)
            max_drop = torch.where(watch, torch.maximum(max_drop, running_max - gamma_soft), max_drop)
            # only the KKT_WINDOW iterates before a checkpoint are kept: copying every step's gradient costs time
            in_window = step > t_grid[next_checkpoint] - KKT_WINDOW
            if raw_grads is not None and in_window:
                recent_grads = [*recent_grads[1 - KKT_WINDOW:], [g.detach() for g in raw_grads]]
            if step == t_grid[next_checkpoint]:
                margins = geometric_margins(q, params, degree)
                averaged = [sum(gs) / len(recent_grads) for gs in zip(*recent_grads)]
                f_test = forward(current, X_test)
                values = {"log_loss": logL, "soft_margin": gamma_soft, "norm": theta_norm,
                          "train_acc": accuracy(f, y), "test_acc": accuracy(f_test, y_test),
                          "kkt_residual": kkt_residual(params, raw_grads, geometry),
                          "kkt_residual_window": kkt_residual(params, averaged, geometry),
                          "kkt_window_radius": sum(recent_steps, torch.zeros_like(theta_norm)), **margins}
                for name in METRICS:
                    records[name].append(values[name].detach().clone())
                next_checkpoint += 1
                recent_grads, recent_steps = [], []
            frozen |= logL < config.stop_log_loss
        if step == config.steps:
            break
        if step >= config.steps - CYCLE_WINDOW:
            last_iterates.append([p.detach().clone() for p in params])
        if advance is not None:
            advance(1)
        with torch.no_grad():
            grads = [torch.where(frozen[:, None, None], torch.zeros_like(g), g) for g in raw_grads]
            loss_value = torch.exp(logL)
            if config.lr_schedule == "loss-scaled":
                # eq. 1 steps are 1-homogeneous in g: scaling g by eta_t / eta runs eq. 1 at eta_t
                late = (config.late_lr or config.lr) / config.lr * math.exp(level) / torch.clamp_min(level - logL, 1.0)
                loss_value = torch.where(logL < level, late, loss_value)
            grads = [loss_value[:, None, None] * g for g in grads]
            overflow = ~torch.stack([torch.isfinite(g).flatten(1).all(dim=1) for g in grads]).all(dim=0)
            diverged |= overflow & ~frozen
            frozen |= overflow
            grads = [torch.where(frozen[:, None, None], torch.zeros_like(g), g) for g in grads]
            updates, state = optimizer.update(grads, state)
            if warmup is not None and bool((t_below < 0).any()):  # no run switches back: skip once all have
                warm_updates, warmup_state = warmup.update(grads, warmup_state)
                before = (t_below < 0)[:, None, None]
                updates = [torch.where(before, w, u) for w, u in zip(warm_updates, updates)]
            proposed = [p - u for p, u in zip(params, updates)]
            finite = torch.stack([torch.isfinite(p).flatten(1).all(dim=1) for p in proposed]).all(dim=0)
            # A step that overflows marks its run diverged and is not taken, so no NaN reaches the measures.
            diverged |= ~finite & ~frozen
            frozen |= ~finite
            relative_step = geometry.value(updates) / theta_norm
            if step + 1 > t_grid[next_checkpoint] - KKT_WINDOW:
                recent_steps = [*recent_steps[2 - KKT_WINDOW:], torch.where(frozen, 0.0, relative_step)]
            max_step = torch.where(watch & ~frozen, torch.maximum(max_step, relative_step), max_step)
            hold = frozen[:, None, None]
            params = [torch.where(hold, p, new).requires_grad_(True) for p, new in zip(params, proposed)]

    final_params = [p.detach() for p in params]
    period = cycle_periods(last_iterates, final_params, frozen)
    final_net = net.with_parameters(final_params)
    metrics = {name: torch.stack(vals, dim=1).cpu().numpy() for name, vals in records.items()}
    return History(
        config=config,
        geometry=geometry.name,
        degree=degree,
        t=t_grid,
        metrics=metrics,
        t_separated=t_separated.cpu().numpy(),
        t_below_level=t_below.cpu().numpy(),
        max_soft_margin_drop=(max_drop / running_max.abs()).cpu().numpy(),
        max_relative_step=max_step.cpu().numpy(),
        diverged=diverged.cpu().numpy(),
        homogeneity_error=homogeneity_error(final_net, X),
        info={"data": data.name, **data.info, "runs": runs, "device": str(device)},
        cycle_period=period.cpu().numpy(),
    )
