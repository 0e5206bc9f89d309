"""``rates predict`` through the CLI: the acceptance numbers, text output provenance, and bad input."""

import json

import pytest

from cli.app import main


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(["predict", *argv])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def predict_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("argv,exponent,log_power,best_a", [
    (["--algo", "signgd", "--a", "1/2"], "1/2", 1, "1/2"),
    (["--algo", "signgd", "--a", "0.3"], "3/10", 0, "1/2"),
    (["--algo", "signgd", "--a", "3/4"], "1/4", 0, "1/2"),
    (["--algo", "signgd", "--a", "1"], "0", -1, "1/2"),
    (["--algo", "adam", "--a", "2/3"], "1/3", 1, "2/3"),
    (["--algo", "adam", "--a", "1/2"], "1/4", 0, "2/3"),
    (["--algo", "adam", "--a", "4/5"], "1/5", 0, "2/3"),
    (["--algo", "nsd", "--norm", "schatten:3", "--a", "0.5"], "1/2", 1, "1/2"),
    (["--algo", "muon", "--a", "0.3", "--n", "8", "--batch", "2"], "3/10", 0, "1/2"),
    (["--algo", "nsgd", "--a", "3/4", "--n", "8", "--batch", "4"], "1/4", 0, "1/2"),
    (["--algo", "vr-signsgd", "--a", "1", "--n", "8", "--batch", "2"], "0", -1, "1/2"),
    (["--algo", "signsgd", "--a", "1/2", "--vr", "--momentum", "0.9"], "1/2", 1, "1/2"),
])
def test_acceptance_exponents(capsys, argv, exponent, log_power, best_a):
    data = predict_json(capsys, *argv)
    assert (data["rate"]["exponent"], data["rate"]["log_power"], data["best_a"]) == (exponent, log_power, best_a)
    assert set(data["thresholds"]) == {"t0", "t1"} and set(data["source"]) == {"seed", "theorem"}


def test_gap_to_differs_between_families(capsys):
    assert predict_json(capsys, "--algo", "signsgd", "--a", "1/2")["gap_to"] == "gamma_eff"
    assert predict_json(capsys, "--algo", "signum", "--a", "1/2")["gap_to"] == "gamma_eff"
    assert predict_json(capsys, "--algo", "vr-signum", "--a", "1/2")["gap_to"] == "gamma"
    assert predict_json(capsys, "--algo", "cd", "--a", "1/2")["gap_to"] == "gamma"


def test_text_output_names_source_status_and_numeric_thresholds(capsys):
    code, out, _ = run(capsys, "--algo", "ngd", "--a", "1/2", "--gamma", "0.5", "--B", "0.5", "--k", "3", "--n", "8",
                       "--eta0", "0.1")
    assert code == 0
    assert "SIGNADAM Thm 5.3" in out and "[given]" in out and "[rebuilt]" in out
    assert "log t / t^(1/2)" in out and r"\log t / t^{1/2}" in out
    t0_line = next(line for line in out.splitlines() if line.startswith("t0"))
    assert "= " in t0_line and "ceiling" in t0_line


@pytest.mark.parametrize("argv,option", [
    (["--algo", "signgd", "--a", "0"], "--a"),
    (["--algo", "signgd", "--a", "1.5"], "--a"),
    (["--algo", "signum", "--a", "1/2", "--momentum", "1"], "--momentum"),
    (["--algo", "signsgd", "--a", "1/2", "--n", "100", "--batch", "7"], "--batch"),
    (["--algo", "sgd", "--a", "1/2"], "--algo"),
    (["--algo", "nsd", "--norm", "lp:0.5", "--a", "1/2"], "--norm"),
    (["--algo", "nsd", "--norm", "weird", "--a", "1/2"], "--norm"),
    (["--algo", "signgd", "--a", "abc"], "--a"),
])
def test_bad_input_exits_2_with_one_line_naming_the_option(capsys, argv, option):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rates: error: ") and option in lines[0]


QUESTIONS = [
    ["--algo", "signgd", "--a", "1/2"],
    ["--algo", "signgd", "--a", "1/2", "--json"],
    ["--algo", "signgd", "--a", "0.5"],  # the same a spelt otherwise: its own entry, the same rate
    ["--algo", "adam", "--a", "2/3", "--gamma", "0.5", "--B", "2", "--k", "3"],
    ["--algo", "nsd", "--norm", "spectral", "--a", "1", "--json"],
    ["--algo", "signum", "--momentum", "0.5", "--a", "3/4", "--gamma", "0.25"],
    ["--algo", "signsgd", "--batch", "1", "--n", "6", "--a", "1/2"],  # per-sample: a direction, no rate
    ["--algo", "nsgd", "--batch", "2", "--n", "6", "--a", "1/3", "--json"],
]


def test_saved_answers_are_the_derived_answers(capsys, monkeypatch, own_rates_cache):
    """Every question asked twice: the first answer is derived and saved, the second read back without
    deriving; both equal an answer derived with the cache off. Eight questions share one cache, so answers
    filed under a wrong key would show up as a mismatch."""
    import cli.predict

    fresh = {}
    with monkeypatch.context() as patch:
        patch.setenv("RATES_CACHE_DIR", "off")
        for argv in QUESTIONS:
            code, fresh[tuple(argv)], err = run(capsys, *argv)
            assert code == 0, err
    assert not list(own_rates_cache.rglob("*.json"))
    for argv in QUESTIONS:
        assert run(capsys, *argv) == (0, fresh[tuple(argv)], "")
    assert len(list((own_rates_cache / cli.predict.ANSWERS).glob("*.json"))) == len(QUESTIONS)
    with monkeypatch.context() as patch:
        patch.setattr(cli.predict, "derive", lambda **options: pytest.fail(f"derived again: {options}"))
        for argv in QUESTIONS:
            assert run(capsys, *argv) == (0, fresh[tuple(argv)], "")
    assert json.loads(fresh[("--algo", "signgd", "--a", "1/2", "--json")])["rate"]["exponent"] == "1/2"


def test_refusals_and_data_files_are_never_saved(capsys, own_rates_cache, tmp_path):
    code, _, err = run(capsys, "--algo", "signgd", "--a", "2")
    assert code == 2 and "--a" in err
    code, _, err = run(capsys, "--algo", "signgd", "--a", "2")  # refused again, not answered from a cache
    assert code == 2 and "--a" in err
    code, out, err = run(capsys, "--algo", "signsgd", "--batch", "1", "--a", "1/2", "--data", "orthogonal-imbalanced")
    assert code == 0 and "M/||M||" in out, err
    import cli.predict

    # the data's content is not in an answer's key: no answer saved (its max margins are, keyed by its bytes)
    assert not list((own_rates_cache / cli.predict.ANSWERS).glob("*.json"))
