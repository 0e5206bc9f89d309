"""Sign-type directions (SignGD, Signum, Adam) against an exact-sign reference, at every checkpoint of hard runs.

Setting: SignGD and Signum with small a and large eta0 (a <= 1/3, eta0 >= 1) drive one class far from
every sample but its own, so that a whole class row of the gradient lies 1e-300 and then 1e-1000 below the
largest. Sign descent takes each entry's sign whatever its size, so the engines must too.

Independent expectation: :func:`rates.numeric.reference.exact_sign_run` (float64 iterates, every step's gradient in
40-digit mpmath, whose exponent is unbounded). A float64 engine with exact signs adds the same +-eta_t to
the same entries, so its iterates equal the reference's to the rounding of eta_t (1e-12 relative here);
one wrong sign moves an entry by 2 eta_t, ~1e-3 relative. Before each class row had its own log-scale, the
fused engine left this trajectory at t = 1872 on the default preset (a = 1/4, eta0 = 2) and before t = 450
on the Gaussian draw 9: these tests failed there.

Each engine run records W at every ``EVERY``-th step up to the last one, and every record is compared: a
sign error between two checkpoints shows at the next one (it moves an entry by 2 eta_t, which no later
step undoes exactly). The default run covers the default preset to 2,000 steps and a Gaussian set
(k = 4, d = 6, n = 48, draw 9) to 1,000 steps; ``-m slow`` runs more (a, eta0) pairs, Signum, and 6,000 steps.
Adam: with beta1 = beta2 = 0 it is SignGD and meets the same reference; with its usual betas the two
engines are compared with a tolerance justified by a measured sensitivity (see that test).
"""

from __future__ import annotations

import numpy as np
import pytest

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, resolve_spec, run_group
from rates.numeric.reference import exact_sign_run

EVERY = 50
TOLERANCE = 1e-12


# Gaussian draws (k = 4, d = 6, n = 48) on which the one-scale engines left the exact trajectory early
# (a = 1/4, eta0 = 2; measured: by step 450 for draw 9, 1,000 for draw 6).
GAUSSIAN = "gaussian:k=4,d=6,per_class=12"


def _data(name: str):
    ds = parse_data("default") if name == "default" else parse_data(GAUSSIAN, seed=int(name.split("-")[1]))
    return np.asarray(ds.H, dtype=np.float64), np.asarray(ds.y), ds.k


def _assert_engines_follow(spec, H, y, k, steps, times, reference):
    """Every CPU engine's iterates (the fused kernels, the stacked GEMMs of rates.numeric.gemm forced onto these
    small sets, the torch program) equal the exact-sign reference's at every recorded step, to TOLERANCE."""
    for engine in ("fused", "gemm", "torch"):
        _, records = run_group([resolve_spec(spec, len(y))], H, y, k, steps, times, engine=engine)
        for t, record in zip(times.tolist(), records):
            expected = np.array(reference[t])
            gap = np.abs(np.asarray(record["W"])[0] - expected).max() / np.abs(expected).max()
            assert gap < TOLERANCE, f"{engine} engine leaves the exact-sign trajectory by step {t} ({gap:.2e})"


def _compare(name: str, a: str, eta0: float, steps: int, momentum: float = 0.0):
    H, y, k = _data(name)
    times = np.arange(EVERY, steps + 1, EVERY)
    reference = exact_sign_run(H, y, k, a, eta0, steps, record=times.tolist(), momentum=momentum)
    spec = (RunSpec("signum", a, eta0, momentum=momentum) if momentum else RunSpec("signgd", a, eta0))
    _assert_engines_follow(spec, H, y, k, steps, times, reference)


