"""Negative controls for every decision rule of ``rates report flavors``: each rule runs on a constructed trajectory
where its FLAVORS claim is false (a floor instead of convergence, a rate slower by the tolerance, the other ordering,
curves that cross just after the horizon, a stalled loss) and must say ``not reproduced``; the matching true case
must say ``reproduced``; a case decided by a hair or still moving must say ``no verdict``."""

from types import SimpleNamespace

import numpy as np
import pytest

from rates.output.claims import NO_VERDICT, NOT_REPRODUCED, REPRODUCED, ClaimsTable
from rates.studies.flavors import rows as claim_rows
from rates.studies.flavors.protocols import INIT_SCALES, PROTOCOLS
from rates.studies.flavors.rules import (
    FAILS,
    FLAT_SLOPE,
    HOLDS,
    OPEN,
    RESOLVE,
    _verdict,
    eps_second_phase_verdict,
    floor_or_decay,
    loss_to_zero_states,
    margin_accuracy_verdict,
    margin_floor_verdict,
    monotone_soft_margin_verdict,
    ordering_states,
    ordering_verdict,
    phase_two_onset,
    rise_states,
    seed_vote,
)
from rates.studies.flavors.runs import fig1_key

T = np.unique(np.round(np.geomspace(1, 5000, 50)))  # log-spaced checkpoints, as the study's
SEEDS = 5


def _noise(sigma, seed, shape=(SEEDS, T.size)):
    return np.exp(sigma * np.random.default_rng(seed).standard_normal(shape))


def _history(metrics, t=T, t_separated=None, t_below=None, degree=2, max_step=1e-4):
    """A stand-in for rates.numeric.homogeneous.train.History with the fields the rules read."""
    rows = next(iter(metrics.values())).shape[0]
    metrics = {"train_acc": np.ones((rows, len(t))), **metrics}
    return SimpleNamespace(t=np.asarray(t, float), metrics=metrics, diverged=np.zeros(rows, bool),
                           t_separated=np.full(rows, 10) if t_separated is None else np.asarray(t_separated),
                           t_below_level=np.full(rows, 10) if t_below is None else np.asarray(t_below),
                           degree=degree, max_relative_step=np.full(rows, max_step), cycle_period=None,
                           final=lambda name: metrics[name][:, -1])


# ------------------------------------------------------------------------------------------ seed vote

def test_seed_vote_refutes_on_a_majority_and_stays_open_on_a_split():
    assert seed_vote([HOLDS] * 5, "x").verdict == REPRODUCED
    assert seed_vote([FAILS, FAILS, FAILS, HOLDS, OPEN], "x").verdict == NOT_REPRODUCED
    split = seed_vote([FAILS, FAILS, HOLDS, HOLDS, OPEN], "x")
    assert split.verdict == NO_VERDICT and "fails in 2" in split.reason
    assert seed_vote([HOLDS] * 4 + [OPEN], "x").verdict == NO_VERDICT
    assert seed_vote([], "x").verdict == NO_VERDICT


# ------------------------------------------------------------------------- Thm 3.1 (soft margin monotone)

def test_thm31_rule_refutes_a_drop_beyond_the_tolerance():
    tol = np.full(5, 1e-3)
    assert monotone_soft_margin_verdict(np.full(5, 5e-4), tol).verdict == REPRODUCED
    drop = np.array([5e-4, 5e-4, 3e-3, 5e-4, 5e-4])  # one run falls 3x past its O(eta) tolerance
    row = monotone_soft_margin_verdict(drop, tol)
    assert row.verdict == NOT_REPRODUCED and "1/5 runs" in row.reason


# ------------------------------------------------------------------ end-of-run orderings (Fig. 1, 2, 3, 6)

def _growing(level=1.0):
    return level * (1 + np.log1p(T))[None, :] * np.ones((SEEDS, 1))


def test_ordering_settled_both_ways():
    other = _growing()
    assert ordering_verdict(T, 1.2 * other, [other], "w").verdict == REPRODUCED
    # the other ordering: the claimed winner ends 20% below
    refuted = ordering_verdict(T, 0.8 * other, [other], "w")
    assert refuted.verdict == NOT_REPRODUCED and "fails in 5" in refuted.reason
    # by a hair: 0.5% ahead, under the 1% resolution
    assert ordering_verdict(T, (1 + RESOLVE / 2) * other, [other], "w").verdict == NO_VERDICT


def test_curves_that_cross_just_after_the_horizon_are_not_reproduced():
    """The winner leads by 10% at t_end/10 and 2% at the end: one more decade at that pace and it trails. A rule
    reading only the end would reproduce the claim."""
    other = _growing()
    frac = np.log10(T / T[-1] * 10)  # 0 at t_end/10, 1 at t_end
    lead = np.where(T >= T[-1] / 10, 0.10 - 0.08 * frac, 0.10)
    row = ordering_verdict(T, other * (1 + lead), [other], "w")
    assert row.verdict == NO_VERDICT
    assert ordering_states(T, other * (1 + lead), [other]) == [OPEN] * SEEDS
    # the mirror image: trailing by 10%, closing to 2% -- a not-reproduced on curves still converging is open too
    assert ordering_verdict(T, other * (1 - lead), [other], "w").verdict == NO_VERDICT


def test_fig1_ordering_row_refutes_the_other_ordering_and_checks_every_other_run():
    base = _growing(0.05)
    runs = {"sd": _history({"gamma_1": 1.3 * base}), "gd": _history({"gamma_1": base}),
            "cd": _history({"gamma_1": 1.5 * base})}  # CD, not SD, ends with the largest gamma_1
    table = ClaimsTable("t", "t")
    claim_rows._ordering_row(table, "fig1-sd", "gamma_1", "sd", runs, "SD ends with the largest gamma_1", "s")
    assert table.claims[0].verdict == NOT_REPRODUCED
    runs["cd"] = _history({"gamma_1": 0.5 * base})
    table = ClaimsTable("t", "t")
    claim_rows._ordering_row(table, "fig1-sd", "gamma_1", "sd", runs, "SD ends with the largest gamma_1", "s")
    assert table.claims[0].verdict == REPRODUCED and table.claims[0].protocol is PROTOCOLS["fig1-sd"]


def test_init_scale_rule_refutes_margins_that_fall_as_alpha_falls():
    base = _growing(0.05)

    def row(factors):
        h = {}
        for algo in ("gd", "sd", "cd"):
            for scale, f in zip(INIT_SCALES, factors):
                h[fig1_key(algo, scale)] = _history({m: f * base for m in ("gamma_1", "gamma_2", "gamma_inf")})
        table = ClaimsTable("t", "t")
        claim_rows._init_scale_row(table, h)
        return table.claims[0]

    assert row([1.0, 1.1, 1.2]).verdict == REPRODUCED
    assert row([1.2, 1.1, 1.0]).verdict == NOT_REPRODUCED  # the measured direction: margins fall with alpha
    assert row([1.0, 1.1, 1.105]).verdict == NO_VERDICT  # the last step by a hair


# ---------------------------------------------------------------- margins rise after 100% train accuracy

