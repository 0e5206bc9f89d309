"""Measurements taken from MINIBATCH's results: Fig. 1's configurations (:class:`Fig1Config`: errors, cosines, their
trends and noise), the per-sample measures, the rate records (the gap to the theorem's target margin, fitted before
the margin passes it) and the rebuilt bounds' free symbols."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rates.studies.minibatch.protocols import (
    ALGORITHMS,
    CONVERGED,
    FALLING,
    LEVEL,
    MEASURED_NORMS,
    NORM,
    STALLED,
    TREND_WINDOW,
    TREND_Z,
)
from rates.studies.minibatch.runs import FIG1_LONG, persample_datasets
from rates.studies.runner import TaskResult, fit_runs


def long_or_short(cfgs: dict[tuple, Fig1Config], key: tuple) -> Fig1Config:
    """The configuration at the longer horizon when the study ran one, else at Fig. 1's."""
    return cfgs.get(key + (FIG1_LONG,), cfgs[key])


def name_of_target(record) -> str:
    """How a row names the margin the record's gap was fitted to, read off the fit record's ``gap_target`` as
    :func:`fitted_target` reads its value: ``gamma`` where the max margin was fitted (the theorem bounds
    ``gamma - gamma(W_t)``, as with VR; no target recorded; its value not evaluated) or where the target is the
    max margin itself (b = n: gamma_eff(n) = gamma); else the template's name with the setting the record
    evaluated it at (its ``setting``), ``gamma_eff(beta = .., b = ..)`` (Thm 4.3) or ``gamma_eff(b = ..)``."""
    target = record.verdict.context.get("gap_target") or {}
    name = target.get("name", "gamma")
    if name == "gamma" or fitted_target(record) == [float(run.gamma["value"]) for run in record.runs]:
        return "gamma"
    setting = target.get("setting", {})
    batch, beta = setting.get("b"), float(setting.get("beta") or 0.0)
    setting = ([f"beta = {beta:g}"] if beta > 0 else []) + ([f"b = {int(batch)}"] if batch else [])
    return f"{name}({', '.join(setting)})" if setting else name


def fitted_target(record) -> list[float]:
    """The margin each run's gap was fitted to, one value per independent run: the theorem template's
    ``gap_to`` evaluated on the run's data constants (:func:`rates.studies.fitting.gap_target`, the value
    ``rates predict`` prints), or the recorded max margin where the theorem bounds ``gamma - gamma(W_t)``."""
    target = record.verdict.context.get("gap_target") or {}
    values = target.get("values")
    if target.get("name", "gamma") == "gamma" or values is None:
        return [float(run.gamma["value"]) for run in record.runs]
    return [float(v) for v in values]


def gaps_to_target(record) -> list[np.ndarray]:
    """Each run's ``target - gamma(W_t)``, the quantity its theorem bounds (:func:`fitted_target`)."""
    return [target - np.asarray(run.margin, float) for run, target in zip(record.runs, fitted_target(record))]


def margin_above_target_from(times, gaps) -> float | None:
    """First checkpoint from which every run's margin stays at or above its target (None: not by the end);
    ``gaps`` are the runs' ``target - gamma(W_t)`` at the checkpoints ``times`` (one array per run).

    Past it the theorem's left side ``target - gamma(W_t)`` is <= 0, below any positive bound."""
    starts = []
    for t, gap in zip(times, gaps):
        below = np.flatnonzero(np.asarray(gap, float) > 0)
        t = np.asarray(t, float)
        if below.size and below[-1] == t.size - 1:
            return None
        starts.append(float(t[below[-1] + 1]) if below.size else float(t[0]))
    return max(starts) if starts else None


def before(run, t_stop: float):
    """The run's checkpoints before ``t_stop`` (the same run, as if it had ended there)."""
    from rates.numeric.trajectory import CHECKPOINT_ARRAYS, OPTIONAL_SERIES

    keep = np.asarray(run.t, float) < t_stop
    fields = {name: np.asarray(getattr(run, name))[keep] for name in CHECKPOINT_ARRAYS}
    fields.update({name: {k: np.asarray(v)[keep] for k, v in getattr(run, name).items()} for name in OPTIONAL_SERIES})
    return replace(run, **fields, weights=None)


