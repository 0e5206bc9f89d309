"""The extension points, used from this file alone: a toy norm kind (one class) and a toy named optimiser
(one registration line, as a line of rates.numeric.optim.alias) run through the max-margin solver, the engine
and the fit (tests/test_one_definition.py registers another and runs it through ``rates run`` against mpmath);
a toy theorem family (one registry entry) through the prediction; a toy study (one module, one registry entry)
through ``rates report``.

The toy norm is the scaled Frobenius norm ``s ||W||_F`` (``scaledfro:S``). Everything about it follows in closed
form from the Frobenius norm, which gives the independent expectations:

* dual ``||Z||_F / s``, steepest direction ``Z / (s ||Z||_F)``;
* max margin ``gamma_toy = gamma_F / s`` (its own cvxpy expression vs the built-in Frobenius solve);
* NSD in the toy norm with ``eta_0`` moves exactly as NGD with ``eta_0 / s``, so its margin gap is the NGD gap
  divided by ``s`` at every checkpoint, and the fitted slopes agree.

The toy study is the code block of docs/extending.md itself (written to a module under tmp_path), so the guide
cannot drift from what runs. Its claim ``||W_t|| <= sum_{s<t} eta_s`` is checked against the Hurwitz zeta
closed form of the sum (mpmath), its "never turns" claim against the directions seen in the trajectory.

This is the worked example of docs/extending.md; the last test holds every module path the guide names to the
package as it is laid out.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from rates.norms import NORM_KINDS, Norm, inner, parse_norm, register_norm
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate
from rates.numeric.margins import clear_cache, max_margin
from rates.numeric.optim.alias import (
    OPTIMISERS,
    chain,
    full_gradient,
    register_optimiser,
    scale_by_schedule,
    steepest_direction,
)
from rates.studies.fitting import fit_trajectory

SCALE = 2.5


@dataclass(frozen=True)
class ScaledFrobeniusNorm(Norm):
    """``s ||W||_F`` with ``s = p``; its dual is ``||Z||_F / s``, a member of the same kind with ``p = 1/s``."""

    kind: ClassVar[str] = "scaledfro"
    prefix: ClassVar[str] = "scaledfro"
    aliases: ClassVar[dict[str, float]] = {}

    def value(self, W: torch.Tensor) -> torch.Tensor:
        return self.p * torch.linalg.vector_norm(W.flatten(-2), dim=-1)

    def dual(self) -> Norm:
        return ScaledFrobeniusNorm(1.0 / self.p)

    def steepest(self, Z: torch.Tensor, polar: str = "exact", ns_steps: int = 5) -> torch.Tensor:
        fro = torch.linalg.vector_norm(Z.flatten(-2), dim=-1)[..., None, None]
        return Z / (self.p * torch.where(fro > 0, fro, torch.ones_like(fro)))

    def cvxpy(self, matrix: Any, vectorised: Any) -> Any:
        import cvxpy as cp

        return self.p * cp.norm(vectorised, 2)


@pytest.fixture
def toy():
    """Register the toy norm kind and the toy optimiser for one test, and forget them afterwards."""
    register_norm(ScaledFrobeniusNorm)  # what ``@register_norm`` above the class does in a module of rates
    # the one line that names an optimiser: normalised steepest descent in the toy norm
    register_optimiser("scaled-ngd", chain(full_gradient(), steepest_direction(f"scaledfro:{SCALE}"),
                                           scale_by_schedule()))
    clear_cache()
    yield
    OPTIMISERS.pop("scaled-ngd")
    NORM_KINDS.pop(ScaledFrobeniusNorm.kind)
    clear_cache()


def test_toy_norm_is_a_norm_with_its_dual_and_steepest_direction(toy):
    norm = parse_norm(f"scaledfro:{SCALE}")
    assert isinstance(norm, ScaledFrobeniusNorm) and norm.name == f"scaledfro:{SCALE}"
    Z = torch.randn(4, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    fro = np.linalg.norm(Z.numpy().reshape(4, -1), axis=1)
    np.testing.assert_allclose(norm.value(Z).numpy(), SCALE * fro, rtol=1e-14)
    np.testing.assert_allclose(norm.dual_value(Z).numpy(), fro / SCALE, rtol=1e-14)
    delta = norm.steepest(Z)
    np.testing.assert_allclose(norm.value(delta).numpy(), 1.0, rtol=1e-14)  # on the unit sphere
    np.testing.assert_allclose(inner(Z, delta).numpy(), fro / SCALE, rtol=1e-14)  # attains the dual norm


def test_toy_norm_max_margin_is_the_frobenius_margin_over_the_scale(toy):
    data = parse_data("default")
    toy_margin = max_margin(data, f"scaledfro:{SCALE}")
    frobenius = max_margin(data, "frobenius")
    assert toy_margin.solver == "clarabel-conic" and toy_margin.accuracy <= 1e-7
    assert math.isclose(toy_margin.gamma * SCALE, frobenius.gamma, rel_tol=1e-7)
    # the maximiser has unit toy norm, i.e. Frobenius norm 1/s
    assert math.isclose(np.linalg.norm(toy_margin.W), 1.0 / SCALE, rel_tol=1e-12)


def test_toy_optimiser_runs_through_engine_and_fit_like_ngd(toy):
    data = parse_data("default")
    trajectory = simulate([RunSpec("scaled-ngd", "3/4", eta0=1.0),
                           RunSpec("ngd", "3/4", eta0=1.0 / SCALE)], data, steps=20000, checkpoints=40)
    toy_run, ngd_run = trajectory.runs
    assert toy_run.config.norm == f"scaledfro:{SCALE}" and toy_run.config.family == "nsd"
    # the same iterates, measured in a norm s times larger: every gap is the NGD gap over s
    np.testing.assert_allclose(toy_run.gap * SCALE, ngd_run.gap, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(toy_run.norm, SCALE * ngd_run.norm, rtol=1e-12)

    toy_fit, ngd_fit = fit_trajectory(trajectory)
    assert toy_fit.prediction.rate.exponent == ngd_fit.prediction.rate.exponent  # t^-(1-a) = t^-1/4
    # NGD at a = 3/4 is tight against its bound's local slope on this preset (README worked example: signgd)
    assert toy_fit.verdict.label == ngd_fit.verdict.label == "tight"
    # a gap scaled by a constant has the same log-log slope
    assert math.isclose(toy_fit.verdict.fit.slope, ngd_fit.verdict.fit.slope, rel_tol=1e-6)


def toy_family_template(norm: str = "max"):
    """A theorem family whose noise grows like eta^(1/3): numerator ``c sum eta^(4/3)`` (docs/extending.md)."""
    import sympy as sp

    from rates.symbolic.theorems.base import BoundTemplate, NoiseTerm, PowerSumTerm, Source, gamma

    c = sp.Symbol("c_toy", positive=True)
    return BoundTemplate(
        family="toy", title=f"toy family ({norm})", source=Source("SIGNADAM", "toy, not a theorem of the paper"),
        status="rebuilt", gap_to="gamma",
        numerator=(PowerSumTerm(sp.Rational(4, 3), c, "toy noise"),),
        noise=(NoiseTerm(sp.Rational(1, 3), c, "toy: c eta_t^(1/3)"),),
        gamma_ref=gamma, assumptions=("gamma > 0",), definitions={},
    )


def test_toy_theorem_family_gets_rates_derived_from_its_template(monkeypatch):
    from dataclasses import replace

    import sympy as sp

    from rates.numeric.algorithms import resolve_algorithm
    from rates.symbolic.theorems import FAMILIES, predict

    monkeypatch.setitem(FAMILIES, "toy", lambda config: toy_family_template(config.norm))
    config = replace(resolve_algorithm("signgd"), name="toy-sd", family="toy")  # a configuration the family covers
    # closed form: sum eta^(4/3) ~ t^(1-4a/3) over sum eta ~ t^(1-a) gives t^(-a/3) below a = 3/4, where the sum
    # turns logarithmic; above it the numerator is bounded and the rate is 1/sum eta ~ t^-(1-a)
    expected = {sp.Rational(1, 2): ("1/6", 0), sp.Rational(3, 4): ("1/4", 1), sp.Rational(9, 10): ("1/10", 0),
                sp.Integer(1): ("0", -1)}
    for a, (exponent, log_power) in expected.items():
        data = predict(config, a).to_json()
        assert (data["rate"]["exponent"], data["rate"]["log_power"]) == (exponent, log_power)
        assert data["best_a"] == "3/4" and data["reference"]["short_name"] == "SIGNADAM"


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def guide_code(section: str) -> str:
    """The first Python block of the guide's section ``## {section}``."""
    text = GUIDE.read_text(encoding="utf-8")
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", body, re.S).group(1)


