"""Start-up guards (issues #11 and #12): which heavy libraries a command imports, not how long it takes.

Timings live in benchmarks/startup.py; here each command runs in a fresh process, as a user starts it, and
reports the watched modules found in ``sys.modules`` when it exits. A command must not import what it does
not use: ``rates --help`` none of them, ``rates predict`` no torch/scipy/cvxpy (and, answered from the cache,
no sympy), a warm ``rates run`` no cvxpy and no scipy.optimize (its max margins come from the cache) and, on
the default full-batch CPU path (the fused kernels), neither torch nor sympy (issue #11: ~2.5 s and ~0.6 s).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WATCHED = ("torch", "sympy", "numba", "scipy", "scipy.optimize", "scipy.stats", "cvxpy", "clarabel", "matplotlib",
           "dask", "distributed", "sklearn", "pandas")
PROBE = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write(
    "LOADED " + json.dumps(sorted(m for m in {watched!r} if m in sys.modules)) + "\\n"))
sys.argv = ["rates", *{argv!r}]
runpy.run_module("rates", run_name="__main__")
"""


def rates(*argv: str, cache: Path) -> tuple[str, set]:
    """Run ``rates ARGV`` in a fresh process (this checkout, cache folder ``cache``); stdout and the watched
    modules it had imported at exit."""
    env = {**__import__("os").environ, "RATES_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(watched=WATCHED, argv=list(argv))], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    assert len(loaded) == 1, proc.stderr
    return proc.stdout, set(json.loads(loaded[0][len("LOADED "):]))


def test_help_imports_none_of_the_heavy_libraries(tmp_path):
    out, loaded = rates("--help", cache=tmp_path)
    assert "predict" in out and "run" in out
    assert loaded == set()


def test_predict_imports_sympy_only_to_derive_and_nothing_numeric(tmp_path):
    argv = ("predict", "--algo", "signgd", "--a", "1/2")
    first, loaded_first = rates(*argv, cache=tmp_path)
    assert loaded_first == {"sympy"}  # derived: sympy, and none of the numeric stack
    second, loaded_second = rates(*argv, cache=tmp_path)
    assert second == first and "log t / t^(1/2)" in second
    assert loaded_second == set()  # read back: not even sympy


def _without_timings(path: Path) -> str:
    """The trajectory as canonical JSON text (floats as their shortest repr: equal text, equal bits; NaN too)."""
    trajectory = json.loads(path.read_text())
    for key in ("wall_s", "cpu_s", "call_wall_s", "config_steps_per_s"):
        trajectory["meta"].pop(key)
    return json.dumps(trajectory, sort_keys=True)


def test_warm_run_needs_neither_cvxpy_nor_scipy_optimize_and_writes_the_same_trajectory(tmp_path):
    argv = ("run", "--algo", "signgd", "--a", "1/2", "--steps", "30", "--no-progress", "--out")
    _, loaded_first = rates(*argv, str(tmp_path / "first.json"), cache=tmp_path / "cache")
    # the first run solves gamma (HiGHS) and the Frobenius and spectral references (cvxpy + Clarabel)
    assert {"cvxpy", "scipy.optimize"} <= loaded_first
    _, loaded_second = rates(*argv, str(tmp_path / "second.json"), cache=tmp_path / "cache")
    assert not loaded_second & {"cvxpy", "clarabel", "scipy.optimize", "scipy.stats", "matplotlib", "dask",
                                "distributed", "sklearn", "pandas"}, loaded_second
    assert _without_timings(tmp_path / "second.json") == _without_timings(tmp_path / "first.json")


def test_warm_full_batch_cpu_run_imports_neither_torch_nor_sympy(tmp_path):
    """The default path: full batch, fused kernels, ``--device auto`` on a machine where no GPU device file
    exists (``rates.numeric.engine.gpu_impossible``; with one, auto asks torch for cuda, so only ``--device cpu`` is
    checked there), and ``--device cpu`` everywhere. A mini-batch run may import torch (its batches come from
    torch's generator), so it is not checked."""
    from rates.numeric.engine import gpu_impossible

    cache = tmp_path / "cache"
    argv = ("run", "--algo", "signgd", "--a", "1/2", "--steps", "30", "--no-progress", "--out")
    devices = ("auto", "cpu") if gpu_impossible() else ("cpu",)
    # solves the max margins (torch, cvxpy); on the CPU, as the runs it is compared with (auto picks cuda where a
    # GPU is)
    _, first = rates(*argv, str(tmp_path / "first.json"), *(() if gpu_impossible() else ("--device", "cpu")),
                     cache=cache)
    assert "torch" in first
    for device in devices:
        out, loaded = rates(*argv, str(tmp_path / f"{device}.json"), "--device", device, cache=cache)
        assert "family nsd" in out and "on cpu" in out
        assert not loaded & {"torch", "sympy", "cvxpy", "scipy.optimize"}, (device, loaded)
        assert _without_timings(tmp_path / f"{device}.json") == _without_timings(tmp_path / "first.json")


HEAVY = {"torch", "sympy", "numba", "cvxpy", "clarabel", "matplotlib", "dask", "distributed"}
BAD_INPUT = [
    ("check", "bogus-claim"),
    ("check", "--chain", "bogus"),
    ("homogeneous", "--algo", "bogus"),
    ("homogeneous", "--algo", "gd", "--width", "0"),
    ("homogeneous", "--algo", "adam", "--beta1", "2"),
    ("homogeneous", "--algo", "gd", "--data", "digits:3,3"),
    ("predict", "--algo", "bogus", "--a", "1"),
    ("run", "--algo", "bogus", "--a", "1", "--steps", "10", "--out", "never.json"),
    ("fit", "--algo", "nsd", "--norm", "bogus", "--a", "1", "--steps", "10"),
    ("tightness", "--algo", "bogus", "--a", "1"),
    ("tightness", "--algo", "signsgd", "--a", "1/2"),
    ("tightness", "--algo", "signgd", "--a", "1/2", "--steps", "100"),
    ("run", "--algo", "signgd", "--a", "1", "--steps", "99999999999999999999", "--out", "never.json"),
]


@pytest.mark.parametrize("argv", BAD_INPUT, ids=lambda argv: " ".join(argv[:3]))
def test_bad_input_is_refused_before_the_heavy_libraries_are_imported(argv, tmp_path):
    """A bad claim name waited 26.6 s and bad homogeneous options 28-33 s for torch, sympy and the claim
    families before the one-line refusal: each option's own check now runs first."""
    env = {**__import__("os").environ, "RATES_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(watched=WATCHED, argv=list(argv))], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rates: error: "), proc.stderr
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    assert len(loaded) == 1 and not set(json.loads(loaded[0][len("LOADED "):])) & HEAVY, proc.stderr
