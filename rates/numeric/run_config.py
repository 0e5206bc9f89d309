"""A run's configuration as one frozen, typed record: what the engine ran, read once and passed as itself.

The engine builds a :class:`RunConfig` for every run it steps (:func:`rates.numeric.engine.simulate`), a
Trajectory file on disk is read into one by :func:`config_from_json` (the only reader of the ``config`` object of
a run), and :func:`config_to_json` writes it back; every later stage (fit, judge, tables, figures, studies,
sweeps) reads its fields. So what a missing ``a``, a general ``schedule``, a ``data_seed`` that falls back to
``seed`` or the Adam constants of a non-Adam run mean is decided here, once.

JSON layout (the ``config`` of a run in ``rates.trajectory/1``), keys in this order::

    algo, a, eta0, seed, norm, batch, momentum, vr, [adam_beta1, adam_beta2, adam_eps], polar, [init_scale],
    [schedule], family, source, data, steps, device, dtype, data_facts, [data_seed], [task], ...

``a`` is the exact exponent of ``eta0 (t+2)^(-a)`` as text (``"1/2"``) or null for a general schedule, whose
canonical text is then ``schedule`` (:class:`rates.schedule.Schedule`); the Adam constants are present for Adam
runs only, ``init_scale`` only when W_0 is not 0, ``data_seed`` once the data draw is known and ``task`` for a
run of a study or sweep task. Keys this module does not know (written by an older or newer version, or by
hand) are kept, in their order, after the known ones. :data:`LAYOUT` is this list in code.

Version: :data:`CONFIG_VERSION` names this layout. A config without ``version`` is the layout of every file
written up to now (version 1) and is written without the key, so those files and new ones are byte for byte
alike; a later layout writes ``"version": 2`` (or more) and this reader refuses a version it does not know
(``--from``, exit 2) instead of misreading it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Optional

from rates.errors import InputError
from rates.schedule import Schedule

CONFIG_VERSION = 1
# Config keys that differ between seeds of one configuration (or say nothing about it): the one list that
# groups runs into configurations (rates.studies.fitting, rates.judge.limit_direction).
PER_SEED_KEYS = ("seed", "data_seed", "device", "dtype", "wall_s", "elapsed_s", "gamma", "data_facts")
CONFIG_REQUIRED = ("algo", "norm", "a", "eta0", "steps")
ADAM_KEYS = ("adam_beta1", "adam_beta2", "adam_eps")


class _Unrecorded:
    """The ``data_seed`` of a run whose record does not say it (files from before draws were recorded, runs
    straight from :func:`rates.numeric.engine.simulate`): distinct from a recorded ``null`` (data not drawn)."""

    def __repr__(self) -> str:
        return "UNRECORDED"

    def __reduce__(self) -> str:  # one object, also after pickling to a Dask worker and back
        return "UNRECORDED"


UNRECORDED: Any = _Unrecorded()


@dataclass(frozen=True)
class RunConfig:
    """One run's configuration. Numbers keep the type they were recorded with (an ``eta0`` of ``1`` stays an
    int), so a config written, read and written again is the same text."""

    algo: str
    schedule: Schedule  # eta_t = eta0 * f(t); the polynomial family carries its exact exponent ``a``
    eta0: float
    steps: int
    a: Optional[str] = None  # the recorded exponent text ("1/2"); None for a general schedule
    seed: Optional[int] = None  # the reshuffling stream (None: not recorded, files of old versions)
    norm: Optional[str] = None
    batch: Optional[int] = None
    momentum: Optional[float] = None
    vr: Optional[bool] = None
    adam_beta1: Optional[float] = None  # the Adam constants: None for every other algorithm
    adam_beta2: Optional[float] = None
    adam_eps: Optional[float] = None
    polar: Optional[str] = None
    init_scale: Optional[float] = None  # None: W_0 = 0
    family: Optional[str] = None
    source: Optional[str] = None  # full | minibatch | vr
    data: Optional[str] = None  # the data's name (a preset, a gaussian:/orthogonal: spec, a file)
    device: Optional[str] = None
    dtype: Optional[str] = None
    data_facts: Optional[dict] = None  # the data's constants for the hypothesis gate (B, n, d, k, ...)
    data_seed: Any = UNRECORDED  # the data draw: an int, None (not drawn) or UNRECORDED
    task: Optional[str] = None  # the study or sweep task that ran it
    extra: tuple[tuple[str, Any], ...] = field(default=())  # keys this version does not know, in file order

    # ------------------------------------------------------------------ derived views

    @property
    def general_schedule(self) -> bool:
        """A schedule outside the polynomial family (recorded as ``a = null`` and its text)."""
        return self.a is None

    @property
    def exponent(self) -> Fraction:
        """The exact ``a`` of the polynomial family (ValueError for a general schedule)."""
        if self.general_schedule:
            raise ValueError(f"{self.algo}: schedule {self.schedule.text} has no exponent a")
        return self.schedule.a

    @property
    def draw_seed(self) -> Any:
        """The seed of the data draw: ``data_seed`` where recorded, else ``seed`` (files written before draws were
        recorded drew their data with the run's seed)."""
        return self.seed if self.data_seed is UNRECORDED else self.data_seed

    @property
    def recorded_data_seed(self) -> Optional[int]:
        """``data_seed`` as recorded, None where it is not."""
        return None if self.data_seed is UNRECORDED else self.data_seed

    def seed_or(self, fallback: Any) -> Any:
        """The reshuffling seed, or ``fallback`` (a run's index) where none is recorded."""
        return fallback if self.seed is None else self.seed

    @property
    def adam(self) -> bool:
        """An Adam run: its constants are recorded (and a momentum of 0.0 beside them is not a momentum)."""
        return self.adam_beta1 is not None

    @property
    def deterministic(self) -> bool:
        """Full-batch runs from W_0 = 0 use no random numbers: their reshuffling seed changes nothing (files
        written before ``source`` was recorded: no batch, and a family whose full-batch steps are exact)."""
        if self.source is not None:
            return self.source == "full"
        return self.batch is None and self.family in ("nsd", "adam", "momentum")

    @property
    def recorded_n(self) -> Optional[int]:
        """The data's sample count as the run recorded it (None where the file predates recorded data facts)."""
        facts = self.data_facts if isinstance(self.data_facts, dict) else {}
        return facts.get("n", self.recorded("n"))

    @cached_property
    def algorithm(self) -> Any:
        """The resolved algorithm (:meth:`algorithm_for` the recorded ``n``), decided once per config: at the edge
        that made it (the engine passes the one it ran, :func:`config_from_json` resolves a file's) and read from
        then on. Raises InputError where the recorded options name no algorithm this version knows (a plug-in not
        loaded, an old name)."""
        return self.algorithm_for(self.recorded_n)

    def algorithm_for(self, n: Optional[int]) -> Any:
        """:func:`rates.numeric.algorithms.resolve_algorithm` on the recorded options, with the data's ``n``."""
        from rates.numeric.algorithms import ALGORITHMS, resolve_algorithm

        name = str(self.algo)
        # The engine records momentum 0.0 for Adam, whose betas are its own (resolve_algorithm refuses both).
        momentum = None if name in ALGORITHMS and ALGORITHMS[name].adam else self.momentum
        return resolve_algorithm(name, norm=self.norm, n=n, batch=self.batch, momentum=momentum, vr=bool(self.vr))

    def recorded(self, name: str) -> Any:
        """The recorded JSON value of the key ``name`` (None where absent): for columns named at run time (the
        options a sweep varies) and keys of old versions."""
        return config_to_json(self).get(name)

    def configuration(self) -> dict[str, Any]:
        """The JSON fields that identify the configuration: the record without :data:`PER_SEED_KEYS`."""
        return {k: v for k, v in config_to_json(self).items() if k not in PER_SEED_KEYS}

    def configuration_value(self, name: str) -> Any:
        """A column of a configuration's row: the recorded value, None for a per-seed key."""
        return self.configuration().get(name)

    def configuration_key(self) -> str:
        """Runs with equal keys differ only by seed: one configuration."""
        return json.dumps(self.configuration(), sort_keys=True, default=str)

    def with_draw(self, data_seed: Optional[int], task: Optional[str] = None) -> RunConfig:
        """The same config with its data draw (and the task that ran it) recorded."""
        drawn = dataclasses.replace(self, data_seed=data_seed, task=self.task if task is None else task)
        if "algorithm" in self.__dict__:  # the same options: the algorithm resolved for them stays resolved
            drawn.__dict__["algorithm"] = self.__dict__["algorithm"]
        return drawn


# ---------------------------------------------------------------------------------------------- JSON


# The layout of a written config, key by key in file order, with when the key is written: always, only when it
# is set (not None), only for a general schedule (its text), or only when the data draw is recorded. A new option
# is a RunConfig field and a row here; config_from_json reads it by its field name.
ALWAYS, WHEN_SET, WHEN_GENERAL, WHEN_RECORDED = "always", "when set", "when general", "when recorded"
LAYOUT: tuple[tuple[str, str], ...] = (
    ("algo", ALWAYS), ("a", ALWAYS), ("eta0", ALWAYS), ("seed", ALWAYS), ("norm", ALWAYS), ("batch", ALWAYS),
    ("momentum", ALWAYS), ("vr", ALWAYS), *((name, WHEN_SET) for name in ADAM_KEYS), ("polar", ALWAYS),
    ("init_scale", WHEN_SET), ("schedule", WHEN_GENERAL), ("family", ALWAYS), ("source", ALWAYS), ("data", ALWAYS),
    ("steps", ALWAYS), ("device", ALWAYS), ("dtype", ALWAYS), ("data_facts", ALWAYS),
    ("data_seed", WHEN_RECORDED), ("task", WHEN_SET))
_KNOWN = frozenset(name for name, _ in LAYOUT) | {"version"}


def config_to_json(config: RunConfig) -> dict[str, Any]:
    """The ``config`` object of a run in a Trajectory file (module docstring and :data:`LAYOUT`)."""
    out: dict[str, Any] = {}
    for name, when in LAYOUT:
        if when == WHEN_GENERAL:
            if config.general_schedule:
                out[name] = config.schedule.text
            continue
        value = getattr(config, name)
        if when == ALWAYS or (when == WHEN_SET and value is not None) or (
                when == WHEN_RECORDED and value is not UNRECORDED):
            out[name] = value
    out.update(config.extra)
    return out


def config_from_json(raw: Any, where: str = "config") -> RunConfig:
    """Read a run's ``config`` object: checked once here (InputError naming ``--from``: the keys every
    version records, the schedule, ``eta0``), every field typed from then on.

    The schedule is ``schedule`` (its text) where ``a`` is null, else the polynomial family's ``a`` (every file
    written before schedules were expressions); a file holding both is read by its ``a``."""
    if not isinstance(raw, dict) or any(k not in raw for k in CONFIG_REQUIRED):
        raise InputError("from", f"{where} needs {', '.join(CONFIG_REQUIRED)}")
    version = raw.get("version", CONFIG_VERSION)
    if version != CONFIG_VERSION:
        raise InputError("from", f"{where}.version is {version!r}: this version of rates reads config version "
                                 f"{CONFIG_VERSION} (a newer rates wrote it; upgrade to read it)")
    general = raw["a"] is None and raw.get("schedule") is not None
    try:
        schedule = Schedule.parse(str(raw["schedule"])) if general else Schedule.polynomial(str(raw["a"]))
    except InputError as err:
        raise InputError("from", f"{where}.{'schedule' if general else 'a'}: {err.message}") from None
    eta0 = raw["eta0"]
    if not (_finite(eta0) and float(eta0) > 0):
        raise InputError("from", f"{where}.eta0 must be a finite number > 0, got {eta0!r}")
    recorded = {name: raw.get(name) for name, _ in LAYOUT if name not in ("a", "schedule", "data_seed")}
    config = RunConfig(**recorded, schedule=schedule, a=None if general else str(raw["a"]),
                       data_seed=raw.get("data_seed", UNRECORDED),
                       extra=tuple((k, v) for k, v in raw.items() if k not in _KNOWN))
    try:
        config.algorithm  # noqa: B018 - resolved here, once, so that no later stage resolves it again
    except InputError:
        pass  # a name this version does not know (a plug-in not loaded yet): resolved, or refused, where it is used
    return config


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def config_of_run(spec: Any, algorithm: Any, schedule: Schedule, batch: Optional[int], source: str, data: str,
                  steps: int, device: str, data_facts: dict) -> RunConfig:
    """The config the engine records for ``spec`` (a :class:`rates.numeric.engine.RunSpec`) resolved to
    ``algorithm`` and ``schedule`` and run on data named ``data``."""
    adam = {name: getattr(spec, name) for name in ADAM_KEYS} if algorithm.adam else {}
    config = RunConfig(algo=algorithm.name, schedule=schedule, eta0=spec.eta0, steps=int(steps),
                       a=str(schedule.a) if schedule.is_polynomial else None, seed=spec.seed, norm=algorithm.norm,
                       batch=batch, momentum=algorithm.momentum, vr=algorithm.vr, polar=spec.polar,
                       init_scale=spec.init_scale or None, family=algorithm.family, source=source, data=data,
                       device=str(device), dtype="float64", data_facts=data_facts, **adam)
    config.__dict__["algorithm"] = algorithm  # the one that ran (cached_property's slot; frozen fields untouched)
    return config

