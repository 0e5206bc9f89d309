"""The parameters of a linear run and the values each may take, each checked by one function.

``rates run`` and ``rates fit`` (their options), ``rates sweep`` (the cells of a grid), ``rates report`` (the
options it shares with ``rates run``) and the engine (:class:`rates.numeric.engine.RunSpec`) all check a value
through :func:`check`, so a bad value gets one message wherever it is given: one line naming the option and
what it must be (``--steps: must be a positive integer, got 0``; a sweep adds the grid key and cell). The
caller passes its own spelling of the option (``option=``) when it differs from the parameter's flag.

:data:`PARAMETERS` is the registry: every parameter of a run with what it accepts (first those a sweep grid
may vary, in the grid's order). A parameter whose check needs more than its own value is checked where that
knowledge lives and says so in ``checked_by``: the algorithm and its norm against the algorithm registry
(:func:`rates.numeric.algorithms.resolve_algorithm`), ``data`` by its parser
(:func:`rates.numeric.data.parse_data`), ``batch`` dividing n once the data are known. Which parameters a
sweep grid may vary (:data:`GRID_KEYS`) and which a run requires (:data:`REQUIRED`) are read off the registry.

No torch, numpy or sympy here: ``rates --help`` and the CLI's first checks import this module.

>>> check("steps", 10), check("device", "CUDA:1"), check("polar", "Exact"), check("momentum", None)
(10, 'cuda:1', 'exact', None)
>>> check("adam_beta1", 1.5)
Traceback (most recent call last):
    ...
rates.errors.InputError: --adam-beta1: must be in [0, 1), got 1.5
>>> check("device", "gpu")
Traceback (most recent call last):
    ...
rates.errors.InputError: --device: must be auto, cpu, cuda or cuda:I, got 'gpu'
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from rates.errors import InputError

# the steppers of rates.numeric.engine (docs/design.md): auto picks fused on the CPU (gemm for full-batch runs on
# large data sets), graph on cuda
ENGINES = ("auto", "fused", "gemm", "torch", "graph")
# how a spectral steepest direction takes the polar factor: an SVD, or Muon's Newton-Schulz iteration
POLAR_METHODS = ("exact", "newton-schulz")
# the device names torch is asked for; cuda:I picks one GPU
DEVICES = ("auto", "cpu", "cuda")


def english_or(names) -> str:
    """``a, b or c``: a list of allowed values as messages and help texts say them."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _keep_if(test: Callable[[Any], bool]) -> Callable[[Any], Any]:
    return lambda value: value if test(value) else None


def _integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# the widest integer numpy and torch hold (seeds, batch sizes); a step count or checkpoint count also passes through
# float64 (log-spaced checkpoint times, JSON readers), exact for integers up to 2^53
INT64_MAX = 2**63 - 1
FLOAT_EXACT_MAX = 2**53


def _integer_in(low: int, high: int) -> Callable[[Any], Any]:
    return _keep_if(lambda v: _integer(v) and low <= v <= high)


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _device(value: Any) -> Optional[str]:
    key = str(value)
    return key if key in DEVICES or re.fullmatch(r"cuda:\d+", key) else None


def _choice(choices: tuple[str, ...]) -> Callable[[Any], Optional[str]]:
    return lambda value: value if value in choices else None


@dataclass(frozen=True)
class RunParameter:
    """One parameter of a run.

    ``name`` is the library's (a :class:`~rates.numeric.engine.RunSpec` field or a ``simulate`` argument;
    ``adam_beta1``), its flag follows from it (``--adam-beta1``) and its grid key too (``adam-beta1``).
    ``allowed`` says what a value must be, as the message says it after "must be"; ``accepts`` returns the
    value to use or ``None`` to refuse it. ``optional``: ``None`` means "not given" and is accepted. A parameter
    with ``accepts=None`` is checked by ``checked_by`` instead. ``caseless``: its values are names whose case
    cannot matter (``CPU``, ``Exact``): every caller reads them as :meth:`spelled` writes them, lower case,
    ``rates run``'s options and a sweep grid's cells alike.
    """

    name: str
    allowed: str = ""
    accepts: Optional[Callable[[Any], Any]] = None
    optional: bool = False
    checked_by: str = ""
    in_grid: bool = True  # a sweep grid may vary it (the others are refused or fixed by the sweep)
    required: bool = False  # rates run needs it (no default)
    caseless: bool = False

    @property
    def grid_key(self) -> str:
        return self.name.replace("_", "-")

    def spelled(self, value: Any) -> Any:
        """The one spelling of ``value`` (``" Exact "`` -> ``"exact"`` for a caseless parameter)."""
        return value.strip().lower() if self.caseless and isinstance(value, str) else value

    def check(self, value: Any, option: Optional[str] = None) -> Any:
        spelled = self.spelled(value)
        if self.accepts is None or (self.optional and value is None):
            return spelled
        accepted = self.accepts(spelled)
        if accepted is None:  # the message quotes the value as given
            shown = repr(value) if isinstance(value, str) else value
            raise InputError(option or self.name, f"must be {self.allowed}, got {shown}")
        return accepted


_REGISTRY_CHECKED = "rates.numeric.algorithms.resolve_algorithm (the algorithm registry)"

