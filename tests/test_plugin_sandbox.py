"""A plug-in answers only for what it was asked, says that it answered, and fails alone.

Real plug-ins are written into ``tmp_path``: files given with ``--plugin``, and an installed distribution (a
``.dist-info`` folder with an ``entry_points.txt`` on ``sys.path``, which ``importlib.metadata`` finds as it finds
a pip-installed package). The independent expectation for every built-in answer is the same command's output
with no plug-in at all: a plug-in may not change it unless the user chooses its family with ``--family``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from pathlib import Path

import pytest
from cli_invoke import invoke

from rates import plugins
from rates.numeric import plugin_loading

REFERENCE = 'register_reference("HIJ2026", ("A. Hijacker",), 2026, "Every rate is mine", arxiv="2601.00001")'
TEMPLATE = '''
def template(config):
    import sympy as sp

    from rates.plugins import BoundTemplate, NoiseTerm, PowerSumTerm, Source, alpha, gamma

    return BoundTemplate(family="{name}", title="claims everything", source=Source("HIJ2026", "Thm 1"),
                         status="rebuilt", gap_to="gamma",
                         numerator=(PowerSumTerm(sp.Integer(2), alpha, "noise"),),
                         noise=(NoiseTerm(sp.Integer(1), alpha, "curvature"),), gamma_ref=gamma,
                         assumptions=("gamma > 0",))
'''


def plugin_text(name: str, covers: str = "return True", template: str | None = None, extra: str = "",
                hypotheses: str = "()") -> str:
    """A plug-in module registering the paper HIJ2026 and the family ``name`` with the given ``covers`` body."""
    template = TEMPLATE.format(name=name) if template is None else template
    return textwrap.dedent(f"""
        import sys

        from rates.plugins import (Hypothesis, a_in_unit_interval, chain, full_batch, full_gradient,
                                   register_family, register_optimizer, register_reference, scale_by_schedule,
                                   separable, steepest_direction)

        {REFERENCE}
        """) + template + textwrap.dedent(f"""

        def covers(config):
            {covers}
        """) + "\n" + extra + "\n" + textwrap.dedent(f"""
        register_family("{name}", covers=covers, template=template, source=("HIJ2026", "Thm 1"),
                        hypotheses={hypotheses}, algorithms="everything", statement="gap <= 1 / S_1")
        """)


@pytest.fixture
def clean(tmp_path, monkeypatch):
    """A private answer cache; whatever a test registers is forgotten afterwards."""
    monkeypatch.setenv("RATES_CACHE_DIR", str(tmp_path / "cache"))
    plugins.unregister_all()
    yield
    plugins.unregister_all()
    for name in [name for name in sys.modules if name.startswith(("hijack_plugin", "rates_plugin_"))]:
        sys.modules.pop(name)


def write_plugin(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def install(tmp_path: Path, monkeypatch, text: str, distribution: str = "hijack-dist", version: str = "1.0") -> str:
    """Install ``text`` as the module ``hijack_plugin`` of the distribution ``distribution``, entry point
    ``hijack`` in the group rates.plugins; returns the label answers and errors name it by."""
    site = tmp_path / "site"
    info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[rates.plugins]\nhijack = hijack_plugin\n")
    (site / "hijack_plugin.py").write_text(text)
    monkeypatch.syspath_prepend(str(site))
    plugins.unregister_all()  # installed plug-ins are scanned once per process: the next command is a fresh one
    return f"{distribution} {version} (entry point hijack = hijack_plugin)"


BUILT_INS = [["--algo", "signgd"], ["--algo", "ngd"], ["--algo", "spectral-gd"], ["--algo", "adam"],
             ["--algo", "nsd", "--norm", "lp:3"], ["--algo", "signsgd", "--n", "8", "--batch", "4"],
             ["--algo", "muon", "--n", "8", "--batch", "2"], ["--algo", "vr-nsgd", "--n", "8", "--batch", "2"]]


def answers(*extra: str) -> list[tuple[int, str, str]]:
    return [invoke([*extra, "predict", *options, "--a", "1/2", "--gamma", "0.5", "--B", "2", "--k", "3"])
            for options in BUILT_INS]


def test_an_installed_family_that_covers_everything_does_not_answer_for_the_builtins(clean, tmp_path, monkeypatch):
    before = answers()
    assert all(code == 0 for code, _, _ in before)
    label = install(tmp_path, monkeypatch, plugin_text("hijack"))
    after = answers()
    assert after == before  # signgd, ngd, ... unchanged, byte for byte: the family was not asked
    assert plugin_loading.loaded()[0].label == label  # it was loaded all the same
    code, out, _ = invoke(["predict", "--algo", "signgd", "--a", "1/2", "--json"])
    data = json.loads(out)
    assert code == 0 and data["family"] == "nsd" and data["source"]["seed"] == "SIGNADAM" and "plugins" not in data


def test_a_family_chosen_by_name_answers_and_says_which_plugin_gave_the_answer(clean, tmp_path, monkeypatch):
    label = install(tmp_path, monkeypatch, plugin_text("hijack"))
    assert label == "hijack-dist 1.0 (entry point hijack = hijack_plugin)"
    code, out, err = invoke(["predict", "--family", "hijack", "--algo", "signgd", "--a", "1/2"])
    assert code == 0, err
    assert "algorithm   signgd (norm max, family hijack)" in out
    assert f"plug-in     family hijack and paper HIJ2026 from {label}" in out
    assert f"theorem     hijack family (plug-in {label}): gap <= 1 / S_1   [HIJ2026 Thm 1]" in out
    code, out, err = invoke(["--family", "hijack", "predict", "--algo", "signgd", "--a", "1/2", "--json"])
    data = json.loads(out)
    assert data["family"] == "hijack" and data["gate"]["plugin"] == label
    assert data["plugins"] == [{"kind": "family", "name": "hijack", "origin": label},
                               {"kind": "reference", "name": "HIJ2026", "origin": label}]
    # the choice lasts one command: the next one is answered by the built-ins again
    code, out, _ = invoke(["predict", "--algo", "signgd", "--a", "1/2", "--json"])
    assert json.loads(out)["family"] == "nsd"


@pytest.mark.parametrize("name", ["nsd", "nobody"])
def test_family_names_a_loaded_plugin_family(clean, tmp_path, name):
    path = write_plugin(tmp_path, "mine", plugin_text("mine"))
    code, out, err = invoke(["--plugin", str(path), "predict", "--family", name, "--algo", "signgd", "--a", "1/2"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"rates: error: --family: '{name}' is ") and "plug-in families: mine" in err


@pytest.mark.parametrize("covers, words", [
    ("raise RuntimeError('boom')", "covers(config) for signgd raised RuntimeError: boom"),
    ("sys.exit(0)", "covers(config) for signgd raised SystemExit(0): a plug-in must not end the process"),
    ("return None", "covers(config) for signgd returned None, not True or False"),
])
def test_a_broken_covers_is_the_plugins_error_and_never_breaks_the_builtins(clean, tmp_path, covers, words):
    before = answers()
    path = write_plugin(tmp_path, "broken", plugin_text("broken", covers=covers))
    assert answers("--plugin", str(path)) == before  # every built-in algorithm still answers, unchanged
    code, out, err = invoke(["--plugin", str(path), "predict", "--family", "broken", "--algo", "signgd", "--a", "1/2"])
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err == f"rates: error: plug-in file {path.resolve()}: family 'broken': {words}\n"


def test_a_plugins_own_optimiser_meets_its_broken_covers_without_being_asked(clean, tmp_path):
    extra = 'register_optimizer("mine-gd", chain(full_gradient(), steepest_direction("lp:3"), scale_by_schedule()))'
    path = write_plugin(tmp_path, "own", plugin_text("own", covers="raise KeyError('norm')", extra=extra))
    code, out, err = invoke(["--plugin", str(path), "predict", "--algo", "mine-gd", "--a", "1/2"])
    assert (code, out) == (2, "")
    assert err == (f"rates: error: plug-in file {path.resolve()}: family 'own': covers(config) for mine-gd raised "
                   "KeyError: 'norm'\n")


@pytest.mark.parametrize("template, words", [
    ("def template(config):\n    return None\n", "template(config) for signgd returned None, not a "
                                                  "rates.plugins.BoundTemplate"),
    ("def template(config):\n    raise ValueError('no bound')\n", "template(config) for signgd raised ValueError: "
                                                                   "no bound"),
    ("def template(config):\n    sys.exit(3)\n", "template(config) for signgd raised SystemExit(3)"),
])
def test_a_broken_template_is_the_plugins_error(clean, tmp_path, monkeypatch, template, words):
    label = install(tmp_path, monkeypatch, plugin_text("hijack", template=template))
    code, out, err = invoke(["predict", "--family", "hijack", "--algo", "signgd", "--a", "1/2"])
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"rates: error: plug-in {label}: family 'hijack': {words}"), err
    assert answers() == answers()  # and unasked, the built-ins still answer (exit 0)
    assert all(code == 0 for code, _, _ in answers())


def test_a_hypothesis_that_raises_or_answers_nonsense_is_the_plugins_error(clean, tmp_path):
    extra = textwrap.dedent("""
        def check(facts):
            raise ZeroDivisionError('gamma')


        WRONG = Hypothesis("wrong", "a hypothesis whose check fails", "HIJ2026 Thm 1", "structure", check)
        ODD = Hypothesis("odd", "a check that answers a string", "HIJ2026 Thm 1", "structure", lambda facts: "yes")
        """)
    for name, hypotheses, words in (("wrong", "(WRONG,)", "hypothesis 'wrong' raised ZeroDivisionError: gamma"),
                                    ("odd", "(ODD,)", "hypothesis 'odd' returned 'yes', not a Finding")):
        path = write_plugin(tmp_path, name, plugin_text(name, extra=extra, hypotheses=hypotheses))
        code, out, err = invoke(["--plugin", str(path), "predict", "--family", name, "--algo", "ngd", "--a", "1/2"])
        assert (code, out) == (2, "") and err.startswith(f"rates: error: plug-in file {path.resolve()}: family "
                                                         f"'{name}': {words}"), err
        plugins.unregister_all()


def test_bare_hypothesis_helpers_are_refused_when_the_plugin_loads(clean, tmp_path):
    """``hypotheses=(full_batch, separable)`` -- the helpers, not what they make -- is refused at registration,
    saying how to call them, instead of failing later inside ``predict`` (exit 3)."""
    path = write_plugin(tmp_path, "bare", plugin_text("bare", hypotheses="(full_batch, separable)"))
    code, out, err = invoke(["--plugin", str(path), "predict", "--algo", "signgd", "--a", "1/2"])
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert f"--plugin: plug-in {path} failed to load: TypeError: family 'bare': every hypothesis" in err
    assert "call full_batch(source, why)" in err


def test_a_bad_norm_of_a_plugin_optimiser_is_not_blamed_on_norm(clean, tmp_path, monkeypatch):
    extra = 'register_optimizer("odd-gd", chain(full_gradient(), steepest_direction("bogus:3"), scale_by_schedule()))'
    path = write_plugin(tmp_path, "oddnorm", plugin_text("oddnorm", extra=extra))
    code, out, err = invoke(["--plugin", str(path), "predict", "--algo", "signgd", "--a", "1/2"])
    assert (code, out) == (2, "") and not err.startswith("rates: error: --norm")
    assert err.startswith(f"rates: error: --plugin: plug-in {path} failed to load: ValueError: optimiser 'odd-gd': "
                          "steepest_direction('bogus:3'): unknown norm 'bogus:3'")
    plugins.unregister_all()
    label = install(tmp_path, monkeypatch, plugin_text("hijack", extra=extra))  # installed: not --plugin's fault
    code, out, err = invoke(["predict", "--algo", "signgd", "--a", "1/2"])
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"rates: error: plug-in {label}: failed to load (entry point group rates.plugins): "
                          "ValueError: optimiser 'odd-gd'"), err


def test_an_installed_plugin_that_exits_while_loading_is_named(clean, tmp_path, monkeypatch):
    label = install(tmp_path, monkeypatch, "import sys\nsys.exit(0)\n")
    code, out, err = invoke(["predict", "--algo", "signgd", "--a", "1/2"])
    assert (code, out) == (2, "")
    assert err == (f"rates: error: plug-in {label}: failed to load (entry point group rates.plugins): SystemExit(0): "
                   "a plug-in must not end the process\n")


def test_the_choice_of_families_travels_to_the_workers(clean, tmp_path):
    """A Dask worker replays the driver's plug-ins and its --family choice before a task."""
    path = write_plugin(tmp_path, "mine", plugin_text("mine"))
    source = plugin_loading.load_file(path)
    plugin_loading.choose_families(["mine"])
    travelled = (plugin_loading.loaded(), plugin_loading.chosen_families())
    plugins.unregister_all()
    plugin_loading.replay(*travelled)
    from rates.numeric.algorithms import resolve_algorithm

    assert plugin_loading.loaded()[0].name == source.name and resolve_algorithm("signgd").family == "mine"
    plugin_loading.replay(travelled[0], ())  # a task of a run without --family
    assert resolve_algorithm("signgd").family == "nsd"


