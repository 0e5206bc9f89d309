"""``rates sweep`` in this process: grid validation, resumption, changed grids, outputs (no Dask cluster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.app import main
from rates.errors import InputError
from rates.numeric.engine import RunSpec
from rates.numeric.tasks import EngineTask, _execute_remote, _unwrap, run_tasks
from rates.numeric.trajectory import load

GRID = """
[grid]
algo = ["signgd", "ngd"]
a = ["1/2", "3/4"]
seed = [0, 1]
steps = 300
checkpoints = 12
device = "cpu"
"""


def write_grid(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def sweep(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["sweep", *map(str, args), "--no-progress"])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def runs_by_configuration(out_dir: Path) -> dict[str, list[dict]]:
    """Configuration key -> the runs (as JSON) that hold it, over every task file of a sweep directory."""
    found: dict[str, list[dict]] = {}
    for path in sorted((out_dir / "trajectories").glob("task-*.json")):
        trajectory = load(path)
        keys = trajectory.meta["sweep"]["configurations"]
        assert len(keys) == len(trajectory.runs)
        for key, run in zip(keys, trajectory.runs):
            found.setdefault(key, []).append(run.to_json())
    return found


# ------------------------------------------------------------------------------------------ bad grids


def run_error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--steps", "10", "--out", "never.json", *args])  # a later --steps wins
    _, err = capsys.readouterr()
    assert exc.value.code == 2
    return err.strip()


def option_and_reason(line: str) -> tuple[str, str]:
    """``rates: error: --a: must be ...`` or click's ``rates: error: Invalid value for '--a': ...``."""
    body = line.removeprefix("rates: error: ")
    if body.startswith("Invalid value for '"):
        option, _, reason = body.removeprefix("Invalid value for '").partition("': ")
    else:
        option, _, reason = body.partition(": ")
    return option, reason


@pytest.mark.parametrize("cells, key, value, run_args", [
    ('a = ["1/2", "3/2"]', "a", '"3/2"', ["--algo", "signgd", "--a", "3/2"]),
    ('eta0 = [1.0, -1.0]', "eta0", "-1.0", ["--algo", "signgd", "--a", "1/2", "--eta0", "-1.0"]),
    ('algo = ["signgd", "bogus"]', "algo", '"bogus"', ["--algo", "bogus", "--a", "1/2"]),
    ('batch = [10, 7]\nalgo = "signsgd"', "batch", "7", ["--algo", "signsgd", "--a", "1/2", "--batch", "7"]),
    ('momentum = [0.5, 1.0]\nalgo = "signum"', "momentum", "1.0",
     ["--algo", "signum", "--a", "1/2", "--momentum", "1.0"]),
    ('seed = [0, -1]', "seed", "-1", ["--algo", "signgd", "--a", "1/2", "--seed", "-1"]),
    ('checkpoints = "many"', "checkpoints", '"many"', ["--algo", "signgd", "--a", "1/2", "--checkpoints", "many"]),
])
def test_a_bad_cell_gets_the_message_of_rates_run_plus_its_key_and_value(tmp_path, capsys, monkeypatch, cells, key,
                                                                       value, run_args):
    monkeypatch.chdir(tmp_path)
    defaults = {"algo": '"signgd"', "a": '"1/2"', "steps": "10"}
    lines = [cells] + [f"{k} = {v}" for k, v in defaults.items() if f"{k} =" not in cells]
    grid = write_grid(tmp_path / "grid.toml", "[grid]\n" + "\n".join(lines) + "\n")
    code, out, err = sweep(capsys, grid, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    option, reason = option_and_reason(run_error(capsys, *run_args))
    # same option, same reason as rates run; then the grid file, key and value
    assert err.startswith(f"rates: error: {option}: {reason}"), (err, option, reason)
    assert f"[grid.toml: {key} = {value}]" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "never.json").exists()


