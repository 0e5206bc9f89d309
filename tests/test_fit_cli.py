"""``rates fit`` in-process: verdict output, --seeds/--window/--plot, bad input -> exit 2 with one line."""

from __future__ import annotations

import json
import re

import pytest
from test_compare import checkpoints, synthetic_run

from cli.app import main
from cli.run import parse_seeds
from rates.errors import InputError
from rates.numeric.trajectory import Trajectory, save


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def quarter_file(tmp_path):
    """Three seeds of SignGD, a = 3/4, with the exact law gap = c_s t^{-1/4} (slope -1/4 by construction)."""
    runs = [synthetic_run(lambda t, c=c: c * t ** -0.25, seed=s) for s, c in enumerate((0.5, 0.7, 0.9))]
    path = tmp_path / "quarter.json"
    save(Trajectory(runs, {"made_by": "test"}), path)
    return path


def test_fit_from_file_prints_slope_window_prediction_and_verdict(quarter_file, capsys):
    code, out, err = run_cli(["fit", "--from", str(quarter_file)], capsys)
    assert code == 0, err
    assert "fitted slope   : -0.250 ± 0.000" in out  # the law's exponent, exactly
    first = checkpoints()[checkpoints() >= 1e4][0]  # the last two decades start at the first checkpoint >= 1e4
    assert "3 seeds" in out and f"t in [{first:.3g}, 1e+06]" in out
    assert "SIGNADAM" in out  # the prediction's source
    fastest, slowest = (float(v) for v in re.search(
        r"bound slope envelope over the window : \[([+-][0-9.]+), ([+-][0-9.]+)\]", out).groups())
    assert fastest <= slowest
    expected = "tight" if fastest - 0.05 <= -0.25 <= slowest + 0.05 else ("loose" if -0.25 < fastest else "violated")
    assert f"verdict        : {expected}" in out
    assert "3 independent of 3 run(s)" in out  # the seeds' gaps differ: nothing is collapsed


def test_fit_json_and_seed_selection(quarter_file, capsys):
    code, out, _ = run_cli(["fit", "--from", str(quarter_file), "--seeds", "0..1", "--json"], capsys)
    assert code == 0
    record = json.loads(out)[0]
    assert record["schema"] == "rates.fit/1" and record["seeds"] == [0, 1]
    assert record["verdict"]["fit"]["slope"] == pytest.approx(-0.25, abs=1e-9)
    assert record["prediction"]["rate"]["exponent"] == "1/4"


def test_fit_user_window_and_plot(quarter_file, tmp_path, capsys):
    figure = tmp_path / "fit.png"
    code, out, _ = run_cli(["fit", "--from", str(quarter_file), "--window", "100:1e5", "--plot", str(figure)], capsys)
    assert code == 0
    assert "t in [100, 1e+05]" in out and "user" in out
    assert figure.exists() and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_violation_exits_one(tmp_path, capsys):
    path = tmp_path / "slow.json"
    save(Trajectory([synthetic_run(lambda t: 2 * t ** -0.1, a="3/4")]), path)
    code, out, _ = run_cli(["fit", "--from", str(path)], capsys)
    assert code == 1 and "verdict        : violated" in out


@pytest.mark.parametrize("args, option", [
    (["--seeds", "0..x"], "--seeds"),
    (["--seeds", "4..1"], "--seeds"),
    (["--seeds", "7"], "--seeds"),  # no run has seed 7
    (["--window", "1e3:1e9"], "--window"),  # outside the run
    (["--window", "1e5"], "--window"),
    (["--tolerance", "1.5"], "--tolerance"),
    (["--plot", "fit.gif"], "--plot"),
])
def test_bad_options_exit_two_with_one_line(quarter_file, tmp_path, capsys, args, option):
    args = [a if a != "fit.gif" else str(tmp_path / "fit.gif") for a in args]
    code, out, err = run_cli(["fit", "--from", str(quarter_file), *args], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"rates: error: {option}:")
    assert not (tmp_path / "fit.gif").exists()


def test_wrong_schema_and_missing_file_exit_two(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "something/1", "runs": []}))
    code, _, err = run_cli(["fit", "--from", str(bad)], capsys)
    assert code == 2 and err.startswith("rates: error: --from:") and "schema" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["fit", "--from", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and err.startswith("rates: error: --from:")


def test_parse_seeds_forms():
    assert parse_seeds(0, "0..4") == [0, 1, 2, 3, 4]
    assert parse_seeds(0, "0,2,5") == [0, 2, 5]
    assert parse_seeds(0, "3") == [3]
    for bad in ("", "0..", "-1", "1,1", "a..b", "0...3", "4..1"):
        with pytest.raises(InputError):
            parse_seeds(0, bad)


def test_fit_runs_when_given_run_options(tmp_path, capsys):
    out_file = tmp_path / "run.json"
    code, out, err = run_cli(["fit", "--algo", "signgd", "--a", "3/4", "--steps", "300", "--data-seeds", "0..1",
                              "--device", "cpu", "--out", str(out_file)], capsys)
    assert code == 0, err
    saved = json.loads(out_file.read_text())["runs"]
    assert [r["config"]["data_seed"] for r in saved] == [0, 1]
    assert saved[0]["gamma"]["value"] != saved[1]["gamma"]["value"]  # each seed is its own data draw
    # 300 steps never reach t = 1e3: the comparator must refuse to judge rather than guess
    assert "verdict        : inconclusive" in out and "too short" in out


@pytest.mark.parametrize("args, option", [
    (["--algo", "signgd"], "--from"),  # run options together with --from
    (None, "--algo"),  # neither --from nor run options
])
def test_fit_needs_either_a_file_or_run_options(quarter_file, capsys, args, option):
    argv = ["fit", "--from", str(quarter_file), *args] if args is not None else ["fit", "--a", "1/2", "--steps", "10"]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "" and err.startswith(f"rates: error: {option}:")


def test_window_refused_after_running_leaves_no_out_file(tmp_path, capsys):
    # 20 log-spaced checkpoints up to t = 200 put only 2 inside [150, 200]: the window is refused once the
    # checkpoints exist, and the Trajectory asked for with --out must not be left behind (exit 2, no file).
    out_file = tmp_path / "run.json"
    code, out, err = run_cli(["fit", "--algo", "signgd", "--a", "1/2", "--steps", "200", "--checkpoints", "20",
                              "--device", "cpu", "--window", "150:200", "--out", str(out_file)], capsys)
    assert code == 2 and out == "" and err.startswith("rates: error: --window:") and "2 checkpoints" in err
    assert not out_file.exists()