def test_margins_rise_rule_refutes_a_margin_flat_after_separation():
    rising = _growing(0.05)
    flat = np.where(T >= 10, 0.05, 0.05 * T / 10)[None, :] * np.ones((SEEDS, 1))
    states, rises = rise_states(T, rising, np.full(SEEDS, 10))
    assert states == [HOLDS] * SEEDS and np.all(rises > RESOLVE)
    assert rise_states(T, flat, np.full(SEEDS, 10))[0] == [FAILS] * SEEDS

    def row(curve):
        accuracy = np.where(T >= 10, 1.0, 0.9)[None, :] * np.ones((SEEDS, 1))  # 100% from t = 10 on
        runs = {name: _history({"gamma_1": curve, "gamma_2": curve, "train_acc": accuracy})
                for name in ("gd", "sd", "adam")}
        table = ClaimsTable("t", "t")
        claim_rows._margins_rise_row(table, runs)
        return table.claims[0]

    assert row(rising).verdict == REPRODUCED
    assert row(flat).verdict == NOT_REPRODUCED
    # separated only at t = 1000 of 5000: a flat margin has not been watched for a decade, so it stays open
    late = rise_states(T, flat, np.full(SEEDS, 1000))[0]
    assert late == [OPEN] * SEEDS


def test_adam_like_sd_rule_refutes_a_gd_like_adam():
    """Adam's gamma_1 rises after separation but stays below GD's: GD-like, not SD-like (FLAVORS sec. 4.2)."""
    base = _growing(0.05)

    def row(adam_factor):
        adam = _history({"gamma_1": adam_factor * base})
        table = ClaimsTable("t", "t")
        claim_rows._adam_like_sd_row(table, "fig2-adam", "Adam like SD", "s", adam, _history({"gamma_1": 2.0 * base}),
                                  _history({"gamma_1": base}))
        return table.claims[0]

    assert row(1.5).verdict == REPRODUCED
    assert row(0.7).verdict == NOT_REPRODUCED


# -------------------------------------------------------------------- Fig. 5: margin and test accuracy

def test_margin_accuracy_rule_refutes_test_accuracy_ordered_by_the_margin():
    rng = np.random.default_rng(0)
    margins = {m: rng.uniform(0.01, 0.1, 45) for m in ("gamma_1", "gamma_2", "gamma_inf")}
    unrelated = rng.uniform(0.7, 0.9, 45)
    assert margin_accuracy_verdict(margins, unrelated).verdict == REPRODUCED
    ordered = 0.7 + 2 * margins["gamma_inf"]  # test accuracy a monotone function of gamma_inf
    row = margin_accuracy_verdict(margins, ordered)
    assert row.verdict == NOT_REPRODUCED and "gamma_inf tau 1" in row.reason
    assert margin_accuracy_verdict(margins, ordered[:5]).verdict == NO_VERDICT  # too few runs


# --------------------------------------------------------------- Thm 3.4, Cor. A.8: floor against decay

LEVELS = np.geomspace(3.0, 300.0, 25)  # log(1/L) over two decades


def _curves(f, sigma=0.05, seed=1):
    return f(LEVELS)[None, :] * _noise(sigma, seed, (SEEDS, LEVELS.size))


def _x():
    return np.tile(LEVELS, (SEEDS, 1))


def test_floor_or_decay_refutes_a_positive_floor_and_reproduces_a_power_decay():
    assert floor_or_decay(_x(), _curves(lambda x: 0.3 * x ** -0.5), "r").verdict == REPRODUCED
    floor = floor_or_decay(_x(), _curves(lambda x: 0.15 + 0.3 / x), "r")  # residual -> 0.15, not 0
    assert floor.verdict == NOT_REPRODUCED and "levels off" in floor.reason


def test_floor_or_decay_refutes_a_rate_slower_than_the_tolerance():
    """A decay half as fast as the tolerance (x^-0.05) is a floor within any float64 run."""
    slow = floor_or_decay(_x(), _curves(lambda x: 0.3 * x ** (-FLAT_SLOPE / 2), sigma=0.01), "r")
    assert slow.verdict == NOT_REPRODUCED
    fast = floor_or_decay(_x(), _curves(lambda x: 0.3 * x ** (-4 * FLAT_SLOPE), sigma=0.01), "r")
    assert fast.verdict == REPRODUCED


def test_floor_or_decay_does_not_reproduce_a_fall_that_is_slowing_toward_a_floor():
    """0.003 + 0.3/x: still falling over the last decade, but the later half has flattened (the floor takes over
    at x ~ 100): the rule must not call it convergence."""
    row = floor_or_decay(_x(), _curves(lambda x: 0.003 + 0.3 / x, sigma=0.01), "r")
    assert row.verdict != REPRODUCED
    assert row.values["mean_late_slope"] > 0.75 * row.values["mean_early_slope"] and "slowing" in row.reason


def test_kkt_row_refutes_a_floor_from_a_history():
    residual = _curves(lambda x: 0.15 + 0.3 / x)
    metrics = {"kkt_residual_window": residual, "log_loss": -_x(), "kkt_window_radius": np.full_like(residual, 1e-3)}
    h = _history(metrics, t=np.arange(LEVELS.size, dtype=float))
    table = ClaimsTable("t", "t")
    claim_rows._kkt_row(table, "GD (l2)", h)
    assert table.claims[0].verdict == NOT_REPRODUCED


def _late_history(gap, soft_above=False, log_loss=None, norm=None):
    hard = 0.1 * np.ones((SEEDS, LEVELS.size))
    soft = hard * (1 - gap) if not soft_above else hard * 1.01
    metrics = {"gamma_2": hard, "soft_margin": soft,
               "log_loss": -_x() if log_loss is None else log_loss,
               "norm": np.tile(LEVELS, (SEEDS, 1)) if norm is None else norm}
    return _history(metrics, t=np.geomspace(10, 1e4, LEVELS.size), t_below=np.zeros(SEEDS, int))


def _limit_rows(h):
    table = ClaimsTable("t", "t")
    claim_rows._limit_rows(table, [("GD (l2)", h)])
    return {c.protocol: c for c in table.claims}


def test_cor_a8_rule_refutes_a_gap_that_levels_off_and_a_soft_margin_above_the_hard_one():
    decays = _limit_rows(_late_history(_curves(lambda x: 1.0 / x)))[PROTOCOLS["cor-a8"]]
    assert decays.verdict == REPRODUCED
    floor = _limit_rows(_late_history(_curves(lambda x: 0.05 + 0.1 / x)))[PROTOCOLS["cor-a8"]]
    assert floor.verdict == NOT_REPRODUCED
    # a floor the decaying part still hides (1/x is 0.03-0.003 against 0.05 over the last decade): not resolved
    # either way, but never reproduced
    hidden = _limit_rows(_late_history(_curves(lambda x: 0.05 + 1.0 / x)))[PROTOCOLS["cor-a8"]]
    assert hidden.verdict == NO_VERDICT and "slowing" in hidden.reason
    above = _limit_rows(_late_history(_curves(lambda x: 1.0 / x), soft_above=True))[PROTOCOLS["cor-a8"]]
    assert above.verdict == NOT_REPRODUCED and "above the geometric" in above.reason


