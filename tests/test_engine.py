"""The engine (rates.numeric.engine): reproducibility, batched == alone, recorded quantities, bad input."""

import mpmath as mp
import numpy as np
import pytest
import torch

from rates.errors import InputError
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_device, resolve_spec, run_group, simulate
from rates.numeric.margins import margin_of, max_margin

MIXED = [
    RunSpec("signgd", "1/2"), RunSpec("ngd", "1/3", eta0=0.5), RunSpec("spectral-gd", "1"),
    RunSpec("cd", "2/3"), RunSpec("nsd", "1/2", norm="lp:3"), RunSpec("adam", "2/3", adam_eps=1e-8),
    RunSpec("signsgd", "1/2", batch=8, seed=4), RunSpec("nsgd", "1/2", batch=1, seed=2),
    RunSpec("vr-nsgd", "1/2", batch=4, seed=1), RunSpec("signum", "1/2", batch=16, momentum=0.5, seed=3),
    RunSpec("muon", "1/2"), RunSpec("muon", "1/2", polar="newton-schulz"),
]
ARRAYS = ("t", "gap", "margin", "log_loss", "norm")


@pytest.fixture(scope="module")
def data():
    return parse_data("minibatch")  # n = 64: batches 1..64


def assert_runs_identical(a, b):
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in a.margins:
        np.testing.assert_array_equal(a.margins[name], b.margins[name])


def test_checkpoints_are_unique_log_spaced_and_include_both_ends():
    t = checkpoint_times(100_000, 60)
    assert t[0] == 1 and t[-1] == 100_000 and len(t) <= 60 and np.all(np.diff(t) > 0)
    ratios = t[1:] / t[:-1]
    assert ratios[-10:].max() / ratios[-10:].min() < 1.01  # geometric spacing once t is large
    assert list(checkpoint_times(3, 60)) == [1, 2, 3]


def test_reproducible_bit_for_bit_and_batched_equals_alone(data):
    steps = 300
    batched = simulate(MIXED, data, steps, checkpoints=15, device="cpu")
    again = simulate(MIXED, data, steps, checkpoints=15, device="cpu")
    for i, spec in enumerate(MIXED):
        assert_runs_identical(batched.runs[i], again.runs[i])
        alone = simulate([spec], data, steps, checkpoints=15, device="cpu")
        assert_runs_identical(batched.runs[i], alone.runs[0])
        assert batched.runs[i].config == alone.runs[0].config


def test_seeds_change_mini_batch_runs_only(data):
    out = simulate([RunSpec("signsgd", "1/2", batch=8, seed=s) for s in (0, 1)]
                   + [RunSpec("signgd", "1/2", seed=s) for s in (0, 1)], data, 200, checkpoints=5)
    assert not np.array_equal(out.runs[0].margin, out.runs[1].margin)
    assert np.array_equal(out.runs[2].margin, out.runs[3].margin)


def test_recorded_quantities_match_independent_computations(data):
    steps = 400
    runs = [resolve_spec(RunSpec(algo, "1/2"), data.n) for algo in ("signgd",)]
    H, y = torch.tensor(np.asarray(data.H)), torch.tensor(np.asarray(data.y))
    W, records = run_group(runs, H, y, data.k, steps, checkpoint_times(steps, 10))
    final = records[-1]
    W0 = W[0].numpy()
    for name in ("max", "frobenius", "spectral"):
        assert final[f"margin:{name}"][0] == pytest.approx(margin_of(W0, data, name), rel=1e-12, abs=1e-14)
    assert final["norm"][0] == pytest.approx(np.abs(W0).max(), rel=1e-14)
    with mp.workdps(40):  # L ~ e^-72 here: float64's cross_entropy already returns exactly 0
        logits = (H @ W[0].T).tolist()
        terms = [mp.log(mp.fsum(mp.exp(mp.mpf(z) - mp.mpf(row[c])) for z in row)) for row, c in zip(logits, y.tolist())]
        expected = float(mp.log(mp.fsum(terms) / len(terms)))
    assert final["log_loss"][0] == pytest.approx(expected, rel=1e-10)

    trajectory = simulate([RunSpec("signgd", "1/2")], data, steps, checkpoints=10)
    run = trajectory.runs[0]
    gamma = max_margin(data, "max")
    assert run.gamma["value"] == gamma.gamma and run.gamma["solver"] == gamma.solver
    np.testing.assert_array_equal(run.gap, gamma.gamma - run.margin)
    assert run.margin[-1] == pytest.approx(margin_of(W0, data, "max"), rel=1e-12)
    assert np.all(run.gap >= -1e-9) and run.gap[-1] < run.gap[0]


def test_config_carries_every_spec_field_and_the_resolution(data):
    run = simulate([RunSpec("muon", "0.5", batch=16, seed=7)], data, 20, checkpoints=4).runs[0]
    config = run.config
    assert config.a == "1/2" and config.algo == "muon" and config.norm == "spectral"
    assert config.family == "momentum" and config.momentum == 0.9 and config.batch == 16
    assert config.seed == 7 and config.vr is False and config.polar == "exact" and config.source == "minibatch"
    assert config.dtype == "float64" and config.data == data.name and config.steps == 20


def test_device_resolution():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="--device"):
            resolve_device("cuda")
    with pytest.raises(InputError, match="--device"):
        resolve_device("tpu")


