"""Finding and loading plug-ins: installed packages (an entry-point group) and single files (``--plugin``).

A plug-in is Python code that registers optimisers, theorem families and references through the public API of
:mod:`rates.plugins`; loading it is importing it. This module only finds and imports plug-ins and remembers
what it loaded (:func:`loaded`), so that another process -- a Dask worker of ``rates sweep`` or a study -- can
load the same ones (:func:`replay`) before it runs a task. It imports nothing heavy (no numpy, no sympy): only
the sympy-free record of which plug-in registered what (:mod:`rates.symbolic.theorems.provenance`);
:mod:`rates.numeric.tasks` calls :func:`replay` on the workers.

* Installed: every entry point of the group ``rates.plugins`` (:data:`ENTRY_POINT_GROUP`), e.g. in a package's
  ``pyproject.toml``::

      [project.entry-points."rates.plugins"]
      lp_nsd = "rates_lp_nsd:register"

  The object named is loaded; a callable (not a module) is then called with no arguments.
* A file: ``rates --plugin PATH.py ...`` imports the file as the module ``rates_plugin_<name>`` (the same name in
  every process, so objects it defines can travel between them). Its text travels with the tasks, so workers
  on other machines need not see the file.

Errors: a ``--plugin`` file that cannot be found or raises while loading is reported as
:class:`rates.errors.InputError` naming ``--plugin`` and the file; an installed plug-in that raises (or calls
``sys.exit``) while loading, and any plug-in code that fails later (:func:`call`), as
:class:`rates.errors.PluginError` naming its distribution and entry point or its file. The CLI prints one line
and exits 2.

Provenance: every optimiser, family and paper a plug-in registers is recorded with the plug-in that registered
it (:func:`origin_of`), so that each answer a plug-in gives can say where it came from.

Built-in algorithms are answered by the built-in families: a plug-in family is asked about a configuration of a
built-in optimiser only when the user chose it by name (``rates --family NAME ...``, :func:`choose_families`);
the choice travels to the workers with the plug-ins (:func:`replay`).
"""

from __future__ import annotations

import hashlib
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from rates.errors import InputError, PluginError
from rates.symbolic.theorems.provenance import LOADING, choose_families, describe_error, forget_origins
from rates.symbolic.theorems.provenance import chosen_families as chosen_families  # re-exported: the workers' choice

ENTRY_POINT_GROUP = "rates.plugins"


@dataclass(frozen=True)
class PluginSource:
    """One loaded plug-in: ``kind`` is ``entry-point`` (``name`` its entry point's name, ``value`` its target)
    or ``file`` (``name`` the module name it was imported as, ``path`` where it was read, ``text`` its code)."""

    kind: str
    name: str
    value: str = ""
    path: str = ""
    text: str = ""
    distribution: str = ""  # an entry point's installed distribution, "name version" ("" when unknown)

    @property
    def label(self) -> str:
        """How answers and errors name the plug-in: ``rates-lp-nsd 0.1.0 (entry point lp_nsd = rates_lp_nsd)``
        or ``file /path/to/mine.py``."""
        if self.kind == "entry-point":
            point = f"entry point {self.name} = {self.value}"
            return f"{self.distribution} ({point})" if self.distribution else point
        return f"file {self.path}"


_LOADED: dict[tuple[str, str], PluginSource] = {}
_INSTALLED_SCANNED = False


def loaded() -> tuple[PluginSource, ...]:
    """The plug-ins this process has loaded, in loading order."""
    return tuple(_LOADED.values())


def forget() -> None:
    """Forget what was loaded (the registrations themselves are undone by :func:`rates.plugins.unregister_all`)."""
    global _INSTALLED_SCANNED
    _LOADED.clear()
    forget_origins()
    _INSTALLED_SCANNED = False


def _failed(what: str, err: BaseException) -> InputError:
    return InputError("plugin", f"plug-in {what} failed to load: {describe_error(err)}")


def _distribution(point) -> str:
    dist = getattr(point, "dist", None)
    try:
        return f"{dist.name} {dist.version}" if dist is not None else ""
    except Exception:  # noqa: BLE001 - unreadable metadata: the entry point still names it
        return ""