def test_lemma_a6_rule_refutes_a_stalled_loss():
    assert loss_to_zero_states(np.array([-10.0]), np.array([-30.0]), np.array([5.0]), np.array([6.0])) == [HOLDS]
    # the stalled CD seed of the study's history: log L -3.841 -> -3.8411, ||theta|| x1.00001
    assert loss_to_zero_states(np.array([-3.841]), np.array([-3.8411]), np.array([5.0]), np.array([5.00005])) == [FAILS]
    # -3.841 -> -3.846 (0.13%): neither growing by 1% nor stalled below 0.1%: open
    assert loss_to_zero_states(np.array([-3.841]), np.array([-3.846]), np.array([5.0]), np.array([5.1])) == [OPEN]
    stalled = np.tile(np.linspace(-3.0, -3.841, LEVELS.size), (SEEDS, 1))
    stalled[:, -12:] = -3.841
    row = _limit_rows(_late_history(_curves(lambda x: 1.0 / x), log_loss=stalled))[PROTOCOLS["lemma-a6"]]
    assert row.verdict == NOT_REPRODUCED
    fine = _limit_rows(_late_history(_curves(lambda x: 1.0 / x)))[PROTOCOLS["lemma-a6"]]
    assert fine.verdict == REPRODUCED


# --------------------------------------------------------------------------------------------- Prop. B.6

def test_prop_b6_rule_refutes_a_margin_below_the_soft_margin_at_t0():
    soft0 = np.full(SEEDS, 0.1)
    tol = np.full(SEEDS, 1e-3)
    above = [np.linspace(0.1, 0.2, 20)] * SEEDS
    assert margin_floor_verdict(above, soft0, tol).verdict == REPRODUCED
    dips = [np.linspace(0.1, 0.2, 20)] * (SEEDS - 1) + [np.r_[0.1, 0.095, np.linspace(0.1, 0.2, 18)]]
    row = margin_floor_verdict(dips, soft0, tol)
    assert row.verdict == NOT_REPRODUCED and "1/5 seeds" in row.reason
    # a dip within the O(eta) tolerance is the discretisation, not a violation
    assert margin_floor_verdict([np.r_[0.0999995, 0.2]] * SEEDS, soft0, tol).verdict == REPRODUCED


# ---------------------------------------------------------------------------- sec. 4.2: eps and phase two

def test_phase_two_onset_finds_the_peak_and_the_fall():
    t = np.array([1e3, 2e3, 4e3, 1e4, 2e4, 4e4])
    assert phase_two_onset(t, np.array([10, 11, 12, 13, 14, 15.0]), 0) is None  # still rising: no second phase
    onset = phase_two_onset(t, np.array([10, 11, 12, 11, 10, 9.0]), 0)
    assert onset[0] == 4e3 and onset[1] == pytest.approx((9 / 12 - 1) / 1.0)


def test_eps_onset_rule_refutes_a_larger_eps_that_starts_earlier():
    small = [(4e3, -0.1)] * SEEDS
    assert eps_second_phase_verdict(small, [(8e3, -0.3)] * SEEDS).verdict == REPRODUCED
    assert eps_second_phase_verdict(small, [(2e3, -0.3)] * SEEDS).verdict == NOT_REPRODUCED  # earlier
    assert eps_second_phase_verdict(small, [(8e3, -0.05)] * SEEDS).verdict == NOT_REPRODUCED  # gentler
    none = eps_second_phase_verdict([None] * SEEDS, [None] * SEEDS)
    assert none.verdict == NO_VERDICT and "nothing to compare" in none.reason


def test_phase_two_and_eps_rows_refute():
    """The existing rules of the second phase and of the eps ordering keep their refutations at the 1 % resolution
    (the full trajectories are in test_flavors_late_phase / test_homogeneous_cli)."""
    t = np.array([1, 100, 1000, 3000, 5000, 10000, 30000], float)
    log_loss = np.log([1.0, 1e-2, 1e-5, 1e-8, 1e-9, 1e-10, 1e-11])
    gamma_2 = np.tile([0.01, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10], (3, 1))

    def phase(late):
        h = _history({"gamma_1": np.tile([1, 30, 12, 10, *late], (3, 1)).astype(float), "gamma_2": gamma_2,
                      "log_loss": np.tile(log_loss, (3, 1))}, t=t)
        table = ClaimsTable("t", "t")
        claim_rows._adam_phase_two_row(table, h, 1e-8)
        return table.claims[0].verdict

    assert phase([9, 8.5, 8]) == REPRODUCED
    assert phase([10.5, 11, 12]) == NOT_REPRODUCED  # rising through a decade of steps below 1e-7
    assert phase([10, 10, 9.95]) != REPRODUCED  # a 0.5% fall is by a hair


# ----------------------------------------------------------------------------------------------- Rem. 3.2

def test_rem32_is_an_existence_statement_reported_in_the_notes_not_a_claim_row():
    """Rem. 3.2 says another margin *may* fall: a run can show it, none can refute it, so it is no claim row (a
    rule that cannot say 'not reproduced' decides nothing); the notes say whether these runs show it."""
    rising = _growing(0.05)
    falls = rising.copy()
    falls[:, -5:] *= 0.5

    def notes(other):
        runs = {algo: _history({"gamma_1": other if algo == "gd" else rising, "gamma_2": rising,
                                "gamma_inf": rising}) for algo in ("gd", "sd", "cd")}
        table = ClaimsTable("t", "t")
        claim_rows._other_margins_row(table, runs)
        assert table.claims == []
        return " ".join(table.notes)

    assert "shown in these runs: GD gamma_1 falls by 0.49" in notes(falls)
    assert "not shown in these runs" in notes(rising)


def test_every_row_has_a_protocol_and_every_figure_one_window():
    windows = {}
    for key, protocol in PROTOCOLS.items():
        assert protocol.quantity and protocol.window and protocol.rule and protocol.rules_out, key
        if protocol.figure:
            windows.setdefault(protocol.figure, set()).add(protocol.window)
    assert all(len(w) == 1 for w in windows.values()), windows


def test_margins_are_read_from_lasting_not_transient_full_accuracy():
    """A first 100% train accuracy can be transient (seed 1 of the Fig. 2 SD run: 1.0 at step 1, 0.99 from step 2
    with negative margins): the rise is read from the checkpoint from which accuracy stays at 100%."""
    from rates.studies.flavors.rules import lasting_from

    t = np.array([0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000])
    acc = np.array([[0.6, 1, 0.99, 0.99, 1, 0.99, 1, 1, 1, 1, 1, 1.0], [0.6] + [1.0] * 11, [0.6] * 11 + [0.99]])
    assert lasting_from(t, acc >= 1.0).tolist() == [50, 1, -1]
    margin = np.array([[0.28, 0.3, -2, -5, -3, -1, 0.5, 1, 2, 4, 6, 8]], float)  # transient at t = 1, lasting at 50
    history = _history({"gamma_1": margin, "gamma_2": margin, "train_acc": acc[:1]}, t=t)
    assert rise_states(t, margin, np.array([1]))[0] == [FAILS]  # read from the transient: no rise
    table = ClaimsTable("t", "t")
    claim_rows._margins_rise_row(table, {"sd": history})
    assert table.claims[0].verdict == REPRODUCED, table.claims[0].reason


# ------------------------------------------------------------------- rules broken on purpose (boundaries)

