"""Sweep directories that heal: failed cells, damaged files, equal grids spelled differently, refusals that
leave nothing behind, and a Hypothesis suite of damaged stores (every test in tmp_path, scheduler serial)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.app import main
from rates.numeric.trajectory import load

BASE = """
[grid]
algo = "signgd"
a = "1"
steps = 200
checkpoints = 8
device = "cpu"
"""


def sweep(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        main(["sweep", *map(str, args), "--scheduler", "serial", "--no-progress"])
    code = exit_info.value.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


def grid_file(path: Path, extra: str, base: str = BASE) -> Path:
    path.write_text(base + extra, encoding="utf-8")
    return path


def task_files(root: Path) -> list[Path]:
    return sorted((root / "trajectories").glob("task-*.json"))


def configurations_in(root: Path) -> list[str]:
    keys = []
    for path in task_files(root):
        keys += load(path).meta["sweep"]["configurations"]
    return keys


def assert_one_line_refusal(code: int, err: str, option: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rates: error: {option}"), err


# ------------------------------------------------------------------------------------------ failed cells


def test_a_diverging_cell_is_recorded_as_failed_skipped_in_the_table_and_retried_on_request(tmp_path):
    grid = grid_file(tmp_path / "g.toml", "eta0 = [1.0, 1e308]\n")
    out = tmp_path / "sweep"
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    failed = [json.loads(line) for line in (out / "failed.jsonl").read_text().splitlines()]
    assert len(failed) == 1 and "eta0=1e+308" in failed[0]["options"] and "diverged" in failed[0]["message"]
    assert "failed: " in err and "eta0=1e+308" in err
    # the good cell is saved and fitted; the table says which cell is missing and why
    runs = [run for path in task_files(out) for run in load(path).runs]
    assert [run.config.eta0 for run in runs] == [1.0]
    table = (out / "table.md").read_text()
    assert "1 configuration(s) failed and are not in the table" in table and "--retry-failed" in table
    assert len(json.loads((out / "fits.json").read_text())) == 1

    code, stdout, err = sweep(grid, "--out", out)  # a plain rerun: nothing to run, the table again
    assert code in (0, 1), err
    assert "0 to run in 0 tasks" in stdout and "1 failed before and are skipped" in stdout

    code, stdout, err = sweep(grid, "--out", out, "--retry-failed")  # on request: run again (fails again)
    assert code in (0, 1), err
    assert "1 to run in 1 tasks" in stdout
    assert len((out / "failed.jsonl").read_text().splitlines()) == 1  # the old record replaced, not doubled


# ------------------------------------------------------------------------------------------ damaged files


def test_a_truncated_task_file_listed_in_the_index_is_moved_aside_and_rerun(tmp_path):
    grid = grid_file(tmp_path / "g.toml", "seed = [0, 1]\n")
    out = tmp_path / "sweep"
    assert sweep(grid, "--out", out)[0] in (0, 1)
    before = configurations_in(out)
    victim = task_files(out)[0]
    text = victim.read_text()
    victim.write_text(text[: len(text) // 2])
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    assert "was damaged" in stdout and "1 to run in 1 tasks" in stdout
    assert len(list((out / "damaged").iterdir())) == 1
    assert sorted(configurations_in(out)) == sorted(before)  # each configuration once, every file complete


def test_a_task_file_edited_in_place_with_its_length_kept_is_detected(tmp_path):
    grid = grid_file(tmp_path / "g.toml", "")
    out = tmp_path / "sweep"
    assert sweep(grid, "--out", out)[0] in (0, 1)
    victim = task_files(out)[0]
    text = victim.read_text()
    edited = text.replace('"eta0": 1.0', '"eta0": 2.0', 1)  # still a valid trajectory, of another run
    assert edited != text and len(edited) == len(text)
    victim.write_text(edited)
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    assert "its bytes differ from the sha256" in stdout


@pytest.mark.parametrize("damage, option, needle", [
    (lambda out: (out / "sweep.json").write_text(json.dumps({"schema": "rates.sweep/1", "grids": []})),
     "--out", "grids"),
    (lambda out: ((out / "index.jsonl").unlink(), (out / "index.jsonl").mkdir()), "--out", "is not a file"),
])
def test_a_damaged_manifest_or_index_is_refused_in_one_line(tmp_path, damage, option, needle):
    grid = grid_file(tmp_path / "g.toml", "")
    out = tmp_path / "sweep"
    assert sweep(grid, "--out", out)[0] in (0, 1)
    damage(out)
    code, _, err = sweep(grid, "--out", out)
    assert_one_line_refusal(code, err, option)
    assert needle in err


def test_an_index_line_without_configurations_is_rebuilt_from_the_file(tmp_path):
    grid = grid_file(tmp_path / "g.toml", "")
    out = tmp_path / "sweep"
    assert sweep(grid, "--out", out)[0] in (0, 1)
    entry = json.loads((out / "index.jsonl").read_text().splitlines()[0])
    (out / "index.jsonl").write_text(json.dumps({**entry, "configurations": None}) + "\n")
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    assert "1 already done, 0 to run" in stdout  # the file itself says which configuration it holds


def test_every_repair_of_the_store_is_noted_once(tmp_path):
    """A garbage line in index.jsonl or failed.jsonl was skipped without a word; now each repair is said (and
    done: the line is removed, so the next run has nothing to say), as is a task file recorded afresh."""
    grid = grid_file(tmp_path / "g.toml", "eta0 = [1.0, 1e308]\n")
    out = tmp_path / "sweep"
    assert sweep(grid, "--out", out)[0] in (0, 1)
    index = (out / "index.jsonl").read_text()
    with open(out / "index.jsonl", "a") as handle:
        handle.write("garbage {\n")
    with open(out / "failed.jsonl", "a") as handle:
        handle.write('{"no": "configuration"}\n')
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    notes = [line for line in stdout.splitlines() if line.startswith("note: ")]
    assert notes == ["note: index.jsonl: removed 1 line(s) that are not task records (line 2: 'garbage {'); the "
                     "task files are the truth, so nothing else is lost",
                     "note: failed.jsonl: removed 1 line(s) that are not failure records (line 2: "
                     "'{\"no\": \"configuration\"}'); the task files are the truth, so nothing else is lost"], stdout
    assert (out / "index.jsonl").read_text() == index and "1 already done, 0 to run" in stdout
    (out / "index.jsonl").write_text("")  # a run stopped between writing a task file and recording it
    code, stdout, err = sweep(grid, "--out", out)
    assert code in (0, 1), err
    [note] = [line for line in stdout.splitlines() if line.startswith("note: ")]
    assert note.startswith("note: trajectories/task-") and "was not in index.jsonl" in note and "recorded now" in note
    code, stdout, err = sweep(grid, "--out", out)
    assert not [line for line in stdout.splitlines() if line.startswith("note: ")], stdout


# ------------------------------------------------------------------------------------------ one grid, two spellings


def test_case_and_relative_paths_do_not_make_another_grid(tmp_path, monkeypatch):
    rows = ["1.0,0.1,0", "0.9,0.2,0", "-1,0.3,1", "-0.8,-0.1,1", "0.1,2,2", "0.2,1.8,2"]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    base = BASE.replace('algo = "signgd"', "")
    monkeypatch.chdir(tmp_path)
    first = grid_file(tmp_path / "a.toml", 'algo = "SignGD"\ndata = "data.csv"\n', base)
    second = grid_file(tmp_path / "b.toml", f'algo = "signgd"\ndata = {json.dumps(str(tmp_path / "data.csv"))}\n',
                       base)
    out = tmp_path / "sweep"
    assert sweep(first, "--out", out)[0] in (0, 1)
    code, stdout, err = sweep(second, "--out", out)  # no --merge needed: the same configuration
    assert code in (0, 1), err
    assert "1 already done, 0 to run" in stdout
    code, stdout, err = sweep(second, "--out", out, "--merge")
    assert code in (0, 1) and "0 to run" in stdout
    assert len(configurations_in(out)) == 1


# ------------------------------------------------------------------------------------------ nothing left behind


def test_an_unknown_scheduler_leaves_no_sweep_directory(tmp_path):
    grid = grid_file(tmp_path / "g.toml", "")
    out = tmp_path / "sweep"
    out_error = io.StringIO()
    with contextlib.redirect_stderr(out_error), contextlib.redirect_stdout(io.StringIO()), \
            pytest.raises(SystemExit) as exit_info:
        main(["sweep", str(grid), "--out", str(out), "--scheduler", "bogus", "--no-progress"])
    assert_one_line_refusal(exit_info.value.code, out_error.getvalue(), "--scheduler")
    assert not out.exists()


def test_merge_removes_the_figures_of_the_earlier_table(tmp_path):
    out = tmp_path / "sweep"
    assert sweep(grid_file(tmp_path / "a.toml", "eta0 = 1.0\n"), "--out", out)[0] in (0, 1)
    first = {p.name for p in (out / "figures").iterdir()}
    code, _, err = sweep(grid_file(tmp_path / "b.toml", "eta0 = 0.5\n"), "--out", out, "--merge")
    assert code in (0, 1), err
    now = {p.name for p in (out / "figures").iterdir()}
    fits = json.loads((out / "fits.json").read_text())
    assert len(fits) == 2 and len(now) == 2 * len(fits)  # a png and a pdf per configuration, nothing else
    assert first - now == first  # the eta0-less names of the first table are gone


def test_a_grid_of_a_trillion_steps_is_announced_before_any_work(tmp_path, monkeypatch):
    from rates.numeric import duration

    # the recipe's cost on this machine comes from a probe (here given: 2 us per step, at load 0), not from
    # the torch engine's constants
    monkeypatch.setattr(duration, "_probed", {})
    monkeypatch.setattr(duration, "machine_load", lambda: 0.0)
    monkeypatch.setattr(duration, "probe_recipe", lambda *args: (2e-6, True))
    grid = grid_file(tmp_path / "g.toml", "", BASE.replace("steps = 200", "steps = 1000000000000"))
    code, stdout, err = sweep(grid, "--out", tmp_path / "sweep", "--max-tasks", "0")
    assert code == 0, err
    assert "1 to run" in stdout and not list((tmp_path / "sweep").glob("trajectories/*"))
    # one task in this process (serial): 10^12 steps at 2 us, plus the data draw's set-up
    expected = (2e-6 * 10**12 + duration.DRAW_SETUP_S) / 3600
    assert "note: this request is estimated at 1 run(s) x 1000000000000 steps: about" in err
    assert f"and {expected:.1f} h" in err, (err, expected)


# ------------------------------------------------------------------------------------------ Hypothesis


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("finished")
    grid = grid_file(root / "g.toml", "eta0 = [1.0, 1e308]\nseed = [0, 1]\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RATES_CACHE_DIR", str(root / "cache"))
        assert sweep(grid, "--out", root / "sweep")[0] in (0, 1)
    return grid, root / "sweep"


FILES = st.sampled_from(["index.jsonl", "failed.jsonl", "task", "sweep.json"])


@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(target=FILES, cut=st.floats(0.0, 1.0), junk=st.binary(max_size=40))
def test_damaged_sweep_stores_heal_or_are_refused_in_one_line(finished_sweep, tmp_path_factory, target, cut, junk):
    grid, source = finished_sweep
    out = tmp_path_factory.mktemp("copy") / "sweep"
    shutil.copytree(source, out)
    path = task_files(out)[0] if target == "task" else out / target
    data = path.read_bytes()
    path.write_bytes(data[: int(cut * len(data))] + junk)
    code, stdout, err = sweep(grid, "--out", out)
    assert "Traceback" not in err and code in (0, 1, 2), (code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("rates: error: --out"), err
        assert target == "sweep.json"  # only a damaged manifest cannot be rebuilt from the task files
        return
    # healed: every finite configuration in exactly one complete file, the diverged ones recorded as failed
    keys = configurations_in(out)
    assert len(keys) == len(set(keys)) == 2
    assert (out / "table.md").exists()


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.one_of(
    st.integers(1, 200_000).map(lambda depth: "[" * depth),
    st.integers(1, 50_000).map(lambda depth: '{"runs": ' + "[" * depth + "]" * depth + "}"),
    st.text(max_size=60),
))
def test_hostile_trajectory_files_are_refused_by_fit_in_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("traj") / "t.json"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        main(["fit", "--from", str(path)])
    assert_one_line_refusal(exit_info.value.code, err.getvalue(), "--from")
    assert os.listdir(path.parent) == ["t.json"]
