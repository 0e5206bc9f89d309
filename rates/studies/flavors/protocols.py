"""The protocols of ``rates report flavors`` as data, fixed before any run.

The study's constants with their sources (default seeds, FLAVORS' init scales and Adam eps values, the second
phase's loss level, the tolerance of the App. C identities, each algorithm's own margin) and :data:`PROTOCOLS`:
per claim row its quantity, window, decision rule, seeds and the alternative it rules out
(:class:`rates.output.claims.Protocol`). The rules' thresholds come from :mod:`rates.studies.flavors.rules`.
"""

from __future__ import annotations

import math

from rates.output.claims import Protocol
from rates.studies.flavors.rules import FLAT_SLOPE, KEEP_SLOPE, MIN_SEEDS, MIN_SPAN, RESOLVE, TAU_LINK

DEFAULT_SEEDS = 5


INIT_SCALES = (0.1, 0.01, 0.001)  # FLAVORS App. D, teacher-student: "we vary the scale of initialization"

# One horizon for every Fig. 1 run (its rows share one window): CD needs 5000 steps to separate (see _FIG1_EXP_LR),
# and at 5000 its gamma_inf lead was still crossing at t/10 in both seeds that separate (the row open); at 50,000
# it is settled in both (CD 0.0048 against GD 0.00079, relative gap 0.84) and the other rows read as at 5000 (the
# init-scale ordering now settled a decade further on, Fig. 5's tau interval still straddling 0.5). 50,000 steps
# of the nine runs cost about 1000 CPU-s at load 3, 10x the 5000-step runs [measured, 5 seeds].
FIG1_STEPS = 50_000
ORDERING_SCALE = 0.1  # the Fig. 1 (i) orderings are read at this init scale
ADAM_EPS_VALUES = (1e-8, 1e-6)  # FLAVORS sec. 4.2: default eps and a larger one ("larger values of eps ...")
PHASE_TWO_LEVEL = math.log(1e-7)  # FLAVORS sec. 4.2: "the loss value needs to be smaller than 1e-7"
PHASE_TWO_WATCH = 10.0  # a phase watched from t_k to >= 10 t_k: the decade over which the study calls values settled


# The geometric margin in each algorithm's own norm (FLAVORS eq. 13, 15; Rem. 3.2: only this one is guaranteed not
# to fall).
_OWN_MARGIN = {"gd": "gamma_2", "sd": "gamma_1", "cd": "gamma_inf"}
_OWN_OF_LABEL = {**_OWN_MARGIN, "spectral": "gamma_spectral"}


# Tolerance of the App. C identities: float64 rounding of an eigendecomposition / division, far below any
# difference an algorithmic mismatch would make (the accumulated Shampoo differs from the polar factor by O(1)).
IDENTITY_TOLERANCE = 1e-9


# The protocols, fixed before any run (rates.output.claims.Protocol): changing one is a code change with its reason.
# Rows read from one figure share its window; a study never retries a protocol with other settings inside a run.
SEEDS_TEXT = (f"seeds 0..{DEFAULT_SEEDS - 1} (`--seeds N` runs 0..N-1); each seed draws the data and the "
              "initialisation")
FIG1_WINDOW = (f"end of the Fig. 1 runs, t = {FIG1_STEPS} steps for every algorithm and init scale; settledness over "
               f"the last decade [{FIG1_STEPS // 10}, {FIG1_STEPS}] and one decade past it (linear in log t)")
FIG2_WINDOW = ("Fig. 2 runs (GD, SD, Adam, Adam without momentum) to t = 2000: from the checkpoint from which train "
               "accuracy stays 100%, and at the end with settledness over [200, 2000] and one decade past it; Adam at "
               "eps = 1e-8, 1e-6 to "
               "t = 40000 from the first checkpoint with L < 1e-7 (the second phase)")
FIG3_WINDOW = ("end of the Fig. 3 runs, t = 2000 steps; settledness over the last decade [200, 2000] and one decade "
               "past it")
FIG6_WINDOW = ("Fig. 6 runs (digits 2 vs 7: GD, SD, Adam) to t = 2000: from the checkpoint from which train "
               "accuracy stays 100%, and at the end with settledness over [200, 2000] and one decade past it")
LATE_WINDOW = ("late-phase runs to their end (GD, SD 6000, CD 80000, spectral 4000 steps; exponential loss, "
               "loss-scaled rate after L < l(0)): last decade of log(1/L) for residuals and gaps, last decade of steps "
               "for L and ||theta||, every checkpoint after t0 (first L < l(0)) for Prop. B.6")
OWN_RUN_WINDOW = (f"every step from the first with L < l(0) to the end of the run (Fig. 1 runs: t = {FIG1_STEPS}; "
                  "Fig. 3 spectral descent: t = 2000)")
_SETTLED_RULE = (f"per seed the relative gap must clear {RESOLVE:.0%} the same way at t_end/10, t_end and one decade "
                 "past t_end (linear in log t), else that seed is open")