def test_seed_vote_needs_a_strict_majority_of_failing_seeds():
    """One failing seed of two, or two of four, is a split, not a refutation; min_seeds counts judged seeds."""
    assert seed_vote([FAILS, HOLDS], "x").verdict == NO_VERDICT
    assert seed_vote([FAILS, FAILS, HOLDS, HOLDS], "x").verdict == NO_VERDICT
    assert seed_vote([FAILS, FAILS, FAILS, HOLDS], "x").verdict == NOT_REPRODUCED
    assert seed_vote([FAILS, FAILS], "x").verdict == NOT_REPRODUCED
    assert seed_vote([HOLDS, OPEN], "x").verdict == NO_VERDICT
    assert seed_vote([HOLDS, HOLDS], "x", min_seeds=3).verdict == NO_VERDICT
    assert seed_vote([HOLDS] * 3, "x", min_seeds=3).verdict == REPRODUCED
    counts = seed_vote([FAILS, HOLDS, OPEN], "x").values
    assert counts == {"holds": 1, "fails": 1, "open": 1, "seeds": 3}


def _power_laws(slopes):
    """Exact power laws x^s per seed over LEVELS: each seed's fitted slope is s, early and late halves alike."""
    return np.tile(LEVELS, (len(slopes), 1)), np.array([LEVELS ** s for s in slopes])


def test_floor_or_decay_does_not_reproduce_when_one_seed_falls_slower_than_the_tolerance():
    """Four seeds fall like x^-0.3, one like x^-0.09: the mean's 95 % interval (-0.258 +- 0.118) is below -0.1,
    but one seed is not -- every seed must decay."""
    row = floor_or_decay(*_power_laws([-0.3, -0.32, -0.28, -0.3, -0.09]), "r")
    assert row.values["mean_slope"] + row.values["half_width"] < -FLAT_SLOPE
    assert row.verdict == NO_VERDICT and "in 4/5 seeds" in row.reason


def test_floor_or_decay_does_not_reproduce_a_decay_its_interval_does_not_resolve():
    """Every seed falls faster than x^-0.1, but the seeds spread so much that the mean slope's 95 % interval
    (-0.348 +- 0.436, t with 4 degrees of freedom) reaches above -0.1: not resolved."""
    slopes = [-0.11, -0.5, -0.12, -0.9, -0.11]
    row = floor_or_decay(*_power_laws(slopes), "r")
    half = 2.7764451051977987 * np.std(slopes, ddof=1) / np.sqrt(5)  # scipy.stats.t.ppf(0.975, 4)
    assert row.values["half_width"] == pytest.approx(half, rel=1e-9)
    assert row.values["mean_slope"] == pytest.approx(np.mean(slopes), rel=1e-9)
    assert row.verdict == NO_VERDICT and "neither a decay faster nor a level flatter" in row.reason
    assert floor_or_decay(*_power_laws([-0.5] * 5), "r").verdict == REPRODUCED


def test_floor_or_decay_needs_three_seeds_spanning_a_decade():
    assert floor_or_decay(*_power_laws([-0.5, -0.5]), "r").verdict == NO_VERDICT
    x, y = _power_laws([-0.5] * 5)
    short = x[:, -8:]  # x from ~130 to 300: a span under x10
    row = floor_or_decay(short, y[:, -8:], "r")
    assert row.verdict == NO_VERDICT and "spans x10" in row.reason
    assert floor_or_decay(*_power_laws([-0.05] * 5), "r").verdict == NOT_REPRODUCED


def test_verdict_over_seed_means_and_seeds():
    assert _verdict(True, 3, 3) == (REPRODUCED, "")
    assert _verdict(True, 2, 3)[0] == NO_VERDICT
    assert _verdict(False, 3, 3)[0] == NOT_REPRODUCED
    assert _verdict(True, 0, 0)[0] == NO_VERDICT


def test_rise_states_at_the_resolution_and_the_decade_watched():
    t = np.array([1, 10, 100, 1000, 10000], float)
    start = np.array([10])
    assert rise_states(t, np.array([[1, 1, 1.02, 1, 1]]), start)[0] == [HOLDS]  # +2 % within [10, 100]
    assert rise_states(t, np.array([[1, 1, 1.005, 1, 1]]), start)[0] == [OPEN]  # +0.5 %: by a hair
    assert rise_states(t, np.array([[1, 1, 1.0005, 1, 1]]), start)[0] == [FAILS]  # +0.05 %: flat
    assert rise_states(t, np.array([[1, 1, 1, 1, 2.0]]), start)[0] == [FAILS]  # rises only after 10 t_start
    assert rise_states(t, np.array([[1, 1, 1, 1, 1.0]]), np.array([-1]))[0] == []  # never separated


def test_ordering_states_at_the_resolution():
    t = np.array([1, 10, 100, 1000], float)
    other = np.ones((1, 4))
    assert ordering_states(t, other * 1.02, [other]) == [HOLDS]
    assert ordering_states(t, other * 0.98, [other]) == [FAILS]
    assert ordering_states(t, other * 1.005, [other]) == [OPEN]
    assert ordering_states(t, other * np.nan, [other]) == [OPEN]


def test_lemma_a6_states_at_their_thresholds():
    # log(1/L) 10 -> 10.2 (+2 %) and the norm +2 %: grows; either at +0.05 %: stalled; +0.5 %: open
    assert loss_to_zero_states(np.array([-10.0]), np.array([-10.2]), np.array([1.0]), np.array([1.02])) == [HOLDS]
    assert loss_to_zero_states(np.array([-10.0]), np.array([-10.2]), np.array([1.0]), np.array([1.0005])) == [FAILS]
    assert loss_to_zero_states(np.array([-10.0]), np.array([-10.05]), np.array([1.0]), np.array([1.02])) == [OPEN]
    assert loss_to_zero_states(np.array([-10.0]), np.array([-9.0]), np.array([1.0]), np.array([1.02])) == [FAILS]


def test_margin_accuracy_rule_uses_the_interval_on_both_sides():
    n = 45
    half = 1.96 * np.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
    margins = {"gamma_1": np.arange(n, dtype=float)}
    row = margin_accuracy_verdict(margins, np.arange(n, dtype=float))  # tau = 1
    assert row.verdict == NOT_REPRODUCED and row.values["half_width"] == pytest.approx(half)
    assert margin_accuracy_verdict(margins, -np.arange(n, dtype=float)).verdict == REPRODUCED  # tau = -1
    # 8 runs ordered perfectly: tau = 1, but the half-width 1.96 sqrt(42 / 504) = 0.566 leaves the lower end at
    # 0.434, under TAU_LINK = 0.5: not resolved; 7 runs are too few to judge
    eight = margin_accuracy_verdict({"g": np.arange(8.0)}, np.arange(8.0))
    assert eight.verdict == NO_VERDICT and "straddles" in eight.reason
    assert "only 7 runs" in margin_accuracy_verdict({"g": np.arange(7.0)}, np.arange(7.0)).reason


# ------------------------------------------------------- what each rule says, word for word, at its boundaries