def judge_rate_runs(runs) -> tuple[Any, float | None]:
    """One rate configuration's fit record (:func:`rates.studies.runner.fit_runs`, which fits the gap to the
    template's target margin) and the checkpoint from which every margin stays above that target.

    Where the margin passes the target for good (Thm 4.3's gamma_eff lies below gamma) the gap the theorem bounds is
    <= 0 from there on: the bound holds for every constant, but that says nothing of the rate. The rate is then
    fitted on the runs cut at that checkpoint, the stretch where the bounded gap is positive."""
    from rates.studies.horizon import fit_past_onset

    record = fit_past_onset(runs)  # decided past t_d or past the certified onset s0 (Thm 4.1 at b = n)
    crossed = margin_above_target_from([run.t for run in record.runs], gaps_to_target(record))
    if crossed is not None:
        cut = [before(run, crossed) for run in runs]
        if all(len(run.t) >= 2 for run in cut):
            record = fit_runs(cut)
    return record, crossed


@dataclass
class Fig1Config:
    algo: str
    batch: int
    beta: float
    vr: bool
    t: np.ndarray
    rel: dict  # norm -> (seeds, T) relative error
    cos: dict  # norm -> (seeds, T) cosine to that norm's W*

    @property
    def own(self) -> str:
        return NORM[self.algo]

    def final_rel(self) -> float:
        return float(np.mean(self.rel[self.own][:, -1]))

    def seed(self, i: int) -> Fig1Config:
        """The same configuration on the i-th seed alone."""
        return replace(self, rel={k: v[i:i + 1] for k, v in self.rel.items()},
                       cos={k: v[i:i + 1] for k, v in self.cos.items()})

    def _window_mean(self, t_end: float) -> float:
        """Own-norm relative error averaged over seeds and the checkpoints of (t_end / 10^(1/4), t_end]
        (a stochastic run's error jitters from one checkpoint to the next)."""
        t = self.t
        inside = (t > t_end / 10 ** TREND_WINDOW) & (t <= t_end)
        if not inside.any():
            inside = t == t[np.searchsorted(t, t_end, side="right") - 1]
        return float(np.mean(self.rel[self.own][:, inside]))

    def trend(self) -> float:
        """Factor by which the own-norm relative error changed over the last decade (window means)."""
        return self._window_mean(self.t[-1]) / self._window_mean(self.t[-1] / 10)

    def trend_se(self) -> float:
        """Standard error of ``log trend()``: the scatter (residual standard deviation) of the seed-mean log error
        about a straight line in log t over the span the trend reads (the last decade and its first window), times
        sqrt(1/m_1 + 1/m_2) for the m_1, m_2 checkpoints its two window means average. 0 for a smooth power law."""
        t, end = self.t, self.t[-1]
        span = (t > end / 10 ** (1 + TREND_WINDOW)) & (t <= end)
        m_late = int(np.sum(t > end / 10 ** TREND_WINDOW))
        m_early = int(np.sum((t > end / 10 ** (1 + TREND_WINDOW)) & (t <= end / 10)))
        if span.sum() < 4 or m_late < 1 or m_early < 1:
            return 0.0
        x = np.log(t[span])
        y = np.log(np.maximum(np.mean(self.rel[self.own][:, span], axis=0), 1e-300))
        residual = y - np.polyval(np.polyfit(x, y, 1), x)
        scatter = float(np.sqrt(np.sum(residual ** 2) / (len(x) - 2)))
        return scatter * math.sqrt(1.0 / m_late + 1.0 / m_early)

    def trend_band(self) -> tuple[float, float]:
        """The trend factor's band of TREND_Z standard errors."""
        trend, se = self.trend(), self.trend_se()
        return trend * math.exp(-TREND_Z * se), trend * math.exp(TREND_Z * se)

    def time_below(self, level: float = LEVEL) -> float | None:
        """First checkpoint from which the seed-mean own-norm relative error stays below ``level`` (None: not by
        the end of the run)."""
        err = np.mean(self.rel[self.own], axis=0)
        above = np.flatnonzero(~(err < level))
        if above.size and above[-1] == err.size - 1:
            return None
        return float(self.t[above[-1] + 1]) if above.size else float(self.t[0])

    def last_decade_range(self) -> tuple[float, float]:
        """Smallest and largest own-norm relative error over the last decade (all seeds)."""
        late = self.rel[self.own][:, self.t >= self.t[-1] / 10]
        return float(late.min()), float(late.max())

    def final_cos(self) -> float:
        return float(np.mean(self.cos[self.own][:, -1]))

    def converged(self) -> bool:
        """The study's "converges": final error below CONVERGED and still falling."""
        return self.final_rel() < CONVERGED and self.trend() < 1

    def converging(self) -> bool:
        """Falling at least as fast as FALLING per decade (a rate the theorems give at a = 1/2) and below CONVERGED."""
        return self.final_rel() < CONVERGED and self.trend() <= FALLING

    def stalled(self) -> bool:
        """Error no longer falling: at most a (1 - STALLED) decrease over the last decade, by more than the trend's
        noise (its band of TREND_Z standard errors lies at or above STALLED)."""
        return self.trend_band()[0] >= STALLED

    def stall_within_noise(self) -> bool:
        """The trend is on neither side of STALLED beyond its noise: 'stalled' is not resolved by this run."""
        low, high = self.trend_band()
        return low < STALLED <= high

    def state(self) -> str:
        se = self.trend_se()
        noise = f" ± {self.trend() * (math.exp(TREND_Z * se) - 1):.2g}" if se > 0 else ""
        return f"{self.final_rel():.3g} (x{self.trend():.2g}{noise}/decade)"


