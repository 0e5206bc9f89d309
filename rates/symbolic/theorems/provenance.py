"""Where each plug-in answer comes from, and plug-in code called so that its failure is its own.

Sympy-free, and in the first stage of the pipeline so that every later one may ask it: the theorem registry
(:mod:`~rates.symbolic.theorems.coverage`, ``registry``, ``prediction``) asks it which plug-in registered a family
and calls plug-in code through :func:`call`; the loader (:mod:`rates.numeric.plugin_loading`) says which plug-in
is being imported (:data:`LOADING`), and the public API (:mod:`rates.plugins`) records every registration
(:func:`record_origin`).

* Provenance: :func:`origin_of` -- which plug-in (``file /x.py``, or ``rates-lp-nsd 0.1.0 (entry point lp_nsd =
  rates_lp_nsd)``) registered an optimiser, family or paper; :func:`provenance` lists those behind one answer.
* Choice: a plug-in family answers for a built-in optimiser only when the user chose it (``--family``):
  :func:`choose_families`, :func:`chosen_families`.
* Isolation: :func:`call` turns any failure of plug-in code -- ``sys.exit`` included -- into
  :class:`rates.errors.PluginError` naming the plug-in (exit 2).
"""

from __future__ import annotations

from rates.errors import PluginError

LOADING: list[str] = []  # the label of the plug-in whose code is being imported now (its registrations)
ORIGINS: dict[tuple[str, str], str] = {}  # (kind, name) -> label of what registered it: "optimizer", "family", ...
_CHOSEN: list[str] = []  # plug-in families the user chose by name (--family): they may answer for built-ins


def registering_origin(default: str) -> str:
    """The label of the plug-in being loaded now, else ``default`` (a registration made by other code)."""
    return LOADING[-1] if LOADING else default


def record_origin(kind: str, name: str, origin: str) -> None:
    ORIGINS[(kind, name)] = origin


def origin_of(kind: str, name: str) -> str | None:
    """Which plug-in registered the ``kind`` (``optimizer``, ``family``, ``reference``) called ``name``; None for
    a built-in one."""
    return ORIGINS.get((kind, name))


def choose_families(names) -> None:
    """The plug-in families the user chose by name (``--family``); replaces the previous choice."""
    _CHOSEN[:] = [str(name).strip().lower() for name in names]


def chosen_families() -> tuple[str, ...]:
    return tuple(_CHOSEN)


def describe_error(err: BaseException) -> str:
    if isinstance(err, SystemExit):
        return f"SystemExit({err.code!r}): a plug-in must not end the process"
    return f"{type(err).__name__}: {' '.join(str(err).split()) or type(err).__name__}"


def call(origin: str, what: str, function, *args, answers: tuple[type, ...] = ()):
    """``function(*args)`` of a plug-in, whose failure -- any exception, ``sys.exit`` included, an
    :class:`InputError` too (it would be blamed on an option the user never gave) -- becomes a
    :class:`PluginError` naming ``origin`` and ``what`` was called. Ctrl-C still interrupts, and the exceptions
    in ``answers`` pass as they are (a derivation's "no rate, because ..." is an answer, not a failure)."""
    try:
        return function(*args)
    except (KeyboardInterrupt, PluginError, *answers):
        raise
    except BaseException as err:  # noqa: BLE001 - foreign code: every failure is the plug-in's, one line
        raise PluginError(origin, f"{what} raised {describe_error(err)}") from err


def forget_origins() -> None:
    """Forget every recorded origin and the choice of families (:func:`rates.plugins.unregister_all`)."""
    ORIGINS.clear()
    _CHOSEN.clear()


def provenance(optimizer: str | None = None, family: str | None = None,
               reference: str | None = None) -> list[dict[str, str]]:
    """What of an answer plug-ins gave: ``[{"kind": "family", "name": "lp-nsd", "origin": "file /x.py"}, ...]``
    for the optimiser, family and paper named that a plug-in registered (empty: the answer is the built-ins')."""
    named = (("optimizer", optimizer), ("family", family), ("reference", (reference or "").upper() or None))
    return [{"kind": kind, "name": name if kind != "reference" else reference, "origin": ORIGINS[(kind, name)]}
            for kind, name in named if name is not None and (kind, name) in ORIGINS]


def provenance_lines(entries: list[dict[str, str]], label: str = "plug-in     ") -> list[str]:
    """One line per plug-in: ``plug-in     optimiser l3-gd, family lp-nsd and paper GLSS2018 from file /x.py``."""
    words = {"optimizer": "optimiser", "family": "family", "reference": "paper"}
    by_origin: dict[str, list[str]] = {}
    for entry in entries:
        by_origin.setdefault(entry["origin"], []).append(f"{words[entry['kind']]} {entry['name']}")
    lines = []
    for origin, things in by_origin.items():
        listed = things[0] if len(things) == 1 else f"{', '.join(things[:-1])} and {things[-1]}"
        lines.append(f"{label}{listed} from {origin}")
    return lines
