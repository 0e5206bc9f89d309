"""``rates run``: writes a Trajectory that loads back; bad input -> exit 2, one line, no output file."""

import json
import subprocess
import sys

import numpy as np
import pytest

from cli.app import main
from cli.run import parse_seeds
from rates.errors import InputError
from rates.numeric.data import parse_data
from rates.numeric.margins import max_margin
from rates.numeric.trajectory import load


def invoke(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", *args])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_run_writes_a_trajectory_with_one_run_per_seed(tmp_path, capsys):
    out = tmp_path / "traj.json"
    code, stdout, _ = invoke(["--algo", "signsgd", "--batch", "10", "--a", "1/2", "--steps", "400",
                              "--seeds", "0..2", "--checkpoints", "12", "--out", str(out)], capsys)
    assert code == 0
    trajectory = load(out)
    assert [run.config.seed for run in trajectory.runs] == [0, 1, 2]
    gamma = max_margin(parse_data("default"), "max").gamma
    for run in trajectory.runs:
        assert run.config.a == "1/2" and run.config.family == "minibatch" and run.t[-1] == 400
        assert run.gamma["value"] == gamma
        np.testing.assert_allclose(run.gap, gamma - run.margin, rtol=0, atol=1e-15)
    assert f"gamma={gamma:.12g}" in stdout and "highs" in stdout and "t=400" in stdout


def test_run_as_a_subprocess(tmp_path):
    out = tmp_path / "adam.json"
    proc = subprocess.run([sys.executable, "-m", "rates", "run", "--algo", "adam", "--a", "2/3", "--steps", "200",
                           "--data", "gaussian:k=3,d=4,per_class=5", "--device", "cpu", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["runs"][0]["config"]["algo"] == "adam" and data["runs"][0]["config"]["adam_eps"] == 0.0


@pytest.fixture
def non_separable(tmp_path):
    path = tmp_path / "clash.npz"
    H = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    np.savez(path, H=H, y=np.array([0, 1, 1, 0]))  # the first two points coincide with different labels
    return path


@pytest.mark.parametrize("args, option", [
    (["--algo", "signgd", "--a", "1/2", "--steps", "10", "--data", "{clash}"], "--data"),
    (["--algo", "signgd", "--a", "1/2", "--steps", "10", "--data", "no-such-preset"], "--data"),
    (["--algo", "signgd", "--a", "1/2", "--steps", "0"], "--steps"),
    (["--algo", "nsd", "--norm", "schatten:3", "--a", "1/2", "--steps", "10"], "--norm"),
    (["--algo", "signsgd", "--batch", "7", "--a", "1/2", "--steps", "10"], "--batch"),
    (["--algo", "signum", "--momentum", "1", "--a", "1/2", "--steps", "10"], "--momentum"),
    (["--algo", "signgd", "--a", "1.5", "--steps", "10"], "--a"),
    (["--algo", "signgd", "--a", "1/2", "--steps", "10", "--seeds", "3..1"], "--seeds"),
    (["--algo", "signgd", "--a", "1/2", "--steps", "10", "--seed", "-1"], "--seed"),
])
def test_bad_input_exits_2_with_one_line_and_no_file(tmp_path, capsys, non_separable, args, option):
    out = tmp_path / "never.json"
    args = [a.replace("{clash}", str(non_separable)) for a in args]
    code, stdout, stderr = invoke([*args, "--out", str(out)], capsys)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rates: error: {option}:")
    assert not out.exists() and list(tmp_path.iterdir()) == [non_separable]


def test_out_that_is_a_directory_is_refused_before_the_run(tmp_path, capsys):
    target = tmp_path / "results"
    target.mkdir()
    code, stdout, stderr = invoke(["--algo", "signgd", "--a", "1/2", "--steps", "10", "--out", str(target)], capsys)
    assert code == 2 and stdout == ""  # nothing ran: no summary line
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rates: error: --out:")
    assert list(tmp_path.iterdir()) == [target] and list(target.iterdir()) == []


def test_seed_lists():
    assert parse_seeds(5, None) == [5]
    assert parse_seeds(0, "0..4") == [0, 1, 2, 3, 4]
    assert parse_seeds(0, "2,7") == [2, 7]
    with pytest.raises(InputError, match="--seeds"):
        parse_seeds(0, "1,1")
