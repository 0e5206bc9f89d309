"""Help texts, messages and estimates a new user reads: each says what the tool expects or will do."""

from __future__ import annotations

import os
import re

import pytest
import tomllib
from typer.testing import CliRunner

from cli.app import app
from cli.predict import english_list
from cli.sweep import run_converters
from rates.errors import InputError
from rates.numeric.data import load_file
from rates.sweep.grid import GRID_KEYS, REQUIRED_KEYS, expand, normalise_grid


def test_sweep_help_lists_every_grid_key_and_an_example_that_is_a_valid_grid():
    result = CliRunner().invoke(app, ["sweep", "--help"], terminal_width=100)
    assert result.exit_code == 0
    text = result.output
    for key in GRID_KEYS:
        assert re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text), key
    assert f"Required: {', '.join(REQUIRED_KEYS)}." in " ".join(text.split())
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "[grid]")
    example = "\n".join(lines[start:lines.index("Arguments:")])
    grid = tomllib.loads("\n".join(line.strip() for line in example.splitlines()))["grid"]
    converters, defaults = run_converters()
    configurations = expand(normalise_grid(grid, converters, defaults), check_device=False)
    assert len(configurations) == 3 * 2 * 2 * 2  # algo x a x seed x batch, as the example's lists say


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args), terminal_width=200)
    return result.exit_code, result.output


def test_predict_names_unchecked_hypotheses_in_english():
    code, out = _invoke("predict", "--algo", "signgd", "--a", "1/2")
    assert code == 0
    assert "applies     yes, if the hypothesis separable holds (give the data's constants" in out
    code, out = _invoke("predict", "--algo", "signsgd", "--batch", "5", "--n", "30", "--a", "1/2")
    assert code == 0 and "if the hypotheses gamma_eff > 0 and separable hold (" in out
    assert english_list(["a", "b", "c"]) == "a, b and c" and english_list(["a"]) == "a"


def test_check_list_with_a_chain_prints_that_chain_in_order():
    from proofs.chains import CHAINS

    code, listing = _invoke("check", "--list")
    assert code == 0
    code, out = _invoke("check", "--list", "--chain", "nsd")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == f"chain nsd: {CHAINS['nsd'].title}"
    steps = [re.match(r"\s*(\d+)\. ([^\s:]+)", line).groups() for line in lines[1:]]
    assert [int(n) for n, _ in steps] == list(range(1, len(CHAINS["nsd"].steps) + 1))
    assert [name for _, name in steps] == [step.claim or "definition" for step in CHAINS["nsd"].steps]
    assert out != listing
    code, out = _invoke("check", "--list", "--chain", "adam")
    assert code == 0 and out.startswith(f"chain adam: {CHAINS['adam'].title}")
    assert len(out.strip().splitlines()) == 1 + len(CHAINS["adam"].steps) != 1 + len(CHAINS["nsd"].steps)


@pytest.mark.parametrize("text, named", [
    ("x1;x2;label\n1.0;2.0;0\n-1.0;0.5;1\n", "semicolons (;)"),
    ("1,5;2,0;0\n-1,0;0,5;1\n", "semicolons (;)"),  # decimal commas as well
    ("x1\tx2\tlabel\n1.0\t2.0\t0\n-1.0\t0.5\t1\n", "tabs"),
])
def test_a_csv_with_another_delimiter_is_told_so(tmp_path, text, named):
    path = tmp_path / "data.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_file(path)
    assert err.value.option == "--data" and f"separated by {named}" in err.value.message
    assert "',' as the delimiter" in err.value.message
    path.write_text(text.replace(",", ".").replace(";", ",").replace("\t", ","))  # the same data, commas
    data = load_file(path)
    assert data.H.shape == (2, 2) and list(data.y) == [0, 1]


class FakeEngine:
    """A run of ``s`` steps that costs ``fixed + per_step * s`` seconds on its own clock: the timings the
    estimators see are given, so their answers are exact numbers whatever the machine's load."""

    def __init__(self, fixed: float, per_step: float):
        self.fixed, self.per_step, self.now, self.calls = fixed, per_step, 0.0, []

    def clock(self) -> float:
        return self.now

    def run(self, steps: int) -> None:
        self.calls.append(steps)
        self.now += self.fixed + self.per_step * steps