def _rows_far_apart(name: str, a: str, eta0: float, steps: int) -> float:
    """log10 of the smallest ratio (largest |entry| of a class row) / (largest |entry| of the gradient)
    at step ``steps`` of the exact trajectory: shows that the case is hard (below float64's range)."""
    import mpmath as mp

    from rates.numeric.reference import gradient

    H, y, k = _data(name)
    W = exact_sign_run(H, y, k, a, eta0, steps, record=[steps])[steps]
    with mp.workdps(40):
        G = gradient([[mp.mpf(v) for v in row] for row in W], [[mp.mpf(float(v)) for v in row] for row in H],
                     list(y), range(len(y)))
        rows = [max(abs(v) for v in row) for row in G]
        return float(mp.log10(min(rows) / max(rows)))


def test_default_preset_has_a_row_below_float64_range():
    """The case is hard: by step 2,000 a class row lies below 1e-308 of the largest."""
    assert _rows_far_apart("default", "1/4", 2.0, 2000) < -308


@pytest.mark.parametrize("name, a, eta0, steps", [("default", "1/4", 2.0, 2000), ("gauss-9", "1/4", 2.0, 1000)])
def test_signgd_follows_the_exact_signs_at_every_checkpoint(name, a, eta0, steps):
    _compare(name, a, eta0, steps)


@pytest.mark.slow
@pytest.mark.parametrize("name, a, eta0", [(name, a, eta0) for name in ("default", "gauss-9", "gauss-6")
                                            for a, eta0 in (("1/4", 2.0), ("1/3", 1.0), ("1/5", 4.0))])
def test_signgd_follows_the_exact_signs_long(name, a, eta0):
    _compare(name, a, eta0, 6000)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["default", "gauss-9"])
def test_signum_follows_the_exact_signs(name):
    _compare(name, "1/4", 2.0, 4000, momentum=0.9)


def test_adam_without_averaging_is_exact_signgd():
    """Adam with beta1 = beta2 = 0 and eps = 0 steps by g / |g| = sign(g) entry by entry (SIGNADAM eq. 3): on
    the hard case it must follow the exact-sign trajectory too (m and sqrt(v) carry per-row log-scales)."""
    H, y, k = _data("default")
    steps = 2000
    times = np.arange(EVERY, steps + 1, EVERY)
    reference = exact_sign_run(H, y, k, "1/4", 2.0, steps, record=times.tolist())
    spec = RunSpec("adam", "1/4", 2.0, adam_beta1=0.0, adam_beta2=0.0)
    _assert_engines_follow(spec, H, y, k, steps, times, reference)


@pytest.mark.parametrize("eps", [0.0, 1e-8])
def test_adam_engines_agree_within_the_measured_sensitivity(eps):
    """Adam (beta1 = 0.9, beta2 = 0.999) on the hard case, 2e4 steps: fused and torch engines to 1e-12.

    Why that tolerance: the engines round differently at every step (exponentials, products, the order of
    sums), so they can agree no better than the trajectory's sensitivity to one rounding allows. That
    sensitivity is measured here rather than assumed: one entry of W moved by one ulp at t = 1000 changes
    W at t = 2e4 by under 1e-14 relative (measured while writing this test: at most 6e-16 on the default
    preset and Gaussian draws 0 and 9, a in {1/2, 1/4}, eps in {0, 1e-8}; the engines then differed by at
    most 1.4e-14). Adam is contracting here, not chaotic, so a 1e-12 disagreement is an error of an
    engine, not rounding; if the measured sensitivity grows, the first assertion says so.
    """
    from rates.numeric.fused.group import FusedGroup

    H, y, k = _data("default")
    run = resolve_spec(RunSpec("adam", "1/4", 2.0, adam_eps=eps), len(y))
    steps, kick = 20000, 1000

    def fused(perturb: bool) -> np.ndarray:
        group = FusedGroup([run], H, y, k, threads=1)
        group.advance_to(kick)
        if perturb:
            group.W[0, 1, 2] = np.nextafter(group.W[0, 1, 2], np.inf)
        group.advance_to(steps)
        return group.W[0].copy()

    base = fused(False)
    scale = np.abs(base).max()
    assert np.abs(fused(True) - base).max() / scale < 1e-14  # the measured sensitivity
    W_torch, _ = run_group([run], H, y, k, steps, np.array([steps]), engine="torch")
    assert np.abs(np.asarray(W_torch)[0] - base).max() / scale < TOLERANCE


