"""The three papers that `rates` encodes, as bibliographic references.

Every theory number the tool prints names its source as ``SHORT theorem`` (e.g. ``SIGNADAM Thm 5.3``); the
short name resolves here to authors, year, title and arXiv id, so a reader can find the paper without any
file of this repository. Titles are the papers' own first lines; years are those of the arXiv versions.

>>> SIGNADAM.arxiv_id
'2502.04664'
>>> reference_for("MINIBATCH").citation()
'Li, Tang, Zou (2026). The Implicit Bias of Steepest Descent with Mini-batch Stochastic Gradient. arXiv:2602.11557'
>>> sorted(REFERENCES)
['FLAVORS', 'MINIBATCH', 'SIGNADAM']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Reference:
    """One paper: the short name used in citations across the code, and what a bibliography needs.

    ``arxiv_id`` or ``address`` (a URL or DOI link) locates it; a plug-in family may cite any paper
    (:func:`register_reference`).
    """

    short_name: str
    authors: tuple[str, ...]
    year: int
    title: str
    arxiv_id: Optional[str] = None
    address: Optional[str] = None

    @property
    def arxiv(self) -> Optional[str]:
        return f"arXiv:{self.arxiv_id}" if self.arxiv_id else None

    @property
    def url(self) -> Optional[str]:
        return self.address or (f"https://arxiv.org/abs/{self.arxiv_id}" if self.arxiv_id else None)

    def citation(self) -> str:
        """``Authors (year). Title. arXiv:id`` -- one line, for text output and table notes."""
        where = self.arxiv or self.url
        return f"{', '.join(self.authors)} ({self.year}). {self.title}" + (f". {where}" if where else "")

    def to_json(self) -> dict:
        return {"short_name": self.short_name, "authors": list(self.authors), "year": self.year,
                "title": self.title, "arxiv": self.arxiv_id, "url": self.url}


FLAVORS = Reference(
    "FLAVORS", ("Tsilivis", "Vardi", "Kempe"), 2024,
    "Flavors of Margin: Implicit Bias of Steepest Descent in Homogeneous Neural Networks", "2410.22069")
MINIBATCH = Reference(
    "MINIBATCH", ("Li", "Tang", "Zou"), 2026,
    "The Implicit Bias of Steepest Descent with Mini-batch Stochastic Gradient", "2602.11557")
SIGNADAM = Reference(
    "SIGNADAM", ("Fan", "Schmidt", "Thrampoulidis"), 2025,
    "Implicit Bias of SignGD and Adam on Multiclass Separable Data", "2502.04664")

REFERENCES: dict[str, Reference] = {ref.short_name: ref for ref in (FLAVORS, MINIBATCH, SIGNADAM)}
BUILT_IN = tuple(REFERENCES)


def register_reference(reference: Reference) -> Reference:
    """Make ``reference`` citable by its short name (``Source(short_name, theorem)``): the public route is
    :func:`rates.plugins.register_reference`. The three papers above cannot be replaced."""
    key = reference.short_name.upper()
    if not key or " " in key or "(" in key:
        raise ValueError(f"a reference's short name is one word, got {reference.short_name!r}")
    if key in BUILT_IN:
        raise ValueError(f"{reference.short_name!r} is one of the built-in papers ({', '.join(BUILT_IN)})")
    if not (reference.arxiv_id or reference.address):
        raise ValueError(f"reference {reference.short_name!r} needs an arXiv id or an address (URL or DOI link)")
    REFERENCES[key] = reference
    return reference


def forget_reference(short_name: str) -> None:
    """Undo :func:`register_reference` (the built-in papers stay)."""
    key = short_name.upper()
    if key not in BUILT_IN:
        REFERENCES.pop(key, None)


def reference_for(text: str) -> Reference | None:
    """The paper a source string cites: its first word is a short name (``"SIGNADAM Thm 5.3"``), else None."""
    words = str(text).replace("(", " ").split()
    return REFERENCES.get(words[0].upper()) if words else None


def references_in(texts) -> list[Reference]:
    """The distinct papers named anywhere in ``texts`` (in the order FLAVORS, MINIBATCH, SIGNADAM)."""
    joined = " ".join(str(text) for text in texts).upper()
    return [ref for name, ref in REFERENCES.items() if name in joined or (ref.arxiv_id and ref.arxiv_id in joined)]


def references_note(texts) -> str:
    """A table footnote listing every paper the ``texts`` (source cells) cite, e.g.

    >>> references_note(["SIGNADAM Thm 5.3"])
    'References: SIGNADAM = Fan, Schmidt, Thrampoulidis (2025). Implicit Bias of SignGD and Adam on Multiclass \
Separable Data. arXiv:2502.04664'
    """
    cited = references_in(texts) or list(REFERENCES.values())
    return "References: " + "; ".join(f"{ref.short_name} = {ref.citation()}" for ref in cited)
