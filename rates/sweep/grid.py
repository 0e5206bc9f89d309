"""A ``[grid]`` TOML table of ``rates run`` options -> validated configurations -> batched engine tasks.

Setting
    Each key of ``[grid]`` is a ``rates run`` option (``algo``, ``a`` or ``schedule``, ``eta0``, ``steps``, ``data``,
    ``batch``, ``momentum``, ``vr``, ``seed``, ``device``, ``polar``, ``checkpoints``, ``adam-beta1``,
    ``adam-beta2``, ``adam-eps``; ``adam_beta1`` is accepted for ``adam-beta1``). A list means "vary", a
    scalar "fixed"; the configurations are the Cartesian product, every other option at ``rates run``'s
    default. ``seed`` is, as in ``rates run``, both the data draw and the reshuffling seed. The string
    ``"none"`` stands for an omitted optional option (``batch = ["none", 10]``: full batch and b = 10).
    ``schedule`` (expressions in ``t`` and ``eta0``, :class:`rates.schedule.Schedule`) replaces ``a``: a grid
    gives one of the two.

Algorithm
    Every cell is converted by ``rates run``'s own click parameter (a ``converters`` mapping the CLI
    passes in), then every configuration goes through the validators ``rates run`` calls before its first
    step (:func:`rates.symbolic.schedules.parse_exponent`, :func:`rates.numeric.data.parse_data`,
    :func:`rates.numeric.engine.resolve_spec`), so a bad grid is refused before any work with ``rates run``'s
    message plus the grid key and value. Configurations are then grouped by (recipe, data, seed, steps,
    checkpoints, device) -- the runs one engine call can advance together -- and each group is cut into
    tasks of at most ``runs_per_task`` runs.

Guarantee
    A configuration's :attr:`Configuration.key` depends only on its normalised options (``a = 0.5`` and
    ``a = "1/2"`` are one configuration), so a grid's identity (:func:`grid_digest`) is its set of
    configurations, and a resumed sweep recognises finished work whatever the order of keys or values.

Reference
    TOML 1.0 (``tomllib``, Python >= 3.11; the ``tomli`` backport on 3.10).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from rates.errors import InputError
from rates.numeric import run_parameters
from rates.numeric.engine import RunSpec, resolve_device, resolve_spec
from rates.numeric.recipe import Recipe
from rates.numeric.tasks import EngineTask
from rates.schedule import Schedule
from rates.symbolic.schedules import parse_exponent

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

GRID_OPTION = "GRID"
# the run parameters a grid may vary (rates.numeric.run_parameters, the one registry of them)
GRID_KEYS = run_parameters.GRID_KEYS
REQUIRED_KEYS = run_parameters.REQUIRED
# grid key -> RunSpec field; the other keys (data, steps, checkpoints, device) describe the task
SPEC_FIELDS = {key: key.replace("-", "_") for key in GRID_KEYS
               if key.replace("-", "_") in {field.name for field in dataclasses.fields(RunSpec)}}
TASK_KEYS = tuple(key for key in GRID_KEYS if key not in SPEC_FIELDS)
REFUSED_KEYS = {
    "out": "the sweep writes one Trajectory per task under --out DIR/trajectories",
    "seeds": "vary seed instead (seed = [0, 1, 2]); each seed is a data draw and a reshuffling seed, as in rates run",
}

# converters: grid key -> function(value) returning the converted value or raising InputError naming the
# option (cli/sweep.py builds them from the click parameters of ``rates run``); defaults: key -> default.
Converter = Callable[[Any], Any]


@dataclass(frozen=True)
class Configuration:
    """One point of the grid: normalised options, the engine spec and the group it can be batched in."""

    options: tuple[tuple[str, Any], ...]
    spec: RunSpec
    data: str
    data_seed: int
    steps: int
    checkpoints: int
    device: str
    recipe: Recipe
    shape: tuple[int, int, int] = (1, 2, 1)  # the data's (n, k, d), for the budget estimate

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(dict(self.options), sort_keys=True).encode()).hexdigest()[:20]

    @property
    def group(self) -> tuple:
        return (self.recipe, self.data, self.data_seed, self.steps, self.checkpoints, self.device)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.options)


def load_grid(path: str | os.PathLike) -> dict[str, Any]:
    """The ``[grid]`` table of a TOML file; InputError naming GRID for a missing file, bad TOML, no table."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as err:
        raise InputError(GRID_OPTION, f"cannot read {p}: {err.strerror}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InputError(GRID_OPTION, f"{p}: not valid TOML ({' '.join(str(err).split())})") from None
    extra = sorted(k for k in document if k != "grid")
    if extra:
        raise InputError(GRID_OPTION, f"{p}: unknown top-level key(s) {', '.join(extra)}; put options in [grid]")
    grid = document.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise InputError(GRID_OPTION, f"{p}: needs a non-empty [grid] table of rates run options")
    return grid


def _canonical_key(key: str, where: str) -> str:
    name = key.strip().lstrip("-").replace("_", "-")
    if name in REFUSED_KEYS:
        raise InputError(GRID_OPTION, f"{where}: key {key!r} is not a sweep option: {REFUSED_KEYS[name]}")
    if name not in GRID_KEYS:
        raise InputError(GRID_OPTION, f"{where}: unknown key {key!r}; known: {', '.join(GRID_KEYS)}")
    return name


def _cell(key: str, value: Any, where: str) -> str:
    return f"[{where}: {key} = {json.dumps(value)}]"


def _reraise(err: InputError, key: str, value: Any, where: str) -> InputError:
    return InputError(err.option, f"{err.message} {_cell(key, value, where)}")


def normalise_grid(grid: Mapping[str, Any], converters: Mapping[str, Converter], defaults: Mapping[str, Any],
                   where: str = "grid") -> dict[str, list[Any]]:
    """Every key canonical, every cell converted by ``rates run``'s parameter; missing keys at their default.

    Raises InputError on an unknown or refused key, an empty list, a nested value, a repeated value or a
    cell its converter refuses; the message names the key and the value.
    """
    columns: dict[str, list[Any]] = {}
    for raw_key, raw_value in grid.items():
        key = _canonical_key(raw_key, where)
        if key in columns:
            raise InputError(GRID_OPTION, f"{where}: key {key!r} is given twice (as {raw_key!r})")
        cells = raw_value if isinstance(raw_value, list) else [raw_value]
        if not cells:
            raise InputError(GRID_OPTION, f"{where}: key {key!r} is an empty list; give at least one value")
        converted = []
        for cell in cells:
            if isinstance(cell, (list, dict)) or not isinstance(cell, (str, int, float, bool)):
                raise InputError(GRID_OPTION, f"{where}: key {key!r} holds {json.dumps(cell, default=str)}; "
                                 "cells must be strings, numbers or booleans")
            value = None if isinstance(cell, str) and cell.strip().lower() == "none" and defaults.get(key, 0) is None \
                else _convert(key, cell, converters, where)
            if key == "a":
                value = str(_checked(lambda value=value: parse_exponent(value, "a"), key, cell, where))
            if key == "schedule" and value is not None:  # one spelling per schedule: its canonical text
                value = _checked(lambda value=value: Schedule.parse(value, "schedule"), key, cell, where).text
            if key in run_parameters.CASELESS_GRID_KEYS and value is not None:  # read, and spelled, as rates run does
                value = _checked(lambda value=value, name=key.replace("-", "_"): run_parameters.check(name, value),
                                 key, cell, where)
            value = _canonical_value(key, value)
            if value in converted:
                raise InputError(GRID_OPTION, f"{where}: key {key!r} repeats the value {json.dumps(cell)}")
            converted.append(value)
        columns[key] = converted
    if "a" in columns and "schedule" in columns:
        raise InputError(GRID_OPTION, f"{where}: give either 'a' or 'schedule', not both (a polynomial schedule is "
                                      "eta0*(t+2)**(-a))")
    for key in REQUIRED_KEYS:
        if key == "a" and "schedule" in columns:
            continue
        if key not in columns:
            raise InputError(f"--{key}", f"{where}: the grid must give {key!r} (rates run requires --{key})")
    for key in GRID_KEYS:
        columns.setdefault(key, [defaults.get(key)])
    return {key: columns[key] for key in GRID_KEYS}


def _canonical_value(key: str, value: Any) -> Any:
    """One spelling per value (the names of :data:`rates.numeric.run_parameters.CASELESS_GRID_KEYS` are already
    in lower case): a data file as its absolute path (``data.csv`` and ``/home/me/data.csv`` are the same data,
    wherever the sweep is started from)."""
    if not isinstance(value, str):
        return value
    if key == "data":
        path = Path(value).expanduser()
        if path.suffix.lower() in (".npz", ".csv") and path.is_file():
            return str(path.resolve())
    return value


def _convert(key: str, cell: Any, converters: Mapping[str, Converter], where: str) -> Any:
    return _checked(lambda: converters[key](cell), key, cell, where)


def _checked(call: Callable[[], Any], key: str, cell: Any, where: str) -> Any:
    try:
        return call()
    except InputError as err:
        raise _reraise(err, key, cell, where) from None


def expand(columns: Mapping[str, Sequence[Any]], where: str = "grid", check_device: bool = True) -> list[Configuration]:
    """The Cartesian product of ``columns`` (from :func:`normalise_grid`), each validated as ``rates run``
    validates its options before the first step."""
    from rates import budget
    from rates.numeric.data import parse_data

    keys = list(columns)
    count = math.prod(len(columns[k]) for k in keys)
    # before any data are drawn: the configurations' records alone must fit (the full estimate comes later)
    budget.check_count(count, "GRID", checkpoints=min((int(c) for c in columns.get("checkpoints", [2])
                                                       if isinstance(c, int)), default=2),
                       what="configuration(s)")
    datasets: dict[tuple[str, int], Any] = {}
    devices: set[str] = set()
    configurations = []
    for values in itertools.product(*(columns[k] for k in keys)):
        options = dict(zip(keys, values))
        if options.get("schedule") is None:  # the polynomial family's configurations keep their keys
            options.pop("schedule", None)

        def check(call: Callable[[], Any], option_key: Optional[str] = None, options: dict = options) -> Any:
            try:
                return call()
            except InputError as err:
                key = option_key or err.option.lstrip("-").replace("_", "-")
                if key not in options:  # e.g. --n: name the whole configuration
                    raise InputError(err.option, f"{err.message} [{where}: configuration "
                                     f"{', '.join(f'{k}={json.dumps(v)}' for k, v in options.items())}]") from None
                raise _reraise(err, key, options[key], where) from None

        steps, checkpoints = options["steps"], options["checkpoints"]
        for name in ("steps", "checkpoints"):  # checked as rates run checks them, before the data are drawn
            check(lambda name=name, options=options: run_parameters.check(name, options[name]))
        if check_device and options["device"] not in devices:
            check(lambda options=options: resolve_device(options["device"]))
            devices.add(options["device"])
        data_key = (options["data"], options["seed"])
        if data_key not in datasets:
            datasets[data_key] = check(lambda options=options: parse_data(options["data"], seed=options["seed"]),
                                       "seed" if run_parameters.PARAMETERS["seed"].accepts(options["seed"]) is None
                                       else "data")
        fields = {field: options[key] for key, field in SPEC_FIELDS.items() if key in options}
        if fields.get("schedule") is not None:  # a polynomial schedule becomes its a (RunSpec.__post_init__)
            fields["schedule"] = Schedule.parse(fields["schedule"])
        spec = RunSpec(**fields)
        resolved = check(lambda spec=spec, data_key=data_key: resolve_spec(spec, datasets[data_key].n))
        configurations.append(Configuration(
            options=tuple(sorted(options.items())), spec=spec, data=options["data"], data_seed=options["seed"],
            steps=steps, checkpoints=checkpoints, device=options["device"], recipe=resolved.recipe,
            shape=(datasets[data_key].n, datasets[data_key].k, datasets[data_key].d)))
    return configurations


def grid_digest(configurations: Sequence[Configuration]) -> str:
    """The grid's identity: a digest of its sorted configuration keys."""
    keys = sorted(c.key for c in configurations)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:20]


def plan_tasks(configurations: Sequence[Configuration], runs_per_task: int = 32) -> list[tuple[EngineTask, list[str]]]:
    """Batched engine tasks for ``configurations`` and, per task, the keys of its configurations in run order.

    Groups keep the order of their first configuration; tasks of dearer recipes are not reordered here.
    """
    if runs_per_task < 1:
        raise InputError("runs_per_task", f"must be a positive integer, got {runs_per_task}")
    groups: dict[tuple, list[Configuration]] = {}
    for configuration in configurations:
        groups.setdefault(configuration.group, []).append(configuration)
    tasks = []
    for members in groups.values():
        for start in range(0, len(members), runs_per_task):
            chunk = members[start:start + runs_per_task]
            first = chunk[0]
            label = f"{first.spec.algo} data={first.data} seed={first.data_seed} ({len(chunk)} runs)"
            task = EngineTask(specs=tuple(c.spec for c in chunk), data=first.data, data_seed=first.data_seed,
                              steps=first.steps, checkpoints=first.checkpoints, device=first.device, label=label)
            tasks.append((task, [c.key for c in chunk]))
    return tasks