def test_thm31_rule_output_at_its_boundaries():
    empty = monotone_soft_margin_verdict(np.array([]), np.array([]))
    assert (empty.verdict, empty.reason, empty.values) == (NO_VERDICT, "no run reached L < l(0); longer runs decide",
                                                           {})
    at = monotone_soft_margin_verdict(np.array([0.25]), np.array([0.25]))  # a drop equal to the tolerance is within
    assert (at.verdict, at.reason, at.values) == (REPRODUCED, "", {"drops": [0.25], "tolerances": [0.25]})
    # the worst run is the one furthest past its own tolerance, not the largest drop
    row = monotone_soft_margin_verdict(np.array([0.003, 0.0025]), np.array([0.0025, 0.001]))
    assert row.verdict == NOT_REPRODUCED
    assert row.reason == ("the soft margin fell by more than the O(eta) tolerance in 2/2 runs (worst 0.0025 against "
                          "0.001)")
    assert row.values == {"drops": [0.003, 0.0025], "tolerances": [0.0025, 0.001]}


def test_prop_b6_rule_output_at_its_boundaries():
    empty = margin_floor_verdict([], np.array([]), np.array([]))
    assert (empty.verdict, empty.reason) == (NO_VERDICT, "no run reached L < l(0); longer runs decide")
    assert empty.values == {"smallest_ratio": [], "tolerance": []}
    at = margin_floor_verdict([np.array([0.5, 1.0])], np.array([1.0]), np.array([0.5]))  # ratio = 1 - tolerance
    assert (at.verdict, at.reason, at.values) == (REPRODUCED, "", {"smallest_ratio": [0.5], "tolerance": [0.5]})
    row = margin_floor_verdict([np.array([0.25, 1.0]), np.array([1.0])], np.array([1.0, 1.0]), np.array([0.5, 0.5]))
    assert row.verdict == NOT_REPRODUCED
    assert row.reason == ("the own geometric margin fell below the soft margin at t0 (the bound's constant) in 1/2 "
                          "seeds: smallest gamma(t)/gamma~(t0) 0.25")
    assert row.values == {"smallest_ratio": [0.25, 1.0], "tolerance": [0.5, 0.5]}


def test_eps_onset_rule_at_the_resolution():
    """Per seed: later by more than 1 % and steeper by more than 1 % holds; earlier or gentler by more than 1 %
    fails; anything else (the same onset, the same fall, a difference of exactly 1 %) is open."""
    small = (100.0, -0.5)

    def state(large):  # one seed: its state is the verdict (a failing seed of one is a majority)
        verdict = eps_second_phase_verdict([small], [large]).verdict
        return [{REPRODUCED: HOLDS, NOT_REPRODUCED: FAILS, NO_VERDICT: OPEN}[verdict]]

    later, steeper = small[0] * 2, small[1] * 1.5
    assert state((later, steeper)) == [HOLDS]
    assert state((small[0] * 1.5, small[1] * 1.5)) == [HOLDS]  # 50 % later, 50 % steeper
    assert state((small[0], steeper)) == [OPEN]  # the same onset
    assert state((later, small[1])) == [OPEN]  # the same fall
    assert state((small[0] * (1 + RESOLVE), steeper)) == [OPEN]  # exactly 1 % later
    assert state((later, small[1] * (1 + RESOLVE))) == [OPEN]  # exactly 1 % steeper
    assert state((small[0] * (1 - RESOLVE), steeper)) == [OPEN]  # exactly 1 % earlier
    assert state((later, small[1] * (1 - RESOLVE))) == [OPEN]  # exactly 1 % gentler
    assert state((small[0] * 0.9, steeper)) == [FAILS]  # 10 % earlier
    assert state((later, small[1] * 0.9)) == [FAILS]  # 10 % gentler


def test_eps_onset_rule_leaves_out_seeds_without_both_phases_and_counts_the_rest():
    row = eps_second_phase_verdict([None, (4e3, -0.1), (4e3, -0.1)], [(8e3, -0.3), None, (8e3, -0.3)])
    assert (row.verdict, row.values["seeds_with_both_phases"]) == (REPRODUCED, 1)
    row = eps_second_phase_verdict([(4e3, -0.1), (4e3, -0.1)], [(2e3, -0.3), (8e3, -0.3)])
    assert row.verdict == NO_VERDICT and row.values["seeds_with_both_phases"] == 2
    assert row.reason == ("larger eps starts later and falls faster: holds in 1, fails in 1, open (unsettled or by a "
                          "hair) in 0 of 2 seeds; a majority failing or every seed holding decides")
    none = eps_second_phase_verdict([None], [(8e3, -0.3)])
    assert none.values == {"seeds_with_both_phases": 0}
    assert none.reason == ("neither eps run has a second phase in any seed (gamma_1 never ends 1 % below its peak "
                           "after L < 1e-7), so there is nothing to compare: a run in which both show it decides")


def test_verdict_over_seed_means_says_why():
    assert _verdict(True, 0, 0) == (NO_VERDICT, "no seed separated in every compared run; more steps or "
                                                        "other rates decide it")
    assert _verdict(True, 2, 3) == (NO_VERDICT, "holds for the seed means but only in 2/3 seeds; more seeds "
                                                        "decide it")
    assert _verdict(False, 1, 3) == (NOT_REPRODUCED, "fails for the seed means (holds in 1/3 seeds)")


# ------------------------------------ floor_or_decay on broken power laws: every slope known in closed form

END = 300.0
SPLIT = END / np.sqrt(10)  # the later half of the last decade starts here
GRID = np.unique(np.concatenate([np.geomspace(3.0, END, 49), [30.0, SPLIT]]))


def _broken(s_a, s_b, x=GRID):
    """(x / SPLIT)^s_a up to SPLIT, (x / SPLIT)^s_b after: slope s_a on [30, SPLIT], s_b on [SPLIT, 300]."""
    return np.where(x <= SPLIT, (x / SPLIT) ** s_a, (x / SPLIT) ** s_b)


def _rows(pairs, x=GRID):
    return np.tile(x, (len(pairs), 1)), np.array([_broken(a, b, x) for a, b in pairs])


def _fit(x, y):
    return np.polyfit(np.log(x), np.log(y), 1)[0]


def test_floor_or_decay_reports_every_number_it_used():
    pairs = [(-1.0, -0.9), (-1.2, -1.0), (-0.9, -0.8), (-1.1, -1.1), (-1.0, -1.0)]
    x, y = _rows(pairs)
    row = floor_or_decay(x, y, "r")
    decade = GRID >= 30.0
    slopes = [_fit(GRID[decade], _broken(a, b)[decade]) for a, b in pairs]
    t = 2.7764451051977987  # scipy.stats.t.ppf(0.975, 4)
    late = np.array([b for _, b in pairs])
    assert row.verdict == REPRODUCED and row.reason == ""
    assert set(row.values) == {"slopes", "early_slopes", "late_slopes", "ends", "n", "window", "mean_slope",
                               "half_width", "mean_early_slope", "mean_late_slope", "late_half_width"}
    assert row.values["slopes"] == pytest.approx(slopes, abs=1e-12)
    assert row.values["early_slopes"] == pytest.approx([a for a, _ in pairs], abs=1e-12)
    assert row.values["late_slopes"] == pytest.approx(late, abs=1e-12)
    assert row.values["ends"] == pytest.approx([np.sqrt(10) ** b for _, b in pairs], rel=1e-12)
    assert row.values["n"] == 5 and row.values["window"] == [30.0, 300.0]
    assert row.values["mean_slope"] == pytest.approx(np.mean(slopes), abs=1e-12)
    assert row.values["half_width"] == pytest.approx(t * np.std(slopes, ddof=1) / np.sqrt(5), rel=1e-9)
    assert row.values["mean_early_slope"] == pytest.approx(-1.04, abs=1e-12)
    assert row.values["mean_late_slope"] == pytest.approx(late.mean(), abs=1e-12)
    assert row.values["late_half_width"] == pytest.approx(t * np.std(late, ddof=1) / np.sqrt(5), rel=1e-9)