@pytest.mark.parametrize("text, needle", [
    ("[grid]\nalgo = 'signgd'\na = '1/2'\nsteps = 10\nlearning_rate = 1\n", "unknown key 'learning_rate'"),
    ("[grid]\nalgo = 'signgd'\na = []\nsteps = 10\n", "key 'a' is an empty list"),
    ("[grid]\nalgo = 'signgd'\na = ['1/2', 0.5]\nsteps = 10\n", "key 'a' repeats the value 0.5"),
    ("[grid]\nalgo = 'signgd'\na = [['1/2']]\nsteps = 10\n", "cells must be strings, numbers or booleans"),
    ("[grid]\nalgo = 'signgd'\nsteps = 10\n", "--a: grid.toml: the grid must give 'a'"),
    ("[grid]\nalgo = 'signgd'\na = '1/2'\nsteps = 10\nseeds = '0..3'\n", "vary seed instead"),
    ("[grid]\nalgo = 'signgd'\na = '1/2'\nsteps = 10\n[other]\nx = 1\n", "unknown top-level key(s) other"),
    ("[grid\n", "not valid TOML"),
])
def test_malformed_grids_are_refused_before_any_work(tmp_path, capsys, text, needle):
    grid = write_grid(tmp_path / "grid.toml", text)
    code, out, err = sweep(capsys, grid, "--out", tmp_path / "out")
    assert code == 2 and err.startswith("rates: error: ") and needle in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_steps_that_are_not_integers_are_refused_as_rates_run_refuses_them(tmp_path, capsys):
    grid = write_grid(tmp_path / "grid.toml", "[grid]\nalgo = 'signgd'\na = '1/2'\nsteps = [100, 1.5]\n")
    code, _, err = sweep(capsys, grid, "--out", tmp_path / "out")
    option, reason = option_and_reason(run_error(capsys, "--algo", "signgd", "--a", "1/2", "--steps", "1.5"))
    assert code == 2 and err.startswith(f"rates: error: --steps: {reason}") and "[grid.toml: steps = 1.5]" in err


# ------------------------------------------------------------------------------------------ resumption


def test_resume_after_a_task_limit_runs_every_configuration_once(tmp_path, capsys):
    grid = write_grid(tmp_path / "grid.toml", GRID)
    out = tmp_path / "sweep"
    code, text, _ = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--max-tasks", "2", "--no-figures")
    assert code == 0 and "stopped after 2 tasks (2 left)" in text
    # 2 algorithms x 2 seeds = 4 groups of 2 values of a; 2 groups done = 4 configurations
    assert sum(len(v) for v in runs_by_configuration(out).values()) == 4
    assert not (out / "table.md").exists()
    code, text, _ = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--no-figures")
    assert code == 0 and "8 configurations: 4 already done, 4 to run in 2 tasks" in text
    found = runs_by_configuration(out)
    assert len(found) == 8 and all(len(runs) == 1 for runs in found.values())
    table = (out / "table.md").read_text()
    # one row per (algorithm, a), both seeds pooled
    rows = [line for line in table.splitlines() if line.startswith("| signgd") or line.startswith("| ngd")]
    assert len(rows) == 4 and all("| 2 of 2 |" in row for row in rows)  # replicates: 2 independent of 2
    fits = json.loads((out / "fits.json").read_text())
    assert sorted(rec["seeds"] for rec in fits) == [[0, 1]] * 4
    # a third run finds nothing to do
    code, text, _ = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--no-figures")
    assert code == 0 and "8 already done, 0 to run in 0 tasks" in text
    assert len(list((out / "trajectories").glob("task-*.json"))) == 4


def test_a_file_written_but_not_indexed_counts_as_done(tmp_path, capsys):
    """A kill between the atomic rename and the index append: the file is found and indexed on resume."""
    grid = write_grid(tmp_path / "grid.toml", GRID)
    out = tmp_path / "sweep"
    sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--max-tasks", "1", "--no-figures")
    index = out / "index.jsonl"
    index.write_text(index.read_text()[:25])  # a torn line, as a kill mid-append leaves it
    (out / "trajectories" / ".task-leftover.json.tmp").write_text("{")  # a temporary file a kill left
    code, text, _ = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--no-figures")
    assert code == 0 and "2 already done, 6 to run" in text
    assert "note: index.jsonl: removed 1 line(s) that are not task records" in text  # the torn line, said
    found = runs_by_configuration(out)
    assert len(found) == 8 and all(len(runs) == 1 for runs in found.values())
    lines = [json.loads(line) for line in index.read_text().splitlines()]  # the torn line is gone
    assert len(lines) == 4 and sum(bool(line.get("recovered")) for line in lines) == 1