_VOTE_RULE = "reproduced if every judged seed holds, not reproduced if a majority fails, no verdict otherwise"
_FLOOR_RULE = (f"per seed the slope s of log y against log log(1/L) over the last decade of log(1/L) (seeds "
               f"spanning x{MIN_SPAN:g}, >= {MIN_SEEDS} seeds): decay (reproduced) if mean s + 95% half-width < "
               f"-{FLAT_SLOPE:g}, "
               f"every s < -{FLAT_SLOPE:g} and no resolved slowing (the later half-decade's slope above "
               f"{KEEP_SLOPE:g} x the earlier half's, 95%); floor "
               "(not reproduced) if "
               f"the interval of the decade or of its later half lies above -{FLAT_SLOPE:g}; no verdict otherwise")


def _ordering_protocol(metric: str, winner: str, others: str, window: str, figure: str) -> Protocol:
    return Protocol(f"final {metric} of {winner} and of {others} (valid seeds: every compared run separated, none "
                    "diverged)", window, f"{winner} above each of {others}; {_SETTLED_RULE}; {_VOTE_RULE}",
                    SEEDS_TEXT, f"{winner} not above the others at the horizon, or curves still crossing", figure)


PROTOCOLS: dict[str, Protocol] = {
    "thm31": Protocol("largest drop of the own soft margin below its running maximum after L < l(0), relative to "
                      "its largest value", OWN_RUN_WINDOW,
                      "every run's drop <= L * max_t rho_t (the O(eta) tolerance); one run beyond it refutes",
                      SEEDS_TEXT, "a soft margin that falls by more than the discretisation allows"),
    "fig1-sd": _ordering_protocol("gamma_1", "SD", "GD, CD", FIG1_WINDOW, "Fig. 1"),
    "fig1-gd": _ordering_protocol("gamma_2", "GD", "SD, CD", FIG1_WINDOW, "Fig. 1"),
    "fig1-cd": _ordering_protocol("gamma_inf", "CD", "GD, SD", FIG1_WINDOW, "Fig. 1"),
    "init-scale": Protocol("final own margin (GD gamma_2, SD gamma_1, CD gamma_inf) at alpha = 0.1, 0.01, 0.001",
                           FIG1_WINDOW, f"per algorithm and seed alpha = 0.01 above 0.1 and 0.001 above 0.01; "
                           f"{_SETTLED_RULE}; {_VOTE_RULE}; any algorithm refuted refutes",
                           SEEDS_TEXT, "a final margin that does not grow as alpha falls", "Fig. 1"),
    "fig5": Protocol("Kendall tau between each final margin (gamma_1, gamma_2, gamma_inf) and the final test accuracy "
                     "over all Fig. 1 runs that separated (3 algorithms x 3 init scales x seeds)", FIG1_WINDOW,
                     f"reproduced if every tau's 95% interval lies below {TAU_LINK:g}; not reproduced if one lies "
                     "above it; no verdict otherwise", SEEDS_TEXT,
                     "test accuracy ordered by a final margin (most pairs concordant)", "Fig. 1"),
    "kkt": Protocol("alignment residual 1 - <theta, -gbar>/(||theta|| ||gbar||_*) in the own norm, gbar the gradient "
                    "of log L averaged over the last steps", LATE_WINDOW, _FLOOR_RULE, SEEDS_TEXT,
                    "a residual that levels off at a positive floor", "late phase"),
    "prop-b6": Protocol("smallest gamma(t) / gamma~(t0) over the checkpoints after t0 (own norm), which decides eq. "
                        "71 [derived]", LATE_WINDOW,
                        "every seed >= 1 - L * max rho (the O(eta) tolerance); one seed below refutes", SEEDS_TEXT,
                        "a divergence above the bound: a geometric margin below the soft margin at t0",
                        "late phase"),
    "lemma-a6": Protocol("log(1/L) and ||theta|| (own norm) at t_end/10 and t_end", LATE_WINDOW,
                         f"per seed both grow by > {RESOLVE:.0%} (holds), either grows by < {RESOLVE / 10:.1%} or "
                         f"falls (fails: stalled); {_VOTE_RULE}; any run refuted refutes", SEEDS_TEXT,
                         "a loss or norm that stalls", "late phase"),
    "cor-a8": Protocol("(gamma - gamma~) / gamma, own norm, against log(1/L)", LATE_WINDOW,
                       "soft <= geometric at every checkpoint (else refuted); the gap: " + _FLOOR_RULE, SEEDS_TEXT,
                       "a soft margin that stays a fixed fraction below the geometric one", "late phase"),
    "fig2-rise": Protocol("own margin (GD gamma_2, SD gamma_1, Adam gamma_1) from the checkpoint t_a from which train "
                          "accuracy stays 100% to 10 t_a", FIG2_WINDOW,
                          f"per seed it rises by > {RESOLVE:.0%} above its value at t_a (holds), never by > "
                          f"{RESOLVE / 10:.1%} over a full decade (fails); {_VOTE_RULE}; any algorithm refuted refutes",
                          SEEDS_TEXT, "margins flat or falling after 100% train accuracy", "Fig. 2"),
    "fig2-sd": _ordering_protocol("gamma_1", "SD", "GD", FIG2_WINDOW, "Fig. 2"),
    "fig2-gd": _ordering_protocol("gamma_2", "GD", "SD", FIG2_WINDOW, "Fig. 2"),
    "fig2-adam": Protocol("Adam's gamma_1 from the checkpoint t_a from which train accuracy stays 100% to 10 t_a, "
                          "and at the end against GD's", FIG2_WINDOW,
                          f"per seed it rises by > {RESOLVE:.0%} after t_a and ends above GD's "
                          f"({_SETTLED_RULE}); fails if either fails; {_VOTE_RULE}", SEEDS_TEXT,
                          "Adam's gamma_1 flat after separation, or not above GD's (GD-like)", "Fig. 2"),
    "phase-two": Protocol("gamma_1 and gamma_2 from the first checkpoint t_k with L < 1e-7 to the end", FIG2_WINDOW,
                          f"per seed: holds if gamma_1 ends > {RESOLVE:.0%} below and gamma_2 above their values at "
                          f"t_k; refuted if watched for a decade (t_end >= 10 t_k) and gamma_1 stayed above its value "
                          f"at t_k at every checkpoint, ending > {RESOLVE:.0%} above; open if still rising over a "
                          "shorter watch; reproduced when every seed holds", SEEDS_TEXT,
                          "gamma_1 rising through the phase the claim describes", "Fig. 2"),
    "eps-higher": Protocol("gamma_1(eps = 1e-6) / gamma_1(eps = 1e-8) - 1 at every checkpoint once both L < 1e-7",
                           FIG2_WINDOW, f"larger by > {RESOLVE:.0%} at every such checkpoint in every seed "
                           "(reproduced); the seed means fail (not reproduced)",
                           SEEDS_TEXT,
                           "the larger eps no higher, or higher only part of the time", "Fig. 2"),
    "eps-onset": Protocol("per eps and seed, the step of gamma_1's peak after L < 1e-7 and its fall per decade of "
                          "steps from there (no second phase: gamma_1 ends within 1% of that peak)", FIG2_WINDOW,
                          f"holds if the larger eps peaks later and falls faster (each by > {RESOLVE:.0%}), fails if "
                          f"it peaks earlier or falls more gently; {_VOTE_RULE}; seeds without both second phases "
                          "are left out", SEEDS_TEXT, "a larger eps that starts its second phase earlier or falls "
                          "more gently", "Fig. 2"),
    "fig6-sd": _ordering_protocol("gamma_1", "SD", "GD", FIG6_WINDOW, "Fig. 6"),
    "fig6-gd": _ordering_protocol("gamma_2", "GD", "SD", FIG6_WINDOW, "Fig. 6"),
    "fig6-adam": Protocol("Adam's gamma_1 from the checkpoint t_a from which train accuracy stays 100% to 10 t_a, "
                          "and at the end against GD's", FIG6_WINDOW,
                          f"as on Fig. 2: rises by > {RESOLVE:.0%} after t_a and ends above GD's; "
                          f"{_VOTE_RULE}", SEEDS_TEXT, "Adam GD-like on another digit pair", "Fig. 6"),
    "fig3-spectral": _ordering_protocol("gamma_spectral", "spectral descent", "GD, Adam", FIG3_WINDOW, "Fig. 3"),
    "fig3-shampoo": _ordering_protocol("gamma_spectral", "Shampoo", "GD, Adam", FIG3_WINDOW, "Fig. 3"),
    "fig3-shampoo-no-acc": _ordering_protocol("gamma_spectral", "Shampoo without accumulation", "GD, Adam",
                                              FIG3_WINDOW, "Fig. 3"),
    "homogeneity": Protocol("relative error of f(x; c theta) = c^L f(x; theta), c in {0.5, 2, 3.7}, three nets",
                            "one evaluation on 20 digit points", "max relative error <= 1e-12", "seed 0",
                            "a net that is not homogeneous of the stated degree"),
    "adam-sign": Protocol("max |Adam update + sign(g)| at beta1 = beta2 = eps = 0", "one update of random gradients",
                          "<= 1e-9 (float64 rounding)", "generator seed 0", "an Adam that is not sign descent there"),
    "shampoo-polar": Protocol("max |Shampoo-no-acc update + U V^T| (SVD)", "one update of random gradients",
                              "<= 1e-9 (float64 rounding); accumulated Shampoo after two steps differs by O(1) (the "
                              "control)", "generator seed 0", "a Shampoo that is not the polar factor"),
}