def test_floor_or_decay_on_a_curved_residual_fits_exactly_the_decade_and_its_halves():
    """0.01 + 1/x: the slopes depend on which checkpoints each fit takes -- the decade [30, 300], its earlier half
    [30, 300/sqrt 10] and its later half [300/sqrt 10, 300], both ends included."""
    y = 0.01 + 1.0 / GRID
    row = floor_or_decay(np.tile(GRID, (3, 1)), np.tile(y, (3, 1)), "r")
    decade, first, half = GRID >= 30.0, (GRID >= 30.0) & (GRID <= SPLIT), GRID >= SPLIT
    assert row.values["slopes"] == pytest.approx([_fit(GRID[decade], y[decade])] * 3, abs=1e-12)
    assert row.values["early_slopes"] == pytest.approx([_fit(GRID[first], y[first])] * 3, abs=1e-12)
    assert row.values["late_slopes"] == pytest.approx([_fit(GRID[half], y[half])] * 3, abs=1e-12)


def test_floor_or_decay_refutes_a_level_in_the_decade_or_in_its_later_half_and_says_so():
    steep_then_flat = floor_or_decay(*_rows([(-2.0, 0.0)] * 5), "r")  # the decade falls (-1), its later half is flat
    assert steep_then_flat.verdict == NOT_REPRODUCED
    assert steep_then_flat.reason == (
        "r levels off: slope of log against log log(1/L) over the last decade (log(1/L) in [30, 300]) -1 +- 0 (x0.10 "
        "per decade), over its earlier half -2, its later half 0 +- 0 (95 %, 5 seeds), resolved flatter than -0.1 (a "
        "fall slower than x0.79 per decade of log(1/L) is a floor within any float64 run); at the end 1-1")
    rise_then_fall = floor_or_decay(*_rows([(0.3, -0.4)] * 5), "r")  # the decade is flat (-0.05), its later half not
    assert rise_then_fall.verdict == NOT_REPRODUCED and rise_then_fall.values["mean_slope"] == pytest.approx(-0.05)


def test_floor_or_decay_reads_slowing_from_the_interval_of_the_seeds():
    slowing = floor_or_decay(*_rows([(-1.0, -0.5)] * 5), "r")
    assert slowing.verdict == NO_VERDICT
    assert slowing.reason == (
        "r: slope of log against log log(1/L) over the last decade (log(1/L) in [30, 300]) -0.75 +- 0 (x0.18 per "
        "decade), over its earlier half -1, its later half -0.5 +- 0 (95 %, 5 seeds); the fall is slowing (later half "
        "-0.5 against -1 in the earlier half, under 0.75 of it): a floor may be approaching, a run to larger log(1/L) "
        "decides")
    # the later half keeps 1/2 of the slope in two seeds, all of it in three: the excess -0.05 +- 0.34 is not
    # resolved above 0, so the fall is not called slowing
    mixed = floor_or_decay(*_rows([(-1.0, -1.0), (-1.0, -0.5), (-1.0, -1.0), (-1.0, -0.5), (-1.0, -1.0)]), "r")
    assert mixed.verdict == REPRODUCED


def test_floor_or_decay_counts_one_seed_short_of_every_seed():
    row = floor_or_decay(*_rows([(-0.3, -0.3)] * 4 + [(-0.05, -0.05)]), "r")
    assert row.verdict == NO_VERDICT
    assert row.reason.endswith("; falling faster than x0.79 per decade in 4/5 seeds; every seed doing so decides")
    wide = floor_or_decay(*_rows([(-0.11, -0.11), (-0.5, -0.5), (-0.12, -0.12), (-0.9, -0.9), (-0.11, -0.11)]), "r")
    assert wide.reason.endswith("; neither a decay faster nor a level flatter than -0.1 is resolved; more seeds decide")
    # the study's GD residual: mean -0.31 below -0.1, but one seed at +0.08 -- more seeds narrow the interval away
    # from a floor and can never make that seed fall, so the reason must not promise that they decide
    one_up = floor_or_decay(*_rows([(-0.25, -0.25), (-0.72, -0.72), (0.08, 0.08), (-0.35, -0.35)]), "r")
    assert one_up.verdict == NO_VERDICT and one_up.values["mean_slope"] == pytest.approx(-0.31)
    assert one_up.reason.endswith("; neither a decay faster nor a level flatter than -0.1 is resolved; more seeds "
                                  "alone do not decide: the mean is below -0.1 but 1/4 seeds fall slower (the decay "
                                  "needs every seed below), so a run to larger log(1/L) decides")
    # mean above -0.1 with a wide interval: more seeds would resolve the floor
    above = floor_or_decay(*_rows([(0.3, 0.3), (-0.5, -0.5), (0.2, 0.2), (-0.3, -0.3)]), "r")
    assert above.verdict == NO_VERDICT and above.values["mean_slope"] == pytest.approx(-0.075)
    assert above.reason.endswith("is resolved; more seeds decide")


def test_floor_or_decay_takes_three_seeds_and_says_how_far_the_others_reach():
    assert floor_or_decay(*_rows([(-0.5, -0.5)] * 3), "r").verdict == REPRODUCED
    two = floor_or_decay(*_rows([(-0.5, -0.5)] * 2), "r")
    assert two.reason == ("r: log(1/L) spans x10 over the late checkpoints in only 2 seed(s) (widest span x100): 3 "
                          "such seeds decide")
    # three checkpoints spanning x100 count towards the widest span, though too few for the slopes
    sparse = np.array([3.0, 30.0, 300.0])
    row = floor_or_decay(np.tile(sparse, (2, 1)), np.tile(sparse ** -0.5, (2, 1)), "r")
    assert "(widest span x100)" in row.reason and row.values["n"] == 0
    none = floor_or_decay(np.tile(sparse[:2], (2, 1)), np.tile(sparse[:2] ** -0.5, (2, 1)), "r")
    assert "(widest span x0)" in none.reason


def test_floor_or_decay_span_of_exactly_ten_counts_and_a_shorter_one_does_not():
    ten = np.geomspace(30.0, 300.0, 25)
    assert floor_or_decay(*_rows([(-0.5, -0.5)] * 5, x=ten), "r").verdict == REPRODUCED
    six = np.geomspace(50.0, 300.0, 25)  # both halves have checkpoints, but the span is x6
    assert floor_or_decay(*_rows([(-0.5, -0.5)] * 5, x=six), "r").verdict == NO_VERDICT
    x, y = _rows([(-0.5, -0.5)] * 5)
    x[0, :30] = np.nan  # the first seed keeps only x >= ~50: left out, the other four decide
    row = floor_or_decay(x, y, "r")
    assert row.verdict == REPRODUCED and row.values["n"] == 4


