"""Verdict tables (Markdown/LaTeX/JSON), ``rates table --fits``, figures and the quick default study."""

from __future__ import annotations

import dataclasses
import json

import pytest
from matplotlib.image import imread
from test_compare import PowerLog, synthetic_run

from cli.app import main
from rates.errors import InputError
from rates.judge.compare import judge
from rates.numeric.trajectory import Trajectory, save
from rates.output.plots import plot_fit
from rates.output.tables import latex_document
from rates.studies.default_study import DEFAULT_STUDY_CONFIGS
from rates.studies.fitting import load_fit_inputs
from rates.studies.verdict_table import verdict_table


@pytest.fixture
def two_configs(tmp_path):
    """SignGD a = 3/4 (gap ~ t^{-1/4}) in two files (one seed each) and NGD a = 3/10 (gap ~ t^{-0.9})."""
    paths = []
    for seed in (0, 1):
        run = synthetic_run(lambda t, s=seed: (1 + s) * t ** -0.25, seed=seed, noise=0.01)
        paths.append(save(Trajectory([run]), tmp_path / f"signgd_{seed}.json"))
    fast = synthetic_run(lambda t: t ** -0.9, algo="ngd", a="3/10", noise=0.01)
    fast.config = dataclasses.replace(fast.config, norm="frobenius")
    paths.append(save(Trajectory([fast]), tmp_path / "ngd.json"))
    return paths


def test_table_pools_seeds_across_files_and_compiles(two_configs, compile_latex):
    records = load_fit_inputs(two_configs)
    assert [(r.config.algo, r.seeds) for r in records] == [("signgd", [0, 1]), ("ngd", [0])]
    assert records[0].verdict.fit.slope == pytest.approx(-0.25, abs=0.01)
    # NGD at a = 3/10: bound C1/S1 + C2 S2/S1 ~ C1 t^{-7/10} + C2 t^{-3/10} (docs/theory.md sec. 4, a < 1/2): its slope
    # lies between about -0.7 and -0.3 whatever the constants, so t^{-0.9} beats every ratio -> loose
    assert records[1].prediction.rate.exponent == pytest.approx(0.3)
    envelope = records[1].verdict.envelope
    assert -0.72 < envelope.fastest < -0.6 and -0.33 < envelope.slowest < -0.28
    assert records[1].verdict.label == "loose"
    table = verdict_table(records)
    markdown = table.to_markdown()
    rows = [line for line in markdown.splitlines() if line.startswith("| signgd") or line.startswith("| ngd")]
    assert len(rows) == 2 and "loose" in rows[1] and "t^(-3/10)" in rows[1]
    assert "SIGNADAM" in rows[0]  # every predicted rate carries its source
    pdf = compile_latex(latex_document(table.to_latex()))
    assert "Overfull \\hbox" not in pdf.with_suffix(".log").read_text(errors="replace")  # fits the page
    record = json.loads(table.to_json())["rows"][0]
    assert record["verdict"]["verdict"] == records[0].verdict.label and record["replicates"]["seeds"] == [0, 1]
    assert record["replicates"]["independent"] == record["replicates"]["runs"] == 2  # distinct gaps: independent


def test_table_fits_cli(two_configs, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["table", "--format", "json", "--fits", *map(str, two_configs)])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    rows = json.loads(out)["rows"]
    assert [row["algorithm"] for row in rows] == ["signgd", "ngd"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(SystemExit) as exc:
        main(["table", "--fits", str(bad)])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.startswith("rates: error: --fits:") and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        main(["table", "--fits"])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and "give one or more Trajectory files" in err


def test_figure_shows_the_window_and_refuses_unknown_formats(tmp_path):
    run = synthetic_run(lambda t: t ** -0.5, noise=0.02)
    verdict = judge([run], PowerLog(0.5))
    png = plot_fit([run], verdict, PowerLog(0.5), tmp_path / "fit.png", "synthetic")
    image = imread(png)
    assert image.ndim == 3 and image.shape[0] > 300 and image.std() > 0.05  # a real picture, not blank
    pdf = plot_fit([run], verdict, PowerLog(0.5), tmp_path / "fit.pdf", "synthetic")
    assert pdf.read_bytes()[:5] == b"%PDF-"
    with pytest.raises(InputError):
        plot_fit([run], verdict, PowerLog(0.5), tmp_path / "fit.svg", "synthetic")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.pdf", "fit.png"]


def test_quick_default_study_writes_one_row_per_configuration(tmp_path, compile_latex, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "default", "--out", str(tmp_path), "--quick", "--data-seeds", "0", "--no-progress"])
    out, err = capsys.readouterr()
    assert exc.value.code in (0, 1), err  # 1 only if some verdict is 'violated'
    assert f"files to {tmp_path}" in out and "| algorithm | a |" in out
    rows = [line for line in (tmp_path / "table.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| algorithm")]
    assert len(rows) == len(DEFAULT_STUDY_CONFIGS) == 15
    for (algo, a), row in zip(DEFAULT_STUDY_CONFIGS, rows):
        assert row.startswith(f"| {algo} | {a} |")
    compile_latex(latex_document((tmp_path / "table.tex").read_text()), name="study")
    figures = sorted((tmp_path / "figures").glob("*.png"))
    assert len(figures) == 15
    trajectories = sorted((tmp_path / "trajectories").glob("*.json"))
    assert len(trajectories) == 15
    runs = [run for path in trajectories for run in json.loads(path.read_text())["runs"]]
    assert all(run["config"]["steps"] == run["checkpoints"]["t"][-1] for run in runs)
    assert [r.config.algo for r in load_fit_inputs(trajectories)].count("signgd") == 4


@pytest.mark.parametrize("args, option", [
    (["default", "--data-seeds", "0..x"], "--data-seeds"),
    (["default", "--seeds", "0..4"], "--seeds"),  # full batch: five reshuffling streams would be five copies
    (["nosuch"], "STUDY"),
    (["default", "--device", "tpu"], "--device"),
])
def test_report_bad_input_exits_two(tmp_path, capsys, args, option):
    with pytest.raises(SystemExit) as exc:
        main(["report", *args, "--out", str(tmp_path / "out"), "--quick"])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.startswith(f"rates: error: {option}:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
