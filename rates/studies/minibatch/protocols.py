"""MINIBATCH's protocols as data: the algorithms and sweeps, the thresholds of the qualitative claims with their
reasons, the study's sizes (:data:`FULL`, :data:`QUICK`) and one :class:`~rates.output.claims.Protocol` per claim
(:data:`PROTOCOLS`: quantity, window, rule, seeds, what it rules out), fixed before any run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rates.output.claims import Protocol
from rates.studies.draws import DRAWS_RULE
from rates.studies.horizon import CPU_BUDGET_S, DECIDING_DECADES, STEP_BUDGET

SEED = "MINIBATCH"
MEASURED_NORMS = ("max", "frobenius", "spectral")
ALGORITHMS = ("signsgd", "nsgd", "spectral-sgd")
NORM = {"signsgd": "max", "nsgd": "frobenius", "spectral-sgd": "spectral"}
MOMENTUM_NAME = {"signsgd": "Signum", "nsgd": "N-MSGD", "spectral-sgd": "Muon"}
DISPLAY = {"signsgd": "SignSGD", "nsgd": "N-SGD", "spectral-sgd": "Spectral-SGD"}
ETA0 = {"signsgd": 0.2, "nsgd": 1.0, "spectral-sgd": 1.0}
BETAS = (0.0, 0.5, 0.9, 0.99)
RATE_AS = ("3/10", "1/2", "3/4", "1")
FIG1_A = "1/2"
PERSAMPLE_A = "1/2"
# Criteria of the qualitative claims (relative errors are fractions of gamma).
CONVERGED = 0.05  # "converges": final relative error below 5% of gamma and still falling
FAILED = 0.05  # "fails": final relative error at least 5% of gamma, and stalled
# Change of the error over the last decade (means over the last quarter decade and the one a decade earlier).
# At a = 1/2 the theorems' rates log t / t^(1/2) fall by x0.3-0.4 per decade; x0.6 or less is "falling like a
# converging run", x0.9 or more (a log-log slope above -0.046, a tenth of t^(-1/2)) is "stalled"; between, the
# horizon decides nothing. (Measured: SignSGD b = 1, beta = 0.99 fell x0.87 over 3e4-3e5 steps, from 0.090 to
# 0.079, after a flat stretch; whether it plateaus or keeps creeping down is not decided there.)
FALLING = 0.6
STALLED = 0.9
TREND_WINDOW = 0.25  # decades averaged at each end of the trend
# A trend decides "stalled" (or "not stalled") only when it clears STALLED by TREND_Z standard errors of the trend,
# estimated from the checkpoint-to-checkpoint scatter of the error about a straight line in log-log over the span
# the trend reads (:meth:`Fig1Config.trend_se`); closer than that the decision is within the run's own noise.
TREND_Z = 2.0
# "Slower" claims (momentum, VR): time from which the own-norm relative error stays below LEVEL; a configuration is
# slower when it gets there SLOWER times later or more, faster when SLOWER times earlier or more (checkpoints are
# x1.2-1.3 apart, so a factor 2 is resolved); in between the horizon does not resolve it.
LEVEL = 0.1
SLOWER = 2.0
COSINE_M = 0.999  # Thm 4.9: cosine to M/||M|| at the end
VR_MOMENTUM = 0.9  # Thm 4.6 with momentum
LARGE_MOMENTUM = 0.99  # Fig. 1 (e)-(f)
RATE_FAMILIES = ("Thm 4.1", "Thm 4.3", "Thm 4.6", "Thm 4.6 + momentum")
# A 'violated' gap whose slope is within this of 0 in a run that ends before the theorem's t0 has not left its
# pre-asymptotic plateau (beta = 0.999 keeps N-MSGD and Muon there for 1e6 steps, t0 ~ 1e16-1e40): no verdict.
PLATEAU_SLOPE = 0.05
TRADE_OFF_BETAS = (0.5, 0.9)
MONOTONE_SLACK = 1e-12  # relative rise of log L between checkpoints that counts (float64 rounding below it)
MONOTONE_FAMILIES = {"Thm 4.1": "Lemma D.1, D.2", "Thm 4.3": "Lemma E.1, E.2"}
DIMENSION_SYMBOLS = ("d", "k")  # the feature dimension and the class count (W is k x d)


@dataclass(frozen=True)
class Size:
    data: str
    batches: tuple
    seeds: int
    fig1_steps: int
    rate_steps: int
    persample_steps: int
    rate_batch: int  # Thm 4.6 (VR, with and without momentum)
    momentum_batch: int  # Thm 4.3: a b < n and beta with gamma_eff(beta, b) > 0 for every algorithm
    rate_momentum: float
    checkpoints: int = 60
    # ((family, algorithm or "*", a or "*"), steps): rate runs with another horizon than rate_steps (first match)
    rate_horizons: tuple = ()
    # ((family, a), factor): rate runs whose eta_0 is ETA0 times the factor (:func:`momentum_follow_time`)
    rate_eta0_factors: tuple = ()
    fig1_seeds: int = 1  # Fig. 1 data draws when --seeds is not given (rates and per-sample use ``seeds``)
    # Fig. 1 "converges" claims at these batch sizes (beta = 0.99 and VR) are read at fig1_long_steps (0: not run)
    fig1_long_batches: tuple = ()
    fig1_long_steps: int = 0
    plan_horizons: bool = True  # rate runs as long as their descent start needs (rates.studies.horizon)


# Steps [ours], measured with the fused engine on the minibatch preset:
# * Fig. 1 claims are read at 2e5 steps: at 3e4 the beta = 0.99 runs were still leaving their plateau (errors
#   0.06-0.1 falling x0.1-0.4 per decade) at every b, full batch included; by 1e5-2e5 they are below 0.05.
# * rates need two decades after t = 1e3; at 1e5 steps Spectral-SGD a = 3/10 and SignSGD a = 3/4 (b = n) were
#   still bending ("run longer"), at 1e6 both are tight. Thm 4.6 (VR) at a = 3/10 still bends at 1e6 for
#   SignSGD and Spectral-SGD; at 1e7 Spectral-SGD is tight and SignSGD still bends (slopes -0.52, -0.62 on
#   the window's halves). They no longer run 1e7 steps: their descent starts (10^11 and 10^14.6 with the epoch's
#   step sizes) are beyond any run, so no window of theirs decides (rates.studies.horizon plans the others).
# * the per-sample cosine is read at 1e5 steps.
# * Fig. 1's "converges" claims ((e)-(f) beta = 0.99, (g)-(i) VR) read b = 1 at 2e6 steps: at 2e5 every open
#   configuration of those claims on the draws of seeds 0 and 1 was at b = 1, above 0.05 and still falling (e.g.
#   SignSGD VR beta = 0 at 0.097, x0.4 per decade); b = 1 steps are the cheapest (one sample gradient).
# Fig. 1 runs on 10 data draws [ours]: on the draw of seed 0 SignSGD's error at b = 16 stalled above b = 4's
# (0.88 vs 0.77), on the draws of seeds 1-3 it fell with b; on 3 draws four rows split like this. Ten draws let a
# sign test decide (:func:`fig1_claims`, rates.studies.draws): 9 of 10 deciding draws agreeing give p = 0.021.
# * Thm 4.3 needs gamma_eff(beta, b) > 0, and on this data (gamma = 2.152 / 0.586 / 0.913 in the max / l2 /
#   spectral norm, B = 10.44, n = 64) that holds for all three algorithms first at b = 32, beta = 0.999
#   (b = 16, beta = 0.999 fails for N-MSGD: -0.290; b = 32, beta = 0.99 fails for N-MSGD and Muon).
# * Thm 4.6 with momentum (VR + beta = 0.9 at b = 16) has no gamma_eff condition.
# * Thm 4.3 (beta = 0.999) at a = 3/10 and 1/2 runs with eta_0 / 100 and eta_0 / 10, the largest powers of ten
#   below Fig. 1's eta_0 at which the momentum buffer follows the gradient by t = 1e4 (:func:`momentum_follow_time`).
#   With Fig. 1's eta_0 the buffer keeps the direction of the first gradients: at a = 3/10 N-MSGD's margin stayed
#   at 0.288 from t = 10 to 1e6 and Muon's at 0.45, Signum's gap to gamma_eff still bent at 1e7 (-0.12 then +0.07
#   per decade), all 'no verdict' (t0 ~ 3e17-1e40). With the lowered eta_0 every margin passes gamma_eff by
#   t = 8e4 (a = 3/10) and 4e4 (a = 1/2) and stays above it to 1e6.
FULL = Size("minibatch", (1, 4, 16, 64), seeds=1, fig1_steps=200_000, rate_steps=1_000_000,
            persample_steps=100_000, rate_batch=16, momentum_batch=32, rate_momentum=0.999, fig1_seeds=10,
            rate_eta0_factors=((("Thm 4.3", "3/10"), 0.01), (("Thm 4.3", "1/2"), 0.1)),
            fig1_long_batches=(1,), fig1_long_steps=2_000_000)
QUICK = replace(FULL, seeds=1, fig1_steps=300, rate_steps=1000, persample_steps=1000, checkpoints=16,
                rate_horizons=(), fig1_seeds=1, fig1_long_batches=(), plan_horizons=False)


# ------------------------------------------------------------------------------------ protocols [ours]
# One per claim, fixed before any run (full mode's sizes); a row prints its protocol. Changing one is a code change
# with its reason. Rows of one figure share one window.
_FIG1_SEEDS = (f"data draws 0-{FULL.fig1_seeds - 1} (a draw and its reshuffling stream); over the draws: {DRAWS_RULE}")
_FIG1_WINDOW = (f"Fig. 1's horizon t = {FULL.fig1_steps:.0e} for every configuration, trends over its last decade; "
                f"the two 'converges' rows (beta = 0.99, VR) read b = 1 on the same configuration continued to "
                f"t = {FULL.fig1_long_steps:.0e}")
_STALLED = (f"stalled: error changed by >= x{STALLED:g} over the last decade, with the trend's band of {TREND_Z:g} "
            "standard errors (checkpoint scatter) above x" f"{STALLED:g}; a band straddling it is 'no verdict'")
_RATE_RULE = ("comparator (rates fit): tight / loose, or finding (i) 'bound holds' (95% upper slope limit <= the "
              "slowest bound term's slope + 0.05) -> reproduced; 'violated' (slower than that by > 0.05, the 95% "
              "interval excluding it) -> not reproduced, both only on a window known to lie past the descent start "
              "t_d; a 'violated' gap with slope within 0.05 of 0 in a run ending before t0, and every other outcome "
              "-> no verdict")
_RATE_OUT = "a gap decaying more slowly than the derived rate (by more than 0.05 in log-log slope)"
_RATE_SEEDS = f"seed {FULL.seeds - 1} (one data draw); uncertainty: bootstrap over the window's checkpoints"
_RATE_WINDOW = ("the comparator's window: the last two decades of the run with t >= 1e3 after the empirical entry; "
                f"runs of {FULL.rate_steps:.0e} steps; "
                f"Thm 4.1 and 4.6 runs last {DECIDING_DECADES:g} decades past their descent start t_d where that is "
                f"longer, within {STEP_BUDGET:.0e} steps and {CPU_BUDGET_S:.0f} CPU seconds (beyond it the row says "
                "how many steps decide it), and a window that starts before t_d is replaced by the one from max(t_d, "
                f"entry, 1e3) to the end when it spans {DECIDING_DECADES:g} decades")


def _fig1(quantity: str, rule: str, rules_out: str) -> Protocol:
    return Protocol(quantity, _FIG1_WINDOW, rule, _FIG1_SEEDS, rules_out, figure="MINIBATCH Fig. 1")


PROTOCOLS: dict[str, Protocol] = {
    "full-batch": _fig1("own-norm relative error (gamma - gamma(W_t))/gamma at b = n, beta = 0",
                        f"reproduced: < {CONVERGED:g} and falling over the last decade; not reproduced: {_STALLED} "
                        f"at >= {CONVERGED:g}; else open", "a full-batch run stuck above 5% of gamma"),
    "minibatch-fails": _fig1("own-norm relative error at every b < n, beta = 0",
                             f"reproduced: every b < n >= {FAILED:g} and {_STALLED}; not reproduced: a b < n that "
                             "converges (< 5%, falling); else open", "mini-batch runs that reach the max margin"),
    "beta05-improves": _fig1("final own-norm relative error and cosine, beta = 0.5 against beta = 0, every b < n",
                             "reproduced: lower error and higher cosine at every b < n; not reproduced: a b < n where "
                             f"beta = 0.5 is no better and {_STALLED}; else open",
                             "moderate momentum no better than none"),
    "beta05-discrepancy": _fig1("own-norm relative error at beta = 0.5, every b < n",
                                f"reproduced: per algorithm some b < n >= {CONVERGED:g} and {_STALLED}; not "
                                "reproduced: beta = 0.5 converges at every b < n; else open",
                                "moderate momentum closing the gap at every batch size"),
    "beta099-converges": _fig1("own-norm relative error at beta = 0.99, every b < n",
                               "as 'full batch converges', at every b < n", "large momentum stuck above 5% of gamma"),
    "vr-converges": _fig1("own-norm relative error with VR, every b < n and beta",
                          "as 'full batch converges', at every (b, beta)", "a VR run stuck above 5% of gamma"),
    "batch-trend": _fig1("own-norm relative error over b = 1/4/16/64, beta = 0",
                         f"per neighbouring pair: reproduced when the larger b ends no higher, or both fall by "
                         f"x{FALLING:g} or more per decade below {CONVERGED:g}; not reproduced when the larger b has "
                         f"{_STALLED} above the other's last-decade range; else open",
                         "a gap that grows with the batch size"),
    "momentum-trend": _fig1("own-norm relative error over beta = 0/0.5/0.9/0.99 at every b < n, no VR",
                            "as the batch trend, per neighbouring beta", "a gap that grows with momentum"),
    "momentum-batch-trade-off": _fig1("own-norm relative error over b = 1/4/16/64 at beta = 0.5 and 0.9, no VR",
                                      "as the batch trend, per neighbouring b at each beta",
                                      "with momentum, a gap that grows with the batch size"),
    "momentum-slows": _fig1(f"time from which the own-norm relative error stays below {LEVEL:g}, b = n, beta = 0 "
                            "against 0.99 (all four beta printed)",
                            f"reproduced: beta = 0.99 gets there >= {SLOWER:g} times later (or not by a horizon "
                            f">= {SLOWER:g} times beta = 0's); not reproduced: >= {SLOWER:g} times earlier; else open",
                            "momentum that converges as fast as, or faster than, plain full-batch descent"),
    "vr-slower": _fig1(f"time from which the own-norm relative error stays below {LEVEL:g}: VR at every b < n "
                       "(beta = 0) against no VR at b = n (beta = 0)",
                       "as 'momentum slows', per b < n", "VR converging as fast as full-batch descent without VR"),
    "rate Thm 4.1": Protocol("gap gamma_eff(n) - gamma(W_t) = gamma - gamma(W_t) at b = n, beta = 0",
                             _RATE_WINDOW, _RATE_RULE, _RATE_SEEDS, _RATE_OUT, figure="rates Thm 4.1"),
    "rate Thm 4.3": Protocol(f"gap gamma_eff(beta, b) - gamma(W_t), b = {FULL.momentum_batch}, "
                             f"beta = {FULL.rate_momentum:g}, on the stretch before the margin passes gamma_eff for "
                             "good (past it the gap is <= 0: the bound holds for every constant but no rate is seen)",
                             _RATE_WINDOW + "; cut at the crossing of gamma_eff", _RATE_RULE + "; a positive stretch "
                             "too short for a window -> no verdict", _RATE_SEEDS,
                             _RATE_OUT + " while it is positive (near the crossing the difference gamma_eff - "
                             "gamma(W_t) steepens by construction, so a 'loose' there does not measure how fast the "
                             "margin approaches its own limit)", figure="rates Thm 4.3"),
    "rate Thm 4.6": Protocol(f"gap gamma - gamma(W_t) with VR, b = {FULL.rate_batch}, beta = 0", _RATE_WINDOW,
                             _RATE_RULE, _RATE_SEEDS, _RATE_OUT, figure="rates Thm 4.6"),
    "rate Thm 4.6 + momentum": Protocol(f"gap gamma - gamma(W_t) with VR, b = {FULL.rate_batch}, "
                                        f"beta = {VR_MOMENTUM:g}", _RATE_WINDOW, _RATE_RULE, _RATE_SEEDS, _RATE_OUT,
                                        figure="rates Thm 4.6 + momentum"),
    "monotone-loss": Protocol("log L(W_t) at every checkpoint of the theorem's rate runs (Thm 4.1: b = n; Thm 4.3: "
                              f"b = {FULL.momentum_batch}, beta = {FULL.rate_momentum:g})",
                              "the run's checkpoints from the descent start t_d (the descent lemma with the curvature "
                              "of the steps taken) to the end", "not reproduced: log L rises between two checkpoints "
                              "past t_d (beyond 1e-12 relative) in any run; reproduced: no such rise, and per "
                              "algorithm a run observed a decade or more past t_d; else no verdict (runs ending "
                              "before that test nothing)", _RATE_SEEDS,
                              "a loss that keeps rising and falling in the phase the lemmas call monotone"),
    "thm41-small-batch": Protocol("gamma_eff(b) = gamma - 4 B max(n/b - 1, 1) for b < n on the data's gamma and B "
                                  "(derived, rates.symbolic)", "none (no run)",
                                  "testable only where gamma_eff(b) > 0 for some b < n", "the preset's draw 0",
                                  "-"),
    "cor45-recovers-cor42": Protocol("the rebuilt Cor. 4.5 at b = n against Cor. 4.2: gamma_eff(beta, n) and the "
                                     "rate's power sums (derived, rates.symbolic)", "none (no run)",
                                     "reproduced: gamma_eff(beta, n) = gamma identically and the same power sums "
                                     "(rate exponents) at every a; not reproduced otherwise", "-",
                                     "a momentum bound at b = n with another limit margin or another rate"),
    "dimension-free": Protocol("free symbols of the rebuilt bounds of Thm 4.1, 4.3, 4.6 (constants resolved) "
                               "(derived, rates.symbolic)", "none (no run)",
                               "reproduced: no bound depends on the dimension d or the class count k; not "
                               "reproduced otherwise", "-", "a rate whose constants grow with the dimension"),
    "persample-direction": Protocol("cosine of W_t to M/||M|| (Def. 4.8), b = 1", f"t = {FULL.persample_steps:.0e}",
                                    f"reproduced: > {COSINE_M} in every run; not reproduced otherwise",
                                    "seed 0, four orthogonal datasets", "a per-sample limit other than M",
                                    figure="MINIBATCH Fig. 2"),
    "persample-stagnates": Protocol("cosine to the own-norm max-margin W* on orthogonal-imbalanced, b = 1",
                                    f"t = {FULL.persample_steps:.0e}", "reproduced: < 0.99 and moving < 0.01 over "
                                    "the last decade; not reproduced otherwise", "seed 0",
                                    "per-sample runs converging to W*", figure="MINIBATCH Fig. 2"),
    "persample-error-high": Protocol("relative margin error in the max, l2 and spectral norms, b = 1",
                                     f"t = {FULL.persample_steps:.0e}", f"reproduced: >= {FAILED:g} in every norm, "
                                     "dataset and seed; not reproduced otherwise", "seed 0, four datasets",
                                     "per-sample runs reaching a max margin", figure="MINIBATCH Fig. 2"),
    "scale-free-limit": Protocol("lower bound cos(angle_1 + angle_2) on the cosine of the final directions on "
                                 "orthogonal-random and its scale twin", f"t = {FULL.persample_steps:.0e}",
                                 f"reproduced: > {COSINE_M}; not reproduced otherwise", "seed 0",
                                 "a limit that moves with the sample scales", figure="MINIBATCH Fig. 2"),
    "counts-dependent-limit": Protocol("upper bound cos(phi - angle_1 - angle_2) on the cosine of the final directions "
                                       "on orthogonal-random and its counts twin", f"t = {FULL.persample_steps:.0e}",
                                       f"reproduced: < {COSINE_M}; not reproduced otherwise", "seed 0",
                                       "a limit that ignores the class counts", figure="MINIBATCH Fig. 2"),
    "persample-loss": Protocol("log L, b = 1", f"t = {FULL.persample_steps:.0e}",
                               "reproduced: L < 1e-2 at the end and lower than a decade before in every run; not "
                               "reproduced otherwise", "seed 0, four datasets", "a per-sample loss that stalls",
                               figure="MINIBATCH Fig. 2"),
    "lemma-h1": Protocol("max relative difference of log L and the margins, Spectral-SGD against N-SGD at b = 1",
                         "every checkpoint", "<= 1e-9", "seed 0, four datasets", "an implementation where the "
                         "polar factor of a rank-one gradient differs from its normalisation"),
}