def test_toy_study_runs_through_rates_report_and_its_claims_table_holds(tmp_path, monkeypatch):
    import mpmath as mp
    from cli_invoke import invoke

    from rates.numeric.trajectory import load
    from rates.studies import STUDIES

    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "toy_steps_study.py").write_text(guide_code("A study"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))
    monkeypatch.setitem(STUDIES, "steps", "toy_steps_study:run_steps_study")  # the one registry line

    code, out, _ = invoke(["report", "--help"])
    assert code == 0 and "steps" in " ".join(out.split()).split("study name:")[1]
    out_dir = tmp_path / "report"
    code, out, err = invoke(["report", "steps", "--quick", "--device", "cpu", "--out", str(out_dir), "--no-progress"])
    assert code == 0, err
    assert "Steepest steps have unit length in their norm" in out and "not reproduced" in out

    study = importlib.import_module("toy_steps_study")
    runs = load(out_dir / "trajectories" / "steps.json").runs
    assert [run.config.algo for run in runs] == list(study.ALGORITHMS) == ["signgd", "ngd"]
    rows = json.loads((out_dir / "claims.json").read_text())["rows"]
    assert len(rows) == 2 * len(runs)
    a = mp.mpf(study.A)
    turned = {}
    for run, (bound, turn) in zip(runs, zip(rows[::2], rows[1::2])):
        # sum_{s=0}^{t-1} (s+2)^-a = zeta(a, 2) - zeta(a, t+2): the closed form, not the study's cumulative sum
        sums = [float(study.ETA0 * (mp.zeta(a, 2) - mp.zeta(a, int(t) + 2))) for t in run.t]
        expected = np.asarray(run.norm) / np.asarray(sums)
        assert int(run.t[0]) == 1 and expected[0] == pytest.approx(1.0, abs=1e-12)  # one unit step of eta_0 2^-a
        np.testing.assert_allclose(bound["measured"]["ratio"], expected, rtol=1e-9)
        assert expected.max() <= 1 + 1e-9 and bound["verdict"] == "reproduced"
        np.testing.assert_allclose(turn["measured"]["ratio"], expected, rtol=1e-9)
        # "never turns" holds exactly when no checkpoint's norm falls short of the sum of the steps
        turned[run.config.algo] = bool(expected.min() < 1 - 1e-9)
        assert turn["verdict"] == ("not reproduced" if turned[run.config.algo] else "reproduced")
        if turned[run.config.algo]:
            assert f"falls to {expected.min():.6f}" in turn["reason / what would decide it"]
    # SignGD keeps its signs over these 200 steps on this draw; NGD's direction turns as the loss moves
    assert turned == {"signgd": False, "ngd": True}


