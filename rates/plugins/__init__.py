"""The public plug-in API: new optimisers, theorem families and the papers they cite, without forking.

A plug-in is a module (an installed package's entry point in the group ``rates.plugins``, or a file given to
any command as ``rates --plugin PATH.py ...``) that calls the functions below. Every command loads the
installed plug-ins and the ``--plugin`` files before it runs, so ``rates predict/run/fit/sweep/report`` accept
their names; the workers of a Dask sweep or study load the same plug-ins before their first task
(:mod:`rates.numeric.plugin_loading`). docs/extending.md walks through the complete example in ``examples/``.

* :func:`register_optimizer` -- a name for a chain of the pieces of :mod:`rates.numeric.optim.alias`
  (re-exported here: :func:`chain`, :func:`full_gradient`, :func:`steepest_direction`, ...).
* :func:`register_reference` -- any paper: authors, year, title and an arXiv id or an address (URL, DOI link).
* :func:`register_family` -- a theorem family: which resolved configurations it covers, its hypotheses (the
  helpers :func:`full_batch`, :func:`separable`, :func:`a_in_unit_interval` or your own :class:`Hypothesis`),
  its bound template (a callable returning a :class:`~rates.symbolic.theorems.base.BoundTemplate`; import sympy
  inside it, so that ``rates run`` does not wait for sympy) and its source (a registered paper's short name
  and the theorem). A plug-in family is asked before the built-in ones about a plug-in's optimiser; about a
  built-in optimiser (signgd, ngd, spectral-gd, ...) only when the user chooses it by name
  (``rates --family NAME ...``).

Built-in names (the seventeen optimisers, six families, three papers) cannot be replaced, and no plug-in answers
for a built-in algorithm unasked: everything the built-ins print stays the same whatever is installed. Every
registration records the plug-in that made it (its file, or its distribution and entry point), and every answer
a plug-in gives names it; a plug-in's failure -- at loading, or later in ``covers``, ``template`` or a
hypothesis' check: an exception, ``sys.exit``, a result of the wrong type -- is one line naming the plug-in
(:class:`rates.errors.PluginError`, exit 2). :func:`unregister_all` undoes every registration made through this
module (tests use it).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence

from rates.errors import InputError
from rates.numeric.optim.alias import (
    OPTIMISERS,
    Composition,
    adam,
    chain,
    full_gradient,
    momentum,
    register_optimiser,
    reshuffled_batches,
    scale_by_schedule,
    steepest_direction,
    variance_reduced,
)
from rates.numeric.plugin_loading import ENTRY_POINT_GROUP, PluginSource, forget, load_file, load_installed, loaded
from rates.symbolic import papers
from rates.symbolic.theorems.hypotheses import (
    CONSTANT,
    FAILS,
    HOLDS,
    STRUCTURE,
    UNKNOWN,
    Facts,
    FamilyDeclaration,
    Finding,
    Hypothesis,
    a_in_unit_interval,
    full_batch,
    separable,
)
from rates.symbolic.theorems.provenance import record_origin, registering_origin
from rates.symbolic.theorems.sources import Source

BUILT_IN_OPTIMISERS = tuple(OPTIMISERS)
_REGISTERED: dict[str, list[str]] = {"optimizer": [], "family": [], "reference": []}


def _origin() -> str:
    """The plug-in registering now (its file, or distribution and entry point), else the module that called the
    public function (a script or a test registering directly)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    caller = "" if frame is None else frame.f_globals.get("__file__") or frame.f_globals.get("__name__", "")
    return registering_origin(f"module {caller}" if caller else "code outside any plug-in")


def _name(name: str, what: str) -> str:
    key = str(name).strip().lower()
    if not key or not all(ch.isalnum() or ch in "-_" for ch in key):
        raise ValueError(f"a {what} name is letters, digits, '-' and '_', got {name!r}")
    return key


def register_optimizer(name: str, composition: Composition) -> Composition:
    """Name an optimiser: ``register_optimizer("l3-gd", chain(full_gradient(), steepest_direction("lp:3"),
    scale_by_schedule()))``. Its theorem family is the plug-in family that claims it, else the built-in one its
    pieces select (full batch -> nsd, mini-batch -> minibatch, momentum, VR, Adam)."""
    key = _name(name, "optimiser")
    if key in BUILT_IN_OPTIMISERS:
        raise ValueError(f"{key!r} is a built-in optimiser; choose another name")
    if not isinstance(composition, Composition):
        raise TypeError(f"optimiser {key!r}: register a chain(...) of pieces, got {composition!r}")
    if composition.norm is not None:  # refused here, naming the plug-in, not later as if --norm were wrong
        from rates.norms import parse_norm

        try:
            parse_norm(composition.norm)
        except (ValueError, InputError) as err:
            detail = err.message if isinstance(err, InputError) else str(err)
            raise ValueError(f"optimiser {key!r}: steepest_direction({composition.norm!r}): {detail}") from None
    register_optimiser(key, composition)
    record_origin("optimizer", key, _origin())
    if key not in _REGISTERED["optimizer"]:
        _REGISTERED["optimizer"].append(key)
    return composition