def test_cuda_device_index_is_checked_against_the_gpus_present(monkeypatch):
    """With one GPU (simulated), cuda / cuda:0 resolve and cuda:3 or a malformed name exit via --device."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda") == torch.device("cuda")
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    for bad in ("cuda:3", "cuda:1", "cudax", "cuda:-1"):
        with pytest.raises(InputError, match="--device"):
            resolve_device(bad)


def test_auto_keeps_small_work_on_the_cpu_where_a_gpu_is(monkeypatch):
    """With a GPU present (simulated), ``auto`` sends a call to cuda only from CUDA_MIN_WORK multiply-adds per
    step: the default preset's main-job runs (3 x 5 x 30 per configuration) stay on the fused CPU kernels,
    which outran replayed CUDA graphs by 100x for one configuration on an H100; a 10 x 784 x 2000 set goes to
    cuda from one configuration; an explicit ``cuda`` is obeyed whatever the size."""
    from rates.numeric import engine

    monkeypatch.setattr(engine, "gpu_impossible", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    preset = parse_data("default")
    assert (preset.k, preset.d, preset.n) == (3, 5, 30)
    main_job = [RunSpec("signgd", "1/2"), RunSpec("adam", "2/3"), RunSpec("signsgd", "1/2", batch=10)]
    assert engine.step_work(main_job, [preset]) == 3 * 5 * (30 + 30 + 10)
    assert engine.device_for_work("auto", engine.step_work(main_job, [preset])) == "cpu"
    assert engine.device_for_work("cuda", 450) == torch.device("cuda")
    assert engine.device_for_work("cpu", 10**9) == "cpu"

    class Shape:  # what step_work reads of a dataset
        k, d, n = 10, 784, 2000

    assert engine.step_work([RunSpec("signgd", "1/2")], [Shape]) == 15_680_000
    assert engine.device_for_work("auto", 15_680_000) == torch.device("cuda")
    # the threshold itself: 2222 configurations of the preset stay on the CPU, 2223 go to cuda
    below, above = [RunSpec("signgd", "1/2")] * 2222, [RunSpec("signgd", "1/2")] * 2223
    assert engine.device_for_work("auto", engine.step_work(below, [preset])) == "cpu"
    assert engine.device_for_work("auto", engine.step_work(above, [preset])) == torch.device("cuda")


@pytest.mark.parametrize("spec, steps, option", [
    (RunSpec("signgd", "1/2"), 0, "--steps"),
    (RunSpec("signgd", "3/2"), 10, "--a"),
    (RunSpec("signgd", "0"), 10, "--a"),
    (RunSpec("signgd", "1/0"), 10, "--a"),
    (RunSpec("signgd", "1/2", eta0=-1.0), 10, "--eta0"),
    (RunSpec("signum", "1/2", momentum=1.0), 10, "--momentum"),
    (RunSpec("signsgd", "1/2", batch=7), 10, "--batch"),
    (RunSpec("signsgd", "1/2"), 10, "--batch"),
    (RunSpec("vr-signsgd", "1/2"), 10, "--batch"),
    (RunSpec("adam", "1/2", adam_eps=-1.0), 10, "--adam-eps"),
    (RunSpec("adam", "1/2", adam_beta2=1.0), 10, "--adam-beta2"),
    (RunSpec("nsd", "1/2", norm="schatten:3"), 10, "--norm"),
    (RunSpec("spectral-gd", "1/2", polar="qr"), 10, "--polar"),
    (RunSpec("nope", "1/2"), 10, "--algo"),
])
def test_bad_input_is_refused_before_any_step(data, spec, steps, option):
    with pytest.raises(InputError) as err:
        simulate([spec], data, steps)
    assert err.value.option == option


def test_progress_bar_does_not_change_results(data):
    quiet = simulate([RunSpec("signgd", "1/2")], data, 500, checkpoints=3)
    shown = simulate([RunSpec("signgd", "1/2")], data, 500, checkpoints=3, progress=True)
    assert_runs_identical(quiet.runs[0], shown.runs[0])


def test_folded_full_gradient_path_only_changes_rounding(data, monkeypatch):
    """Small full-batch steepest recipes fold the label row into the gradient product (rates.numeric.losses.
    folded_direction); forcing the general path instead gives the same iterates up to rounding."""
    import rates.numeric.losses
    from rates.numeric.optim.sources import FullGradient

    H, y = torch.tensor(np.asarray(data.H)), torch.tensor(np.asarray(data.y))
    assert FullGradient(H, y, data.k, exact_scale=False).folded
    assert not FullGradient(H, y, data.k, exact_scale=True).folded
    specs = [RunSpec("signgd", "1/2"), RunSpec("ngd", "1/3", eta0=0.5), RunSpec("spectral-gd", "1"),
             RunSpec("cd", "2/3"), RunSpec("nsd", "1/2", norm="lp:3")]
    folded = simulate(specs, data, 300, checkpoints=10, device="cpu", engine="torch")
    monkeypatch.setattr(rates.numeric.losses, "FOLDED_LIMIT", 0)
    assert not FullGradient(H, y, data.k, exact_scale=False).folded
    general = simulate(specs, data, 300, checkpoints=10, device="cpu", engine="torch")
    assert_runs_identical(folded.runs[0], general.runs[0])  # sign descent: the same signs, the same W
    for a, b in zip(folded.runs[1:], general.runs[1:]):
        for name in ARRAYS:
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-12)
