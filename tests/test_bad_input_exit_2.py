"""Inputs that used to end in an internal error (exit 3), a silent success, or a message naming an option the
command does not have: each is now one line, exit 2, naming the option to change, with no file left behind."""

from __future__ import annotations

import json
import math

import pytest
from cli_invoke import invoke

from rates import budget
from rates.io import strict_json
from rates.numeric.engine import RunSpec
from rates.numeric.tasks import EngineTask, check_budget


def assert_refusal(code: int, err: str, option: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rates: error: {option}:"), err


def test_tightness_refuses_a_negative_seed():
    code, _, err = invoke(["tightness", "--algo", "signgd", "--a", "1", "--seed", "-5", "--budget", "1"])
    assert_refusal(code, err, "--seed")


def test_tightness_names_its_own_option_for_an_algorithm_that_needs_a_norm():
    code, _, err = invoke(["tightness", "--algo", "nsd", "--a", "1", "--budget", "1"])
    assert_refusal(code, err, "--algo")
    assert "has no --norm" in err


def test_homogeneous_with_an_overflowing_learning_rate_is_refused_and_writes_no_json(tmp_path):
    out = tmp_path / "h.json"
    code, stdout, err = invoke(["homogeneous", "--algo", "gd", "--lr", "1e308", "--steps", "5", "--seeds", "1",
                                "--device", "cpu", "--out", str(out), "--no-progress"])
    assert_refusal(code, err, "--lr")
    assert "RuntimeWarning" not in err and not out.exists() and stdout == ""


def test_homogeneous_width_beyond_memory_is_refused_before_training():
    code, _, err = invoke(["homogeneous", "--algo", "gd", "--width", "100000000", "--steps", "2", "--seeds", "1",
                           "--device", "cpu", "--no-progress"])
    assert_refusal(code, err, "--width")
    assert "GiB" in err


def test_homogeneous_estimate_grows_with_the_weights():
    # one hidden layer: width * dim input weights and width output weights, per seed
    small = budget.estimate_homogeneous(1, 10, 1, 8, 32, 100)
    large = budget.estimate_homogeneous(1, 1000, 1, 8, 32, 100)
    per_weight = 8 * budget.NET_COPIES
    assert large.bytes - small.bytes >= per_weight * (1000 - 10) * 9
    assert large.seconds == pytest.approx(small.seconds * 100)


def test_homogeneous_single_training_point_names_n_train():
    code, _, err = invoke(["homogeneous", "--algo", "gd", "--n-train", "1", "--steps", "2", "--seeds", "1",
                           "--device", "cpu", "--no-progress"])
    assert_refusal(code, err, "--n-train")


def test_homogeneous_json_has_no_infinities(tmp_path):
    text = json.dumps(strict_json({"a": [1.0, -math.inf, math.nan], "b": {"c": (math.inf, 2)}}), allow_nan=False)
    assert json.loads(text) == {"a": [1.0, None, None], "b": {"c": [None, 2]}}


def test_fit_plot_of_gaps_beyond_any_axis_is_refused(tmp_path):
    run_file = tmp_path / "run.json"
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--steps", "200", "--checkpoints", "10",
                           "--out", str(run_file), "--no-progress"])
    assert code == 0, err
    data = json.loads(run_file.read_text())
    points = data["runs"][0]["checkpoints"]
    points["gap"] = [1e308 * (0.5 + 0.5 / (i + 1)) for i in range(len(points["gap"]))]
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(data))
    code, _, err = invoke(["fit", "--from", str(huge), "--plot", str(tmp_path / "fig.png")])
    assert_refusal(code, err, "--plot")
    assert not (tmp_path / "fig.png").exists()


def test_many_data_draws_are_refused_naming_data_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 2 * budget.BASE_BYTES)
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--steps", "10", "--data-seeds", "0..3000",
                           "--out", str(tmp_path / "r.json"), "--no-progress"])
    assert_refusal(code, err, "--data-seeds")
    assert not (tmp_path / "r.json").exists()


def test_engine_tasks_are_estimated_before_the_first_step(capsys, monkeypatch):
    """rates report and rates sweep share this check: 10^5 data draws of 10^6 steps are announced in hours,
    from the recipe's probed cost (here given: 1 us per step, at load 0), not from the torch engine's
    constants; the same request with too little memory is refused naming --data-seeds."""
    from rates.numeric import duration

    probed = []
    monkeypatch.setattr(duration, "_probed", {})
    monkeypatch.setattr(duration, "machine_load", lambda: 0.0)
    monkeypatch.setattr(duration, "probe_recipe", lambda key, runs, *rest: (probed.append(key) or 1e-6, True))
    spec = RunSpec(algo="signgd", a="1")
    tasks = [EngineTask(specs=(spec,), data="default", data_seed=seed, steps=10**6, checkpoints=60)
             for seed in range(2)] * 50_000
    check_budget(tasks, workers=1)
    err = capsys.readouterr().err
    assert "note: this request is estimated at 100000 run(s) x 1000000 steps" in err
    assert len(probed) == 1  # one recipe, one data shape: one probe
    # one worker process: 10^5 tasks of 1 s, the two draws' set-up once each, and the worker's start
    expected = (10**5 * 1e-6 * 10**6 + 2 * duration.DRAW_SETUP_S + duration.WORKER_START_S) / 3600
    assert f"and {expected:.1f} h" in err, (err, expected)
    monkeypatch.setattr(budget, "available_memory", lambda: budget.BASE_BYTES)
    with pytest.raises(Exception) as info:
        check_budget(tasks, workers=1)
    assert str(info.value).startswith("--data-seeds:")


def test_numpy_overflow_warnings_do_not_reach_the_user(tmp_path):
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--eta0", "1e308", "--steps", "50",
                           "--out", str(tmp_path / "r.json"), "--no-progress"])
    assert_refusal(code, err, "--eta0")


def test_a_one_sided_teacher_sample_of_few_points_names_n_train():
    """Two points of seed 3's teacher fall on one side: more points, not a wider teacher, is the remedy."""
    code, _, err = invoke(["homogeneous", "--algo", "gd", "--n-train", "2", "--steps", "2", "--seeds", "5",
                           "--device", "cpu", "--no-progress"])
    assert_refusal(code, err, "--n-train")
    assert "all training labels are equal" in err
