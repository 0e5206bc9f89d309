"""Every engine runs any schedule: the fused kernels, the torch program (eager and with a device-side step index,
the path CUDA graphs record) and the mpmath reference, for schedules outside the polynomial family.

Expectation: the mpmath reference (50 digits; ``eta_t`` is the schedule's sympy expression evaluated by mpmath,
never the engines' float64 table), step by step, as tests/test_one_definition.py holds every optimiser to it.
Within the engines: a run is bit for bit the same alone or in a group of mixed schedules, whatever the table's
length, and the device-index step is the integer-index step.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rates.numeric import reference
from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, resolve_spec, run_group
from rates.schedule import Schedule
from tests.cli_invoke import invoke

DATA = "gaussian:k=3,d=4,per_class=4"
STEPS = 40
TOLERANCE = 1e-12
SCHEDULES = {
    "log": "eta0/((t+2)*log(t+2))",
    "log-over-sqrt": "eta0*log(t+2)/sqrt(t+2)",
    "warm-up": "Min(eta0*(t+1)/10, eta0/sqrt(t+2))",
    "piecewise": "Piecewise((eta0*(t+1)/10, t < 15), (eta0/sqrt(t+2), True))",
    "oscillating": "eta0*(2+sin(t))/sqrt(t+2)",
}
ALGORITHMS = {
    "signgd": {},
    "ngd": {},
    "adam": {},
    "signum": {"momentum": 0.9},
    "signsgd": {"batch": 3},
}


def dataset():
    data = parse_data(DATA)
    return np.asarray(data.H), np.asarray(data.y), data.k


def spec(algo: str, schedule: str, **options) -> RunSpec:
    return RunSpec(algo, schedule=Schedule.parse(schedule), eta0=0.3, seed=5, **{**ALGORITHMS.get(algo, {}), **options})


def engine_steps(run, H, y, k, engine: str) -> list[np.ndarray]:
    _, records = run_group([run], H, y, k, STEPS, np.arange(1, STEPS + 1), engine=engine)
    return [record["W"][0] for record in records]


def reference_steps(run, H, y, k) -> list[np.ndarray]:
    ref = reference.run_trajectory(run, H.tolist(), y.tolist(), k, STEPS, range(1, STEPS + 1))
    return [np.array(reference.to_float(ref[t])) for t in range(1, STEPS + 1)]


def worst_error(got: list[np.ndarray], expected: list[np.ndarray]) -> float:
    return max(float(np.abs(W - E).max() / np.abs(E).max()) for W, E in zip(got, expected))


CASES = [pytest.param(algo, name, id=f"{algo}-{name}") for algo in ("signgd", "ngd", "adam") for name in SCHEDULES]
CASES += [pytest.param("signum", "warm-up", id="signum-warm-up"), pytest.param("signsgd", "log", id="signsgd-log")]


@pytest.mark.parametrize("algo,name", CASES)
def test_fused_and_torch_engines_follow_the_mpmath_reference_for_any_schedule(algo, name):
    H, y, k = dataset()
    run = resolve_spec(spec(algo, SCHEDULES[name]), len(y))
    assert not run.schedule.is_polynomial
    expected = reference_steps(run, H, y, k)
    for engine in ("fused", "torch"):
        assert worst_error(engine_steps(run, H, y, k, engine), expected) < TOLERANCE, (algo, name, engine)


def test_the_reference_evaluates_the_expression_not_the_engines_table():
    """The reference's eta_t is mpmath's value of the sympy expression: at 50 digits it differs from the float64
    table by the table's rounding (~1e-17 relative), and equals the expression at 50 digits."""
    import mpmath as mp
    import sympy

    from rates.schedule import t_sym

    schedule = Schedule.parse(SCHEDULES["log-over-sqrt"])
    unit = reference._mp_unit(schedule.text)
    with mp.workdps(50):
        for t in (0, 7, 39, 10**6):
            exact = mp.mpf(str(sympy.N(schedule.unit_expr.subs(t_sym, t), 60)))
            assert abs(unit(mp.mpf(t)) - exact) <= mp.mpf(10) ** -45 * exact
            assert abs(mp.mpf(schedule.unit_value(t)) - exact) <= mp.mpf(2) ** -52 * exact


