"""Wide data (d in the thousands) and badly scaled features in the max-margin solver.

The constraint matrix is checked against its dense definition, a wide `rates run` against a measured memory
ceiling in a child process, the memory estimate against a refusal, and a feature scaled to 1e10 against the
separable verdict of an independent scale-free test (the same data with that feature at its original scale).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_invoke import invoke

from rates import budget
from rates.errors import NotSeparableError, SolverError
from rates.numeric import margins
from rates.numeric.data import gaussian

ROOT = Path(__file__).resolve().parents[1]


def wide_npz(path: Path, d: int, n: int = 60, k: int = 3) -> Path:
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(k), n // k)
    H = rng.normal(size=(k, d))[y] + 0.3 * rng.normal(size=(n, d))
    np.savez(path, H=H, y=y)
    return path


def test_sparse_constraint_matrix_is_the_dense_definition():
    rng = np.random.default_rng(3)
    H = rng.normal(size=(7, 4))
    H[2, 1] = 0.0  # an explicit zero feature stays a zero entry
    y = np.array([0, 1, 2, 0, 1, 2, 1])
    k = 3
    rows = []
    for i in range(7):
        for c in range(k):
            if c != y[i]:
                A = np.zeros((k, 4))
                A[y[i]] += H[i]
                A[c] -= H[i]
                rows.append(A.reshape(-1))
    M = margins.constraint_matrix(H, y, k)
    assert M.shape == (14, 12)
    np.testing.assert_array_equal(M.toarray(), np.array(rows))
    assert M.nnz == 2 * 4 * 14 - 4  # sample 2's zero feature: two rows, two blocks each, not stored


def test_wide_run_stays_within_its_memory_ceiling(tmp_path):
    """k = 3, n = 60, d = 3000 (k d = 9000). The dense LPs peaked at 1.93 GB resident already at d = 2000 and grow
    like (k d)^2 (~4.3 GB here); the sparse ones peak at 0.57 GB for this run alone (/usr/bin/time -v), and up
    to ~1.1 GB were seen at d = 2000 when the child ran inside the whole suite (cause not pinned down), hence
    a 2 GB ceiling: it still fails the dense matrices by a factor of two. The child reports its own peak."""
    data = wide_npz(tmp_path / "wide.npz", d=3000)
    out = tmp_path / "run.json"
    # numba's first compile of the kernels (a fresh clone) peaks at ~0.5 GB of LLVM memory by itself, which is
    # not what this test measures: a one-configuration run on small data compiles the same specialisation first
    warm = subprocess.run([sys.executable, "-m", "rates", "run", "--algo", "signgd", "--a", "1", "--steps", "2",
                           "--out", str(tmp_path / "warm.json"), "--no-progress"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert warm.returncode == 0, warm.stderr
    script = (
        "import resource, sys\n"
        "from cli.app import main\n"
        "try:\n"
        f"    main(['run', '--algo', 'signgd', '--a', '1', '--steps', '50', '--data', {str(data)!r}, "
        f"'--out', {str(out)!r}, '--no-progress'])\n"
        "except SystemExit as exit_:\n"
        "    code = exit_.code or 0\n"
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 'CODE', code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = [part for part in proc.stdout.splitlines() if part.startswith("PEAK_KB")][-1].split()
    peak_kb, code = int(line[1]), int(line[3])
    assert code == 0, proc.stderr
    assert peak_kb < 2_000_000, f"peak resident {peak_kb / 1e6:.2f} GB"
    run = json.loads(out.read_text())["runs"][0]
    # gamma is certified by the solver's two bounds; check the W it returns independently on the raw data
    result = margins.max_margin(margins_probe(data), "max")
    assert run["gamma"]["value"] == pytest.approx(result.gamma, rel=1e-12)
    H, y = np.load(data)["H"], np.load(data)["y"]
    assert np.abs(result.W).max() == pytest.approx(1.0)
    assert margin_of_array(result.W, H, y) == pytest.approx(result.gamma, rel=1e-9)

def margins_probe(path: Path):
    from rates.numeric.data import load_file

    return load_file(path)


def test_a_program_that_cannot_fit_is_refused_in_one_line_before_solving(tmp_path, monkeypatch):
    data = wide_npz(tmp_path / "wide.npz", d=500)
    monkeypatch.setattr(budget, "BASE_BYTES", 0)  # so that only the program, not the interpreter, decides
    need = budget.estimate_max_margin_bytes(60, 3, 500, semidefinite=False, conic=False)
    monkeypatch.setattr(budget, "available_memory", lambda: int(need))  # half of it may be used: not enough
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--steps", "10", "--data", str(data),
                           "--out", str(tmp_path / "run.json"), "--no-progress"])
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rates: error: --data: the max max-margin program"), err
    assert "d = 500" in lines[0]
    assert not (tmp_path / "run.json").exists()
    monkeypatch.setattr(budget, "available_memory", lambda: int(3 * need))
    code, _, err = invoke(["run", "--algo", "signgd", "--a", "1", "--steps", "10", "--data", str(data),
                           "--out", str(tmp_path / "run.json"), "--no-progress"])
    assert code == 0, err


def test_spectral_norm_on_wide_data_counts_the_dense_semidefinite_cone():
    lp = budget.estimate_max_margin_bytes(60, 3, 20000, semidefinite=False, conic=False)
    sdp = budget.estimate_max_margin_bytes(60, 3, 20000, semidefinite=True, conic=True)
    assert sdp - lp >= budget.SDP_DENSE_COPIES * 8 * 20003 ** 2  # at least the (k + d)^2 matrices
    with pytest.raises(Exception) as info:
        budget.check_max_margin(60, 3, 20000, "spectral", semidefinite=True, conic=True, available=8 * 2**30)
    assert "LP (max, sum)" in str(info.value)


def test_a_feature_scaled_to_1e10_is_never_called_non_separable():
    """The same data with feature 0 at its own scale are separable (gamma > 0 certified), and separability does
    not change when one feature is multiplied by a constant (W's column divided by it)."""
    ds = gaussian(3, 5, 10, seed=0)
    plain = margins.max_margin(ds, "max")
    assert plain.gamma > 0
    H = ds.H.copy()
    H[:, 0] *= 1e10

    class Scaled:
        pass

    scaled = Scaled()
    scaled.H, scaled.y, scaled.k = H, ds.y, ds.k
    try:
        result = margins.max_margin(scaled, "max")
    except NotSeparableError as err:  # the defect: a separable data set refused as non-separable
        pytest.fail(f"separable data called non-separable: {err}")
    except SolverError as err:
        text = str(err)
        assert "could not be certified" in text and "separable" in text and "not linearly separable" not in text
        assert "feature scales span" in text
        # the bracket it reports is a valid one: its upper end is at least the margin that a W built from the
        # unscaled solution achieves on the scaled data (column 0 divided by 1e10, then renormalised)
        lower, upper = (float(v) for v in re.search(r"lower bound (\S+) and the dual upper bound (\S+)", text).groups())
        W = plain.W.copy()
        W[:, 0] /= 1e10
        achieved = margin_of_array(W / np.abs(W).max(), H, ds.y)
        assert 0 < lower <= upper and achieved <= upper * (1 + 1e-9)
    else:
        assert result.gamma > 0 and result.accuracy <= margins.TOLERANCE_FAIL


def margin_of_array(W: np.ndarray, H: np.ndarray, y: np.ndarray) -> float:
    logits = H @ W.T
    correct = logits[np.arange(len(y)), y].copy()
    logits[np.arange(len(y)), y] = -np.inf
    return float(np.min(correct - logits.max(axis=1)))


def test_non_separable_data_stay_non_separable():
    """Two identical points with different labels: no W separates them, whatever the scale."""
    H = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1e10], [3.0, 1.0]])
    y = np.array([0, 1, 2, 0])

    class Data:
        pass

    data = Data()
    data.H, data.y, data.k = H, y, 3
    with pytest.raises(NotSeparableError, match="not linearly separable"):
        margins.max_margin(data, "max")