PARAMETERS: dict[str, RunParameter] = {p.name: p for p in (
    RunParameter("algo", checked_by=_REGISTRY_CHECKED, required=True, caseless=True),
    RunParameter("a", "in (0, 1]", checked_by="rates.schedule.parse_exponent_fraction", required=True),
    RunParameter("schedule", checked_by="rates.schedule.Schedule.parse (an expression in t and eta0, instead of a)",
                 optional=True),
    RunParameter("eta0", "a positive number", _keep_if(lambda v: _real(v) and v > 0)),
    RunParameter("seed", "an integer in [0, 2^63 - 1]", _integer_in(0, INT64_MAX)),
    RunParameter("norm", checked_by=f"rates.norms.parse_norm, then {_REGISTRY_CHECKED}", caseless=True),
    RunParameter("batch", "an integer in [1, 2^63 - 1]", _integer_in(1, INT64_MAX), optional=True,
                 checked_by=f"dividing n: {_REGISTRY_CHECKED}"),
    RunParameter("momentum", "in [0, 1)", _keep_if(lambda v: _real(v) and 0 <= v < 1), optional=True),
    RunParameter("vr", checked_by="a flag: on or off"),
    RunParameter("adam_beta1", "in [0, 1)", _keep_if(lambda v: _real(v) and 0 <= v < 1)),
    RunParameter("adam_beta2", "in [0, 1)", _keep_if(lambda v: _real(v) and 0 <= v < 1)),
    RunParameter("adam_eps", ">= 0", _keep_if(lambda v: _real(v) and v >= 0)),
    RunParameter("polar", english_or(POLAR_METHODS), _choice(POLAR_METHODS), caseless=True),
    RunParameter("data", checked_by="rates.numeric.data.parse_data"),
    RunParameter("steps", "an integer in [1, 2^53]", _integer_in(1, FLOAT_EXACT_MAX), required=True),
    RunParameter("checkpoints", "an integer in [2, 2^53]", _integer_in(2, FLOAT_EXACT_MAX)),
    RunParameter("device", "auto, cpu, cuda or cuda:I", _device, caseless=True),
    RunParameter("seeds", checked_by="parse_seeds (below)", in_grid=False),
    RunParameter("data_seeds", checked_by="parse_seeds (below)", in_grid=False),
    RunParameter("engine", english_or(ENGINES), _choice(ENGINES), in_grid=False, caseless=True),
    RunParameter("init_scale", "a finite number >= 0", _keep_if(lambda v: _real(v) and 0 <= v < math.inf),
                 in_grid=False),
)}

# the keys of a sweep's [grid] table (rates.sweep.grid): the RunSpec fields, then data, steps, checkpoints, device
GRID_KEYS = tuple(p.grid_key for p in PARAMETERS.values() if p.in_grid)
REQUIRED = tuple(p.grid_key for p in PARAMETERS.values() if p.required)
# the grid keys whose cells are names read in any case (one configuration for "SignGD" and "signgd")
CASELESS_GRID_KEYS = tuple(p.grid_key for p in PARAMETERS.values() if p.in_grid and p.caseless)


def check(name: str, value: Any, option: Optional[str] = None) -> Any:
    """``value`` of parameter ``name`` as the run uses it, or :class:`InputError` naming ``option`` (default:
    the parameter's flag) with what the value must be."""
    if name == "a":
        from rates.schedule import parse_exponent_fraction

        parse_exponent_fraction(value, option or name)
        return value
    return PARAMETERS[name].check(value, option)


def check_options(options: Mapping[str, Any], options_named: Optional[Mapping[str, str]] = None) -> None:
    """Check every parameter of :data:`PARAMETERS` found in ``options`` (a command's keyword arguments) whose
    value alone decides, before any work; ``options_named`` maps a parameter to the caller's option.

    The Adam constants are left to the run (:func:`rates.numeric.engine.resolve_spec`), which checks them
    only for an algorithm that uses them, as it always has.
    """
    named = options_named or {}
    for name, parameter in PARAMETERS.items():
        if name in options and parameter.accepts is not None and not name.startswith("adam_"):
            parameter.check(options[name], named.get(name))
    for name in ("seeds", "data_seeds"):
        if options.get(name) is not None:
            parse_seeds(0, options[name], named.get(name, name))


def parse_seeds(seed: int, seeds: Optional[str], option: str = "seeds") -> list[int]:
    """``--seeds 0..4`` (inclusive range) or ``--seeds 0,3,7``; otherwise the single ``--seed``.

    >>> parse_seeds(0, "0..2"), parse_seeds(5, None), parse_seeds(0, "3,1")
    ([0, 1, 2], [5], [3, 1])
    """
    if seeds is None:
        return [seed]
    text = seeds.strip()
    try:
        if ".." in text:
            low, _, high = text.partition("..")
            low, high = int(low), int(high)
            if high - low + 1 > 1:  # the count is checked before the list is made
                from rates import budget

                budget.check_count(high - low + 1, option)
            values = list(range(low, high + 1))
        else:
            values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(option, f"expected a range such as 0..4 or a list such as 0,3,7, got {seeds!r}") from None
    if not values or any(v < 0 for v in values) or len(set(values)) != len(values):
        raise InputError(option, f"expected distinct non-negative seeds, got {seeds!r}")
    return values
