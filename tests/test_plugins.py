"""Plug-ins without forking: the example package of ``examples/rates-lp-nsd`` through the public API.

Independent expectations: ``l3-gd`` is the chain of ``nsd`` in the ``lp:3`` norm, so its trajectory must equal
``rates run --algo nsd --norm lp:3`` bit for bit; its family's template is the NSD bound ``[alpha S_2 + C]/S_1``,
whose rates are the closed forms of docs/theory.md section 4 (``log t / t^(1/2)`` at a = 1/2, ``t^(-1/4)`` at
a = 3/4); the paper it cites is GLSS2018 (arXiv:1802.08246), typed here by hand.

The default run loads the plug-in in-process (``--plugin FILE``, and a stand-in entry point) and replays it
in a fresh process as a Dask worker does; the slow test installs the package into a new virtualenv and runs
``predict``, ``run``, ``fit`` and a two-worker sweep from it, with no ``--plugin`` at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest
from cli_invoke import invoke

from rates import plugins
from rates.numeric import plugin_loading
from rates.numeric.optim.alias import OPTIMISERS
from rates.symbolic.papers import REFERENCES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples" / "rates-lp-nsd"
PLUGIN = PACKAGE / "rates_lp_nsd.py"


@pytest.fixture
def clean():
    """Whatever a test registers is forgotten afterwards (the rest of the suite sees the built-ins only)."""
    plugins.unregister_all()
    yield
    plugins.unregister_all()
    sys.modules.pop("rates_lp_nsd", None)


def predict_json(*argv: str) -> dict:
    code, out, err = invoke(["predict", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("where", ["before", "after", "equals"])
def test_plugin_file_is_accepted_before_or_after_the_command(clean, where, tmp_path, monkeypatch):
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path))
    options = ["--algo", "l3-gd", "--a", "1/2"]
    argv = {"before": ["--plugin", str(PLUGIN), "predict", *options],
            "after": ["predict", *options, "--plugin", str(PLUGIN)],
            "equals": ["predict", f"--plugin={PLUGIN}", *options]}[where]
    code, out, err = invoke(argv + ["--json"])
    assert code == 0, err
    data = json.loads(out)
    assert (data["family"], data["norm"], data["status"]) == ("lp-nsd", "lp:3", "rebuilt")
    assert (data["rate"]["exponent"], data["rate"]["log_power"]) == ("1/2", 1)  # log t / t^(1/2)
    title = "Characterizing Implicit Bias in Terms of Optimization Geometry"
    assert data["reference"] == {"short_name": "GLSS2018", "authors": ["Gunasekar", "Lee", "Soudry", "Srebro"],
                                 "year": 2018, "title": title, "arxiv": "1802.08246",
                                 "url": "https://arxiv.org/abs/1802.08246"}


def test_without_the_plugin_the_name_is_unknown_and_builtins_are_untouched(clean, tmp_path, monkeypatch):
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path))
    code, _, err = invoke(["predict", "--algo", "l3-gd", "--a", "1/2"])
    assert code == 2 and "unknown algorithm 'l3-gd'" in err
    # the same chain under its built-in name keeps its built-in family and source
    builtin = predict_json("--algo", "nsd", "--norm", "lp:3", "--a", "3/4")
    assert builtin["family"] == "nsd" and builtin["source"]["seed"] == "SIGNADAM"
    with_plugin = predict_json("--plugin", str(PLUGIN), "--algo", "nsd", "--norm", "lp:3", "--a", "3/4")
    assert with_plugin == builtin  # the plug-in claims l3-gd only
    mine = predict_json("--algo", "l3-gd", "--a", "3/4")  # loaded once, known to the process from then on
    assert mine["family"] == "lp-nsd" and mine["rate"] == builtin["rate"]  # t^(-1/4): the same template


def test_plugin_run_is_nsd_in_the_l3_norm_bit_for_bit(clean, tmp_path):
    common = ["--a", "3/4", "--steps", "300", "--checkpoints", "8", "--device", "cpu", "--no-progress"]
    code, _, err = invoke(["run", "--plugin", str(PLUGIN), "--algo", "l3-gd", *common,
                           "--out", str(tmp_path / "p.json")])
    assert code == 0, err
    code, _, err = invoke(["run", "--algo", "nsd", "--norm", "lp:3", *common, "--out", str(tmp_path / "b.json")])
    assert code == 0, err
    mine, builtin = (json.loads((tmp_path / name).read_text())["runs"][0] for name in ("p.json", "b.json"))
    assert mine["config"]["algo"] == "l3-gd" and mine["config"]["family"] == "lp-nsd"
    assert builtin["config"]["family"] == "nsd"
    for key in ("t", "gap", "margin", "log_loss", "norm"):
        assert np.array_equal(np.asarray(mine["checkpoints"][key], dtype=float),
                              np.asarray(builtin["checkpoints"][key], dtype=float), equal_nan=True), key
    code, out, err = invoke(["fit", "--from", str(tmp_path / "p.json")])
    assert code == 0, err
    assert "theorem        : lp-nsd [GLSS2018 Sec. 3.2" in out and "holds   separable" in out


def test_entry_points_are_loaded_as_installed_plugins(clean, monkeypatch, tmp_path):
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path))
    monkeypatch.syspath_prepend(str(PACKAGE))
    point = EntryPoint("lp_nsd", "rates_lp_nsd", plugin_loading.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugin_loading, "_entry_points", lambda: [point])
    data = predict_json("--algo", "l3-gd", "--a", "1")
    assert data["family"] == "lp-nsd" and (data["rate"]["exponent"], data["rate"]["log_power"]) == ("0", -1)
    (source,) = plugin_loading.loaded()
    assert (source.kind, source.name, source.value) == ("entry-point", "lp_nsd", "rates_lp_nsd")
    assert plugins.registered() == {"optimizer": ("l3-gd",), "family": ("lp-nsd",), "reference": ("GLSS2018",)}


def test_unregister_all_restores_the_builtins(clean):
    from rates.numeric.algorithms import resolve_algorithm

    plugin_loading.load_file(PLUGIN)
    assert resolve_algorithm("l3-gd").family == "lp-nsd" and "GLSS2018" in REFERENCES
    plugins.unregister_all()
    assert "l3-gd" not in OPTIMISERS and "GLSS2018" not in REFERENCES and plugin_loading.loaded() == ()
    assert resolve_algorithm("nsd", norm="lp:3").family == "nsd"


def test_a_worker_replays_the_drivers_plugins_in_a_fresh_process(clean):
    """What a Dask worker does before its first task (rates.numeric.tasks._execute_remote): load the driver's
    plug-ins from what travelled with the task -- here the file's text, read from a path that does not exist."""
    source = plugin_loading.load_file(PLUGIN)
    travelled = plugin_loading.PluginSource("file", source.name, path="/nonexistent/rates_lp_nsd.py", text=source.text)
    script = textwrap.dedent(f"""
        import pickle, sys
        from rates.numeric.tasks import _execute_remote, EngineTask
        from rates.numeric.engine import RunSpec
        source = pickle.loads({__import__("pickle").dumps(travelled)!r})
        task = EngineTask((RunSpec("l3-gd", "3/4"),), "default", None, 50, 5, "cpu")
        result = _execute_remote(task, (source,))
        print(result.runs[0].config.family, result.runs[0].config.norm)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["lp-nsd", "lp:3"]


def test_public_api_refuses_what_would_change_the_builtins(clean):
    from rates.plugins import chain, full_gradient, scale_by_schedule, steepest_direction

    with pytest.raises(ValueError, match="built-in optimiser"):
        plugins.register_optimizer("signgd", chain(full_gradient(), steepest_direction("max"), scale_by_schedule()))
    with pytest.raises(ValueError, match="built-in papers"):
        plugins.register_reference("SIGNADAM", ("Someone",), 2025, "Another paper", arxiv="0000.00000")
    with pytest.raises(ValueError, match="arXiv id or an address"):
        plugins.register_reference("NOWHERE", ("Someone",), 2025, "A paper nobody can find")
    with pytest.raises(ValueError, match="no registered paper"):
        plugins.register_family("mine", covers=lambda c: False, template=lambda c: None, source=("NOWHERE", "Thm 1"))
    with pytest.raises(ValueError, match="built-in family"):
        plugins.register_family("nsd", covers=lambda c: False, template=lambda c: None, source=("SIGNADAM", "Thm 1"))
    # a paper with a web address only (no arXiv id) is citable
    ref = plugins.register_reference("Web2024", ("A. Author",), 2024, "A paper", url="https://example.org/paper")
    assert ref.citation() == "A. Author (2024). A paper. https://example.org/paper"
    assert ref.to_json()["arxiv"] is None and REFERENCES["WEB2024"] is ref


def test_overlapping_plugin_families_are_refused_at_resolution(clean):
    from rates.numeric.algorithms import resolve_algorithm

    plugin_loading.load_file(PLUGIN)
    plugins.register_family("greedy", covers=lambda config: config.name == "l3-gd",
                            template=lambda config: None, source=("SIGNADAM", "none"))
    code, _, err = invoke(["predict", "--algo", "l3-gd", "--a", "1/2"])
    assert code == 2 and "claimed by the plug-in families lp-nsd, greedy" in err
    assert resolve_algorithm("signgd").family == "nsd"


@pytest.mark.parametrize("body, words", [
    ("raise RuntimeError('boom')", "failed to load: RuntimeError: boom"),
    ("from rates.plugins import register_optimizer\nregister_optimizer('ngd', None)", "built-in optimiser"),
    ("def broken(:", "failed to load: SyntaxError"),
])
def test_a_broken_plugin_file_is_one_line_exit_2(clean, tmp_path, body, words):
    path = tmp_path / "broken.py"
    path.write_text(body + "\n")
    code, out, err = invoke(["predict", "--plugin", str(path), "--algo", "signgd", "--a", "1/2"])
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("rates: error: --plugin: ")
    assert words in err, err
    code, _, err = invoke(["run", "--plugin", str(tmp_path / "missing.py"), "--algo", "signgd", "--a", "1/2",
                           "--steps", "10"])
    assert code == 2 and "is not a Python file (.py) that exists" in err


def test_predict_cache_keys_see_the_plugins_code(clean, tmp_path, monkeypatch):
    from cli.predict import answer_key

    options = {"algo": "l3-gd", "a": "1/2"}
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "cache"))
    before = answer_key({"algo": "signgd", "a": "1/2"})
    plugin_loading.load_file(PLUGIN)
    first = answer_key(options)
    changed = tmp_path / "rates_lp_nsd.py"
    changed.write_text(PLUGIN.read_text() + "\n# an edit\n")
    plugins.unregister_all()
    plugin_loading.load_file(changed)
    assert first is not None and answer_key(options) != first  # another plug-in text, another answer
    plugins.unregister_all()
    assert answer_key({"algo": "signgd", "a": "1/2"}) == before  # no plug-in: the key the built-ins always had


# ------------------------------------------------------------------------------------- installed package


def _new_virtualenv(where: Path) -> Path:
    """A fresh virtualenv whose site-packages also sees this interpreter's (where rates' dependencies live);
    returns its python. ``--without-pip``: pip is run from the parent's site-packages, into the new prefix."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    (Path(site) / "parent_site.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return python