def test_a_changed_grid_is_refused_unless_merged(tmp_path, capsys):
    out = tmp_path / "sweep"
    small = "[grid]\nalgo = 'signgd'\na = ['1/2', '3/4']\nsteps = 300\ncheckpoints = 12\ndevice = 'cpu'\n"
    grid = write_grid(tmp_path / "grid.toml", small)
    assert sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--no-figures")[0] == 0
    # the same grid written differently (order, 0.5 for 1/2, a default spelled out) is the same grid
    same = "[grid]\na = [0.75, 0.5]\nalgo = 'signgd'\neta0 = 1\nsteps = 300\ncheckpoints = 12\ndevice = 'cpu'\n"
    code, text, _ = sweep(capsys, write_grid(tmp_path / "same.toml", same), "--out", out, "--scheduler", "serial",
                          "--no-figures")
    assert code == 0 and "2 already done, 0 to run" in text
    grid = write_grid(tmp_path / "grid.toml", small.replace("'3/4']", "'3/4', '1']"))
    code, _, err = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--no-figures")
    assert code == 2 and "rates: error: GRID:" in err and "--merge" in err and "3 configurations" in err
    assert len(json.loads((out / "sweep.json").read_text())["grids"]) == 1
    code, text, _ = sweep(capsys, grid, "--out", out, "--scheduler", "serial", "--merge")
    assert code == 0 and "2 already done, 1 to run in 1 tasks" in text
    found = runs_by_configuration(out)
    assert len(found) == 3 and all(len(runs) == 1 for runs in found.values())
    assert sorted(run[0]["config"]["a"] for run in found.values()) == ["1", "1/2", "3/4"]
    figures = {p.name for p in (out / "figures").iterdir()}
    assert figures == {f"signgd_a{a}{ext}" for a in ("1", "1-2", "3-4") for ext in (".pdf", ".png")}
    assert "\\begin{longtable}" in (out / "table.tex").read_text()  # a table to \\input, not a document


def test_an_occupied_or_foreign_directory_is_refused(tmp_path, capsys):
    grid = write_grid(tmp_path / "grid.toml", GRID)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = sweep(capsys, grid, "--out", foreign, "--scheduler", "serial")
    assert code == 2 and "--out:" in err and "without sweep.json" in err
    code, _, err = sweep(capsys, grid, "--out", tmp_path / "o", "--scheduler", "serial", "--workers", "2")
    assert code == 2 and err.startswith("rates: error: --workers:")


def test_varied_options_become_table_columns_and_distinct_figures(tmp_path, capsys):
    text = ("[grid]\nalgo = 'signgd'\na = '1/2'\neta0 = [1.0, 0.5]\nsteps = 200\ncheckpoints = 10\n"
            "device = 'cpu'\n")
    out = tmp_path / "sweep"
    code, _, _ = sweep(capsys, write_grid(tmp_path / "g.toml", text), "--out", out, "--scheduler", "serial")
    assert code == 0
    header = (out / "table.md").read_text().splitlines()
    assert any(line.startswith("| algorithm | a | eta0 | predicted rate") for line in header)
    assert sorted(p.stem for p in (out / "figures").glob("*.png")) == ["signgd_a1-2_eta00.5", "signgd_a1-2_eta01.0"]


# ------------------------------------------------------------------------------------------ run_tasks


def test_run_tasks_serial_matches_direct_simulation_and_reports_in_order():
    from rates.numeric.data import parse_data
    from rates.numeric.engine import simulate

    tasks = [EngineTask(specs=(RunSpec("signgd", a), ), data="default", data_seed=seed, steps=150, checkpoints=8,
                        device="cpu") for seed, a in ((0, "1/2"), (1, "3/4"), (2, "1"))]
    seen = []
    results = run_tasks(tasks, "serial", on_result=lambda i, trajectory: seen.append(i), limit=2)
    assert seen == [0, 1] and results[2] is None
    direct = simulate([RunSpec("signgd", "3/4", seed=1)], parse_data("default", seed=1), 150, checkpoints=8,
                      device="cpu")
    assert results[1].runs[0].gap.tolist() == direct.runs[0].gap.tolist()  # bit for bit
    assert results[1].runs[0].config.data_seed == 1 and results[1].meta["data"]["spec"] == "default"


def test_bad_input_in_a_worker_comes_back_as_the_same_input_error():
    task = EngineTask(specs=(RunSpec("signgd", "1/2", eta0=-2.0),), data="default", data_seed=0, steps=5)
    failure = _execute_remote(task)  # what a Dask worker returns
    with pytest.raises(InputError) as err:
        _unwrap(failure)
    assert err.value.option == "--eta0" and "got -2.0" in err.value.message
