"""A run's configuration (rates.numeric.run_config): read once, written back byte for byte, meaning decided once.

The expected records below are the ``config`` objects that ``rates run`` wrote before the configuration was a
typed record (the engine built a dict then): the engine's record of the same runs must be that text, and a file
holding it must read and write back to it.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
from pathlib import Path

import pytest

from rates.errors import InputError
from rates.numeric.run_config import (
    CONFIG_VERSION,
    UNRECORDED,
    config_from_json,
    config_to_json,
)
from rates.schedule import Schedule

ROOT = Path(__file__).resolve().parents[1]

# written by `rates run --algo adam --a 3/4 --steps 2000 --batch 10 --data signadam` (before RunConfig)
ADAM = json.loads(
    '{"algo": "adam", "a": "3/4", "eta0": 1.0, "seed": 0, "norm": "max", "batch": 10, "momentum": 0.0, "vr": false, '
    '"adam_beta1": 0.9, "adam_beta2": 0.999, "adam_eps": 0.0, "polar": "exact", "family": "adam", '
    '"source": "minibatch", "data": "signadam", "steps": 2000, "device": "cpu", "dtype": "float64", '
    '"data_facts": {"B": 14.632294160433355, "n": 50, "d": 10, "k": 5, "orthogonal": false, '
    '"class_counts": [10, 10, 10, 10, 10]}, "data_seed": 0}')
# written by `rates run --algo ngd --schedule 'eta0/((t+2)*log(t+2))' --steps 2000` (before RunConfig)
GENERAL = json.loads(
    '{"algo": "ngd", "a": null, "eta0": 1.0, "seed": 0, "norm": "frobenius", "batch": null, "momentum": 0.0, '
    '"vr": false, "polar": "exact", "schedule": "eta0/((t + 2)*log(t + 2))", "family": "nsd", "source": "full", '
    '"data": "default", "steps": 2000, "device": "cpu", "dtype": "float64", "data_facts": {"B": 6.0971593944317135, '
    '"n": 30, "d": 5, "k": 3, "orthogonal": false, "class_counts": [10, 10, 10]}, "data_seed": 0}')
# the keys every version recorded: a file of the first versions
OLDEST = {"algo": "signgd", "norm": "max", "a": "1/2", "eta0": 1, "steps": 100, "seed": 4}


def text(record: dict) -> str:
    return json.dumps(record, indent=1)


@pytest.mark.parametrize("record", [ADAM, GENERAL], ids=["adam", "general"])
def test_a_record_reads_and_writes_back_to_the_same_text(record):
    assert text(config_to_json(config_from_json(record))) == text(record)


def test_an_old_record_is_written_in_todays_layout_and_reads_back_the_same():
    oldest = config_from_json(OLDEST)
    written = config_to_json(oldest)
    assert list(written)[:5] == ["algo", "a", "eta0", "seed", "norm"] and written["family"] is None
    assert written["eta0"] == 1 and isinstance(written["eta0"], int)  # numbers keep their recorded type
    assert config_from_json(written) == oldest


def test_unknown_keys_and_a_task_are_kept_in_their_order():
    record = {**GENERAL, "task": "0123abcd", "plugin": {"name": "toy"}, "n": 30}
    config = config_from_json(record)
    assert config.task == "0123abcd" and config.extra == (("plugin", {"name": "toy"}), ("n", 30))
    assert text(config_to_json(config)) == text(record)
    assert config.recorded("n") == 30 and config.recorded("absent") is None


def test_the_engine_records_what_the_dict_engine_recorded():
    from rates.numeric.data import parse_data
    from rates.numeric.engine import RunSpec, simulate

    adam = simulate([RunSpec("adam", "3/4", batch=10, seed=0)], parse_data("signadam", seed=0), 20, checkpoints=2,
                    device="cpu").runs[0].config.with_draw(0)
    assert text(config_to_json(adam)) == text({**ADAM, "steps": 20})
    spec = RunSpec("ngd", schedule=Schedule.parse("eta0/((2+t)*log(t+2))"))
    general = simulate([spec], parse_data("default", seed=0), 20, checkpoints=2,
                       device="cpu").runs[0].config.with_draw(0)
    assert text(config_to_json(general)) == text({**GENERAL, "steps": 20})


def test_the_schedule_is_read_once_from_a_or_from_its_text():
    assert config_from_json(ADAM).schedule == Schedule.polynomial("3/4") and not config_from_json(ADAM).general_schedule
    general = config_from_json(GENERAL)
    assert general.general_schedule and general.schedule == Schedule.parse("eta0/((t+2)*log(t+2))")
    with pytest.raises(ValueError):
        general.exponent  # noqa: B018 - a general schedule has no exponent a
    # a file holding both is read by its a (as every reader did before); its schedule text is not written back
    both = config_from_json({**ADAM, "schedule": "eta0/((t+2)*log(t+2))"})
    assert both.schedule == Schedule.polynomial("3/4") and "schedule" not in config_to_json(both)


def test_data_seed_falls_back_to_seed_only_where_it_is_not_recorded():
    oldest = config_from_json(OLDEST)
    assert oldest.data_seed is UNRECORDED and oldest.draw_seed == 4 and oldest.recorded_data_seed is None
    assert "data_seed" not in config_to_json(oldest)
    not_drawn = config_from_json({**OLDEST, "data_seed": None})  # data read from a file: no draw
    assert not_drawn.draw_seed is None and config_to_json(not_drawn)["data_seed"] is None
    assert config_from_json({**OLDEST, "data_seed": 2}).draw_seed == 2
    # a run pickled to a Dask worker and back keeps "not recorded" apart from a recorded null
    assert pickle.loads(pickle.dumps(oldest)).data_seed is UNRECORDED


def test_adam_constants_belong_to_adam_runs_only():
    adam, general = config_from_json(ADAM), config_from_json(GENERAL)
    assert adam.adam and (adam.adam_beta1, adam.adam_beta2, adam.adam_eps) == (0.9, 0.999, 0.0)
    assert not general.adam and general.adam_eps is None and "adam_eps" not in config_to_json(general)
    # Adam records momentum 0.0 beside its betas, which is no momentum: the algorithm resolves without refusal
    from rates.studies.fitting import algorithm_of

    assert algorithm_of(adam, 50).name == "adam"


def test_full_batch_is_deterministic_by_source_or_by_batch_and_family_in_old_files():
    assert config_from_json(GENERAL).deterministic and not config_from_json(ADAM).deterministic
    assert config_from_json({**OLDEST, "family": "nsd"}).deterministic  # no source recorded, no batch
    assert not config_from_json({**OLDEST, "family": "minibatch", "batch": 5}).deterministic
    assert not config_from_json(OLDEST).deterministic  # no family either: not known to be deterministic


def test_seeds_of_one_configuration_share_its_key():
    adam = config_from_json(ADAM)
    assert adam.configuration_key() == dataclasses.replace(adam, seed=9, data_seed=3, device="cuda").configuration_key()
    assert adam.configuration_key() != dataclasses.replace(adam, eta0=0.5).configuration_key()
    assert "seed" not in adam.configuration() and adam.configuration()["eta0"] == 1.0


def test_versions_the_reader_knows_and_refuses():
    assert config_from_json({**OLDEST, "version": CONFIG_VERSION}) == config_from_json(OLDEST)
    with pytest.raises(InputError) as refused:
        config_from_json({**OLDEST, "version": CONFIG_VERSION + 1}, "f.json: runs[0].config")
    assert refused.value.option == "--from" and "f.json: runs[0].config.version is 2" in refused.value.message


@pytest.mark.parametrize(("change", "message"), [
    ({"a": "3/2"}, "config.a: must be in (0, 1], got 3/2"),
    ({"a": None, "schedule": "t**"}, "config.schedule: "),
    ({"eta0": "fast"}, "config.eta0 must be a finite number > 0, got 'fast'"),
    ({"eta0": -1.0}, "config.eta0 must be a finite number > 0, got -1.0"),
])
def test_a_bad_record_is_refused_naming_its_key(change, message):
    with pytest.raises(InputError) as refused:
        config_from_json({**OLDEST, **change})
    assert refused.value.option == "--from" and refused.value.message.startswith(message)


def test_a_missing_key_is_refused():
    for key in ("algo", "norm", "a", "eta0", "steps"):
        with pytest.raises(InputError, match="config needs algo, norm, a, eta0, steps"):
            config_from_json({k: v for k, v in OLDEST.items() if k != key})


def test_fit_group_walk_parses_neither_the_schedule_nor_the_data(monkeypatch):
    """Fitting, judging and tabulating runs read the config's Schedule object and the recorded data facts: no
    schedule text is parsed and no data spec drawn again after the runs are loaded."""
    import numpy as np

    from rates.numeric import data as data_module
    from rates.numeric.trajectory import Run
    from rates.studies.default_study import run_slug
    from rates.studies.fitting import fit_record_of, group_runs
    from rates.studies.verdict_table import verdict_table

    t = np.unique(np.geomspace(1, 2000, 40).astype(np.int64))
    runs = []
    for record in (GENERAL, ADAM):
        config = config_from_json(record)
        gap = 0.5 * (t + 2.0) ** -0.5
        runs.append(Run(config=config, gamma={"value": 1.0, "norm": config.norm, "solver": "closed form",
                                              "accuracy": 1e-12},
                        t=t, gap=gap, margin=1.0 - gap, log_loss=-t.astype(float), norm=t.astype(float)))

    def refuse(*args, **kwargs):
        raise AssertionError(f"parsed again: {args}")

    monkeypatch.setattr(Schedule, "parse", refuse)
    monkeypatch.setattr(Schedule, "polynomial", refuse)
    monkeypatch.setattr(data_module, "parse_data", refuse)
    records = [fit_record_of(group) for group in group_runs(runs)]
    assert [run_slug(rec.config) for rec in records][1] == "adam_a3-4"
    table = json.loads(verdict_table(records).to_json())
    assert len(records) == 2 and table


def test_no_config_lookups_outside_the_parsing_module():
    """A run's configuration is read through RunConfig's fields: the dict look-ups of old are gone."""
    pattern = re.compile(r'config\.get\(|config\["')
    files = [path for folder in ("rates", "cli") for path in (ROOT / folder).rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in files if path.name != "run_config.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


@pytest.mark.parametrize("spec", [
    dict(algo="signgd", a="1/2"), dict(algo="nsd", a="1/2", norm="lp:3"), dict(algo="adam", a="3/4", batch=10),
    dict(algo="signsgd", a="1/2", batch=10), dict(algo="signsgd", a="1/2", batch=50),
    dict(algo="nsgd", a="3/4", batch=10, momentum=0.5), dict(algo="vr-signum", a="1/2", batch=10, momentum=0.5),
])
def test_the_algorithm_the_engine_ran_is_the_one_its_record_resolves_to(spec):
    # the engine hands its resolved algorithm to the config it records; a file read back resolves its own: both must
    # be the same algorithm (family, norm, batch, momentum, VR), or a fit of a saved run would judge another one
    from rates.numeric.data import parse_data
    from rates.numeric.engine import RunSpec, simulate

    run = simulate([RunSpec(**spec, seed=0)], parse_data("signadam" if "batch" in spec else "default", seed=0), 20,
                   checkpoints=2, device="cpu").runs[0]
    recorded = run.config.algorithm
    read_back = config_from_json(json.loads(json.dumps(config_to_json(run.config))))
    assert "algorithm" in read_back.__dict__  # resolved where the file was read, not later
    assert read_back.algorithm == recorded == run.config.algorithm_for(run.config.recorded_n)
    assert (recorded.family, recorded.batch) == (run.config.family, run.config.batch)


def test_a_replaced_config_resolves_its_own_algorithm():
    config = config_from_json(ADAM)
    other = dataclasses.replace(config, algo="signgd", adam_beta1=None, adam_beta2=None, adam_eps=None, batch=None)
    assert config.algorithm.name == "adam" and other.algorithm.name == "signgd"