def fig1_measures(results: dict[str, TaskResult], seeds: list[int]) -> dict[tuple, Fig1Config]:
    """Relative error and cosine to W* in the max, l2 and spectral norms per (algo, b, beta, vr), as the
    engine records them (:mod:`rates.numeric.measures`)."""
    out: dict[tuple, Fig1Config] = {}
    for algo in ALGORITHMS:
        for seed in seeds:
            runs = [(run, ()) for run in results[f"fig1/{algo}/seed{seed}"].runs]
            if f"{FIG1_LONG}/{algo}/seed{seed}" in results:
                runs += [(run, (FIG1_LONG,)) for run in results[f"{FIG1_LONG}/{algo}/seed{seed}"].runs]
            for run, marker in runs:
                key = (algo, int(run.config.batch), float(run.config.momentum), bool(run.config.vr)) + marker
                rel = {norm: np.asarray(run.margin_errors[norm], float) for norm in MEASURED_NORMS}
                cos = {norm: np.asarray(run.cosines[norm], float) for norm in MEASURED_NORMS}
                if key not in out:
                    out[key] = Fig1Config(algo, key[1], key[2], key[3], np.asarray(run.t, float),
                                          {k: [] for k in rel}, {k: [] for k in cos})
                for norm in rel:
                    out[key].rel[norm].append(rel[norm])
                    out[key].cos[norm].append(cos[norm])
    for cfg in out.values():
        cfg.rel = {k: np.array(v) for k, v in cfg.rel.items()}
        cfg.cos = {k: np.array(v) for k, v in cfg.cos.items()}
    return out


def persample_measures(results: dict[str, TaskResult], seeds: list[int]) -> dict[tuple, dict[str, Any]]:
    """Per (dataset, algorithm, seed): relative errors in three norms, cosines to M/||M|| and to each W*
    (as the engine records them, :mod:`rates.numeric.measures`), the margins and the log loss."""
    from rates.numeric.measures import BIAS_KEY

    out = {}
    for seed in seeds:
        for name in persample_datasets(seed):
            res = results[f"persample/{name}/seed{seed}"]
            for run in res.runs:
                out[(name, run.config.algo, seed)] = {
                    "t": np.asarray(run.t, float),
                    "rel": {norm: np.asarray(run.margin_errors[norm], float) for norm in MEASURED_NORMS},
                    "cos_M": np.asarray(run.cosines[BIAS_KEY], float),
                    "cos_W": {norm: np.asarray(run.cosines[norm], float) for norm in MEASURED_NORMS},
                    "series": np.concatenate([np.asarray(run.log_loss, float)]
                                             + [np.asarray(run.margins[norm], float) for norm in MEASURED_NORMS]),
                    "log_loss": np.asarray(run.log_loss, float),
                }
    return out


def bound_symbols(templates: dict[str, Any]) -> dict[str, list[str]]:
    """The free symbols of each template's bound: its reference margin and its numerator's coefficients, with the
    template's definitions resolved (alpha, alpha_beta, alpha_vr, gamma_eff in terms of the data's constants)."""
    import sympy as sp

    symbols = {}
    for name, template in templates.items():
        exprs = [template.resolve(template.gamma_ref)] + [template.resolve(term.coefficient)
                                                          for term in template.numerator]
        symbols[name] = sorted({str(x) for e in exprs for x in sp.sympify(e).free_symbols})
    return symbols


def data_B(run) -> float:
    """The data's B = max_i ||h_i||_1 as the gate records it."""
    from rates.studies import fitting

    return fitting.facts_of(run).B