# Integer pixels (scikit-learn's digits, 1797 x 64, 10 classes): exact ties and entries 2^-1000 below their row.
ENGINES = ("fused", "gemm", "torch")


def _digits(count=None):
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    H, y = digits.data.astype(np.float64), digits.target.astype(np.int64)
    return (H, y) if count is None else (H[:count], y[:count])


def _engines_follow_exact_signgd(H, y, a, eta0, steps, every=1):
    """Every CPU engine's iterates equal those of :func:`rates.numeric.reference.exact_signgd` (exact signs, ties 0)
    at every ``every``-th step, to TOLERANCE (one wrong sign moves an entry by 2 eta_t, ~1e-3 relative)."""
    from rates.numeric.reference import exact_signgd

    times = np.arange(every, steps + 1, every)
    reference = exact_signgd(H, y, 10, a, eta0, steps, record=times.tolist())
    for engine in ENGINES:
        _, records = run_group([resolve_spec(RunSpec("signgd", a, eta0), len(y))], H, y, 10, steps, times,
                               engine=engine)
        for t, record in zip(times.tolist(), records):
            expected = np.array(reference[t])
            gap = np.abs(np.asarray(record["W"])[0] - expected).max() / np.abs(expected).max()
            assert gap < TOLERANCE, f"{engine} engine leaves exact SignGD on digits at step {t} ({gap:.2e})"


def test_exact_tie_at_zero_gets_sign_zero():
    """At W = 0 every probability is 1/10, so entry (5, 8) of the digits gradient is sum_i (1/10 - [y_i = 5]) x_i8
    / n, which is 0 in integers (the independent count below); every engine leaves W[5, 8] at 0 after step 1, and
    every other entry moves by -eta_0 2^-1/2 sign(its integer sum). (Before, the engines stepped (5, 8) by +-eta_0.)"""
    H, y = _digits()
    integer_sums = np.array([[sum(int(x) * (1 - 10 * int(label == c)) for x, label in zip(H[:, l], y))
                              for l in range(64)] for c in range(10)])
    assert integer_sums[5, 8] == 0 and (integer_sums == 0).sum() > 10 * (H.max(axis=0) == 0).sum()
    expected = -2.0**-0.5 * np.sign(integer_sums)
    for engine in ENGINES:
        W, _ = run_group([resolve_spec(RunSpec("signgd", "1/2", 1.0), len(y))], H, y, 10, 1, np.array([1]),
                         engine=engine)
        # eta_0 2^-1/2 as each engine's power rounds it (to 1 ulp); a tie must be exactly 0
        assert np.allclose(np.asarray(W)[0], expected, rtol=1e-15, atol=0.0), engine


def test_decide_agrees_with_the_integer_sums_at_zero():
    from rates.numeric.exact_sign import decide

    H, y = _digits(300)
    entries = [(c, l) for c in range(10) for l in range(64)]
    integer_sums = [sum(int(x) * (1 - 10 * int(label == c)) for x, label in zip(H[:, l], y)) for c, l in entries]
    assert decide(np.zeros((10, 64)), H, y, entries) == [float(np.sign(s)) for s in integer_sums]


def test_engines_follow_exact_signgd_on_a_digits_subset():
    """The fast version of the 600-step check: 300 digits, a = 1/2, eta0 = 4, 40 steps, every step."""
    H, y = _digits(300)
    _engines_follow_exact_signgd(H, y, "1/2", 4.0, 40)


@pytest.mark.slow
def test_engines_follow_exact_signgd_on_digits_600_steps():
    """Acceptance: exact SignGD on all of digits from W = 0 (a = 1/2, eta0 = 1) for 600 steps, every step, past the
    tie at t = 0 and the entries below 2^-1000 of their row from t = 254 on (measured: 292 CPU-s, most of it the
    reference)."""
    H, y = _digits()
    _engines_follow_exact_signgd(H, y, "1/2", 1.0, 600)
