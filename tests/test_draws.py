"""Draws of a dataset advanced in one engine call (rates.numeric.engine.simulate_draws, per-run data in the kernels):
each run's iterates are bit for bit those of the run alone, and the recorded timing is the whole call's."""

import json
import time

import numpy as np
import pytest

import rates.numeric.fused.group as group
import rates.numeric.fused.kernels as kernels
from cli.app import main
from rates.numeric.data import gaussian, parse_data
from rates.numeric.engine import RunSpec, checkpoint_times, resolve_spec, run_group, simulate, simulate_draws

SHAPE = dict(k=3, d=4, per_class=5)  # n = 15: batches of 5


def draws(count: int):
    return [gaussian(**SHAPE, seed=seed) for seed in range(count)]


# recipes whose step reads the samples differently: plain SignGD (direction in the block loop), NGD (the
# per-configuration direction), Adam, reshuffled mini-batches with momentum, and VR (one dataset per call)
RECIPES = {
    "signgd": dict(algo="signgd", a="1/3", eta0=2.0),
    "ngd": dict(algo="ngd", a="1/2"),
    "adam": dict(algo="adam", a="2/3", eta0=0.1),
    "signum": dict(algo="signum", a="1/2", batch=5, momentum=0.5, seed=3),
    "vr-nsgd": dict(algo="vr-nsgd", a="1/2", batch=5, seed=4),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_draw_in_a_batch_gives_the_bits_of_the_draw_alone(name, monkeypatch):
    """2 LANES + 3 draws in one group on two threads (each thread a 64-lane block whose lanes read their own
    samples, then one or two single-lane runs; fewer draws would be split into single runs, which cost less
    than half-empty blocks): every run's final W and every checkpoint record equal those of the draw advanced
    alone on its own data, bit for bit; and the draws really differ (no lane read another's data)."""
    monkeypatch.setattr(group, "available_cores", lambda: 2)
    assert [s.stop - s.start for s in group._split(2 * kernels.LANES + 3, 2, kernels.MIN_FILLED_OWN_LANES)] == [66, 65]
    datasets = draws(2 * kernels.LANES + 3)
    spec = RunSpec(**RECIPES[name])
    runs = [resolve_spec(spec, datasets[0].n)] * len(datasets)
    steps, times = 300, checkpoint_times(300, 6)
    H = np.stack([data.H for data in datasets])
    y = np.stack([data.y for data in datasets])
    W, records = run_group(runs, H, y, SHAPE["k"], steps, times)
    assert W.shape == (len(datasets), SHAPE["k"], SHAPE["d"])
    for r in (0, 1, 30, kernels.LANES - 1, kernels.LANES, kernels.LANES + 2, 2 * kernels.LANES + 2):
        alone_W, alone_records = run_group(runs[:1], datasets[r].H, datasets[r].y, SHAPE["k"], steps, times)
        np.testing.assert_array_equal(W[r], alone_W[0])
        for row, alone_row in zip(records, alone_records):
            for key, value in alone_row.items():
                np.testing.assert_array_equal(row[key][r], value[0], err_msg=f"{name} run {r} {key}")
    assert len({w.tobytes() for w in W}) == len(datasets)


def test_per_run_data_in_the_kernel_group_is_independent_of_threads_and_segments(monkeypatch):
    """The group with per-run data on one thread in one call equals two threads in 37-step chunks."""
    datasets = draws(kernels.LANES + kernels.MIN_FILLED_OWN_LANES)  # two 64-lane blocks, the second padded
    runs = [resolve_spec(RunSpec("signgd", "1/4", eta0=1.5), datasets[0].n)] * len(datasets)
    H, y = np.stack([d.H for d in datasets]), np.stack([d.y for d in datasets])
    whole = group.FusedGroup(runs, H, y, SHAPE["k"], threads=1)
    whole.advance_to(400)
    monkeypatch.setattr(group, "CHUNK_CONFIG_STEPS", len(runs) * 37)
    pieces = group.FusedGroup(runs, H, y, SHAPE["k"], threads=2)
    for t in (1, 5, 38, 200, 400):
        pieces.advance_to(t)
    np.testing.assert_array_equal(pieces.W, whole.W)


def test_vr_group_refuses_per_run_data_in_one_kernel_call():
    datasets = draws(2)
    runs = [resolve_spec(RunSpec(**RECIPES["vr-nsgd"]), datasets[0].n)] * 2
    with pytest.raises(ValueError, match="VR"):
        group.FusedGroup(runs, np.stack([d.H for d in datasets]), np.stack([d.y for d in datasets]), SHAPE["k"])


@pytest.mark.parametrize("engine, copies_limit", [("auto", None), ("auto", 0), ("torch", None)])
def test_simulate_draws_lists_runs_draw_by_draw_as_separate_calls_give_them(engine, copies_limit, monkeypatch):
    """One group on all draws (fused), one call per draw (the per-run copies over the limit), and the torch
    stepper (one call per distinct dataset): the same runs as one simulate call per draw."""
    import rates.numeric.engine

    if copies_limit is not None:
        monkeypatch.setattr(rates.numeric.engine, "PER_RUN_DATA_BYTES", copies_limit)
    datasets = draws(3)
    specs = [RunSpec("signsgd", "1/2", batch=5, seed=s) for s in (0, 1)] + [RunSpec("ngd", "1/2")]
    together = simulate_draws(specs, datasets, 200, checkpoints=8, device="cpu", engine=engine)
    assert len(together.runs) == 9 and together.meta["datasets"] == 3 and together.meta["runs"] == 9
    for number, data in enumerate(datasets):
        alone = simulate(specs, data, 200, checkpoints=8, device="cpu", engine=engine)
        for i, run in enumerate(alone.runs):
            batched = together.runs[number * len(specs) + i]
            assert batched.config == run.config and batched.gamma == run.gamma
            for field in ("t", "gap", "margin", "log_loss", "norm"):
                np.testing.assert_array_equal(getattr(batched, field), getattr(run, field))
            for key, value in run.cosines.items():
                np.testing.assert_array_equal(batched.cosines[key], value)


def test_meta_times_the_whole_call_not_its_last_draw(monkeypatch):
    """meta's wall time covers every draw's stepping, not the last draw's (1/8 of it): on a clock that each
    engine call advances by 1 s per draw it steps (a given timing, whatever the machine's load), wall_s is 8 s;
    the rate is runs x steps over that time, and the CPU time is the process's over the same span."""
    import types

    from rates.numeric import engine

    datasets = [parse_data("gaussian:k=4,d=6,per_class=12", seed=seed) for seed in range(8)]
    fake = types.SimpleNamespace(now=0.0, draws=0)

    def stepping(runs, H, *args, **kwargs):
        result = run_group(runs, H, *args, **kwargs)
        draws = H.shape[0] if np.ndim(H) == 3 else 1
        fake.now += draws
        fake.draws += draws
        return result

    monkeypatch.setattr(engine, "run_group", stepping)
    monkeypatch.setattr(engine, "time", types.SimpleNamespace(perf_counter=lambda: fake.now,
                                                              process_time=time.process_time))
    steps = 400
    out = simulate_draws([RunSpec("signgd", "1/2")], datasets, steps, checkpoints=30, device="cpu")
    meta = out.meta
    assert fake.draws == 8  # every draw stepped once, in one engine call or several
    assert meta["runs"] == 8 and meta["steps"] == steps
    assert meta["wall_s"] == 8.0
    assert meta["config_steps_per_s"] == pytest.approx(8 * steps / 8.0, rel=1e-12)
    assert meta["cpu_s"] > 0


def test_rates_run_with_data_seeds_records_and_prints_the_whole_calls_timing(tmp_path, capsys):
    out = tmp_path / "draws.json"
    started = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--algo", "signgd", "--a", "1/2", "--steps", "3000", "--data", "gaussian:k=3,d=4,per_class=5",
              "--data-seeds", "0..4", "--device", "cpu", "--checkpoints", "6", "--no-progress", "--out", str(out)])
    measured = time.perf_counter() - started
    printed, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    saved = json.loads(out.read_text())
    meta = saved["meta"]
    assert [run["config"]["data_seed"] for run in saved["runs"]] == [0, 1, 2, 3, 4]
    assert meta["runs"] == 5 and meta["data_seeds"] == [0, 1, 2, 3, 4]
    assert meta["wall_s"] <= meta["call_wall_s"] <= measured
    assert meta["config_steps_per_s"] == pytest.approx(5 * 3000 / meta["wall_s"], rel=1e-12)
    summary = [line for line in printed.splitlines() if line.startswith("5 run(s) x 3000 steps")]
    assert len(summary) == 1
    assert f"in {meta['wall_s']:.2f} s ({meta['config_steps_per_s']:.0f} config-steps/s" in summary[0]
    assert f"{meta['call_wall_s']:.2f} s with the data draws" in summary[0]


