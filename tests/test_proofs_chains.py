"""Chains from lemma claims to the bound templates: they reach predict's templates, and every mutation of a
lemma's constant (or a refuted lemma) is caught -- deterministically, without searches (fake check results)."""

import dataclasses
import math

import pytest
import sympy as sp

from cli.app import main
from proofs.chains import BROKEN, CHAINS, FOLLOWS, FOLLOWS_EXPONENTS, evaluate, per_sample_chain_lines
from proofs.claims import CheckResult, MethodResult
from proofs.registry import all_claims
from rates.symbolic.theorems.base import curvature_alpha


def _claims_and_results(verdict="proven", replace=None):
    claims = {c.name: c for c in all_claims()}
    claims.update(replace or {})
    results = {name: CheckResult(c, [MethodResult("symbolic", verdict)]) for name, c in claims.items()}
    return claims, results


@pytest.mark.parametrize("family", ["nsd", "minibatch", "vr"])
def test_chain_reaches_the_template_exactly(family):
    claims, results = _claims_and_results()
    result = evaluate(CHAINS[family], claims, results)
    assert result.verdict == FOLLOWS
    noise = result.derived.noise[sp.Integer(1)]
    # the curvature constant of rates.symbolic.theorems.base, rebuilt from the lemmas
    if family in ("nsd", "minibatch"):
        assert sp.simplify(noise - curvature_alpha()) == 0


def test_momentum_and_adam_chains_keep_the_exponents_but_not_the_constants():
    """docs/findings.md F5/F6: the templates' alpha_beta and Adam's curvature are not what the lemmas give."""
    claims, results = _claims_and_results()
    for family in ("momentum", "adam"):
        result = evaluate(CHAINS[family], claims, results)
        assert result.verdict == FOLLOWS_EXPONENTS
        assert any(eq is False for _, _, _, eq in result.comparisons)
    momentum = evaluate(CHAINS["momentum"], claims, results)
    derived = momentum.derived.noise[sp.Integer(1)]
    point = {"B": 1.3, "n": 6, "b": 2, "beta": 0.7, "eta_0": 0.5}
    value = float(derived.subs({s: point[s.name] for s in derived.free_symbols}))
    # alpha plus twice the leading-order drift 4 B^2 (n/b) beta/(1-beta) (the template adds it once)
    expected = 2 * 1.3**2 * math.exp(2 * 1.3 * 0.5) + 8 * 1.3**2 * 3 * 0.7 / 0.3
    assert value == pytest.approx(expected, rel=1e-12)


def _mutations():
    for family, chain in CHAINS.items():
        claims = {c.name: c for c in all_claims()}
        for step in chain.steps:
            if step.claim is None or not claims[step.claim].constants:
                continue
            for key in claims[step.claim].constants:
                yield family, step.claim, key


@pytest.mark.parametrize("family,claim_name,key", list(_mutations()))
def test_every_lemma_constant_mutation_changes_the_derived_template(family, claim_name, key):
    claims = {c.name: c for c in all_claims()}
    original = claims[claim_name]
    mutated = dataclasses.replace(original, constants={**original.constants,
                                                       key: sp.sympify(original.constants[key]) * sp.Rational(3, 2)})
    base = evaluate(CHAINS[family], *_claims_and_results())
    changed = evaluate(CHAINS[family], *_claims_and_results(replace={claim_name: mutated}))
    before = {c: str(d) for c, d, _, _ in base.comparisons}
    after = {c: str(d) for c, d, _, _ in changed.comparisons}
    assert before != after  # the derived template moved
    assert changed.verdict != FOLLOWS


def test_a_refuted_lemma_breaks_every_chain_that_uses_it():
    claims, results = _claims_and_results()
    refuted = [MethodResult("adversarial", "counterexample")]
    results["hessian-loss-bound"] = CheckResult(claims["hessian-loss-bound"], refuted)
    for family in CHAINS:
        assert evaluate(CHAINS[family], claims, results).verdict == BROKEN


def test_per_sample_chain_derives_predicts_bias_matrix():
    claims, results = _claims_and_results()
    lines, ok = per_sample_chain_lines(claims, results)
    assert ok and lines[-1].endswith("follows") and sum("-> equal" in line for line in lines) == 3


def test_check_chain_cli(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--chain", "bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rates: error: --chain: must be one of nsd")
    with pytest.raises(SystemExit) as exc:
        main(["check", "--chain", "per-sample"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "rates.symbolic.theorems.per_sample.bias_matrix" in out and "verdict: follows" in out