def test_every_module_path_the_guide_names_exists():
    """The guide's dotted names (``rates.numeric.algorithms.resolve_algorithm``) import and its file paths
    (``rates/numeric/optim/sources.py``) exist in the package as it is laid out now."""
    text = GUIDE.read_text(encoding="utf-8")
    root = GUIDE.parents[1]
    new = {"rates.studies.steps", "rates/studies/steps.py"}  # the module the study example adds
    dotted = set(re.findall(r"`((?:rates|proofs)(?:\.\w+)+)", text)) - new
    paths = set(re.findall(r"`((?:rates|tests|scripts|proofs)/[\w/.]*)`", text)) - new
    assert len(dotted) >= 15 and len(paths) >= 8, (dotted, paths)
    for path in paths:
        assert (root / path).is_file() if path.endswith(".py") else (root / path).is_dir(), path
    for name in dotted:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                target = importlib.import_module(".".join(parts[:split]))
                break
            except ModuleNotFoundError:
                continue
        for attribute in parts[split:]:
            assert hasattr(target, attribute), name
            target = getattr(target, attribute)


def test_the_guide_shows_the_code_these_tests_run():
    """The norm class, the optimiser's registration line and the theorem family's template in the guide are
    the ones above (the study's module is the guide's block itself)."""
    import inspect
    import textwrap

    norm_block = guide_code("A norm kind: one class")
    assert inspect.getsource(ScaledFrobeniusNorm) in norm_block and "@register_norm\n" in norm_block
    optimiser_block = guide_code("A named optimiser: one line")
    assert ('register_optimiser("signum-sum", chain(full_gradient(), momentum(), steepest_direction("sum"), '
            'scale_by_schedule()))') in GUIDE.read_text()  # the line tests/test_one_definition.py registers
    table = (GUIDE.parents[1] / "rates" / "numeric" / "optim" / "alias.py").read_text()
    quoted = [line.strip() for line in optimiser_block.splitlines() if line.startswith('"')]
    assert len(quoted) >= 3 and all(line in table for line in quoted), quoted  # lines of the real table
    family_block = guide_code("A theorem family: one module and one registry entry")
    template_lines = textwrap.dedent(inspect.getsource(toy_family_template).split("return ", 1)[1]).splitlines()
    for line in template_lines[1:-1]:  # the arguments of BoundTemplate(...), one per line
        assert line.strip().replace('f"toy family ({norm})"', '"toy family (max)"') in family_block, line