def test_the_time_estimate_is_the_probed_rate_times_the_steps_plus_each_calls_fixed_cost():
    """A long run's announced time comes from probing the engine, not from constants (which said hours for a
    run of seconds): probes double from 64 steps until one takes PROBE_SECONDS (0.1 s); the difference of the
    last two gives the rate per step (10 us) and the last probe the fixed cost (10 ms) of each of 3 calls."""
    from rates import budget

    engine = FakeEngine(fixed=0.01, per_step=1e-5)
    estimate = budget.measured_seconds(engine.run, 10**6, calls=3, clock=engine.clock)
    assert engine.calls == [2, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]  # 0.01 + 0.16384 s >= 0.1 s
    assert estimate == pytest.approx(3 * (1e-5 * 10**6 + 0.01), rel=1e-9)
    # a request shorter than two probes: the whole 64-step probe, fixed cost included, scaled to 100 steps
    engine = FakeEngine(fixed=0.01, per_step=1e-5)
    assert budget.measured_seconds(engine.run, 100, clock=engine.clock) == pytest.approx(
        (0.01 + 64e-5) * 100 / 64, rel=1e-12)
    assert engine.calls == [2, 64]


def _fixed_probe(costs: dict[str, float], probed: list):
    """A probe that answers each recipe's seconds per step from ``costs`` (by algorithm) and records its calls."""

    def probe(key, runs, data, horizon, device, seconds):
        probed.append((runs[0].spec.algo, runs[0].spec.batch, len(runs)))
        return costs[runs[0].spec.algo], True

    return probe


def test_a_task_list_is_estimated_from_each_recipes_probe(monkeypatch):
    """Studies and sweeps estimate their tasks by probing their recipes, not from the torch engine's constants
    alone (which said 4.3 h for a study of 10 min): each distinct recipe is probed once, a task costs its steps
    times the sum of its runs' costs (fused kernels: per run) plus the data draw's set-up, and the tasks run one
    after another in this process (serial); with load and probe given, the figure is exact."""
    from rates.numeric import duration
    from rates.numeric.engine import RunSpec
    from rates.numeric.tasks import EngineTask, estimate_tasks

    # on the CPU (the fused kernels cost per run); on a GPU machine auto would pick cuda, whose group costs once
    tasks = [EngineTask(specs=(RunSpec(algo="signgd", a="1/2"),), data="default", data_seed=0, steps=200_000,
                        device="cpu"),
             EngineTask(specs=(RunSpec(algo="ngd", a="1/2"), RunSpec(algo="ngd", a="1")), data="default",
                        data_seed=1, steps=100_000, device="cpu"),
             EngineTask(specs=(RunSpec(algo="signsgd", a="1/2", batch=10),), data="default", data_seed=2,
                        steps=100_000, device="cpu")]
    probed: list = []
    monkeypatch.setattr(duration, "_probed", {})
    monkeypatch.setattr(duration, "machine_load", lambda: 5.0)  # one worker in this process: no contention
    monkeypatch.setattr(duration, "probe_recipe", _fixed_probe({"signgd": 1e-6, "ngd": 3e-6, "signsgd": 5e-7},
                                                               probed))
    setup = duration.DRAW_SETUP_S
    expected = (1e-6 * 200_000 + setup) + (2 * 3e-6 * 100_000 + setup) + (5e-7 * 100_000 + setup)
    assert estimate_tasks(tasks, executor="serial").seconds == pytest.approx(expected, rel=1e-12)
    assert probed == [("signgd", None, 1), ("ngd", None, 2), ("signsgd", 10, 1)]
    estimate_tasks(tasks, executor="serial")
    assert len(probed) == 3  # a recipe probed once is not probed again in this process
    rough = estimate_tasks(tasks, measured=False, executor="serial").seconds
    assert rough != pytest.approx(expected, rel=0.5)  # the constants' figure is another one


def test_recipes_of_very_different_step_cost_are_each_timed_by_their_own_probe():
    """One factor for a whole list, probed on the task the constants call costliest, was ~3x low on the
    minibatch study (its SignSGD steps are among the cheapest, Spectral-SGD's cost 6-12x more). Here the
    constants' costliest task is four SignSGD runs at b = 1 (the most run-steps), the dear one a Spectral-SGD
    run at b = 64, 12x dearer per step: each is timed by its own recipe's probe; on 2 workers the dear task
    alone sets the makespan, each worker slowed by the machine's other load (ratio of CPU shares)."""
    from rates.numeric import duration
    from rates.numeric.engine import RunSpec
    from rates.numeric.tasks import EngineTask, worker_processes

    cheap = EngineTask(specs=tuple(RunSpec(algo="signsgd", a=a, batch=1) for a in ("1/2", "3/4", "1", "3/10")),
                       data="minibatch", data_seed=0, steps=200_000)
    dear = EngineTask(specs=(RunSpec(algo="spectral-sgd", a="1/2", batch=64),), data="minibatch", data_seed=0,
                      steps=100_000)
    probed: list = []
    probe = _fixed_probe({"signsgd": 1e-6, "spectral-sgd": 12e-6}, probed)
    serial = duration.estimate([cheap, dear], "cpu", parallel=False, dearest_first=False, load=0.0, probe=probe)
    assert serial.task_seconds == pytest.approx([4 * 1e-6 * 200_000 + duration.DRAW_SETUP_S, 12e-6 * 100_000],
                                                rel=1e-12)
    assert serial.seconds == pytest.approx(sum(serial.task_seconds), rel=1e-12)
    assert sorted(probed) == [("signsgd", 1, 4), ("spectral-sgd", 64, 1)]
    parallel = duration.estimate([cheap, dear], "cpu", parallel=True, workers=2, load=2.0, probe=probe)
    slowdown = duration._contention(2.0, 2, os.cpu_count() or 1)
    assert parallel.seconds == pytest.approx(12e-6 * 100_000 * slowdown + duration.WORKER_START_S, rel=1e-12)
    # serially one task at a time; a local cluster one per core, at most one per task; a remote one: unknown, 1
    assert worker_processes("serial", 4, 10) == 1 and worker_processes("tcp://host:8786", 4, 10) == 1
    assert worker_processes("local", 8, 3) == 3 and worker_processes("local", 2, 10) == 2