def test_floor_or_decay_drops_unusable_checkpoints_not_seeds():
    x, y = _rows([(-0.5, -0.5)] * 5)
    y[0, GRID.searchsorted(100.0)] = 0.0  # a zero residual inside the decade: that checkpoint is dropped
    y[1, GRID.searchsorted(150.0)] = np.nan
    x[2, 5] = np.inf
    row = floor_or_decay(x, y, "r")
    assert row.verdict == REPRODUCED and row.values["n"] == 5
    assert row.values["slopes"] == pytest.approx([-0.5] * 5, abs=1e-12)
    # checkpoints below x = e are dropped: these seeds reach x = 25 only, a span of x9 from e
    low = np.geomspace(1.0, 25.0, 30)
    assert floor_or_decay(*_rows([(-0.5, -0.5)] * 5, x=low), "r").verdict == NO_VERDICT
    first_empty = _rows([(-0.5, -0.5)] * 4)
    x = np.vstack([np.full(GRID.size, np.nan), first_empty[0]])
    y = np.vstack([np.full(GRID.size, np.nan), first_empty[1]])
    assert floor_or_decay(x, y, "r").values["n"] == 4  # an empty seed first does not stop the others


def test_seed_vote_output_word_for_word():
    few = seed_vote([HOLDS, HOLDS], "x", min_seeds=3)
    assert (few.reason, few.values) == ("x: only 2 seed(s) could be judged, 3 decide",
                                        {"holds": 2, "fails": 0, "open": 0, "seeds": 2})
    every = seed_vote([HOLDS] * 3, "x")
    assert (every.reason, every.values) == ("", {"holds": 3, "fails": 0, "open": 0, "seeds": 3})
    refuted = seed_vote([FAILS, FAILS, HOLDS], "x")
    assert refuted.reason == "x: holds in 1, fails in 2, open (unsettled or by a hair) in 0 of 3 seeds"
    assert refuted.values == {"holds": 1, "fails": 2, "open": 0, "seeds": 3}


def test_ordering_verdict_reports_each_seeds_gaps_against_its_own_best_other():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    winner = np.array([[1, 1, 1.5, 2.0], [1, 1, 1.0, 1.0]])
    others = [np.array([[1, 1, 1.0, 1.0], [1, 1, 2.0, 4.0]]), np.array([[1, 1, 1.2, 1.6], [1, 1, 0.5, 0.5]])]
    row = ordering_verdict(t, winner, others, "w")
    # seed 0: best other 1.2 then 1.6 -> gaps 0.3/1.5 = 0.2 and 0.4/2 = 0.2; seed 1: 2 and 4 -> -0.5, -0.75
    assert row.values["relative_gap_decade_start"] == pytest.approx([0.2, -0.5])
    assert row.values["relative_gap_end"] == pytest.approx([0.2, -0.75])
    assert row.values["states"] == [HOLDS, FAILS] and row.verdict == NO_VERDICT
    assert row.reason == ("w: holds in 1, fails in 1, open (unsettled or by a hair) in 0 of 2 seeds; a majority "
                          "failing or every seed holding decides")


def test_floor_or_decay_leaves_out_a_seed_whose_earlier_half_is_too_sparse_to_fit():
    x, y = _rows([(-0.5, -0.5)] * 5)
    first = np.flatnonzero((GRID >= 30.0) & (GRID < SPLIT))
    y[0, first[1:]] = np.nan  # 30 and 300/sqrt 10 left in the earlier half: no slope there for seed 0
    row = floor_or_decay(x, y, "r")
    assert row.values["n"] == 4 and row.verdict == REPRODUCED


# ------------------------------------------------------------- the remaining rules and helpers at their edges

def test_small_helpers_of_the_rules():
    from scipy import stats

    from rates.studies.flavors.rules import _slope, _t_half, last_decade_index, lasting_from

    assert _slope(np.array([1.0, 10.0, 100.0]), np.array([1.0, 0.1, 0.01])) == pytest.approx(-1.0)  # 3 points fit
    assert np.isnan(_slope(np.array([1.0, 10.0]), np.array([1.0, 0.1])))
    assert np.isnan(_slope(np.array([5.0, 5.0, 5.0]), np.array([1.0, 2.0, 3.0])))  # no spread in x
    assert _t_half(np.array([1.0, 3.0])) == pytest.approx(stats.t.ppf(0.975, 1) * np.sqrt(2) / np.sqrt(2))
    assert _t_half(np.array([1.0])) == np.inf
    assert last_decade_index(np.array([1.0, 50.0, 95.0, 100.0, 1000.0])) == 3  # the first t >= 1000 / 10
    t = np.array([1, 2, 5, 10])
    flags = np.array([[True, True, True, True], [False, False, False, True], [True, True, True, False]])
    assert lasting_from(t, flags).tolist() == [1, 10, -1]
    assert lasting_from(t, flags[::-1]).tolist() == [-1, 10, 1]  # a row never lasting does not stop the others


def test_rise_states_at_the_edges_of_their_window():
    t = np.array([1.0, 10.0, 11.0, 1000.0])
    assert rise_states(t, np.array([[1.0, 1.0, 1.5, 1.0]]), np.array([1]))[0] == [FAILS]  # 11 > 10 x 1: outside
    assert rise_states(np.array([1.0, 100.0]), np.array([[1.0, 2.0]]), np.array([1]))[0] == [FAILS]  # start alone
    # watched for exactly a decade: decided; a rise of 0.095 % is flat (under RESOLVE / 10)
    assert rise_states(np.array([1.0, 5.0, 10.0]), np.array([[1.0, 1.00095, 1.0]]), np.array([1]))[0] == [FAILS]
    # a seed never separated and one past the end (both left out, the others still read), a start at step 0;
    # a margin of 0 at the start
    states, rises = rise_states(np.array([0.0, 1.0, 5.0, 10.0]), np.array([[1.0, 1.0, 1.5, 1.0]] * 3),
                                np.array([-1, 10**9, 0]))
    assert states == [HOLDS] and rises.tolist() == [0.5]
    states, rises = rise_states(t, np.array([[0.0, 1.0, 1.0, 1.0]]), np.array([1]))
    assert states == [OPEN] and np.isnan(rises[0])


def test_ordering_states_read_the_start_the_end_and_one_decade_ahead():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    other = np.ones((1, 4))

    def state(gaps):  # relative gaps at the four checkpoints: winner = other / (1 - g) for g > 0
        g = np.asarray(gaps, float)[None, :]
        return ordering_states(t, np.where(g >= 0, other / (1 - g), other * (1 + g)), [other])

    assert state([0, 0, 0.005, 0.05]) == [OPEN]  # ahead at the end and one decade on, not at the decade's start
    assert state([0, 0, 0.1, -0.1]) == [OPEN]  # ahead until the last checkpoint only
    assert state([0, 0, -0.005, -0.05]) == [OPEN]


