"""A run whose iterate overflows (eta0 = 1e308) ends as a diverged run, in every registered algorithm, every norm
kind and both CPU engines: NaN measures from its first overflow on, never an SVD error. ``rates run`` refuses it
naming --eta0; a sweep writes the table of its good cells, lists the bad ones in failed.jsonl and reruns
cleanly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_invoke import invoke

from rates.numeric.algorithms import ALGORITHMS
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate

NORMS = ("max", "sum", "frobenius", "spectral", "nuclear", "lp:3")


def _spec(algo: str, **options) -> RunSpec:
    if "sgd" in algo or algo.startswith("vr-"):  # stochastic and variance-reduced: mini-batches of 5 of n = 30
        options.setdefault("batch", 5)
    if algo == "nsd":
        options.setdefault("norm", "spectral")
    return RunSpec(algo=algo, a="1/2", eta0=1e308, **options)


def _assert_diverged(trajectory) -> None:
    run = trajectory.runs[0]
    bad = ~(np.isfinite(run.gap) & np.isfinite(run.margin))
    assert bad.any(), run.gap
    assert int(run.t[int(np.argmax(bad))]) <= 20  # eta_1 ~ 1e308 overflows within the first steps
    assert not np.isfinite(run.gap[-1])  # and the run does not end as a finite one


@pytest.mark.parametrize("engine", ["auto", "torch"])
@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_algorithm_at_eta0_1e308_ends_diverged_not_in_an_exception(algo, engine):
    data = parse_data("default", seed=0)
    with np.errstate(all="ignore"):
        _assert_diverged(simulate([_spec(algo)], data, 40, checkpoints=5, device="cpu", engine=engine))


@pytest.mark.parametrize("engine", ["auto", "torch"])
@pytest.mark.parametrize("norm", NORMS)
def test_every_norm_kind_at_eta0_1e308_ends_diverged(norm, engine):
    """The measures (norm values of W, Schatten norms by SVD) and the steepest directions of each kind."""
    data = parse_data("default", seed=0)
    with np.errstate(all="ignore"):
        _assert_diverged(simulate([_spec("nsd", norm=norm)], data, 40, checkpoints=5, device="cpu", engine=engine))
        _assert_diverged(simulate([_spec("muon", polar="newton-schulz")], data, 40, checkpoints=5, device="cpu",
                                  engine=engine))


def test_rates_run_refuses_a_diverged_ngd_run_naming_eta0(tmp_path):
    code, _, err = invoke(["run", "--algo", "ngd", "--a", "1/2", "--eta0", "1e308", "--steps", "50",
                           "--device", "cpu", "--out", str(tmp_path / "r.json"), "--no-progress"])
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith("rates: error: --eta0: the run diverged"), err
    assert not (tmp_path / "r.json").exists()


def test_a_grid_with_diverging_cells_writes_the_good_cells_and_reruns_cleanly(tmp_path):
    grid = tmp_path / "dv.toml"
    grid.write_text('[grid]\nalgo = ["signgd", "ngd"]\na = "1/2"\nsteps = 3000\neta0 = [1.0, 1e308]\n'
                    'checkpoints = 12\ndevice = "cpu"\n', encoding="utf-8")
    out = tmp_path / "dv"
    for attempt in range(2):
        code, stdout, err = invoke(["sweep", str(grid), "--out", str(out), "--scheduler", "serial", "--no-progress",
                                    "--no-figures"])
        assert code == 0, err
        failed = [json.loads(line) for line in (out / "failed.jsonl").read_text().splitlines()]
        assert sorted(("algo=ngd" in f["options"], f["message"].split(":")[0]) for f in failed) == [
            (False, "the run diverged"), (True, "the run diverged")]
        assert all("eta0=1e+308" in f["options"] and " at t = " in f["message"] for f in failed)
        rows = [line for line in (out / "table.md").read_text().splitlines() if line.startswith("| ")][1:]
        assert [row.split(" | ")[0:3] for row in rows] == [["| signgd", "1/2", "1.0"], ["| ngd", "1/2", "1.0"]]
        assert ("4 configurations: 0 already done, 4 to run" if attempt == 0 else "2 already done, 0 to run") in stdout
