"""Worst-case rate search: is a theorem's exponent attained by some small dataset, or loose in the worst case?

Setting: multiclass linear data with ``||h_i||_1 <= 1`` (B = 1), small ``n``, ``k``, ``d``, separable in the
algorithm's norm; the engine (:func:`rates.numeric.engine.simulate`) runs the algorithm from ``W_0 = 0`` with
``eta_t = (t+2)^(-a)`` and records the margin gap.

Algorithm: each dataset is judged by the comparator (:func:`rates.judge.compare.judge`: late window, slope fit with
bootstrap interval, settling check, one-sided verdict against the bound's local slope); its objective is the
empirical decay exponent ``r_hat = -slope``. Only datasets with a decided verdict (tight, loose, violated) are
ranked; inconclusive ones (pre-asymptotic, bending or too noisy) are counted and reported. The search
minimises ``r_hat`` (slowest decay): ``restarts`` random datasets (shapes, labels, Gaussian features scaled to
the l1 ball), then a (1+1) evolution strategy from the best one -- Gaussian perturbations of ``H`` with a step
that grows by 1.5 on success and shrinks by 0.7 on failure. Everything draws from
``numpy.random.default_rng(seed)``; the budget counts engine runs, so a command is reproducible.

Guarantee: the reported worst exponent is what the search found, with its fit's 95% bootstrap interval and
window; the bound's exponent comes from ``rates.symbolic.theorems.predict``. "attained" means some dataset's gap
attains the *stated* rate (the comparator's finding (iii), :func:`rates.judge.compare.stated_rate_finding`: slope
within the tolerance of the stated ``t^-r (log t)^k``'s own slope over the window, settled, precise, log
power matched) -- lying inside the bound's slope envelope (which spans every ratio of its unknown constants,
e.g. ``[-0.70, -0.30]`` at a = 0.3) is not enough. "not attained in the datasets searched" means every decided
dataset decays faster than the stated rate -- never a claim about every dataset.

Reference: docs/theory.md section 4 (comparison rule); Hansen & Ostermeier (2001) for the step-size rule's spirit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import sympy as sp

from rates.errors import InputError, RatesError
from rates.judge.compare import judge
from rates.numeric.data import Dataset
from rates.numeric.engine import RunSpec, simulate

CHECKPOINTS = 120


@dataclass
class Candidate:
    H: np.ndarray
    y: np.ndarray
    k: int
    exponent: float = math.nan  # r_hat = -fitted slope (nan: no usable window)
    ci: tuple = (math.nan, math.nan)
    window: str = ""
    bound_local: float = math.nan  # -(local slope of the bound's shape) over the same window
    gamma: float = math.nan
    label: str = "not scored"  # the comparator's verdict against the bound (tight/loose/violated/inconclusive)
    reason: str = ""
    findings: Optional[dict] = None  # the comparator's three findings (bound, dominant term, stated rate)

    def to_json(self) -> dict[str, Any]:
        return {"H": self.H.tolist(), "y": self.y.tolist(), "k": self.k, "gamma": self.gamma,
                "empirical_exponent": self.exponent, "ci95": list(self.ci), "window": self.window,
                "bound_local_exponent": self.bound_local, "comparator": self.label, "reason": self.reason,
                "findings": self.findings}


@dataclass
class TightnessResult:
    algo: str
    a: str
    seed: int
    budget: int
    steps: int
    bound_exponent: str
    bound_log_power: int
    evaluated: int
    scored: int
    worst: Optional[Candidate]
    history: list = field(default_factory=list)  # (evaluation, exponent) of each improvement
    labels: dict = field(default_factory=dict)  # comparator verdict -> count over the datasets evaluated

    @property
    def verdict(self) -> str:
        if self.worst is None:
            return (f"no verdict: no dataset got a decided comparator verdict ({self._counts()}); "
                    "the runs are pre-asymptotic or too noisy on their late window")
        if self.labels.get("violated"):
            return f"violated on some dataset: the gap decays slower than the bound ({self._counts()})"
        if self.labels.get("tight"):
            return (f"attained: some dataset's gap decays at the stated rate t^-{self.bound_exponent}"
                    f"{' (log t)^' + str(self.bound_log_power) if self.bound_log_power else ''} (the bound holds and "
                    f"the slope and log power match the stated ones; {self._counts()})")
        return (f"not attained in the datasets searched: every decided one holds the bound and decays faster than "
                f"the stated rate ({self._counts()})")

    def _counts(self) -> str:
        return ", ".join(f"{count} {label}" for label, count in sorted(self.labels.items()))

    def to_json(self) -> dict[str, Any]:
        return {"algo": self.algo, "a": self.a, "seed": self.seed, "budget": self.budget, "steps": self.steps,
                "bound": {"exponent": self.bound_exponent, "log_power": self.bound_log_power},
                "evaluated": self.evaluated, "scored": self.scored, "verdict": self.verdict,
                "comparator_labels": self.labels,
                "worst": self.worst.to_json() if self.worst else None,
                "improvements": [{"evaluation": e, "exponent": x} for e, x in self.history]}


def _random_dataset(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    k = int(rng.integers(2, 4))
    n = int(rng.integers(k, 7))
    d = int(rng.integers(2, 4))
    y = np.concatenate([np.arange(k), rng.integers(0, k, size=n - k)])
    H = rng.standard_normal((n, d))
    return _to_ball(H), y, k


def _to_ball(H: np.ndarray) -> np.ndarray:
    """Scale each row into the l1 unit ball (rows of norm > 1 onto its surface), so B <= 1."""
    norms = np.abs(H).sum(axis=1, keepdims=True)
    return H / np.maximum(norms, 1.0)


def _score(candidate: Candidate, algo: str, a: sp.Rational, steps: int, prediction) -> Candidate:
    """Run the engine and the comparator (``rates.judge.compare.judge``) on one dataset."""
    try:
        data = Dataset(candidate.H, candidate.y, candidate.k, "tightness")
        run = simulate([RunSpec(algo, a, eta0=1.0, seed=0)], data, steps, checkpoints=CHECKPOINTS, device="cpu").runs[0]
    except RatesError as err:  # not separable, or the margin solver failed: not a candidate
        candidate.reason = str(err)
        return candidate
    candidate.gamma = float(run.gamma["value"])
    verdict = judge([run], prediction, exponent=float(prediction.rate.exponent))
    candidate.label, candidate.reason = verdict.label, verdict.reason
    candidate.findings = verdict.assessment.to_json() if verdict.assessment is not None else None
    if verdict.fit is None:
        return candidate
    candidate.exponent = -float(verdict.fit.slope)
    candidate.ci = (-float(verdict.fit.ci_high), -float(verdict.fit.ci_low))
    candidate.window = f"t in [{verdict.window.t0:.4g}, {verdict.window.t1:.4g}] ({verdict.window.points} checkpoints)"
    candidate.bound_local = -float(verdict.predicted_local_slope)
    return candidate


def _check_budget(algo: str, a: str, budget: int, steps: int, seed: int) -> None:
    """Refuse a search whose records cannot fit in memory, announce one over an hour (:mod:`rates.budget`), before
    the first run; the time is refined by a timed probe of one candidate run, as ``rates run`` refines its own."""
    from rates import budget as budgets
    from rates.numeric.data import parse_data

    def probe(probe_steps: int) -> None:  # on the default preset: larger than any candidate (n <= 6, d <= 3)
        simulate([RunSpec(algo, a, eta0=1.0, seed=0)], parse_data("default"), probe_steps, checkpoints=2,
                 device="cpu")

    estimate = budgets.estimate_linear_runs(budget, steps, CHECKPOINTS, 6, 3, 3, calls=budget)
    budgets.check(estimate, option="budget", advice="ask for a smaller --budget or fewer --steps",
                  measure=lambda: budgets.measured_seconds(probe, steps, calls=budget))


def search_worst_rate(algo: str, a: str, budget: int = 12, seed: int = 0, steps: int = 20000,
                      restarts: Optional[int] = None, progress=None) -> TightnessResult:
    """Search for the slowest-decaying margin gap of ``algo`` with ``eta_t = (t+2)^-a`` (module docstring)."""
    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.schedules import parse_exponent
    from rates.symbolic.theorems import predict

    if budget < 1:
        raise InputError("budget", f"must be a positive number of engine runs, got {budget}")
    if steps < 12_000:
        raise InputError("steps", f"must be >= 12000 (the late window starts near t = 1000 and needs a decade), "
                                    f"got {steps}")
    exponent_a = parse_exponent(a)
    config = resolve_algorithm(algo, None, n=6, batch=None, momentum=None, vr=False)
    if config.family not in ("nsd", "adam"):
        raise InputError("algo", f"the search covers full-batch algorithms (nsd, adam families); got {algo!r}")
    _check_budget(algo, a, budget, steps, seed)
    prediction = predict(config, exponent_a)
    rng = np.random.default_rng(seed)
    restarts = max(1, budget // 2) if restarts is None else restarts
    best: Optional[Candidate] = None
    history, scored, step, labels = [], 0, 0.3, {}
    for evaluation in range(budget):
        if evaluation < restarts or best is None:
            H, y, k = _random_dataset(rng)
            candidate = Candidate(H, y, k)
        else:
            candidate = Candidate(_to_ball(best.H + step * rng.standard_normal(best.H.shape)), best.y.copy(), best.k)
        candidate = _score(candidate, algo, exponent_a, steps, prediction)
        improved = False
        labels[candidate.label] = labels.get(candidate.label, 0) + 1
        if candidate.label in ("tight", "loose", "violated"):  # decided by the comparator: rank it
            scored += 1
            if best is None or candidate.exponent < best.exponent:
                best, improved = candidate, True
                history.append((evaluation, candidate.exponent))
        if evaluation >= restarts:
            step = step * 1.5 if improved else step * 0.7
        if progress is not None:
            progress(evaluation, candidate, best)
    return TightnessResult(algo, str(exponent_a), seed, budget, steps, str(prediction.rate.exponent),
                           int(prediction.rate.log_power), budget, scored, best, history, labels)
