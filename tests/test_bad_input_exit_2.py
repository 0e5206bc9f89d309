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


@pytest.mark.parametrize("study", ["signadam", "minibatch", "flavors"])
def test_a_paper_study_refuses_data_seeds_instead_of_ignoring_them(tmp_path, study):
    """Its draws are part of its protocols; before, --data-seeds 0..100000 ran the study on its own draws."""
    code, _, err = invoke(["report", study, "--data-seeds", "0..100000", "--out", str(tmp_path / "r"),
                           "--no-progress"])
    assert_refusal(code, err, "--data-seeds")
    assert "default study only" in err
    assert not (tmp_path / "r").exists()


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
    # too little memory for the runs' records: refused naming the seeds option; the generated data's own check
    # (budget.check_generated_data, refusing with --data) is not what this test is about
    monkeypatch.setattr(budget, "check_generated_data", lambda *args, **kwargs: None)
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


# every command's integer and real options, with the fewest other arguments that reach the command
_BASE_ARGS = {
    "predict": ["--algo", "signgd", "--a", "1"],
    "run": ["--algo", "signgd", "--a", "1", "--steps", "10", "--no-progress", "--out", "{tmp}/r.json"],
    "fit": ["--algo", "signgd", "--a", "1", "--steps", "10", "--no-progress"],
    "homogeneous": ["--algo", "gd", "--no-progress"],
    "sweep": ["{tmp}/g.toml", "--out", "{tmp}/sweep", "--scheduler", "serial"],
    "tightness": ["--algo", "signgd", "--a", "1"],
}


def _numeric_options() -> list[tuple[str, str, type]]:
    from cli.app import _numeric_options as found
    from cli.app import app

    options = []
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        options += [(name, option, kind) for option, kind in found(info.callback).values()]
    return options


def test_every_command_with_numbers_is_covered_below():
    assert {command for command, _, _ in _numeric_options()} == set(_BASE_ARGS)


@pytest.mark.parametrize("command,option,kind", _numeric_options())
def test_numbers_the_code_cannot_represent_are_refused_naming_the_option(command, option, kind, tmp_path):
    """An integer beyond 64 bits (--steps 99999999999999999999 ended in a TypeError, exit 3) or a real that is
    not finite: one line, exit 2, naming the option and its range, before any work."""
    (tmp_path / "g.toml").write_text('[grid]\nalgo = "signgd"\na = "1"\nsteps = 10\n', encoding="utf-8")
    base = [arg.replace("{tmp}", str(tmp_path)) for arg in _BASE_ARGS[command]]
    for value in (["99999999999999999999", "-99999999999999999999"] if kind is int else ["1e999", "nan"]):
        argv = [command, *[arg for i, arg in enumerate(base) if arg != option and base[i - 1 if i else 0] != option]]
        code, _, err = invoke([*argv, option, value])
        assert_refusal(code, err, option)
        assert ("2^63 - 1" if kind is int else "finite number") in err, err
    assert not list(tmp_path.glob("r.json")) and not (tmp_path / "sweep").exists()


def test_a_grid_step_count_beyond_float64s_exact_integers_is_refused(tmp_path):
    (tmp_path / "g.toml").write_text('[grid]\nalgo = "signgd"\na = "1"\nsteps = 99999999999999999999\n',
                                     encoding="utf-8")
    code, _, err = invoke(["sweep", str(tmp_path / "g.toml"), "--out", str(tmp_path / "s"), "--scheduler", "serial"])
    assert_refusal(code, err, "--steps")
    assert "[1, 2^53]" in err and not (tmp_path / "s").exists()
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--steps", str(2**53 + 1), "--no-progress",
                           "--out", str(tmp_path / "r.json")])
    assert_refusal(code, err, "--steps")


def test_more_checkpoints_than_steps_cost_nothing():
    """Every integer of 1..steps is a checkpoint once the log-spaced grid's gaps are below 1: 2^53 requested
    checkpoints of a 10-step run are its 10 steps (numpy was asked for 2^53 points before), and the memory
    estimate counts 10 checkpoints, not 2^53."""
    import numpy as np

    from rates.numeric.engine import checkpoint_times

    assert checkpoint_times(10, 2**53).tolist() == list(range(1, 11))
    for steps in (1, 7, 100, 3000):
        for requested in (2, 60, steps, 5 * steps, 50 * steps):
            full = np.unique(np.round(np.geomspace(1, steps, num=max(requested, 2))).astype(np.int64))
            assert checkpoint_times(steps, requested).tolist() == full[(full >= 1) & (full <= steps)].tolist()
    assert budget.estimate_linear_runs(1, 10, 2**53, 30, 3, 5) == budget.estimate_linear_runs(1, 10, 10, 30, 3, 5)


def _file_output_options() -> list[tuple[str, str]]:
    from cli.app import _output_options, app

    return [(info.name or info.callback.__name__.replace("_", "-"), option)
            for info in app.registered_commands
            for option, is_dir in _output_options(info.callback).values() if not is_dir]


def test_every_file_output_option_is_covered_below():
    assert {command for command, _ in _file_output_options()} <= set(_BASE_ARGS) | {"table"}


@pytest.mark.parametrize("command,option", _file_output_options())
def test_a_file_option_spelled_as_a_directory_is_refused_not_written_as_a_file(command, option, tmp_path):
    """``--out x/`` wrote a regular file named x, exited 0 and printed "wrote x/"."""
    base = [arg.replace("{tmp}", str(tmp_path)) for arg in _BASE_ARGS.get(command, [])]
    argv = [command, *[arg for i, arg in enumerate(base) if arg != option and base[i - 1 if i else 0] != option]]
    code, _, err = invoke([*argv, option, str(tmp_path / "x") + "/"])
    assert_refusal(code, err, option)
    assert "ends in a separator" in err and not (tmp_path / "x").exists()


def test_a_directory_option_spelled_with_a_separator_is_that_directory(tmp_path):
    (tmp_path / "g.toml").write_text('[grid]\nalgo = "signgd"\na = "1"\nsteps = 20\ncheckpoints = 4\n'
                                     'device = "cpu"\n', encoding="utf-8")
    code, _, err = invoke(["sweep", str(tmp_path / "g.toml"), "--out", str(tmp_path / "x") + "/", "--scheduler",
                           "serial", "--no-progress", "--no-figures"])
    assert code == 0, err
    assert (tmp_path / "x").is_dir() and (tmp_path / "x" / "table.md").is_file()
