"""``--steps auto``: stages until the comparator's window is there, within the budget; the plan printed first."""

import json

import numpy as np
import pytest
from cli_invoke import invoke

from rates.errors import InputError
from rates.judge.compare import choose_window
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate
from rates.studies.auto_steps import parse_steps, shortest_with_window


def _stages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("steps auto: stage ")]


def test_parse_steps():
    assert parse_steps("auto") is None and parse_steps(" AUTO ") is None and parse_steps("12") == 12
    for bad in ("1e4", "many"):
        with pytest.raises(InputError) as info:
            parse_steps(bad)
        assert str(info.value).startswith("--steps: must be an integer >= 1 or 'auto'")
    for bad, shown in (("0", "0"), ("-3", "-3"), (str(2**53 + 1), str(2**53 + 1))):
        with pytest.raises(InputError) as info:
            parse_steps(bad)
        assert str(info.value) == f"--steps: must be an integer in [1, 2^53], got {shown}"
    assert parse_steps(str(2**53)) == 2**53


def test_auto_runs_a_second_stage_sized_by_the_first_ones_entry(tmp_path):
    out = tmp_path / "t.json"
    code, stdout, stderr = invoke(["run", "--algo", "ngd", "--a", "1/2", "--eta0", "0.01", "--steps", "auto",
                                   "--data", "default", "--out", str(out), "--no-progress"])
    assert code == 0
    plan = stderr.index("steps auto: stages of 10x")
    assert plan < stderr.index("steps auto: stage 1:")  # the plan comes before any stage
    assert "t_d = " in stderr  # the descent start, on the data's own gamma and B
    first = shortest_with_window(0.0, 60)
    stages = _stages(stderr)
    assert len(stages) == 2 and f"stage 1: {first} steps" in stages[0] and "no window yet" in stages[0]
    # independently: the first stage's run, judged by the comparator, has its entry but no window yet ...
    run = simulate([RunSpec("ngd", "1/2", eta0=0.01)], parse_data("default"), first, checkpoints=60).runs[0]
    window = choose_window(run)
    assert window.problem is not None and window.entry_t is not None
    # ... and the second stage is the shortest run with a decade past that entry, where the window is there
    second = shortest_with_window(window.entry_t, 60)
    assert f"stage 2: {second} steps" in stages[1] and "window reached" in stages[1]
    saved = json.loads(out.read_text())
    assert saved["meta"]["steps"] == second
    assert f"window reached at {second} steps" in stdout


def test_auto_stops_at_the_step_budget_and_says_why(tmp_path):
    out = tmp_path / "t.json"
    code, stdout, stderr = invoke(["run", "--algo", "ngd", "--a", "1/2", "--eta0", "0.001", "--steps", "auto",
                                   "--budget-steps", "150000", "--data", "default", "--out", str(out),
                                   "--no-progress"])
    assert code == 0 and out.exists()
    stages = _stages(stderr)
    assert len(stages) == 3 and "stage 3: 150000 steps" in stages[-1]  # 13665, 136650, then cut to the budget
    assert "no window within the budget" in stdout and "budget of 150000 steps is spent" in stdout


@pytest.mark.parametrize("args, option", [
    (["--steps", "lots"], "--steps"),
    (["--steps", "auto", "--budget-steps", "500"], "--budget-steps"),
    (["--steps", "auto", "--budget-seconds", "0"], "--budget-seconds"),
])
def test_bad_horizon_options_exit_2_naming_the_option(tmp_path, args, option):
    out = tmp_path / "t.json"
    code, _, stderr = invoke(["run", "--algo", "signgd", "--a", "1/2", "--data", "default", "--out", str(out)] + args)
    assert code == 2 and not out.exists()
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0]


def test_fit_with_auto_steps_judges_the_window_it_reached():
    code, stdout, stderr = invoke(["fit", "--algo", "signgd", "--a", "1/2", "--steps", "auto", "--data", "default",
                                   "--no-progress"])
    assert code == 0 and "window reached" in stderr
    assert "fitted slope   :" in stdout and "t in [1.03e+03, 1.37e+04]" in stdout and "verdict        :" in stdout


def _run_with_gap(t, gap, gamma):
    from types import SimpleNamespace

    t, gap = np.asarray(t, float), np.asarray(gap, float)
    return SimpleNamespace(t=t, gap=gap, margin=gamma - gap, gamma={"value": gamma})


def test_separation_estimate_follows_the_gaps_slope_down_to_gamma():
    """A gap 5 t^-1/2 exactly with gamma = 0.01: the margins turn positive where 5 t^-1/2 = 0.01, t = 2.5e5 (closed
    form); the fit uses the last decade only, so an earlier stretch of another slope does not move it."""
    from rates.studies.auto_steps import separation_estimate

    t = np.unique(np.geomspace(1, 1e5, 60).round())
    gap = np.where(t < 1e3, 1.0, 5.0 * t ** -0.5)
    t_cross, slope, t_from, t_to = separation_estimate(_run_with_gap(t, gap, 0.01))
    assert t_cross == pytest.approx(2.5e5, rel=1e-9) and slope == pytest.approx(-0.5, rel=1e-12)
    assert t_from >= 1e4 and t_to == 1e5
    # a margin already positive at the end, a gap not falling, or too few checkpoints: no estimate
    assert separation_estimate(_run_with_gap(t, 5.0 * t ** -0.5, 1.0)) is None
    assert separation_estimate(_run_with_gap(t, 0.5 + 0 * t, 0.1)) is None
    assert separation_estimate(_run_with_gap(t[-3:], 5.0 * t[-3:] ** -0.5, 0.01)) is None
    # raw digits' SignGD: a gap of gamma plus a margin that rises from -0.16 to -0.05 over a decade (a 1.2% fall)
    # says nothing about the crossing (the margin was still negative at 1e6): no estimate
    digits = 9.5 + 0.16 * (t / 1e4) ** -0.5
    assert (digits[-1] - digits[t >= 1e4][0]) / digits[t >= 1e4][0] < 0.1
    assert separation_estimate(_run_with_gap(t, digits, 9.5)) is None


def test_the_stop_line_says_where_no_extrapolation_is_made_and_where_one_is():
    from types import SimpleNamespace

    from rates.studies.auto_steps import Stage, _separation_text

    t = np.unique(np.geomspace(1, 1e5, 60).round())
    stage = Stage(100_000, 50.0, [])
    flat = SimpleNamespace(runs=[_run_with_gap(t, 9.5 + 0.16 * (t / 1e4) ** -0.5, 9.5)])
    assert "no extrapolation" in _separation_text(flat, stage, 60)
    falling = SimpleNamespace(runs=[_run_with_gap(t, 5.0 * t ** -0.5, 0.01)])
    text = _separation_text(falling, stage, 60)
    assert "turn positive near t = 2.5e+05" in text and "an extrapolation, not a bound" in text
    separated = SimpleNamespace(runs=[_run_with_gap(t, 5.0 * t ** -0.5, 1.0)])
    assert _separation_text(separated, stage, 60) == ""
