"""``rates tightness``: reproducible from its seed, scores with the comparator, bad input is exit 2."""

import json

import numpy as np
import pytest

from cli.app import main
from rates.judge.compare import judge
from rates.judge.tightness import search_worst_rate
from rates.numeric.algorithms import resolve_algorithm
from rates.numeric.data import Dataset
from rates.numeric.engine import RunSpec, simulate
from rates.symbolic.theorems import predict


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.mark.parametrize("argv,option", [(["--budget", "0"], "--budget"), (["--steps", "500"], "--steps"),
                                         (["--a", "1.5"], "--a")])
def test_bad_input_is_one_line_exit_2(capsys, argv, option):
    args = ["tightness", "--algo", "signgd"] + (["--a", "1/2"] if "--a" not in argv else []) + argv
    code, out, err = _run(args, capsys)
    assert code == 2 and out == "" and err.strip().startswith(f"rates: error: {option}")


def test_search_is_reproducible_and_its_score_is_the_comparators(capsys):
    first = search_worst_rate("signgd", "1/2", budget=2, seed=3, steps=12000)
    second = search_worst_rate("signgd", "1/2", budget=2, seed=3, steps=12000)
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())
    worst = first.worst
    if worst is None:
        pytest.skip("no decided dataset in this tiny budget")
    # independent route: run the worst dataset again and judge it directly
    run = simulate([RunSpec("signgd", "1/2")], Dataset(np.array(worst.H), np.array(worst.y), worst.k, "x"), 12000,
                   checkpoints=120, device="cpu").runs[0]
    config = resolve_algorithm("signgd", None, n=len(worst.y), batch=None, momentum=None, vr=False)
    verdict = judge([run], predict(config, "1/2"), exponent=0.5)
    assert -verdict.fit.slope == pytest.approx(worst.exponent, abs=1e-12)
    assert verdict.label == worst.label
