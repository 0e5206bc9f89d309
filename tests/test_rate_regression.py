"""Rate regression: simulate, fit and judge against the *derived* prediction (rates.theorems.predict).

Expectations come from THEORY.md section 4 (NSD row: ``t^{-a}`` for a < 1/2, ``t^{-(1-a)}`` for
1/2 < a < 1; SIGNADAM ``003_35ca27fd72435096.txt`` Cor. 5.4 / C.5) and from the issue's acceptance:
SignGD and NGD at a = 3/4 are ``tight`` with slope within 0.05 of -1/4; SignGD at a = 0.3 is ``loose``
with a slope steeper than -0.3. Fast tests use SignGD only (its steps are the cheapest); the ``slow`` ones
run the default study's configurations with several data seeds.
"""

from __future__ import annotations

import pytest
import sympy as sp

from rates.data import parse_data
from rates.engine import RunSpec, simulate
from rates.report import fit_group, group_runs

FAST_STEPS = 100_000
SLOW_STEPS = 300_000


def nsd_exponent(a: sp.Rational) -> sp.Rational:
    """THEORY.md section 4, NSD row, typed from the table (independent of the sympy derivation)."""
    return a if a < sp.Rational(1, 2) else 1 - a


def judged(specs, steps, seeds=(0,)):
    runs = []
    for seed in seeds:
        trajectory = simulate([RunSpec(seed=seed, **spec) for spec in specs], parse_data("default", seed=seed),
                              steps, checkpoints=60, device="cpu")
        runs += trajectory.runs
    return {(rec.config["algo"], rec.config["a"]): rec for rec in map(fit_group, group_runs(runs))}


@pytest.fixture(scope="module")
def signgd_fast():
    return judged([dict(algo="signgd", a="3/4"), dict(algo="signgd", a="3/10")], FAST_STEPS)


def test_signgd_three_quarters_is_tight(signgd_fast):
    rec = signgd_fast[("signgd", "3/4")]
    r = rec.prediction.rate.exponent
    assert r == nsd_exponent(sp.Rational(3, 4)) and rec.prediction.rate.log_power == 0
    assert rec.verdict.label == "tight", rec.verdict.reason
    assert abs(rec.verdict.fit.slope + float(r)) <= 0.05
    assert 0 < rec.verdict.fit.stderr < 0.02
    assert rec.verdict.window.t0 >= 1e3 and rec.verdict.window.t1 == FAST_STEPS


def test_signgd_three_tenths_is_loose(signgd_fast):
    rec = signgd_fast[("signgd", "3/10")]
    r = rec.prediction.rate.exponent
    assert r == nsd_exponent(sp.Rational(3, 10))
    assert rec.verdict.label == "loose", rec.verdict.reason
    assert rec.verdict.fit.ci_high < -float(r) - 0.05  # decays faster than t^{-3/10}, beyond the tolerance


@pytest.mark.slow
def test_default_study_acceptance_configurations():
    specs = [dict(algo=algo, a=a) for algo in ("signgd", "ngd") for a in ("3/4", "3/10")]
    recs = judged(specs, SLOW_STEPS, seeds=(0, 1, 2))
    for algo in ("signgd", "ngd"):
        tight = recs[(algo, "3/4")]
        assert tight.verdict.label == "tight", (algo, tight.verdict.reason)
        assert abs(tight.verdict.fit.slope + 0.25) <= 0.05
        loose = recs[(algo, "3/10")]
        assert loose.verdict.label == "loose", (algo, loose.verdict.reason)
        assert loose.verdict.fit.slope < -0.3
        assert tight.verdict.fit.seeds == loose.verdict.fit.seeds == 3