def test_the_comparison_tells_schedules_apart():
    """An engine run against the reference of another schedule is far outside the tolerance: the check would
    catch an engine that ignored the schedule (or ran the polynomial family instead)."""
    H, y, k = dataset()
    run = resolve_spec(spec("signgd", SCHEDULES["log"]), len(y))
    for other in (SCHEDULES["log-over-sqrt"], "eta0/sqrt(t+2)"):
        wrong = reference_steps(resolve_spec(spec("signgd", other), len(y)), H, y, k)
        for engine in ("fused", "torch"):
            assert worst_error(engine_steps(run, H, y, k, engine), wrong) > 1e-3, (other, engine)


def test_a_run_is_the_same_alone_and_in_a_wide_group_of_mixed_schedules():
    """66 runs (a full 64-lane block and two single lanes) of four schedules, two of them polynomial, each bit
    for bit its run alone: the kernel's per-block distinct schedules keep every lane on its own."""
    H, y, k = dataset()
    texts = [SCHEDULES["log"], "eta0/sqrt(t+2)", SCHEDULES["warm-up"], "eta0*(t+2)**(-3/4)"]
    specs = [RunSpec("signgd", schedule=Schedule.parse(texts[i % 4]), eta0=0.1 * (1 + i % 3)) for i in range(66)]
    runs = [resolve_spec(s, len(y)) for s in specs]
    times = np.array([3, 17, 30])
    W_group, records = run_group(runs, H, y, k, 30, times, engine="fused")
    for i in (0, 1, 2, 3, 5, 64, 65):
        W_alone, alone = run_group([runs[i]], H, y, k, 30, times, engine="fused")
        assert np.array_equal(W_group[i], W_alone[0]), i
        assert all(np.array_equal(g["W"][i], a["W"][0]) for g, a in zip(records, alone)), i


def test_the_schedule_table_length_changes_no_bit(monkeypatch):
    """The fused group fills the table TABLE_STEPS steps at a time; a table of 7 steps (refilled across every
    checkpoint and chunk) gives the same iterates as the default one."""
    from rates.numeric.fused import group

    H, y, k = dataset()
    run = resolve_spec(spec("ngd", SCHEDULES["piecewise"]), len(y))
    times = np.array([1, 6, 7, 8, 29, 100])
    W_default, _ = run_group([run], H, y, k, 100, times, engine="fused")
    monkeypatch.setattr(group, "TABLE_STEPS", 7)
    W_short, _ = run_group([run], H, y, k, 100, times, engine="fused")
    assert np.array_equal(W_default, W_short)


def test_polynomial_schedules_keep_the_polynomial_path_bit_for_bit():
    """--schedule 'eta0*(t+2)**(-a)' is the polynomial family itself: the same spec, the same bits."""
    H, y, k = dataset()
    for algo in ("signgd", "adam"):
        shorthand = resolve_spec(RunSpec(algo, "1/2", eta0=0.3), len(y))
        written = resolve_spec(RunSpec(algo, schedule=Schedule.parse("eta0/(t+2)**(1/2)"), eta0=0.3), len(y))
        assert written.spec == shorthand.spec and written.schedule == shorthand.schedule
        for engine in ("fused", "torch"):
            W1, _ = run_group([shorthand], H, y, k, 50, np.array([50]), engine=engine)
            W2, _ = run_group([written], H, y, k, 50, np.array([50]), engine=engine)
            assert np.array_equal(W1, W2)


def test_device_step_index_reads_the_same_rates_as_the_integer_index(monkeypatch):
    """The step CUDA graphs record takes the step index as a device tensor; for a schedule outside the
    polynomial family it reads eta0 f(t) from a table that ``prepare`` refills between replays. Replayed on
    the CPU as GraphedSteps replays (segments of steps, single steps up to each checkpoint, across a table of
    100 steps several times), the iterates are bit for bit those of the integer-index step (a polynomial run in the same
    group to 1e-13, as tests/test_graphed.py holds it)."""
    import torch

    from rates.numeric.engine import DTYPE, _hyper
    from rates.numeric.optim import compose
    from rates.numeric.optim.compose import build
    from rates.numeric.optim.transforms import scale_by_schedule

    block, segment = 100, 16  # a short table, so that a few hundred steps cross it several times
    monkeypatch.setitem(compose.TRANSFORMS, "schedule", lambda piece, recipe, hyper, per_row: scale_by_schedule(
        hyper.eta0, hyper.schedules, block=block))

    H_np, y_np, k = dataset()
    H, y = torch.as_tensor(H_np, dtype=DTYPE), torch.as_tensor(y_np)
    runs = [resolve_spec(spec("ngd", SCHEDULES["oscillating"]), len(y_np)),
            resolve_spec(RunSpec("ngd", "1/2", eta0=0.3), len(y_np)),
            resolve_spec(spec("ngd", SCHEDULES["log"]), len(y_np))]
    checkpoints = (40, 101, 102, 299, 450)
    results = []
    for as_tensor in (False, True):
        optimizer = build(runs[0].recipe, H, y, k, _hyper(runs, H.device))
        W = torch.zeros((len(runs), k, H.shape[1]), dtype=DTYPE)
        state = optimizer.init(W)
        t_dev = torch.zeros((), dtype=DTYPE)
        step = 0
        with torch.inference_mode():
            if as_tensor:
                optimizer.prepare(0, segment)
            for target in checkpoints:
                while step < target:
                    count = segment if target - step >= segment else 1
                    if as_tensor:
                        optimizer.prepare(step, count)
                    for _ in range(count):
                        W, state = optimizer.step(W, state, t_dev if as_tensor else step)
                        t_dev.add_(1.0)
                        step += 1
        results.append(W.clone())
    integer, device = results
    assert torch.equal(integer[0], device[0]) and torch.equal(integer[2], device[2])  # the table's own numbers
    # the polynomial run's eta_t is computed from the device index, as before: rounding-level differences
    assert (integer[1] - device[1]).abs().max().item() <= 1e-13 * integer[1].abs().max().item()
    assert integer.abs().max().item() > 1.0  # the runs moved


