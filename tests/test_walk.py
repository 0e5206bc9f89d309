"""Judging runs follows the data without re-reading it (scripts/walk.py): the configuration is parsed once where it
enters, so ``fit_group`` parses no schedule, data spec or algorithm name, builds each run's fact sheet once, and
enters fewer modules than before the typed configuration (15 for a SignGD run, measured with the same script on the
tree that carried configurations as dicts)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from rates.numeric.data import parse_data
from rates.numeric.engine import RunSpec, simulate
from rates.numeric.run_config import config_from_json, config_to_json
from rates.numeric.trajectory import Run
from rates.schedule import Schedule

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("walk", ROOT / "scripts" / "walk.py")
walk = sys.modules.setdefault("walk", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(walk)


def _runs(spec: RunSpec, draws=(0, 1), read_back: bool = True) -> list[Run]:
    runs = [simulate([spec], parse_data("default", seed=s), 3000, checkpoints=40, device="cpu").runs[0]
            for s in draws]
    runs = [Run(**{**run.__dict__, "config": run.config.with_draw(s)}) for run, s in zip(runs, draws)]
    if not read_back:
        return runs
    return [Run(**{**run.__dict__, "config": config_from_json(json.loads(json.dumps(config_to_json(run.config))))})
            for run in runs]


@pytest.mark.parametrize("spec", [RunSpec("signgd", "1/2"), RunSpec("ngd", schedule=Schedule.parse(
    "eta0/((t+2)*log(t+2))"))], ids=["signgd", "general-schedule"])
@pytest.mark.parametrize("read_back", [True, False], ids=["from-file", "from-engine"])
def test_judging_parses_nothing_again(spec, read_back):
    result = walk.walk_fit_groups(_runs(spec, read_back=read_back))
    assert dict(result.parsed) == {}, result.text()


def test_each_run_gets_one_fact_sheet(monkeypatch):
    from rates.studies import fitting

    calls = []
    original = fitting.facts_of
    monkeypatch.setattr(fitting, "facts_of", lambda run: calls.append(run) or original(run))
    runs = _runs(RunSpec("signgd", "1/2"), draws=(0, 1, 2))
    fitting.fit_group(runs)
    assert len(calls) == 3 and {id(r) for r in calls} == {id(r) for r in runs}


def test_a_signgd_judgement_enters_fewer_rooms_than_with_dict_configs():
    result = walk.walk_fit_groups(_runs(RunSpec("signgd", "1/2")))
    assert "rates.studies.fitting" in result.rooms and "rates.judge.compare" in result.rooms  # the walk is seen
    assert not result.rooms & {"rates.numeric.algorithms", "rates.numeric.optim.alias",
                               "rates.numeric.run_parameters", "rates.numeric.trajectory", "rates.schedule"}
    assert len(result.rooms) < 15, result.text()


def test_the_walk_counts_what_it_says():
    w = walk.Walk(stays=["rates.studies.fitting", "rates.symbolic.theorems", "rates.studies.fitting",
                         "rates.judge.compare", "rates.studies.fitting"])
    assert (len(w.rooms), w.climbs, w.returns) == (3, 2, 2)
