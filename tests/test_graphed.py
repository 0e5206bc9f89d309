"""The CUDA-graph stepper (rates.numeric.graphed): which recipes it records, and that recording changes nothing.

On any machine: the step with a device-side step index (what the recorded graphs execute) against the
engine's ordinary integer-index step, on the CPU, for every recipe the stepper records: 1e-13 relative
after 1,500 steps (the only difference is ``eta_t`` computed per step instead of from a table).
On a machine with cuda: the graphed engine against the CPU fused engine, 1e-12 relative after 2,000
steps, checkpoints included, and a recipe it cannot record falls back to the eager torch path.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.numeric.data import gaussian
from rates.numeric.engine import DTYPE, RunSpec, _hyper, checkpoint_times, resolve_engine, resolve_spec, run_group
from rates.numeric.graphed import graphable, worth_recording
from rates.numeric.optim.compose import build

RECORDED = {
    "signgd": RunSpec("signgd", "1/2"),
    "ngd": RunSpec("ngd", "1/2", eta0=0.5),
    "cd": RunSpec("cd", "2/3"),
    "lp3": RunSpec("nsd", "1/2", norm="lp:3"),
    "spectral-ns": RunSpec("spectral-gd", "1/2", polar="newton-schulz"),
    "signum": RunSpec("signum", "1/2", momentum=0.9),
    "momentum-ngd": RunSpec("momentum-ngd", "3/4", momentum=0.5),
    "adam": RunSpec("adam", "2/3"),
    "adam-eps": RunSpec("adam", "1/2", adam_eps=1e-8),
}
EAGER_ONLY = {
    "spectral": RunSpec("spectral-gd", "1/2"),
    "schatten3": RunSpec("nsd", "1/2", norm="schatten:3"),
    "signsgd": RunSpec("signsgd", "1/2", batch=2, seed=1),
    "vr-nsgd": RunSpec("vr-nsgd", "1/2", batch=2, seed=2),
}


def problem():
    ds = gaussian(3, 4, 2, 0.5, 1)  # test_fused.py's "gauss-k3-d4": every recorded recipe well-conditioned
    return ds, torch.as_tensor(np.asarray(ds.H), dtype=DTYPE), torch.as_tensor(np.asarray(ds.y))


@pytest.mark.parametrize("name", sorted(RECORDED) + sorted(EAGER_ONLY))
def test_graphable_is_the_full_batch_host_free_recipes(name):
    ds, _, _ = problem()
    assert graphable(resolve_spec((RECORDED | EAGER_ONLY)[name], ds.n).recipe) == (name in RECORDED)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_device_step_index_matches_integer_index(name):
    ds, H, y = problem()
    run = resolve_spec(RECORDED[name], ds.n)
    results = []
    for as_tensor in (False, True):
        optimizer = build(run.recipe, H, y, ds.k, _hyper([run], H.device))
        W = torch.zeros((1, ds.k, ds.d), dtype=DTYPE)
        state = optimizer.init(W)
        t_dev = torch.zeros((), dtype=DTYPE)
        with torch.inference_mode():
            for t in range(1500):
                W, state = optimizer.step(W, state, t_dev if as_tensor else t)
                t_dev.add_(1.0)
        results.append(W.clone())
    integer, device = results
    scale = integer.abs().max().item()
    assert scale > 1.0  # the run moved
    assert (device - integer).abs().max().item() <= 1e-13 * scale


def test_graph_engine_needs_cuda():
    with pytest.raises(InputError, match="engine"):
        resolve_engine("graph", torch.device("cpu"))


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a cuda device")


def test_auto_records_small_groups_only():
    assert worth_recording(1, 3, 30) and worth_recording(4096, 4, 32)
    assert not worth_recording(65536, 3, 30)


# SVD directions are left out: cuSOLVER and LAPACK round the near-zero singular value of these k <= d
# gradients differently, which the Schatten-3 weights amplify (an eager-path property, not the graph's).
@needs_cuda
@pytest.mark.parametrize("name", sorted(RECORDED) + ["signsgd", "vr-nsgd", "spectral"])
def test_graphed_engine_matches_cpu_fused_engine(name):
    ds, H, y = problem()
    runs = [resolve_spec(RECORDED.get(name) or EAGER_ONLY[name], ds.n)]
    steps, times = 2000, checkpoint_times(2000, 12)
    W_cpu, rec_cpu = run_group(runs, H, y, ds.k, steps, times, engine="auto")
    W_gpu, rec_gpu = run_group(runs, H.cuda(), y.cuda(), ds.k, steps, times, engine="graph")
    W_gpu = W_gpu.cpu()
    scale = W_cpu.abs().max().item()
    assert (W_gpu - W_cpu).abs().max().item() <= 1e-12 * scale
    assert len(rec_gpu) == len(rec_cpu) == len(times)
    for a, b in zip(rec_cpu, rec_gpu):
        np.testing.assert_allclose(b["W"], a["W"], rtol=0, atol=1e-12 * max(1.0, np.abs(a["W"]).max()))


def _leaves(state) -> list:
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, (tuple, list)):
        return [leaf for part in state for leaf in _leaves(part)]
    return []


def test_every_recordable_registered_optimiser_keeps_its_state_shapes():
    """Replaying recorded steps copies each step's state into the buffers the graph reads
    (rates.numeric.graphed._copy_into), so a state must keep its shapes from one step to the next. Checked on
    the CPU for every registered name whose recipe is recorded (and Adam with eps > 0): after three steps with
    a device-side step index the state has the initial state's structure and shapes, and copying it into the
    initial buffers makes them equal. (Momentum and Adam once started from a per-run log-scale and moved to
    per-row ones, which the copy refuses.)"""
    from rates.numeric.algorithms import ALGORITHMS
    from rates.numeric.graphed import _copy_into

    ds, H, y = problem()
    specs = [RunSpec(name, "1/2", norm="lp:3" if composition.norm is None else None)
             for name, composition in ALGORITHMS.items() if not (composition.stochastic or composition.vr)]
    runs = [resolve_spec(spec, ds.n) for spec in specs + [RunSpec("adam", "1/2", adam_eps=1e-8)]]
    recorded = [run for run in runs if graphable(run.recipe)]
    assert {run.spec.algo for run in recorded} >= {"signgd", "signum", "adam", "momentum-ngd", "cd", "ngd"}
    for run in recorded:
        optimizer = build(run.recipe, H, y, ds.k, _hyper([run], H.device))
        W = torch.zeros((1, ds.k, ds.d), dtype=DTYPE)
        static = optimizer.init(W)
        state, t = static, torch.zeros((), dtype=DTYPE)
        for _ in range(3):
            _, state = optimizer.step(W, state, t)
            t.add_(1.0)
        assert [leaf.shape for leaf in _leaves(state)] == [leaf.shape for leaf in _leaves(static)], run.spec.algo
        _copy_into(static, state)
        assert all(torch.equal(a, b) for a, b in zip(_leaves(static), _leaves(state))), run.spec.algo