def test_lemma_a6_growth_at_its_edges():
    def one(then, end, norm_then, norm_end):
        return loss_to_zero_states(np.array([then]), np.array([end]), np.array([norm_then]), np.array([norm_end]))

    assert one(0.0, 0.0, 1.0, 1.02) == [HOLDS]  # L = 1 at both ends: log(1/L) grows from 0, the norm decides
    assert one(-0.5, -0.5, 1.0, 1.02) == [FAILS]  # log(1/L) 0.5 -> 0.5: stalled
    assert one(-1.0, -1.5, 2.0, 2.01) == [OPEN]  # log(1/L) +50 %, the norm +0.5 %
    assert one(-1.0, -1.5, 1.0, 1.00095) == [FAILS]  # the norm +0.095 %: stalled


def test_phase_two_onset_per_decade_and_at_t_0():
    t = np.array([1e2, 1e3, 1e4, 1e5])
    onset = phase_two_onset(t, np.array([10.0, 12.0, 11.0, 9.0]), 0)
    assert onset == (1e3, pytest.approx((9 / 12 - 1) / 2))  # a fall of 25 % over two decades
    assert phase_two_onset(np.array([0.0, 1.0, 10.0]), np.array([3.0, 2.0, 1.0]), 0) is None  # a peak at t = 0
    assert phase_two_onset(np.array([0.0, 1.0, 10.0]), np.array([1.0, 3.0, 2.0]), 0) == (1.0, pytest.approx(-1 / 3))
    assert phase_two_onset(np.array([5.0, 1.0, 10.0, 100.0]), np.array([9.0, 1.0, 3.0, 2.0]), 1) == (
        10.0, pytest.approx(-1 / 3))  # from checkpoint 1 on


def _taus_data(target_low, target_high, n=45):
    """Margins and accuracies whose Kendall tau lies in [target_low, target_high] (a fixed search over seeds)."""
    from scipy import stats

    acc = np.arange(n, dtype=float)
    for seed in range(10_000):
        rng = np.random.default_rng(seed)
        m = acc + rng.normal(0, 1, n) * (seed % 50)
        tau = stats.kendalltau(m, acc).statistic
        if target_low <= tau <= target_high:
            return {"g": m}, acc, tau
    raise AssertionError("no such data")


def test_margin_accuracy_rule_output_word_for_word_and_its_interval_edges():
    n = 45
    half = 1.96 * np.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))  # 0.202
    # tau + half under 0.5 (a 2.96 se interval would reach past it): reproduced
    margins, acc, tau = _taus_data(0.22, 0.28)
    row = margin_accuracy_verdict(margins, acc)
    assert (row.verdict, row.reason) == (REPRODUCED, "")
    assert row.values == {"tau": {"g": pytest.approx(tau)}, "runs": n, "half_width": pytest.approx(half)}
    # tau - half above 0.5 by less than one more se: refuted
    margins, acc, tau = _taus_data(0.72, 0.78)
    row = margin_accuracy_verdict(margins, acc)
    assert row.verdict == NOT_REPRODUCED
    assert row.reason == (f"a final margin orders the test accuracies: g tau {tau:.3g} [{tau - half:.3g}, "
                          f"{tau + half:.3g}] over 45 runs")
    margins, acc, tau = _taus_data(0.45, 0.55)
    row = margin_accuracy_verdict({"g": margins["g"], "h": -margins["g"]}, acc)
    assert row.reason == (f"g tau {tau:.3g} [{tau - half:.3g}, {tau + half:.3g}]; h tau {-tau:.3g} "
                          f"[{-tau - half:.3g}, {-tau + half:.3g}] over 45 runs: an interval straddles tau = 0.5; "
                          "more runs decide")
    assert row.values["runs"] == 45
    few = margin_accuracy_verdict({"g": np.arange(3.0)}, np.arange(3.0))
    assert (few.verdict, few.reason, few.values) == (NO_VERDICT, "only 3 runs; 8 decide", {})


def test_lemma_a6_leaves_out_a_run_that_ends_in_a_cycle_and_no_other():
    """The study's CD seed 0 (Thm 3.4 runs) ends in an exact period-4 cycle with log L stuck at -3.84: a discrete
    run that returns to an earlier iterate follows no steepest flow, so it is left out (by name), while the same
    stall without a cycle still refutes."""
    stalled = -_x()
    stalled[0] = np.linspace(-3.0, -3.841, LEVELS.size)
    stalled[0, -12:] = -3.841
    h = _late_history(_curves(lambda x: 1.0 / x), log_loss=stalled)
    assert _limit_rows(h)[PROTOCOLS["lemma-a6"]].verdict == NO_VERDICT  # 4 hold, the stalled seed fails
    h.cycle_period = np.array([4, 0, 0, 0, 0])
    row = _limit_rows(h)[PROTOCOLS["lemma-a6"]]
    assert row.verdict == REPRODUCED
    assert "left out, seed(s) 0" in row.measured and "repeats the one 4 steps before" in row.measured
    h.cycle_period = np.array([0, 4, 0, 0, 0])  # a cycle in another seed does not excuse the stalled one
    assert _limit_rows(h)[PROTOCOLS["lemma-a6"]].verdict == NO_VERDICT
    h.cycle_period = np.full(SEEDS, 2)
    every = _limit_rows(h)[PROTOCOLS["lemma-a6"]]
    assert every.verdict == NO_VERDICT and "ends in a cycle" in every.reason


def test_cycle_periods_finds_the_smallest_exact_return_and_ignores_frozen_runs():
    import torch

    from rates.numeric.homogeneous.train import cycle_periods

    def state(values):  # two layers, runs on the first axis
        v = torch.tensor(values, dtype=torch.float64)
        return [v[:, None, None] * torch.ones(len(values), 2, 3), v[:, None, None] * torch.ones(len(values), 1, 2)]

    # run 0 cycles a, b, a, b (period 2); run 1 moves every step; run 2 returns after 3 steps; run 3 is frozen
    history = [state([1.0, 1.0, 5.0, 7.0]), state([2.0, 2.0, 9.0, 7.0]), state([1.0, 3.0, 6.0, 7.0]),
               state([2.0, 4.0, 8.0, 7.0])]
    final = state([1.0, 5.0, 9.0, 7.0])
    frozen = torch.tensor([False, False, False, True])
    assert cycle_periods(history, final, frozen).tolist() == [2, 0, 3, 0]
    final[1][0, 0, 1] = 1.0 + 2.0 ** -52  # one entry one ulp off: no cycle
    assert cycle_periods(history, final, frozen).tolist() == [0, 0, 3, 0]


def test_floor_or_decay_calls_a_fall_slowing_only_when_the_decay_itself_is_resolved():
    """Every seed's later half keeps under 3/4 of its earlier slope (slowing resolved), but the decade's interval
    straddles -0.1 (mean -0.22 +- 0.13): the reason is the unresolved interval, not a slowing fall."""
    row = floor_or_decay(*_rows([(-0.6, -0.05), (-0.22, 0.0), (-0.5, -0.1), (-0.3, 0.05), (-0.4, -0.05)]), "r")
    assert row.verdict == NO_VERDICT
    assert row.values["mean_slope"] + row.values["half_width"] > -FLAT_SLOPE > row.values["mean_slope"]
    assert row.values["mean_late_slope"] - 0.75 * row.values["mean_early_slope"] > 0.2
    assert row.reason.endswith("; neither a decay faster nor a level flatter than -0.1 is resolved; more seeds decide")
