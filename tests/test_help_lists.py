"""The ``--help`` lists (algorithms, norms, presets, studies, engines, grid keys) are read from the registries
that define them when the help is shown: a name registered later is listed, and no command module keeps a
copy of a list."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from cli.app import app
from rates.numeric import run_parameters
from rates.numeric.run_parameters import GRID_KEYS


def _help(*argv: str) -> str:
    result = CliRunner().invoke(app, [*argv, "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_help_lists_every_registered_name_and_no_placeholder():
    from proofs.chains import CHAINS
    from rates.norms import known_norms
    from rates.numeric.algorithms import ALGORITHMS
    from rates.numeric.data import PRESETS
    from rates.numeric.homogeneous.steepest import ALGORITHMS as HOMOGENEOUS_ALGORITHMS
    from rates.studies import STUDIES

    commands = ("run", "fit", "predict", "report", "sweep", "tightness", "check", "homogeneous")
    texts = {command: _help(command) for command in commands}
    for command, text in texts.items():
        assert not re.search(r"\{[A-Z_]+\}", text), (command, text)
    for command in ("run", "fit", "predict"):
        assert ", ".join(ALGORITHMS) in texts[command] and known_norms() in texts[command]
    for command in ("run", "fit"):
        assert ", ".join(PRESETS) in texts[command]
        assert " | ".join(run_parameters.ENGINES) in texts[command]
    assert ", ".join(sorted(STUDIES)) in texts["report"]
    assert ", ".join([*CHAINS, "per-sample", "all"]) in texts["check"]
    assert " | ".join(HOMOGENEOUS_ALGORITHMS) in texts["homogeneous"]
    assert "Required: algo, a, steps. The others: " + ", ".join(
        key for key in GRID_KEYS if key not in ("algo", "a", "steps")) + "." in texts["sweep"]


def test_a_name_registered_later_appears_in_the_help(monkeypatch):
    from rates.numeric import algorithms, data
    from rates.studies import STUDIES

    monkeypatch.setitem(STUDIES, "toy-study", "toy_study:run")
    monkeypatch.setitem(data.PRESETS, "toy-preset", data.PRESETS["default"])
    from rates.numeric.optim import alias

    monkeypatch.setitem(algorithms.ALGORITHMS, "toy-sd",
                        alias.chain(alias.full_gradient(), alias.steepest_direction("sum"), alias.scale_by_schedule()))
    assert "toy-study" in _help("report")
    for command in ("run", "fit"):
        text = _help(command)
        assert "toy-preset" in text and "toy-sd" in text
    assert "toy-sd" in _help("predict")
    assert "toy-sd" in _help("tightness")  # full batch with its own norm: a name the search accepts


def test_no_command_module_spells_out_a_registry_list():
    """Two registered names side by side (``signgd, ngd``, ``auto | fused``) in cli/*.py would be a hand-kept
    copy of a registry; help_lists.py is where the lists are read. (Grid keys are English words: the sweep's
    help is checked against GRID_KEYS above and in tests/test_usability.py.)"""
    from pathlib import Path

    from rates.norms import NORM_KINDS
    from rates.numeric.algorithms import ALGORITHMS
    from rates.numeric.data import PRESETS
    from rates.studies import STUDIES

    names = {*ALGORITHMS, *PRESETS, *STUDIES, *run_parameters.ENGINES, *run_parameters.POLAR_METHODS,
             *(alias for kind in NORM_KINDS.values() for alias in kind.aliases)}
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    pair = re.compile(rf"(?<![\w-])({alternatives})(, | \| | or )({alternatives})(?![\w-])")
    for path in sorted(Path(__file__).resolve().parents[1].joinpath("cli").glob("*.py")):
        if path.name == "help_lists.py":
            continue
        found = pair.search(path.read_text(encoding="utf-8"))
        assert found is None, f"{path.name}: {found.group(0)!r}"