def _entry_points():
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_point(point) -> PluginSource:
    source = PluginSource("entry-point", point.name, point.value, distribution=_distribution(point))
    if (source.kind, source.name) in _LOADED:
        return _LOADED[(source.kind, source.name)]
    LOADING.append(source.label)
    try:
        target = point.load()
        if callable(target) and not isinstance(target, types.ModuleType):
            target()
    except (KeyboardInterrupt, PluginError):
        raise
    except BaseException as err:  # noqa: BLE001 - installed, not given as --plugin: the error is the package's
        raise PluginError(source.label, f"failed to load (entry point group {ENTRY_POINT_GROUP}): "
                                        f"{describe_error(err)}") from err
    finally:
        LOADING.pop()
    _LOADED[(source.kind, source.name)] = source
    return source


def load_installed() -> list[PluginSource]:
    """Load every installed plug-in (entry-point group ``rates.plugins``) not loaded yet; once per process."""
    global _INSTALLED_SCANNED
    if _INSTALLED_SCANNED:
        return [source for source in _LOADED.values() if source.kind == "entry-point"]
    _INSTALLED_SCANNED = True
    return [_load_entry_point(point) for point in _entry_points()]


def module_name_for(path: Path) -> str:
    """``rates_plugin_<stem>_<hash of the resolved path>``: one name per file, the same in every process."""
    stem = re.sub(r"\W", "_", path.stem) or "file"
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    return f"rates_plugin_{stem}_{digest}"


def _import_text(source: PluginSource) -> None:
    module = types.ModuleType(source.name)
    module.__file__ = source.path
    sys.modules[source.name] = module
    LOADING.append(source.label)
    try:
        exec(compile(source.text, source.path, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(source.name, None)
        raise
    finally:
        LOADING.pop()


def load_file(path: str | Path) -> PluginSource:
    """Import the plug-in file ``path`` (once per process); :class:`InputError` naming ``--plugin`` if it
    cannot be read or raises."""
    file = Path(path).expanduser()
    if file.suffix != ".py" or not file.is_file():
        raise InputError("plugin", f"{path} is not a Python file (.py) that exists")
    name = module_name_for(file)
    if ("file", name) in _LOADED:
        return _LOADED[("file", name)]
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError("plugin", f"{path} cannot be read ({err})") from None
    source = PluginSource("file", name, path=str(file.resolve()), text=text)
    try:
        _import_text(source)
    except (KeyboardInterrupt, PluginError):
        raise
    except BaseException as err:  # noqa: BLE001 - sys.exit included: one line naming the file given as --plugin
        raise _failed(str(path), err) from err
    _LOADED[("file", name)] = source
    return source


def replay(sources: tuple[PluginSource, ...] | list[PluginSource], families: tuple[str, ...] = ()) -> None:
    """Load in this process the plug-ins another one loaded (a Dask worker before its task): entry points by
    name, files from the text they had there, and the families chosen there (``families``, see
    :func:`choose_families`). Already loaded ones are skipped."""
    choose_families(families)
    points = None
    for source in sources:
        key = (source.kind, source.name)
        if key in _LOADED:
            continue
        if source.kind == "entry-point":
            points = _entry_points() if points is None else points
            point = next((p for p in points if p.name == source.name), None)
            if point is None:
                raise PluginError(source.label, f"is not installed on this worker ({sys.executable})")
            _load_entry_point(point)
        else:
            try:
                _import_text(source)
            except (KeyboardInterrupt, PluginError):
                raise
            except BaseException as err:  # noqa: BLE001
                raise _failed(source.path, err) from err
            _LOADED[key] = source


def fingerprint() -> str | None:
    """A hash of the loaded plug-ins' code, for cache keys of answers they may change (``rates predict``):
    ``""`` when none is loaded, None when some plug-in's source cannot be read (then nothing is cached)."""
    if not _LOADED:
        return ""
    digest = hashlib.sha256()
    for source in _LOADED.values():
        text = source.text
        if source.kind == "entry-point":
            module = sys.modules.get(source.value.split(":")[0].strip())
            try:
                text = Path(module.__file__).read_text(encoding="utf-8")
            except (AttributeError, TypeError, OSError, UnicodeDecodeError):
                return None
        digest.update(f"{source.kind}\0{source.name}\0{source.value}\0{text}\0".encode())
    return digest.hexdigest()

