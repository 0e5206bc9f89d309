"""One table, three renderings: LaTeX (booktabs), Markdown and JSON.

Every table the tool prints (predicted rates, predicted vs fitted, proof checks, FLAVORS claims) is a
:class:`Table`; the three formats are generated from the same cells so they cannot disagree. Cells hold
plain text for Markdown/JSON and, optionally, their own LaTeX (``Cell(text, latex)``) because a rate such as
``log t / t^(1/2)`` should appear as ``$\\log t / t^{1/2}$`` in a paper.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence, Union


@dataclass(frozen=True)
class Cell:
    text: str
    latex: str | None = None  # raw LaTeX for this cell; None means "escape text"
    value: Any = None  # machine-readable value for JSON; None means "use text"


CellLike = Union[Cell, str, int, float]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _LATEX_SPECIALS[m.group()], text)


def _cell(c: CellLike) -> Cell:
    return c if isinstance(c, Cell) else Cell(str(c), value=c if isinstance(c, (int, float)) else None)


@dataclass
class Table:
    columns: Sequence[str]
    rows: list[Sequence[CellLike]] = field(default_factory=list)
    caption: str = ""
    label: str = ""
    notes: list[str] = field(default_factory=list)  # footnotes: sources, windows, tolerances

    def add(self, *cells: CellLike) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.columns)} columns")
        self.rows.append(cells)

    def to_markdown(self) -> str:
        def esc(s: str) -> str:
            return s.replace("|", r"\|")

        lines = []
        if self.caption:
            lines += [f"**{esc(self.caption)}**", ""]
        lines.append("| " + " | ".join(esc(c) for c in self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(esc(_cell(c).text) for c in row) + " |")
        for note in self.notes:
            lines += ["", f"_{esc(note)}_"]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        """A ``table`` environment with booktabs rules; needs ``\\usepackage{booktabs}``."""
        def tex(c: CellLike) -> str:
            cell = _cell(c)
            return cell.latex if cell.latex is not None else latex_escape(cell.text)

        lines = [r"\begin{table}[ht]", r"\centering", r"\begin{tabular}{" + "l" * len(self.columns) + "}",
                 r"\toprule", " & ".join(latex_escape(c) for c in self.columns) + r" \\", r"\midrule"]
        lines += [" & ".join(tex(c) for c in row) + r" \\" for row in self.rows]
        lines.append(r"\bottomrule")
        lines.append(r"\end{tabular}")
        if self.caption:
            lines.append(r"\caption{" + latex_escape(self.caption) + "}")
        if self.label:
            lines.append(r"\label{" + self.label + "}")
        for note in self.notes:
            lines.append(r"\par\smallskip{\footnotesize " + latex_escape(note) + "}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def to_records(self) -> list[dict[str, Any]]:
        out = []
        for row in self.rows:
            rec = {}
            for col, c in zip(self.columns, row):
                cell = _cell(c)
                rec[col] = cell.value if cell.value is not None else cell.text
            out.append(rec)
        return out

    def to_json(self) -> str:
        return json.dumps({"caption": self.caption, "columns": list(self.columns), "rows": self.to_records(),
                           "notes": self.notes}, indent=1, default=str) + "\n"

    def render(self, fmt: str) -> str:
        if fmt == "latex":
            return self.to_latex()
        if fmt == "markdown":
            return self.to_markdown()
        if fmt == "json":
            return self.to_json()
        raise ValueError(f"unknown table format {fmt!r}")


def latex_document(*bodies: str) -> str:
    """A standalone document around table bodies (for compiling the output as a check)."""
    return "\n".join([r"\documentclass{article}", r"\usepackage{booktabs}", r"\usepackage{amsmath}",
                      r"\usepackage[margin=1.5cm,landscape]{geometry}", r"\begin{document}", *bodies,
                      r"\end{document}", ""])