def _solved_state():
    from rates.numeric import margins, measures

    return dict(margins._CACHE), dict(measures._FACE_MEMORY)


def _forget_solved(monkeypatch):
    from rates.numeric import margins, measures

    monkeypatch.setattr(margins, "_CACHE", {})
    monkeypatch.setattr(measures, "_FACE_MEMORY", {})


def test_draws_prepared_with_a_second_process_equal_those_prepared_here(monkeypatch):
    """prepare_draws sharing the draws with a worker process (spawned: it imports everything afresh) returns the
    same datasets and leaves the same max margins and face answers in this process, bit for bit, as preparing
    every draw here; the worker really prepared some (this process prepared fewer than all)."""
    import rates.numeric.engine as engine

    monkeypatch.setenv("RATES_CACHE_DIR", "off")  # nothing on disk: what this process holds came from the worker
    spec, seeds, norms = "gaussian:k=3,d=4,per_class=5", list(range(6)), ["max", "frobenius"]
    _forget_solved(monkeypatch)
    alone = engine.prepare_draws(spec, seeds, norms, serial_seconds=0.0)
    margins_alone, faces_alone = _solved_state()
    assert len(margins_alone) == 3 * len(seeds) and len(faces_alone) == len(seeds)  # max, frobenius, spectral

    _forget_solved(monkeypatch)
    here = []
    prepare_here = engine.prepare_draw
    monkeypatch.setattr(engine, "prepare_draw", lambda *args: here.append(args[1]) or prepare_here(*args))
    shared = engine.prepare_draws(spec, seeds, norms, workers=2, serial_seconds=1e9)
    margins_shared, faces_shared = _solved_state()
    assert len(here) < len(seeds)
    assert [data.meta for data in shared] == [data.meta for data in alone]
    assert all(np.array_equal(a.H, b.H) and np.array_equal(a.y, b.y) for a, b in zip(shared, alone))
    assert faces_shared == faces_alone
    assert margins_shared.keys() == margins_alone.keys()
    for key, result in margins_alone.items():
        other = margins_shared[key]
        assert (other.gamma, other.upper, other.accuracy, other.solver) == \
            (result.gamma, result.upper, result.accuracy, result.solver)
        assert np.array_equal(other.W, result.W) and np.array_equal(other.dual, result.dual)
        assert other.checks == result.checks


