"""The runs MINIBATCH's claims need: the tasks of Fig. 1 (with the longer horizon of its "converges" claims), of the
rate theorems (their setting, step counts, eta_0 and planned horizons) and of the per-sample study (App. J), all
simulated by :func:`rates.studies.runner.run_tasks`."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from rates.studies.minibatch.protocols import (
    ALGORITHMS,
    BETAS,
    ETA0,
    FIG1_A,
    LARGE_MOMENTUM,
    PERSAMPLE_A,
    RATE_AS,
    RATE_FAMILIES,
    VR_MOMENTUM,
    Size,
)
from rates.studies.runner import StudyTask, TaskResult


def rate_steps(size: Size, family: str, algo: str, a: str) -> int:
    """Horizon of one rate configuration (``size.rate_horizons``, else ``size.rate_steps``)."""
    for (fam, alg, exponent), steps in size.rate_horizons:
        if fam == family and alg in ("*", algo) and exponent in ("*", a):
            return int(steps)
    return int(size.rate_steps)


def rate_eta0(size: Size, family: str, algo: str, a: str) -> float:
    """eta_0 of one rate configuration: Fig. 1's (:data:`ETA0`) times ``size.rate_eta0_factors``' factor."""
    return ETA0[algo] * dict(size.rate_eta0_factors).get((family, a), 1.0)


# the momentum buffer must follow the gradient from this step on, two decades before the rate runs end
FOLLOW_BY = 1e4


def momentum_follow_time(gamma: float, eta0: float, beta: float, a: str) -> float:
    """Step from which a momentum buffer follows the gradient [ours, a heuristic that sets eta_0, not a verdict].

    Past separation each step raises the margins by about ``gamma eta_t``, so the newest gradient is
    ``exp(-gamma eta_t)`` times the last, while the buffer forgets a gradient by ``beta`` per step. While
    ``gamma eta_t > 1 - beta`` the oldest gradients in the buffer outweigh the new ones and the step keeps their
    direction (the margin freezes); ``gamma eta_0 (t+2)^(-a) = 1 - beta`` at ``t = (gamma eta_0/(1 - beta))^(1/a)``.
    """
    return (gamma * eta0 / (1.0 - beta)) ** (1.0 / float(Fraction(a)))


def _spec(algo: str, a: str, seed: int, batch: int, beta: float, vr: bool, eta0: float | None = None):
    from rates.numeric.engine import RunSpec

    return RunSpec(algo, a, eta0=ETA0[algo] if eta0 is None else eta0, seed=seed, batch=batch, momentum=beta, vr=vr)


def fig1_tasks(size: Size, seed: int, n: int) -> list[StudyTask]:
    """Per algorithm and seed: every (b, beta) without VR and every (b < n, beta) with VR, at a = 1/2; and the
    configurations the "converges" claims read at the longer horizon (beta = 0.99 and VR at
    ``size.fig1_long_batches``)."""
    tasks = []
    for algo in ALGORITHMS:
        specs = [_spec(algo, FIG1_A, seed, b, beta, False) for b in size.batches for beta in BETAS]
        specs += [_spec(algo, FIG1_A, seed, b, beta, True) for b in size.batches if b < n for beta in BETAS]
        tasks.append(StudyTask(f"fig1/{algo}/seed{seed}", size.data, seed, tuple(specs), size.fig1_steps,
                               size.checkpoints, cost=len(specs) * size.fig1_steps))
        if size.fig1_long_steps and size.fig1_long_batches:
            long_specs = [_spec(algo, FIG1_A, seed, b, LARGE_MOMENTUM, False) for b in size.fig1_long_batches]
            long_specs += [_spec(algo, FIG1_A, seed, b, beta, True) for b in size.fig1_long_batches for beta in BETAS]
            tasks.append(StudyTask(f"{FIG1_LONG}/{algo}/seed{seed}", size.data, seed, tuple(long_specs),
                                   size.fig1_long_steps, size.checkpoints,
                                   cost=len(long_specs) * size.fig1_long_steps))
    return tasks


FIG1_LONG = "fig1long"  # task prefix, and the marker ending the keys of its configurations in fig1_measures


def rate_setting(family: str, size: Size, n: int) -> tuple[int, float, bool]:
    """(b, beta, vr) of a theorem's rate runs, each where its hypothesis holds: 4.1 at b = n (no b < n has
    gamma_eff(b) > 0, :func:`thm41_impossibility`), 4.3 at a (b, beta) with gamma_eff(beta, b) > 0, 4.6 at a
    small b, without and with momentum."""
    return {"Thm 4.1": (n, 0.0, False), "Thm 4.3": (size.momentum_batch, size.rate_momentum, False),
            "Thm 4.6": (size.rate_batch, 0.0, True),
            "Thm 4.6 + momentum": (size.rate_batch, VR_MOMENTUM, True)}[family]


# Thm 4.3's margins pass gamma_eff at 7e3-8e4, before their descent starts (10^5.2 and later): the stretch its rate
# is fitted on does not grow with the horizon, so its runs are not planned from t_d.
PLANNED_FAMILIES = ("Thm 4.1", "Thm 4.6", "Thm 4.6 + momentum")


def planned_rate_steps(size: Size, family: str, algo: str, a: str, seed: int, n: int) -> int:
    """Steps of one rate configuration: :func:`rate_steps`, or 1.5 decades past its descent start where that is
    longer and within the budget (:func:`rates.studies.horizon.plan`)."""
    default = rate_steps(size, family, algo, a)
    if not size.plan_horizons or family not in PLANNED_FAMILIES:
        return default
    from rates.studies.horizon import plan
    from rates.studies.runner import dataset

    b, beta, vr = rate_setting(family, size, n)
    return plan(_spec(algo, a, seed, b, beta, vr, rate_eta0(size, family, algo, a)), dataset(size.data, seed),
                default).steps


def rate_tasks(size: Size, seed: int, n: int) -> list[StudyTask]:
    tasks = []
    for family in RATE_FAMILIES:
        b, beta, vr = rate_setting(family, size, n)
        for algo in ALGORITHMS:
            horizons: dict[int, list[str]] = {}
            for a in RATE_AS:
                horizons.setdefault(planned_rate_steps(size, family, algo, a, seed, n), []).append(a)
            for i, (steps, exponents) in enumerate(sorted(horizons.items(), key=lambda item: -len(item[1]))):
                specs = tuple(_spec(algo, a, seed, b, beta, vr, rate_eta0(size, family, algo, a)) for a in exponents)
                key = f"rates/{family}/{algo}/seed{seed}" if i == 0 else f"rates/{family}/{algo}/t{steps:g}/seed{seed}"
                tasks.append(StudyTask(key, size.data, seed, specs, steps, size.checkpoints, cost=len(specs) * steps))
    return tasks


def rate_runs(results: dict[str, TaskResult], family: str, algo: str, seeds: list[int]) -> list:
    """The runs of one (family, algorithm) over seeds, from every horizon's task."""
    return [r for s in seeds for key, res in results.items()
            if key.startswith(f"rates/{family}/{algo}/") and key.endswith(f"/seed{s}") for r in res.runs]


