"""One check per run parameter: ``rates run``, ``rates fit``, ``rates sweep`` (a grid cell) and ``rates report``
refuse the same bad value with the same one-line message, exit 2 and no file.

Every parameter of :data:`rates.numeric.run_parameters.PARAMETERS` needs one row of :data:`BAD` (the
registry test fails otherwise); the row is then fed to every command that takes the parameter, which is read
off the commands themselves (their options, the grid keys), not listed here.
"""

from __future__ import annotations

import math

import pytest
import typer
from cli_invoke import invoke

from cli.app import app
from rates.errors import InputError
from rates.numeric.run_parameters import CASELESS_GRID_KEYS, GRID_KEYS, PARAMETERS, check

# parameter -> (bad value as typed on the command line, what every caller must say about it, the other options
# that make the value matter: the algorithm that uses it). The expected texts are typed from the ranges the
# docs give (docs/theory.md section 2 for a and the step sizes, docs/usage.md for the options).
BAD: dict[str, tuple[str, str, dict[str, str]] | None] = {
    "algo": ("bogus", "unknown algorithm 'bogus'; known: ", {}),
    "a": ("3/2", "must be in (0, 1], got 3/2", {}),
    # sin(1), sin(2), sin(3) > 0 > sin(4): the first step with a negative rate is t = 3
    "schedule": ("eta0*sin(t+1)", "f(t) = sin(t + 1) is not > 0 at t = 3 ", {}),
    "eta0": ("-1.0", "must be a positive number, got -1.0", {}),
    "seed": ("-1", "must be an integer in [0, 2^63 - 1], got -1", {}),
    "norm": ("frob", "unknown norm 'frob'; known: max, sum, frobenius", {"algo": "nsd"}),
    "batch": ("0", "must be an integer in [1, 2^63 - 1], got 0", {"algo": "signsgd"}),
    "momentum": ("1.0", "must be in [0, 1), got 1.0", {"algo": "signum"}),
    "vr": None,  # a flag: no value to refuse
    "adam_beta1": ("1.5", "must be in [0, 1), got 1.5", {"algo": "adam"}),
    "adam_beta2": ("1.0", "must be in [0, 1), got 1.0", {"algo": "adam"}),
    "adam_eps": ("-0.1", "must be >= 0, got -0.1", {"algo": "adam"}),
    "polar": ("svd", "must be exact or newton-schulz, got 'svd'", {"algo": "spectral-gd"}),
    "data": ("nope", "unknown data 'nope'; allowed: PRESET (default, ", {}),
    "steps": ("0", "must be an integer in [1, 2^53], got 0", {}),
    "checkpoints": ("1", "must be an integer in [2, 2^53], got 1", {}),
    "device": ("gpu", "must be auto, cpu, cuda or cuda:I, got 'gpu'", {}),
    "seeds": ("0..x", "expected a range such as 0..4 or a list such as 0,3,7, got '0..x'", {}),
    "data_seeds": ("-1", "expected distinct non-negative seeds, got '-1'", {}),
    "engine": ("jit", "must be auto, fused, gemm, torch or graph, got 'jit'", {}),
    "init_scale": ("-1", "must be a finite number >= 0, got -1.0", {}),
}

BASE = {"algo": "signgd", "a": "1/2", "steps": "10"}


def test_every_run_parameter_has_a_bad_value_here():
    assert set(BAD) == set(PARAMETERS)


def _options_of(command: str) -> dict[str, object]:
    """``{flag: click parameter}`` of a command, as its ``--help`` shows them."""
    click_command = typer.main.get_command(app).commands[command]
    return {opt: param for param in click_command.params for opt in getattr(param, "opts", ()) if opt.startswith("--")}


def _grid_cell(text: str) -> str:
    try:
        return str(int(text))
    except ValueError:
        pass
    try:
        return repr(float(text))
    except ValueError:
        return f'"{text}"'


