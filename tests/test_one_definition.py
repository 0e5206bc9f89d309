"""One definition per optimiser: every registered name, on every CPU engine, against mpmath step by step.

A name is one line of :mod:`rates.numeric.optim.alias` (a chain of pieces). The torch engine builds its program
from those pieces (:func:`rates.numeric.optim.compose.build`), the fused kernels run the recipe compiled, and
:func:`rates.numeric.reference.config_of` reads the same pieces to choose the mpmath steps, each written from
its formula in 50-digit arithmetic (no log-domain trick). The cases below are generated from the registry
(``rates.numeric.algorithms.ALGORITHMS``) and the engines from what the CPU offers, so a newly registered
name is checked without editing this file; the last test registers one and runs it through ``rates run``.

Expectation: at every one of the first STEPS steps, each engine's W_t within TOLERANCE (relative to max |W_t|)
of the reference's W_t. The CUDA graphs replay the torch program and are held to the fused engine on cuda
(tests/test_graphed.py). Longer runs, harder data and the recipes float64 cannot follow are in
tests/test_fused.py; the exact-sign float64 trajectories in tests/test_exact_sign.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rates.numeric import reference
from rates.numeric.algorithms import ALGORITHMS
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, resolve_spec, run_group
from rates.numeric.optim import alias
from tests.cli_invoke import invoke

DATA = "gaussian:k=3,d=4,per_class=4"  # n = 12: mini-batches of 3, four per epoch
BATCH = 3
STEPS = 40
TOLERANCE = 1e-12
NORM_FOR_NSD = "lp:3"  # a name that leaves the norm to --norm is run in a norm no other name fixes


def engines(run) -> list[str]:
    """The CPU engines that run this recipe: the fused kernels where they have its direction, the stacked GEMMs
    (rates.numeric.gemm) for full-batch recipes, and torch."""
    from rates.numeric.fused import available
    from rates.numeric.fused.group import supports

    return ((["fused"] if available() and supports(run.recipe) else [])
            + (["gemm"] if available() and run.recipe.source == "full" else []) + ["torch"])


def spec_of(name: str, **options) -> RunSpec:
    composition = ALGORITHMS[name]
    keywords = dict(algo=name, a="1/2", eta0=0.3, seed=5)
    if composition.norm is None:
        keywords["norm"] = NORM_FOR_NSD
    if composition.stochastic or composition.vr:
        keywords["batch"] = BATCH
    keywords.update(options)
    return RunSpec(**keywords)


def dataset():
    data = parse_data(DATA)
    return np.asarray(data.H), np.asarray(data.y), data.k


def engine_trajectory(run, H, y, k, engine: str) -> list[np.ndarray]:
    _, records = run_group([run], H, y, k, STEPS, np.arange(1, STEPS + 1), engine=engine)
    return [record["W"][0] for record in records]


def reference_trajectory(run, H, y, k) -> dict[int, np.ndarray]:
    ref = reference.run_trajectory(run, H.tolist(), y.tolist(), k, STEPS, range(1, STEPS + 1))
    return {t: np.array(reference.to_float(W)) for t, W in ref.items()}


def worst_step_error(run, H, y, k, engine: str, expected: dict[int, np.ndarray]) -> float:
    got = engine_trajectory(run, H, y, k, engine)
    return max(float(np.abs(W - expected[t]).max() / np.abs(expected[t]).max())
               for t, W in zip(range(1, STEPS + 1), got))


def assert_engines_follow_reference(spec: RunSpec) -> None:
    H, y, k = dataset()
    run = resolve_spec(spec, len(y))
    expected = reference_trajectory(run, H, y, k)
    for engine in engines(run):
        assert worst_step_error(run, H, y, k, engine, expected) < TOLERANCE, (spec.algo, engine)


CASES = [pytest.param(spec_of(name), id=name) for name in ALGORITHMS]
# options that change the code a name runs: Adam with eps > 0, Muon's Newton-Schulz polar factor
CASES += [pytest.param(spec_of("adam", adam_eps=1e-8), id="adam-eps"),
          pytest.param(spec_of("muon", polar="newton-schulz"), id="muon-newton-schulz")]


@pytest.mark.parametrize("spec", CASES)
def test_every_registered_optimiser_follows_the_mpmath_reference_on_every_cpu_engine(spec):
    assert_engines_follow_reference(spec)


def test_every_registered_name_is_a_case():
    """The cases are the registry: nothing registered is left out (and the engines list is not empty)."""
    assert {case.values[0].algo for case in CASES} == set(ALGORITHMS)
    H, y, k = dataset()
    assert engines(resolve_spec(spec_of("signgd"), len(y))) == ["fused", "gemm", "torch"]
    assert engines(resolve_spec(spec_of("signsgd"), len(y))) == ["fused", "torch"]  # mini-batches: no GEMM path


def test_the_comparison_tells_compositions_apart():
    """A reference of another composition (Signum's run against SignGD's steps, Muon's against NGD's) is far
    outside the tolerance: the step-by-step check would catch an engine that dropped or swapped a piece."""
    H, y, k = dataset()
    for name, impostor in (("signum", "signgd"), ("muon", "momentum-ngd"), ("vr-signsgd", "signsgd")):
        run = resolve_spec(spec_of(name), len(y))
        wrong = reference_trajectory(resolve_spec(spec_of(impostor), len(y)), H, y, k)
        for engine in engines(run):
            assert worst_step_error(run, H, y, k, engine, wrong) > 1e-3, (name, impostor, engine)


@pytest.fixture
def signum_sum():
    """Register a new optimiser as docs/extending.md does (one line), and forget it afterwards."""
    alias.register_optimiser("signum-sum", alias.chain(alias.full_gradient(), alias.momentum(),
                                                       alias.steepest_direction("sum"), alias.scale_by_schedule()))
    yield "signum-sum"
    alias.OPTIMISERS.pop("signum-sum")


def test_a_newly_registered_optimiser_runs_through_rates_run_and_follows_the_reference(signum_sum, tmp_path):
    """The name registered in the fixture (momentum + coordinate descent) is accepted by ``rates run`` and by
    the engines, and its recorded ||W_t||_1 and margins are those of the reference's W_t at every checkpoint."""
    assert signum_sum in ALGORITHMS  # the engines' registry is the alias table itself
    assert_engines_follow_reference(spec_of(signum_sum))

    out = tmp_path / "t.json"
    code, _, err = invoke(["run", "--algo", signum_sum, "--a", "1/2", "--eta0", "0.3", "--data", DATA,
                           "--steps", str(STEPS), "--checkpoints", str(STEPS), "--out", str(out), "--no-progress"])
    assert code == 0, err
    record = json.loads(out.read_text())["runs"][0]
    assert record["config"]["norm"] == "sum" and record["config"]["family"] == "momentum"
    H, y, k = dataset()
    expected = reference_trajectory(resolve_spec(spec_of(signum_sum), len(y)), H, y, k)
    checkpoints = record["checkpoints"]
    assert len(checkpoints["t"]) >= 20
    for t, norm, margin in zip(checkpoints["t"], checkpoints["norm"], checkpoints["margin"]):
        W = expected[int(t)]
        logits = H @ W.T
        wrong = np.where(np.eye(k, dtype=bool)[y], -np.inf, logits)
        raw = float((logits[np.arange(len(y)), y] - wrong.max(axis=1)).min())
        assert norm == pytest.approx(np.abs(W).sum(), rel=1e-12)
        assert margin == pytest.approx(raw / np.abs(W).sum(), rel=1e-9, abs=1e-12)


def test_a_composition_outside_the_framework_is_refused():
    with pytest.raises(ValueError, match="source, \\[momentum\\], direction"):
        alias.chain(alias.momentum(), alias.full_gradient(), alias.steepest_direction("max"), alias.scale_by_schedule())
    with pytest.raises(ValueError):
        alias.chain(alias.full_gradient(), alias.adam(), alias.steepest_direction("max"), alias.scale_by_schedule())
    with pytest.raises(TypeError):
        alias.register_optimiser("bad", ("signgd",))