def test_a_task_the_probe_cannot_run_here_keeps_the_constants_estimate():
    """A study for a remote cluster's GPUs, estimated on a machine without one: no probe, no error, the
    constants' figure (the engine's own refusal of cuda is the worker's to give)."""
    import torch

    from rates.numeric.engine import RunSpec
    from rates.numeric.tasks import EngineTask, estimate_tasks

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the probe runs")
    tasks = [EngineTask(specs=(RunSpec(algo="signgd", a="1"),), data="default", data_seed=0, steps=10**6,
                        device="cuda")]
    assert estimate_tasks(tasks, workers=1) == estimate_tasks(tasks, workers=1, measured=False)


def test_tightness_cites_the_source_predict_gives():
    """spectral-gd (a Schatten norm) is MINIBATCH Thm 4.1 at b = n, not SIGNADAM (entry-wise norms only)."""
    code, predicted = _invoke("predict", "--algo", "spectral-gd", "--a", "1/2")
    assert code == 0
    source = next(line.split(None, 1)[1] for line in predicted.splitlines() if line.startswith("source"))
    assert source.startswith("MINIBATCH Thm 4.1")
    code, out = _invoke("tightness", "--algo", "spectral-gd", "--a", "1/2", "--budget", "1", "--steps", "12000")
    assert code == 0
    cited = next(line for line in out.splitlines() if line.startswith("bound exponent"))
    assert cited.endswith(f"[rates predict: {source}]") and "SIGNADAM" not in cited


@pytest.mark.parametrize("checkpoints", ["60", "20"])
def test_a_run_too_short_says_how_many_steps_would_do_and_that_many_do(checkpoints):
    args = ["fit", "--algo", "signgd", "--a", "1/2", "--checkpoints", checkpoints]
    code, out = _invoke(*args, "--steps", "2000")
    assert code == 0 and "inconclusive" in out
    needed = int(re.search(r"a run of (\d+) steps or more would give one", out).group(1))
    assert 10_000 < needed < 40_000  # a decade from t = 1000, plus checkpoint spacing
    code, out = _invoke(*args, "--steps", str(needed))
    verdict = next(line for line in out.splitlines() if line.strip().startswith("verdict"))
    assert code == 0 and re.search(r": (tight|loose) ", verdict), verdict  # the advice is enough for a verdict


def test_a_long_step_without_steps_to_count_shows_a_spinner_and_a_short_one_nothing():
    """The max-margin solve of wide data printed nothing for minutes: a phase still running after its notice
    delay draws its description with the elapsed time; one that ends first draws nothing."""
    import io

    from rich.console import Console

    from rates.progress import phase

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with phase("max margin: spectral-norm program, n = 60, d = 10000, k = 10", enabled=True, after=0.0,
               console=console) as shown:
        assert shown.shown.wait(60)
    assert "max margin: spectral-norm program, n = 60, d = 10000, k = 10" in screen.getvalue()
    quiet = io.StringIO()
    with phase("quick", enabled=True, after=3600.0, console=Console(file=quiet, force_terminal=True)) as handle:
        pass
    assert quiet.getvalue() == "" and not handle.shown.is_set()


def test_the_max_margin_solve_is_a_phase_with_its_size(monkeypatch):
    from rates.numeric import margins
    from rates.numeric.data import parse_data

    described = []
    real = margins.phase

    def recording(description, *args, **kwargs):
        described.append(description)
        return real(description, *args, **kwargs)

    monkeypatch.setattr(margins, "phase", recording)
    monkeypatch.setattr(margins, "_CACHE", {})
    monkeypatch.setenv("RATES_CACHE_DIR", "off")  # solved here, not read back
    data = parse_data("gaussian:k=3,d=7,per_class=5", seed=11)
    margins.max_margin(data, "max")
    assert described == ["max margin: max-norm program, n = 15, d = 7, k = 3"]
