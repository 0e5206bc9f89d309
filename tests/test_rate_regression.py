"""Rate regression: simulate, fit and judge against the *derived* prediction (rates.symbolic.theorems.predict).

Expectations come from docs/theory.md section 4 (NSD row: ``t^{-a}`` for a < 1/2, ``t^{-(1-a)}`` for
1/2 < a < 1; SIGNADAM Cor. 5.4 / C.5) and from the issue's acceptance:
SignGD and NGD at a = 3/4 are ``tight`` with slope within 0.05 of -1/4; SignGD at a = 0.3 decays faster
than t^-0.3, inside the envelope of the bound's unknown constants (``C1/S1 + C2 S2/S1``, slopes between about
-0.7 and -0.3): the bound holds and the stated rate is not attained, so it is ``loose``.
Fast tests use SignGD only (its steps are the cheapest); the ``slow`` ones
run the default study's configurations with several data seeds.
"""

from __future__ import annotations

import pytest
import sympy as sp

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate
from rates.studies.default_study import DEFAULT_STUDY_CONFIGS, DEFAULT_STUDY_STEPS, simulate_study_seeds
from rates.studies.fitting import fit_group, group_runs

FAST_STEPS = 100_000


def nsd_exponent(a: sp.Rational) -> sp.Rational:
    """docs/theory.md section 4, NSD row, typed from the table (independent of the sympy derivation)."""
    return a if a < sp.Rational(1, 2) else 1 - a


@pytest.fixture(scope="module")
def signgd_fast():
    specs = [RunSpec("signgd", "3/4"), RunSpec("signgd", "3/10")]
    runs = simulate(specs, parse_data("default", seed=0), FAST_STEPS, checkpoints=60, device="cpu").runs
    return {(rec.config.algo, rec.config.a): rec for rec in map(fit_group, group_runs(runs))}


def test_signgd_three_quarters_is_tight(signgd_fast):
    rec = signgd_fast[("signgd", "3/4")]
    r = rec.prediction.rate.exponent
    assert r == nsd_exponent(sp.Rational(3, 4)) and rec.prediction.rate.log_power == 0
    assert rec.verdict.label == "tight", rec.verdict.reason
    assert abs(rec.verdict.fit.slope + float(r)) <= 0.05
    assert 0 < rec.verdict.fit.stderr < 0.02
    assert rec.verdict.window.t0 >= 1e3 and rec.verdict.window.t1 == FAST_STEPS


def test_signgd_three_tenths_holds_the_bound_but_does_not_attain_the_stated_rate(signgd_fast):
    rec = signgd_fast[("signgd", "3/10")]
    r = rec.prediction.rate.exponent
    assert r == nsd_exponent(sp.Rational(3, 10))
    assert rec.verdict.fit.ci_high < -float(r) - 0.05  # decays faster than t^{-3/10}, beyond the tolerance
    # the envelope's fast end is the 1/S_1 term, ~ t^{-(1-a)} = t^{-0.7} (docs/theory.md sec. 4 with a < 1/2)
    assert -0.75 < rec.verdict.envelope.fastest < -0.6
    assert rec.verdict.fit.slope > rec.verdict.envelope.fastest - 0.05
    # inside the envelope is not 'tight': the bound holds, the stated t^-0.3 is not attained (finding (iii))
    found = rec.verdict.assessment
    assert found.bound.outcome == "holds" and found.stated_rate.outcome == "not attained"
    assert rec.verdict.label == "loose", rec.verdict.reason


@pytest.fixture(scope="module")
def default_study():
    """The default study's runs (15 configurations x 3 data seeds x DEFAULT_STUDY_STEPS), judged."""
    runs = simulate_study_seeds([0, 1, 2], DEFAULT_STUDY_STEPS, "cpu", progress=False)
    return {(rec.config.algo, rec.config.a): rec for rec in map(fit_group, group_runs(runs))}


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["signgd", "ngd", "spectral-gd"])
def test_study_three_quarters_tight_and_three_tenths_not_violated(default_study, algo):
    tight = default_study[(algo, "3/4")]
    assert tight.prediction.rate.exponent == nsd_exponent(sp.Rational(3, 4))
    assert tight.verdict.label == "tight", tight.verdict.reason
    assert abs(tight.verdict.fit.slope + 0.25) <= 0.05 and tight.verdict.fit.seeds == 3
    loose = default_study[(algo, "3/10")]
    assert loose.prediction.rate.exponent == nsd_exponent(sp.Rational(3, 10))
    assert loose.verdict.label == "loose", loose.verdict.reason
    assert loose.verdict.fit.slope < -0.3 - 0.05


@pytest.mark.slow
def test_study_never_violates_a_bound(default_study):
    # docs/theory.md section 4: rates are upper bounds; no configuration of the default study may violate one.
    labels = {key: rec.verdict.label for key, rec in default_study.items()}
    assert len(labels) == len(DEFAULT_STUDY_CONFIGS)
    assert "violated" not in labels.values(), labels
    assert "inconclusive" not in labels.values(), labels  # the main job's acceptance: every row decided