@pytest.mark.slow
def test_installed_package_works_in_every_command_and_on_dask_workers(tmp_path):
    python = _new_virtualenv(tmp_path / "venv")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RATES_CACHE_DIR": str(tmp_path / "cache")}
    package = tmp_path / PACKAGE.name  # a copy: setuptools writes build/ and *.egg-info next to the sources
    shutil.copytree(PACKAGE, package)
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    str(package)], check=True, env=env, timeout=300, cwd=tmp_path)

    def rates(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), "-m", "cli.app", *argv], capture_output=True, text=True, env=env,
                              timeout=600, cwd=tmp_path)

    found = subprocess.run([str(python), "-c", "from importlib.metadata import entry_points; "
                            "print([p.value for p in entry_points(group='rates.plugins')])"],
                           capture_output=True, text=True, env=env, check=True).stdout
    assert "rates_lp_nsd" in found
    predicted = rates("predict", "--algo", "l3-gd", "--a", "1/2", "--json")
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["reference"]["arxiv"] == "1802.08246"
    run = rates("run", "--algo", "l3-gd", "--a", "3/4", "--steps", "2000", "--device", "cpu", "--no-progress",
                "--out", str(tmp_path / "run.json"))
    assert run.returncode == 0, run.stderr
    fitted = rates("fit", "--from", str(tmp_path / "run.json"), "--json")
    assert fitted.returncode == 0, fitted.stderr
    (record,) = json.loads(fitted.stdout)
    assert record["gate"]["family"] == "lp-nsd" and record["prediction"]["source"]["seed"] == "GLSS2018"
    (tmp_path / "grid.toml").write_text('[grid]\nalgo = "l3-gd"\na = ["1/2", "3/4"]\nsteps = 2000\n'
                                        'data = "default"\n')
    swept = rates("sweep", str(tmp_path / "grid.toml"), "--out", str(tmp_path / "sweep"), "--workers", "2",
                  "--runs-per-task", "1", "--no-progress", "--no-figures")
    assert swept.returncode == 0, swept.stderr
    assert "2 tasks run" in swept.stdout and swept.stdout.count("| l3-gd |") == 2
    assert "GLSS2018 = Gunasekar, Lee, Soudry, Srebro (2018)" in swept.stdout