def persample_datasets(seed: int) -> dict[str, str]:
    """The per-sample datasets: App. J-like random data, a fixed imbalanced one, the random data's scale twin
    (same class counts, new per-sample scales drawn uniformly from [0.1, 5]) and its counts twin (the same
    per-sample scales, class counts reversed)."""
    from rates.numeric.data import parse_data

    base = parse_data("orthogonal-random", seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    scales = rng.uniform(0.1, 5.0, size=base.n)
    counts = "/".join(str(int(c)) for c in base.class_counts())
    twin = f"orthogonal:counts={counts},scales=" + "/".join(f"{s:.6g}" for s in scales)
    base_scales = np.asarray(base.meta["scales"], float)
    reversed_counts = "/".join(str(int(c)) for c in base.class_counts()[::-1])
    counts_twin = f"orthogonal:counts={reversed_counts},scales=" + "/".join(f"{s:.6g}" for s in base_scales)
    return {"orthogonal-random": "orthogonal-random", "scale-twin": twin, "counts-twin": counts_twin,
            "orthogonal-imbalanced": "orthogonal-imbalanced"}


def persample_tasks(size: Size, seed: int) -> list[StudyTask]:
    tasks = []
    for name, spec in persample_datasets(seed).items():
        specs = tuple(_spec(algo, PERSAMPLE_A, seed, 1, 0.0, False) for algo in ALGORITHMS)
        tasks.append(StudyTask(f"persample/{name}/seed{seed}", spec, seed, specs, size.persample_steps,
                               size.checkpoints, cost=len(specs) * size.persample_steps))
    return tasks