def _reason(err: str, flag: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rates: error: {flag}: "), err
    return lines[0].removeprefix(f"rates: error: {flag}: ")


@pytest.mark.parametrize("name", [name for name, row in BAD.items() if row is not None])
def test_a_bad_value_gets_one_message_from_run_fit_sweep_and_report(tmp_path, name):
    value, expected, needs = BAD[name]
    flag = "--" + name.replace("_", "-")
    options = {key: text for key, text in {**BASE, **needs}.items() if not (name == "schedule" and key == "a")}
    reasons: dict[str, str] = {}

    def cli(command: str, *args: str, flag_args: list[str]) -> None:
        code, out, err = invoke([command, *args, *flag_args])
        assert code == 2, (command, err)
        reasons[command] = _reason(err, flag)

    run_args = [arg for key, text in options.items() if key != name for arg in ("--" + key, text)]
    for command in ("run", "fit"):
        assert flag in _options_of(command)
        out = tmp_path / f"{command}.json"
        cli(command, *run_args, "--out", str(out), "--no-progress", flag_args=[flag, value])
        assert not out.exists()
    if name.replace("_", "-") in GRID_KEYS:
        cells = {**options, name.replace("_", "-"): value}
        grid = tmp_path / "grid.toml"
        grid.write_text("[grid]\n" + "".join(f"{key.replace('_', '-')} = {_grid_cell(text)}\n"
                                              for key, text in cells.items()))
        code, _, err = invoke(["sweep", str(grid), "--out", str(tmp_path / "sweep"), "--scheduler", "serial",
                               "--no-figures", "--no-progress"])
        assert code == 2, err
        reason = _reason(err, flag)
        cell = f" [grid.toml: {name.replace('_', '-')} = {_grid_cell(value)}]"
        assert reason.endswith(cell), err  # the grid key and the cell, after rates run's message
        reasons["sweep"] = reason.removesuffix(cell)
        assert not (tmp_path / "sweep").exists()
    if flag in _options_of("report"):
        cli("report", "default", "--out", str(tmp_path / "report"), "--quick", "--no-progress", flag_args=[flag, value])
        assert not (tmp_path / "report").exists()
    assert expected in reasons["run"], reasons["run"]
    assert set(reasons.values()) == {reasons["run"]}, reasons
    commands = set(reasons)
    assert {"run", "fit"} <= commands
    assert ("sweep" in commands) == PARAMETERS[name].in_grid
    assert ("report" in commands) == (name in ("seeds", "data_seeds", "device"))


def test_the_flag_parameter_is_a_flag_of_run():
    assert _options_of("run")["--vr"].is_flag


@pytest.mark.parametrize("name, accepted, refused", [
    ("steps", [1, 10**9], [0, -1, 1.5, True]),
    ("checkpoints", [2, 60], [1, 0, 2.0]),
    ("eta0", [1e-12, 1, 1e308], [0, -1e-12, math.inf, math.nan, "1"]),
    ("seed", [0, 2**31], [-1, 0.5]),
    ("momentum", [None, 0, 0.999999], [1, 1.0, -1e-9, math.nan]),
    ("batch", [None, 1, 64], [0, -3]),
    ("adam_beta1", [0, 0.9], [1, -0.1, math.inf]),
    ("adam_eps", [0, 1e-8], [-1e-300, math.inf, math.nan]),
    ("polar", ["exact", "newton-schulz"], ["svd", "newton_schulz"]),
])
def test_each_check_accepts_its_range_and_refuses_the_values_around_it(name, accepted, refused):
    for value in accepted:
        assert check(name, value) == value
    for value in refused:
        with pytest.raises(InputError) as info:
            check(name, value)
        assert info.value.option == "--" + name.replace("_", "-")
        assert info.value.message.startswith(f"must be {PARAMETERS[name].allowed}, got ")


# a value in another case than the parameter's own spelling, the options that make it matter, and that spelling
# (None: refused); every caseless grid key needs a row, and polar a refused one
CASES = [
    ("polar", "Exact", {"algo": "spectral-gd"}, "exact"),
    ("polar", " Newton-Schulz ", {"algo": "spectral-gd"}, "newton-schulz"),
    ("polar", "Newton_Schulz", {"algo": "spectral-gd"}, None),
    ("algo", "SignGD", {}, "signgd"),
    ("norm", "MAX", {"algo": "nsd"}, "max"),
    ("device", "CPU", {}, "cpu"),
]


def test_every_caseless_grid_key_has_a_case_here():
    assert {name.replace("_", "-") for name, *_ in CASES} == set(CASELESS_GRID_KEYS)
    assert CASELESS_GRID_KEYS == tuple(k for k in GRID_KEYS if PARAMETERS[k.replace("-", "_")].caseless)


@pytest.mark.parametrize("name, value, needs, spelled", CASES)
def test_run_and_a_sweep_grid_accept_and_refuse_the_same_spellings(tmp_path, name, value, needs, spelled):
    """A named choice in any case is one value to rates run and to a sweep grid alike, and each records the
    parameter's own spelling and runs exactly as that spelling does; a value neither knows both refuse."""
    from rates.numeric.trajectory import load

    options = {**BASE, **needs}
    flag = "--" + name.replace("_", "-")

    def run(text: str, out):
        args = [arg for key, given in {**options, name: text}.items() for arg in ("--" + key, given)]
        return invoke(["run", *args, "--out", str(out), "--no-progress"])

    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\n" + "".join(f"{key} = {_grid_cell(text)}\n"
                                          for key, text in {**options, name: value}.items()))
    sweep_code, _, sweep_err = invoke(["sweep", str(grid), "--out", str(tmp_path / "sweep"), "--scheduler",
                                       "serial", "--no-figures", "--no-progress"])
    run_code, _, run_err = run(value, tmp_path / "run.json")
    if spelled is None:
        assert run_code == 2 and sweep_code == 2, (run_err, sweep_err)
        assert _reason(run_err, flag) == _reason(sweep_err, flag).removesuffix(
            f" [grid.toml: {name} = {_grid_cell(value)}]")
        assert not (tmp_path / "run.json").exists() and not (tmp_path / "sweep").exists()
        return
    assert run_code == 0 and sweep_code in (0, 1), (run_err, sweep_err)  # 1: a verdict, not an error
    assert run(spelled, tmp_path / "own.json")[0] == 0
    own = load(tmp_path / "own.json").runs[0]
    swept = [load(path).runs[0] for path in (tmp_path / "sweep" / "trajectories").glob("task-*.json")]
    assert len(swept) == 1
    for given in (load(tmp_path / "run.json").runs[0], swept[0]):
        assert given.config.recorded(name) == own.config.recorded(name) == spelled
        assert list(given.margin) == list(own.margin)


def test_device_and_engine_are_read_as_the_engine_reads_them():
    assert [check("device", d) for d in ("auto", " CPU ", "cuda", "cuda:3")] == ["auto", "cpu", "cuda", "cuda:3"]
    for bad in ("gpu", "cuda:", "cuda:-1", "cuda:x", "cpu:0"):
        with pytest.raises(InputError, match="--device: must be auto, cpu, cuda or cuda:I"):
            check("device", bad)
    assert check("engine", "FUSED") == "fused"
    with pytest.raises(InputError, match="--engine: must be auto, fused, gemm, torch or graph, got 'numba'"):
        check("engine", "numba")


def test_a_caller_names_its_own_option():
    with pytest.raises(InputError) as info:
        check("seed", -2, option="--teacher-seed")
    assert str(info.value) == "--teacher-seed: must be an integer in [0, 2^63 - 1], got -2"
    with pytest.raises(InputError, match=r"^--b: must be in \(0, 1\], got 0$"):
        check("a", "0", option="--b")