def test_the_guide_shows_the_example_packages_own_code():
    """docs/extending.md teaches the plug-in from the example package's files, not from a sketch."""
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = guide.split("## A plug-in package", 1)[1].split("\n## ", 1)[0]
    python_block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert python_block.strip() in PLUGIN.read_text(encoding="utf-8")
    toml = (PACKAGE / "pyproject.toml").read_text(encoding="utf-8")
    for line in section.split("```toml\n", 1)[1].split("```", 1)[0].splitlines():
        assert line.startswith("#") or line in toml, line
    assert guide.index("## A plug-in package") < guide.index("## A norm kind")  # taught first


def test_the_guides_plugin_works_as_printed(clean, tmp_path, monkeypatch):
    """docs/extending.md alone is enough: its module, saved as it is printed, and its console session, run
    command by command in a fresh folder, print what the guide shows (the guide's /home/me is tmp_path)."""
    import shlex

    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = guide.split("## A plug-in package", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "rates_lp_nsd.py").write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "cache"))
    session = section.split("```console\n", 1)[1].split("```", 1)[0]
    commands = [block.split("\n", 1) for block in session.split("$ ")[1:]]
    assert [shlex.split(command)[3] for command, _ in commands] == ["predict", "run", "fit", "predict"]
    for command, shown in commands:
        argv = shlex.split(command)
        assert argv[:3] == ["rates", "--plugin", "rates_lp_nsd.py"]
        code, out, err = invoke(argv[1:])
        assert code == 0, (command, err)
        printed = out.replace(str(tmp_path), "/home/me")
        for line in shown.splitlines():
            assert line in printed, (command, line, printed)
    assert (tmp_path / "l3.json").is_file()