def test_fit_and_its_table_name_the_plugin_that_gave_the_prediction(clean, tmp_path):
    from test_compare import synthetic_run

    from rates.numeric.trajectory import Trajectory, save

    example = Path(__file__).resolve().parents[1] / "examples" / "rates-lp-nsd" / "rates_lp_nsd.py"
    run = synthetic_run(lambda t: t ** -0.25, noise=0.01, algo="l3-gd", a="3/4")
    run.config = dataclasses.replace(run.config, norm="lp:3")
    path = save(Trajectory([run]), tmp_path / "l3.json")
    code, out, err = invoke(["fit", "--plugin", str(example), "--from", str(path)])
    assert code in (0, 1), err
    assert (f"theorem        : lp-nsd [GLSS2018 Sec. 3.2 (limit direction); rate rebuilt] (plug-in file {example}) -"
            in out)
    code, out, err = invoke(["table", "--plugin", str(example), "--fits", str(path), "--format", "markdown"])
    assert (f"_Answers from plug-ins: optimiser l3-gd, family lp-nsd and paper GLSS2018 from file {example}._"
            in out), out
    builtin = save(Trajectory([synthetic_run(lambda t: t ** -0.25, noise=0.01, algo="signgd", a="3/4")]),
                   tmp_path / "signgd.json")
    code, out, err = invoke(["table", "--plugin", str(example), "--fits", str(builtin), "--format", "markdown"])
    assert code == 0 and "| signgd |" in out and "plug-in" not in out  # the built-ins' rows: no plug-in named


@pytest.mark.parametrize("schedule, words", [
    (["--a", "1/2"], "deriving the rate from its template for signgd raised AttributeError"),
    (["--schedule", "eta0/((t+2)*log(t+2))"], "deriving the rate for this schedule from its template raised "
                                              "AttributeError"),
])
def test_a_malformed_template_fails_as_the_plugins_error(clean, tmp_path, schedule, words):
    """A ``BoundTemplate`` whose numerator holds a string instead of ``PowerSumTerm``s passes the type check but
    cannot be derived from: that failure is the plug-in's too (exit 2 naming it), not an internal error (3)."""
    malformed = TEMPLATE.format(name="malformed").replace('(PowerSumTerm(sp.Integer(2), alpha, "noise"),)',
                                                         '("not a power sum",)')
    path = write_plugin(tmp_path, "malformed", plugin_text("malformed", template=malformed))
    code, out, err = invoke(["--plugin", str(path), "predict", "--family", "malformed", "--algo", "signgd", *schedule])
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"rates: error: plug-in file {path.resolve()}: family 'malformed': {words}"), err