def test_a_draw_that_fails_with_a_second_process_fails_as_it_does_here(monkeypatch):
    """Data that no draw separates: the shared preparation raises the error (and message) of the serial one."""
    from rates.errors import NotSeparableError
    from rates.numeric.engine import prepare_draws

    spec = "gaussian:k=2,d=1,per_class=30,sigma=10"
    with pytest.raises(NotSeparableError) as alone:
        prepare_draws(spec, [0, 1, 2], ["max"], serial_seconds=0.0)
    with pytest.raises(NotSeparableError) as shared:
        prepare_draws(spec, [0, 1, 2], ["max"], workers=2, serial_seconds=1e9)
    assert str(shared.value) == str(alone.value) and "seed=0" in str(alone.value)


@pytest.mark.parametrize("name", ["signgd", "ngd"])
def test_draws_whose_labels_come_in_different_orders_give_the_bits_of_each_draw_alone(name, monkeypatch):
    """Full-batch draws of a preset list their classes in the same order, and the kernel then reads one label
    per sample for all lanes; here every other draw has its samples shuffled, so the lanes' labels differ and
    each lane must read its own. Each run still equals the draw alone, bit for bit, as do the unshuffled
    draws (the shared-labels path). One thread, so that the first 64 draws are one 64-lane block."""
    monkeypatch.setattr(group, "available_cores", lambda: 1)
    rng = np.random.default_rng(7)
    datasets = draws(kernels.LANES + 3)
    H = np.stack([data.H for data in datasets])
    y = np.stack([data.y for data in datasets])
    assert (y == y[0]).all()  # the preset's draws share their label order
    shuffled_H, shuffled_y = H.copy(), y.copy()
    for r in range(0, len(datasets), 2):
        order = rng.permutation(y.shape[1])
        shuffled_H[r], shuffled_y[r] = H[r][order], y[r][order]
    assert not (shuffled_y == shuffled_y[0]).all()
    spec = RunSpec(**RECIPES[name])
    runs = [resolve_spec(spec, datasets[0].n)] * len(datasets)
    steps, times = 300, checkpoint_times(300, 3)
    for data_H, data_y in ((shuffled_H, shuffled_y), (H, y)):
        W, _ = run_group(runs, data_H, data_y, SHAPE["k"], steps, times)
        for r in (0, 1, 2, 31, kernels.LANES - 1):
            alone_W, _ = run_group(runs[:1], data_H[r], data_y[r], SHAPE["k"], steps, times)
            np.testing.assert_array_equal(W[r], alone_W[0])