def register_reference(short_name: str, authors: Sequence[str], year: int, title: str, arxiv: Optional[str] = None,
                       url: Optional[str] = None) -> papers.Reference:
    """Make a paper citable as ``Source(short_name, "Thm 3")``; needs an arXiv id or an address (``url``:
    a web address or a DOI link). ``rates predict --json`` prints it under ``reference``."""
    if isinstance(authors, str):
        authors = (authors,)
    reference = papers.Reference(str(short_name).strip(), tuple(str(a) for a in authors), int(year), str(title),
                                 arxiv_id=arxiv or None, address=url or None)
    papers.register_reference(reference)
    record_origin("reference", reference.short_name.upper(), _origin())
    if reference.short_name.upper() not in _REGISTERED["reference"]:
        _REGISTERED["reference"].append(reference.short_name.upper())
    return reference


def register_family(name: str, *, covers: Callable[[Any], bool], template: Callable[[Any], Any],
                    source: Source | tuple[str, str], hypotheses: Sequence[Hypothesis] = (), algorithms: str = "",
                    statement: str = "", example: Optional[dict] = None) -> FamilyDeclaration:
    """Register a theorem family (docs/extending.md): ``covers(config)`` says whether a resolved configuration
    (``rates.numeric.algorithms.AlgorithmConfig``: name, norm, batch, momentum, vr, adam) is the one its theorem is
    about; ``template(config)`` returns its :class:`~rates.symbolic.theorems.base.BoundTemplate`, from which the
    rate, its regimes and the best ``a`` are derived; ``source`` is ``(short name, theorem)`` of a registered
    paper (:func:`register_reference`) or of a built-in one; ``hypotheses`` are :class:`Hypothesis` objects
    (``full_batch(source, why)``, ``separable(source)``, ``a_in_unit_interval(source)`` or your own);
    ``algorithms`` names the optimisers it covers, ``statement`` says in one line what the theorem guarantees
    (both printed by ``rates predict``), ``example`` is the keyword arguments of
    ``rates.numeric.algorithms.resolve_algorithm`` for one configuration it covers (``{"name": "l3-gd"}``)."""
    key = _name(name, "family")
    source = source if isinstance(source, Source) else Source(*source)
    if source.reference is None:
        raise ValueError(f"family {key!r} cites {source.seed!r}, which is no registered paper; call "
                         f"register_reference first (known: {', '.join(papers.REFERENCES)})")
    if not callable(covers) or not callable(template):
        raise TypeError(f"family {key!r}: covers and template must be callables of the configuration")
    for hypothesis in hypotheses:
        if not isinstance(hypothesis, Hypothesis):
            helper = getattr(hypothesis, "__name__", "")
            arguments = "source, why" if helper == "full_batch" else "source"
            hint = (f"{helper} is a helper that makes one: call {helper}({arguments})"
                    if helper in ("full_batch", "separable", "a_in_unit_interval") else
                    "make one with Hypothesis(name, statement, source, kind, check)")
            raise TypeError(f"family {key!r}: every hypothesis must be a rates.plugins.Hypothesis, got "
                            f"{hypothesis!r}; {hint}")
    if example is not None and not isinstance(example, dict):
        raise TypeError(f"family {key!r}: example is a dict of resolve_algorithm's arguments, got {example!r}")
    from rates.symbolic.theorems.registry import register_declaration  # sympy: only when a family is registered

    declaration = FamilyDeclaration(name=key, algorithms=algorithms or key, example=dict(example or {}),
                                    covers=covers, hypotheses=tuple(hypotheses), source=source, template=template,
                                    statement=statement, origin=_origin())
    register_declaration(declaration)
    record_origin("family", key, declaration.origin)
    if key not in _REGISTERED["family"]:
        _REGISTERED["family"].append(key)
    return declaration


def registered() -> dict[str, tuple[str, ...]]:
    """What plug-ins registered in this process: ``{"optimizer": names, "family": names, "reference": names}``."""
    return {kind: tuple(names) for kind, names in _REGISTERED.items()}


def unregister_all() -> None:
    """Undo every registration made through this module and forget the loaded plug-ins."""
    for name in _REGISTERED["optimizer"]:
        OPTIMISERS.pop(name, None)
    if _REGISTERED["family"]:
        from rates.symbolic.theorems.registry import forget_declaration

        for name in _REGISTERED["family"]:
            forget_declaration(name)
    for name in _REGISTERED["reference"]:
        papers.forget_reference(name)
    for names in _REGISTERED.values():
        names.clear()
    forget()


def load_plugins(files: Sequence[str] = ()) -> tuple[PluginSource, ...]:
    """Load the installed plug-ins, then the files (what every command does first); returns all loaded."""
    load_installed()
    for path in files:
        load_file(path)
    return loaded()


# what a family's template is built from: sympy objects, imported only when a template is built (rates run
# reads a plug-in at start-up and must not wait for sympy)
_TEMPLATE_NAMES = ("BoundTemplate", "PowerSumTerm", "NoiseTerm", "alpha", "gamma", "curvature_alpha")


def __getattr__(name: str) -> Any:
    if name in _TEMPLATE_NAMES:
        from rates.symbolic.theorems import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [*_TEMPLATE_NAMES,
    "ENTRY_POINT_GROUP", "PluginSource", "load_plugins", "load_installed", "load_file", "loaded",
    "register_optimizer", "register_reference", "register_family", "registered", "unregister_all",
    "chain", "full_gradient", "reshuffled_batches", "variance_reduced", "momentum", "adam", "steepest_direction",
    "scale_by_schedule", "Composition", "Source", "Hypothesis", "Finding", "Facts", "FamilyDeclaration",
    "full_batch", "separable", "a_in_unit_interval", "HOLDS", "FAILS", "UNKNOWN", "STRUCTURE", "CONSTANT",
]