@pytest.mark.parametrize("algo", ["signgd", "ngd", "adam"])
def test_a_and_the_equivalent_schedule_write_identical_trajectories(algo, tmp_path):
    written = {}
    for name, option in (("a", ["--a", "3/4"]), ("schedule", ["--schedule", "eta0*(2+t)^(-0.75)"])):
        out = tmp_path / f"{name}.json"
        code, _, err = invoke(["run", "--algo", algo, *option, "--eta0", "0.3", "--data", DATA, "--steps", "300",
                               "--checkpoints", "20", "--out", str(out), "--no-progress", "--device", "cpu"])
        assert code == 0, err
        written[name] = json.loads(out.read_text())
    (a_run,), (schedule_run,) = written["a"]["runs"], written["schedule"]["runs"]
    assert a_run["config"] == schedule_run["config"] and "schedule" not in a_run["config"]
    for key, values in a_run["checkpoints"].items():
        other = schedule_run["checkpoints"][key]
        if isinstance(values, dict):
            assert values.keys() == other.keys()
            assert all(np.array_equal(values[n], other[n]) for n in values), key
        else:
            assert np.array_equal(values, other), key


def test_a_non_polynomial_run_records_its_schedule_and_reads_back(tmp_path):
    from rates.numeric.run_config import config_from_json
    from rates.numeric.trajectory import load

    out = tmp_path / "log.json"
    code, stdout, err = invoke(["run", "--algo", "signgd", "--schedule", "eta0/((2+t)*log(t+2))", "--data", DATA,
                                "--steps", "200", "--out", str(out), "--no-progress", "--device", "cpu"])
    assert code == 0, err
    config = json.loads(out.read_text())["runs"][0]["config"]
    assert config["a"] is None and config["schedule"] == "eta0/((t + 2)*log(t + 2))"
    assert "schedule=eta0/((t + 2)*log(t + 2))" in stdout
    assert load(out).runs[0].config.schedule == Schedule.parse("eta0/((t+2)*log(t+2))")
    old = {"algo": "signgd", "norm": "max", "a": "1/2", "eta0": 1.0, "steps": 10}  # a file written before schedules
    assert config_from_json(old).schedule == Schedule.polynomial("1/2")


@pytest.mark.parametrize("argv,pattern", [
    (["--schedule", "eta0*sin(t+1)"], r"^rates: error: --schedule: f\(t\) = sin\(t \+ 1\) is not > 0 at t = 3 "),
    (["--schedule", "eta0/(t-3)**2"], r"^rates: error: --schedule: .* is not finite at t = 3 "),
    (["--schedule", "eta0*q"], r"^rates: error: --schedule: unknown symbol q"),
    (["--a", "1/2", "--schedule", "eta0/(t+2)"], r"^rates: error: --schedule: give either --a or --schedule"),
    ([], r"^rates: error: --schedule: give the learning rate as --a A"),
])
def test_bad_schedules_exit_2_with_one_line_and_no_file(argv, pattern, tmp_path):
    import re

    out = tmp_path / "never.json"
    code, _, err = invoke(["run", "--algo", "signgd", *argv, "--steps", "10", "--out", str(out), "--no-progress"])
    assert code == 2 and re.search(pattern, err.strip()) and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_fit_runs_a_schedule_and_judges_it_against_its_derived_rate(tmp_path):
    code, out, err = invoke(["fit", "--algo", "signgd", "--schedule", "eta0/((t+2)*log(t+2))", "--data", DATA,
                             "--steps", "2000", "--no-progress", "--device", "cpu"])
    assert code == 0, err
    # the rate derived for this schedule (docs/theory.md 4b); 2000 steps are too short for a window: inconclusive
    assert "predicted rate : O(1 / log log t)" in out
    assert "verdict        : inconclusive" in out


