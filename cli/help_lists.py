"""The lists in ``--help`` texts, read from the registries that define them when the help is shown.

A help text (an option's ``help=`` or a command's docstring) names a list by a placeholder such as
``{ALGORITHMS}``; :class:`ListedHelpCommand`, the class of every command (cli/app.py), replaces each
placeholder by :data:`LISTS`' reading of its registry when it formats the help. A name registered later
(``register_optimiser``, an entry added to ``STUDIES`` or ``PRESETS``) is therefore listed with no edit to any
help text. Each registry is imported only when a help text names it, so ``rates --help`` stays light.
"""

from __future__ import annotations

from typing import Callable

from typer.core import TyperCommand


def _algorithms() -> str:
    from rates.numeric.algorithms import ALGORITHMS

    return ", ".join(ALGORITHMS)


def full_batch_algorithms() -> str:
    """The names ``rates tightness`` searches: the full-batch algorithms with their own norm
    (:func:`rates.judge.tightness.search_worst_rate` refuses the others)."""
    from rates.errors import InputError
    from rates.numeric.algorithms import ALGORITHMS, resolve_algorithm

    names = []
    for name in ALGORITHMS:
        try:
            if resolve_algorithm(name, n=6).family in ("nsd", "adam"):
                names.append(name)
        except InputError:  # nsd: it needs --norm, which rates tightness does not take
            continue
    return ", ".join(names)


def _norms() -> str:
    from rates.norms import known_norms

    return known_norms()


def _presets() -> str:
    from rates.numeric.data import PRESETS

    return ", ".join(PRESETS)


def _studies() -> str:
    from rates.studies import STUDIES

    return ", ".join(sorted(STUDIES))


def _choices(name: str) -> Callable[[], str]:
    def listing() -> str:
        from rates.numeric import run_parameters

        return " | ".join(getattr(run_parameters, name))

    return listing


def _grid_keys(required: bool) -> Callable[[], str]:
    def listing() -> str:
        from rates.numeric.run_parameters import GRID_KEYS, REQUIRED

        return ", ".join(key for key in GRID_KEYS if (key in REQUIRED) == required)

    return listing


def _chains() -> str:
    from proofs.chains import CHAINS  # sympy: paid by `rates check --help` only

    return ", ".join([*CHAINS, "per-sample", "all"])  # as cli/check.py reads --chain


def _homogeneous_algorithms() -> str:
    from rates.numeric.homogeneous.options import ALGORITHMS

    return " | ".join(ALGORITHMS)


LISTS: dict[str, Callable[[], str]] = {
    "{ALGORITHMS}": _algorithms,
    "{FULL_BATCH_ALGORITHMS}": full_batch_algorithms,
    "{NORMS}": _norms,
    "{PRESETS}": _presets,
    "{STUDIES}": _studies,
    "{ENGINES}": _choices("ENGINES"),
    "{DEVICES}": _choices("DEVICES"),
    "{POLAR_METHODS}": _choices("POLAR_METHODS"),
    "{REQUIRED_GRID_KEYS}": _grid_keys(required=True),
    "{OPTIONAL_GRID_KEYS}": _grid_keys(required=False),
    "{HOMOGENEOUS_ALGORITHMS}": _homogeneous_algorithms,
    "{CHAINS}": _chains,
}


def fill(text: str | None) -> str | None:
    """``text`` with every placeholder of :data:`LISTS` replaced by its list as the registry holds it now."""
    if not text or "{" not in text:
        return text
    for placeholder, listing in LISTS.items():
        if placeholder in text:
            text = text.replace(placeholder, listing())
    return text


class ListedHelpCommand(TyperCommand):
    """A command whose help texts' lists are filled in when its help is formatted."""

    def format_help(self, ctx, formatter) -> None:
        self.help = fill(self.help)
        for param in self.params:
            if getattr(param, "help", None):
                param.help = fill(param.help)
        super().format_help(ctx, formatter)
