"""benchmarks/engine_vs_numpy.py: the printed rates count the configurations actually run."""

import importlib.util
from pathlib import Path

import torch

from rates.numeric.data import parse_data

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "engine_vs_numpy.py"
_SPEC = importlib.util.spec_from_file_location("engine_vs_numpy", _PATH)
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_R_configurations_are_R_runs_on_both_sides(monkeypatch):
    """R = 45 > the 40 distinct (a, eta0) pairs: both sides must still advance 45 configurations."""
    assert len(bench.configurations(45)) == 45 and len(set(bench.configurations(40))) == 40
    engine_runs, numpy_calls = [], []
    real_run_group, real_numpy = bench.run_group, bench.numpy_signgd
    monkeypatch.setattr(bench, "run_group",
                        lambda runs, *args: engine_runs.append(len(runs)) or real_run_group(runs, *args))
    monkeypatch.setattr(bench, "numpy_signgd", lambda *args: numpy_calls.append(1) or real_numpy(*args))
    result = bench.measure(45, steps=3, repeats=1, device=torch.device("cpu"), data=parse_data("default"))
    assert engine_runs == [45] and len(numpy_calls) == 45 and result["R"] == 45
    assert result["difference"] < 1e-14  # the engine and the NumPy loop end at the same W


def test_engine_on_cuda_is_timed_by_the_wall_clock():
    """GPU kernels are not CPU time of this process: a cuda engine is timed in wall seconds."""
    import time

    assert bench.engine_clock_for(torch.device("cuda")) is time.perf_counter
    assert bench.engine_clock_for(torch.device("cpu")) is time.process_time


def test_jax_peer_is_skipped_with_a_message_where_jax_is_absent(capsys):
    """The JAX peer is an optional benchmark: without JAX it says so and runs nothing (never run with JAX here)."""
    import pytest

    if importlib.util.find_spec("jax") is not None:
        pytest.skip("jax is installed: the peer would run, which tests never do")
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "jax_peer.py"
    spec = importlib.util.spec_from_file_location("jax_peer", path)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    assert peer.main([]) == {}
    assert "jax is not installed here: the JAX peer benchmark is skipped" in capsys.readouterr().out


def _size_scaling():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "size_scaling.py"
    spec = importlib.util.spec_from_file_location("size_scaling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_size_scaling_runs_R_distinct_configurations_and_its_limit_counts_both_products(monkeypatch):
    """benchmarks/size_scaling.py: 64 configurations are 64 distinct (eta0, a) pairs, all advanced by one engine
    call; the GEMM limit's GFLOP/s equal its configuration-steps per second times 4 k d n (two products of
    2 k d n flops)."""
    import numpy as np

    sizes = _size_scaling()
    pairs = sizes.pairs_of(64)
    assert len(pairs) == 64 and len(set(pairs)) == 64
    seen = []
    real = sizes.run_group
    monkeypatch.setattr(sizes, "run_group", lambda runs, *args: seen.append(len(runs)) or real(runs, *args))
    H, y = sizes.clouds(3, 5, 30)
    W = sizes.engine_program(H, y, 3, pairs)(4)
    assert seen == [64] and W.shape == (64, 3, 5) and np.isfinite(W).all()
    limit, gflops = sizes.gemm_limit(3, 20, 50, 2, seconds=0.05)
    assert np.isclose(gflops, limit * 4 * 3 * 20 * 50 / 1e9)