def test_schedule_is_a_grid_key_of_sweep_and_leaves_polynomial_configurations_as_they_were():
    from cli.sweep import run_converters
    from rates.errors import InputError
    from rates.sweep.grid import expand, normalise_grid

    converters, defaults = run_converters()
    grid = {"algo": "signgd", "schedule": ["eta0/((2+t)*log(t+2))", "eta0*(t+2)^(-0.5)"], "steps": 10, "data": DATA}
    log_run, polynomial = expand(normalise_grid(grid, converters, defaults), check_device=False)
    assert log_run.spec.schedule == Schedule.parse("eta0/((t+2)*log(t+2))") and log_run.spec.a is None
    assert dict(log_run.options)["schedule"] == "eta0/((t + 2)*log(t + 2))"
    assert polynomial.spec == RunSpec("signgd", "1/2")  # the polynomial family: its a, as --a 1/2 gives
    (shorthand,) = expand(normalise_grid({"algo": "signgd", "a": "1/2", "steps": 10, "data": DATA}, converters,
                                         defaults), check_device=False)
    assert "schedule" not in dict(shorthand.options)  # configurations of a-grids keep their keys
    assert shorthand.spec == polynomial.spec
    with pytest.raises(InputError, match="either 'a' or 'schedule'"):
        normalise_grid({**grid, "a": "1/2"}, converters, defaults)
    with pytest.raises(InputError, match=r"^--schedule: f\(t\) = sin\(t\) is not > 0 at t = 0 .*\[grid: schedule"):
        normalise_grid({**grid, "schedule": "eta0*sin(t)"}, converters, defaults)


def test_a_sweep_over_schedules_runs_them_and_tables_each_with_its_derived_rate(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(f'[grid]\nalgo = "signgd"\nschedule = ["eta0/((t+2)*log(t+2))", "eta0/sqrt(t+2)"]\n'
                    f'steps = 200\ndata = "{DATA}"\n')
    code, _, err = invoke(["sweep", str(grid), "--out", str(tmp_path / "sweep"), "--scheduler", "serial",
                           "--no-figures", "--no-progress"])
    assert code == 0, err
    stored = [run["config"] for path in (tmp_path / "sweep" / "trajectories").glob("*.json")
              for run in json.loads(path.read_text())["runs"]]
    assert sorted((c["a"] or "", c.get("schedule", "")) for c in stored) == [
        ("", "eta0/((t + 2)*log(t + 2))"), ("1/2", "")]
    table = (tmp_path / "sweep" / "table.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| signgd |")]
    assert len(rows) == 2 and "eta0/((t + 2)*log(t + 2)) | 1 / log log t |" in rows[0]
    assert rows[1].startswith("| signgd | 1/2 |") and "| log t / t^(1/2) |" in rows[1]


def test_a_schedule_travels_to_dask_workers_and_runs_there_bit_for_bit():
    """Specs are pickled to the workers of a local Dask cluster; a worker parses the schedule's text again (its
    own process) and runs exactly the serial run."""
    from rates.numeric.run_config import config_to_json
    from rates.numeric.tasks import EngineTask, run_tasks

    specs = (spec("signgd", SCHEDULES["warm-up"]), RunSpec("signgd", "1/2", eta0=0.3, seed=5))
    tasks = [EngineTask(specs=specs, data=DATA, data_seed=0, steps=300, checkpoints=10, device="cpu")]
    serial, = run_tasks(tasks, "serial", estimate=False)
    local, = run_tasks(tasks, "local", workers=1, estimate=False)
    for here, there in zip(serial.runs, local.runs):
        assert here.config == there.config and np.array_equal(here.gap, there.gap)
    assert serial.runs[0].config.schedule.text == "Min(eta0*(t + 1)/10, eta0/sqrt(t + 2))"
    assert serial.runs[1].config.a == "1/2" and "schedule" not in config_to_json(serial.runs[1].config)
