"""One table, three renderings: LaTeX (booktabs), Markdown and JSON.

Every table the tool prints (predicted rates, predicted vs fitted, proof checks, FLAVORS claims) is a
:class:`Table`; the three formats are generated from the same cells so they cannot disagree. Cells hold
plain text for Markdown/JSON and, optionally, their own LaTeX (``Cell(text, latex)``) because a rate such as
``log t / t^(1/2)`` should appear as ``$\\log t / t^{1/2}$`` in a paper.
"""

from __future__ import annotations

import json
import math
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
    # OT1, LaTeX's default font encoding, prints | < > as an em-dash and inverted punctuation
    "|": r"\textbar{}", "<": r"\textless{}", ">": r"\textgreater{}",
}
# Unicode the tool prints (margins, tolerances) that pdflatex's default setup cannot typeset
_LATEX_UNICODE = {
    "γ": r"$\gamma$", "η": r"$\eta$", "σ": r"$\sigma$", "ρ": r"$\rho$", "β": r"$\beta$", "α": r"$\alpha$",
    "θ": r"$\theta$", "±": r"$\pm$", "−": r"$-$", "×": r"$\times$", "≤": r"$\le$", "≥": r"$\ge$",
    "≈": r"$\approx$", "∞": r"$\infty$", "→": r"$\to$", "·": r"$\cdot$", "‖": r"$\|$", "²": r"$^2$",
    "…": r"\dots{}", "–": "--", "—": "---", "’": "'", "“": "``", "”": "''",
}
_LATEX_PATTERN = re.compile(r"\|\|([A-Za-z0-9_]{1,12})\|\||[\\&%$#_{}~^|<>]|[^\x00-\x7f]")
# Where a long unbreakable token (a seed file name) may break inside a narrow column.
_BREAK_AFTER = re.compile(r"(\\_|/(?=[A-Za-z])|\.(?=[A-Za-z]))")  # never inside 1/2 or 0.25
LONG_RUN = 6  # a run of letters and digits longer than this (a hash in a file name) may break every 6
_LONG_RUN = re.compile(r"(?<![\\A-Za-z0-9])(?=[A-Za-z]*[0-9])[A-Za-z0-9]{" + f"{LONG_RUN + 5:d}" + ",}")  # has a digit
SCRIPT_SIZE = 0.7  # sub- and superscripts, fractions: their share of the text size


def _latex_piece(match: re.Match) -> str:
    if match.group(1) is not None:  # ||M|| is a norm, not four bars
        return rf"$\|{match.group(1)}\|$"
    char = match.group()
    if char in _LATEX_SPECIALS:
        return _LATEX_SPECIALS[char]
    return _LATEX_UNICODE.get(char, "?")


def latex_escape(text: str) -> str:
    """Plain text as LaTeX that compiles under pdflatex's defaults: specials escaped, ``||M||`` as a norm,
    the Unicode the tool prints as math, anything else as ``?`` (never a compile error). The tool's plain
    notation becomes what a paper would print: a command-line option ``--data-seeds`` in typewriter type
    (``-{}-``, not an en dash) and a symbol with sub- or superscripts (``S_{3/2}``, ``eta^p``, ``gamma_eff``,
    ``t^(-1/2)``, ``W_t``) in math mode."""
    out, end = [], 0
    for match in _NOTATION.finditer(text):
        out.append(_LATEX_PATTERN.sub(_latex_piece, text[end:match.start()]))
        out.append(_notation(match))
        end = match.end()
    out.append(_LATEX_PATTERN.sub(_latex_piece, text[end:]))
    return "".join(out)


_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "rho", "sigma", "tau")
# S_3/2 is S_{3/2}: a fraction as a subscript, as the bound's terms are named
_SCRIPTS = (r"(?:_\{[^{}\s$\\]*\}|_\d+/\d+(?!\w|/\d)|_[A-Za-z0-9]+|\^\{[^{}\s$\\]*\}|\^\([^()\s$\\]*\)"
            r"|\^-?[A-Za-z0-9/]+)+")
# a Greek name alone is a symbol too; W*_max a starred one
_SYMBOL = rf"(?:(?:{'|'.join(_GREEK)})(?:{_SCRIPTS})?|[A-Za-z]\*?{_SCRIPTS})"
# A number a paper sets in math: signed (a minus sign, not a hyphen), in e-notation (1e3, 2.5e+05), or a
# multiple (100x). Never a piece of a range (0..4), a version (2.13.0), a date or a file name.
_NUMBER = r"(?:[-+]\d+(?:\.\d+)?(?:/\d+|e[-+]?\d+)?|\d+(?:\.\d+)?e[-+]?\d+)"
_NOTATION = re.compile(
    r"(?P<option>(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9])"  # an option of the command line
    rf"|\|\|(?P<norm>{_SYMBOL}|[A-Za-z0-9]{{1,12}})\|\|"  # ||W_t||, ||M||: a norm, not four bars
    rf"|(?<![\w.\\-])(?P<symbol>{_SYMBOL})(?!\w|\.\w)"
    rf"|(?<![\w.\\-])(?P<indexed>(?:{'|'.join(_GREEK)})|[A-Z])(?P<index>\d)(?!\w|\.\w)"  # beta1, S1, C2
    rf"|(?<=\))(?P<power>\^(?:\([^()\s$\\]*\)|-?[A-Za-z0-9/]+))(?!\w|\.\w)"  # (t+2)^-a
    rf"|(?<![\w.\\/-])(?P<number>{_NUMBER})(?P<times>x)?(?!\w|\.\d|/\d)"
    r"|(?<![\w.])(?P<multiple>\d+)x(?!\w)"
    r"|(?<![\w.\\-])(?P<sumsign>sum(?P<sum>_[A-Za-z0-9]+)?)(?= )"  # sum_c (n_c/n): a sum sign
    r"|(?P<relation>->|<=|>=|(?<= )[<>](?= )|(?<= )-(?= )|~(?!/))")  # ->, <=, >=, a lone < >, a spaced minus, ~
_RELATIONS = {"->": r"\to", "<=": r"\le", ">=": r"\ge", "<": "<", ">": ">", "-": "-", "~": r"\sim"}
_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|\(([^()]*)\)|(\d+/\d+(?!\w|/\d))|(-?[A-Za-z0-9/]+))")


def _script_latex(match: re.Match) -> str:
    body = next(group for group in match.groups()[1:] if group is not None)
    if re.fullmatch(r"[A-Za-z]{2,}", body):  # gamma_eff: a word, upright
        body = rf"\mathrm{{{body}}}"
    return f"{match.group(1)}{{{body}}}"


def _number_latex(number: str) -> str:
    """``-0.294`` -> ``-0.294`` (a minus sign in math), ``2.5e+05`` -> ``2.5\\cdot 10^{5}``, ``1e3`` -> ``10^{3}``."""
    mantissa, _, exponent = number.partition("e")
    if not exponent:
        return number
    sign = mantissa[0] if mantissa[0] in "+-" else ""
    mantissa = mantissa.lstrip("+-")
    power = f"10^{{{int(exponent)}}}"
    return sign + (power if float(mantissa) == 1 else rf"{mantissa}\cdot {power}")


def _notation(match: re.Match) -> str:
    if match.group("option"):
        return r"\texttt{" + match.group("option").replace("--", "-{}-") + "}"
    if match.group("power"):
        return "$" + _SCRIPT.sub(_script_latex, match.group("power")) + "$"
    if match.group("norm"):
        return rf"$\|{_symbol_latex(match.group('norm'))}\|$"
    if match.group("indexed"):
        base = match.group("indexed")
        return "$" + ("\\" + base if base in _GREEK else base) + "_{" + match.group("index") + "}$"
    if match.group("number"):
        return "$" + _number_latex(match.group("number")) + (r"\times" if match.group("times") else "") + "$"
    if match.group("sumsign"):
        return r"$\sum" + _SCRIPT.sub(_script_latex, match.group("sum") or "") + "$"
    if match.group("multiple"):
        return "$" + match.group("multiple") + r"\times$"
    if match.group("relation"):
        return "$" + _RELATIONS[match.group("relation")] + "$"
    return "$" + _symbol_latex(match.group("symbol")) + "$"


def _symbol_latex(symbol: str) -> str:
    """``eta^p`` -> ``\\eta^{p}``, ``S_{3/2}`` -> ``S_{3/2}``, ``gamma_eff`` -> ``\\gamma_{\\mathrm{eff}}``."""
    base = re.match(r"[A-Za-z0-9]+", symbol).group()
    if base not in _GREEK and len(base) > 1:  # a letter and its scripts: S_2 read as S then _2
        base = base[0]
    rest = symbol[len(base):]
    star = "^{*}" if rest.startswith("*") else ""
    return ("\\" + base if base in _GREEK else base) + star + _SCRIPT.sub(_script_latex, rest.lstrip("*"))


_MARK = re.compile(r"\\,\\textsuperscript\{\([a-z]\)\}$")
MARK_WIDTH = 0.5 + 3 * SCRIPT_SIZE  # a thin space and "(a)" in superscript size, in average characters


def _longest_word(cell: Cell) -> int:
    """Characters of the longest piece of ``cell`` that cannot break (a formula is one piece); a note's mark
    (:func:`note_mark`) is counted as part of the piece it follows."""
    if cell.latex is not None and _MARK.search(cell.latex):
        return math.ceil(_longest_word(Cell(cell.text, _MARK.sub("", cell.latex) or None)) + MARK_WIDTH)
    if cell.latex is not None and "$" in cell.latex:
        return math.ceil(max(_math_width(m) for m in re.findall(r"\$([^$]*)\$", cell.latex)))
    # where a line may break: spaces, after _ , and an explicit hyphen, after / or . before a letter (_breakable)
    pieces = re.split(r"\s+|(?<=[_,-])|(?<=[/.])(?=[A-Za-z])", cell.text)
    text = max([LONG_RUN + 1 if _LONG_RUN.match(p) else _width(p) for p in pieces] + [0])
    formulas = re.findall(r"\$([^$]*)\$", latex_escape(cell.text)) if cell.latex is None else []
    return math.ceil(max([text] + [_math_width(m) for m in formulas]))  # -1 is set as math: a wider minus


_FRACTION = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")
_SCRIPT_GROUP = re.compile(r"[_^](\{(?:[^{}]|\{[^{}]*\})*\}|\\?[A-Za-z0-9])")


def _math_width(latex: str) -> float:
    """Width of a formula in average text characters: sub- and superscripts and fractions are set at about
    70% size, a command (``\\in``, ``\\log``) as its symbol or word, binary signs with their spacing."""
    def small(text: str) -> float:
        return SCRIPT_SIZE * _math_width(text.strip("{}"))

    width = 0.0
    for fraction in _FRACTION.finditer(latex):
        width += SCRIPT_SIZE * max(_math_width(fraction.group(1)), _math_width(fraction.group(2)))
    latex = _FRACTION.sub("", latex)
    for script in _SCRIPT_GROUP.finditer(latex):
        width += small(script.group(1))
    latex = _SCRIPT_GROUP.sub("", latex)
    for command in re.findall(r"\\([A-Za-z]+)", latex):
        width += len(command) if command in ("log", "exp", "max", "min", "sum") else 1.5
    latex = re.sub(r"\\[A-Za-z]+|[{}\s]", "", latex)
    return width + len(latex) + sum(ch in "-+=<>" for ch in latex)


def _width(text: str) -> float:
    """Width in average characters: m and w are half as wide again as the rest, and capitals (paper names
    such as MINIBATCH) about 40% wider than an average character of Computer Modern."""
    return (len(text) + 0.5 * sum(ch in "mwMW+=" for ch in text) + 0.4 * sum(ch.isupper() for ch in text))


def _wrapped_lines(text: str, width: float) -> int:
    """Lines ``text`` takes wrapped at spaces into lines of ``width`` characters (a word longer than the line
    takes one: the layout gives every column its longest word)."""
    lines, used = 1, 0.0
    for word in text.split():
        size = _width(word)
        if used and used + 1 + size > width:
            lines, used = lines + 1, size
        else:
            used += (1 if used else 0) + size
    return lines


def _breakable(latex: str) -> str:
    """Allow line breaks inside file names, option and column names (after ``_``, ``/``, ``.``) and hashes of
    plain text, never inside a formula (``$...$`` pieces are left as they are)."""
    pieces = re.split(r"(\$[^$]*\$)", latex)
    return "".join(piece if piece.startswith("$") else _breakable_text(piece) for piece in pieces)


def _breakable_text(latex: str) -> str:
    latex = _LONG_RUN.sub(lambda m: r"\hspace{0pt}".join(m.group()[i:i + LONG_RUN]
                                                          for i in range(0, len(m.group()), LONG_RUN)), latex)
    return _BREAK_AFTER.sub(lambda m: m.group() + r"\hspace{0pt}", latex)


LATEX_PACKAGES = ("booktabs", "longtable", "array", "amsmath")
# (font size, characters of it on an article's \linewidth of 345 pt, less column gaps), largest first
LATEX_SIZES = (("footnotesize", 62), ("scriptsize", 80))  # \tiny gains little: cmr5 is a wide design
# Estimated lines (:meth:`Table._estimated_lines`) of each size a table may take to fit one page of an article
# with a few lines of the paper's text: a table estimated longer is set smaller when that fits it on the page.
# The estimate wraps more than TeX does (about 4 lines for 3); calibrated on twenty claims of 62 characters,
# estimated 84 lines in footnotesize (1.2 pages when typeset) and 63 in scriptsize (0.7 of a page).
PAGE_LINES = {"footnotesize": 66, "scriptsize": 80}
FOOTNOTE_MARKS = "abcdefghijklmnopqrstuvwxyz"


def _cell(c: CellLike) -> Cell:
    return c if isinstance(c, Cell) else Cell(str(c), value=c if isinstance(c, (int, float)) else None)


def _tex(c: CellLike) -> str:
    cell = _cell(c)
    return cell.latex if cell.latex is not None else latex_escape(cell.text)


def note_mark(mark: str) -> str:
    r"""A note's letter as LaTeX, ``\textsuperscript{(a)}``: in parentheses, in text (never inside ``$...$``), so that
    after a formula (``t^{-1/4}``, ``1/\log t``) it cannot be read as a factor of its exponent."""
    return rf"\textsuperscript{{({mark})}}"


def _with_mark(cell: CellLike, mark: str) -> Cell:
    """``cell`` with a note's mark after it, a thin space apart (the mark adds no unbreakable width worth
    counting)."""
    cell = _cell(cell)
    return Cell(cell.text, _tex(cell) + r"\," + note_mark(mark), cell.value)


@dataclass
class Table:
    columns: Sequence[str]
    rows: list[Sequence[CellLike]] = field(default_factory=list)
    caption: str = ""
    label: str = ""
    notes: list[CellLike] = field(default_factory=list)  # footnotes: sources, windows, tolerances
    caption_latex: str = ""  # the caption with its formulas in math mode; "" means "escape caption"
    # LaTeX only. footnoted: a column whose values a paper prints once each, as lettered notes below the table,
    # mapped to the column whose cell carries the letter (sources: long, and shared by many rows).
    footnoted: dict[str, str] = field(default_factory=dict)
    grouped: int = 0  # LaTeX only: the first `grouped` columns are left blank where they repeat the row above
    small: bool = False  # LaTeX only: set in the smallest font (a provenance table, read less than the results)
    # LaTeX only: the tables a paper prints in place of this one (a compact results table and its provenance)
    latex_tables: Sequence[Table] = ()

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
            lines += ["", f"_{esc(_cell(note).text)}_"]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        r"""Tables to ``\input`` into a paper: each a portrait booktabs ``longtable`` as wide as ``\linewidth``
        (breaking across pages, its header repeated, only when it is longer than a page), caption above, notes
        below; long text columns wrap, plain notation is set as math (:func:`latex_escape`), footnoted columns
        become lettered notes and grouped columns are printed once per group. The packages it needs are named
        in its first line (:data:`LATEX_PACKAGES`); :func:`latex_document` makes it compilable alone."""
        if self.latex_tables:
            return "".join(table.to_latex() for table in self.latex_tables)
        table = self._footnotes_folded()
        parts = table._column_parts()
        if len(parts) > 1:  # too wide even in the smallest font: a paper splits the columns, keyed by the first
            return "".join(part.to_latex() for part in parts)
        return table._longtable()

    def _footnotes_folded(self) -> Table:
        """This table with each footnoted column taken out: its distinct values become lettered notes (first
        below the table), each row's letter set after its cell in the column named for it; a value shared by
        every row needs no letter."""
        if not self.footnoted or not self.rows:
            return self
        keep = [i for i, name in enumerate(self.columns) if name not in self.footnoted]
        rows = [list(row) for row in self.rows]
        notes: list[CellLike] = []
        for column, target in self.footnoted.items():
            i, j = self.columns.index(column), self.columns.index(target)
            values = list(dict.fromkeys(_cell(row[i]).text for row in self.rows))
            if len(values) == 1:
                notes.append(Cell(f"{column}: {values[0]}", latex_escape(f"{column}: ") + _tex(self.rows[0][i])))
                continue
            marks = {value: FOOTNOTE_MARKS[k % len(FOOTNOTE_MARKS)] for k, value in enumerate(values)}
            for row, original in zip(rows, self.rows):
                row[j] = _with_mark(row[j], marks[_cell(original[i]).text])
            first = {_cell(row[i]).text: row[i] for row in reversed(self.rows)}
            notes.append(Cell(f"{column}: " + "; ".join(f"({marks[v]}) {v}" for v in values),
                              latex_escape(f"{column}: ") + " ".join(
                                  rf"{note_mark(marks[v])}\,{_tex(first[v])}{';' if k < len(values) - 1 else ''}"
                                  for k, v in enumerate(values))))
        return Table([self.columns[i] for i in keep], [[row[i] for i in keep] for row in rows], self.caption,
                     self.label, notes + list(self.notes), self.caption_latex, grouped=self.grouped, small=self.small)

    def _longtable(self) -> str:
        size, _ = self._latex_layout()
        columns = len(self.columns)

        def row_text(cells) -> str:
            return " & ".join(_breakable(text) for text in cells) + r" \\"

        header = row_text([latex_escape(c) for c in self.columns])
        caption = self.caption_latex or (latex_escape(self.caption) if self.caption else "")
        lines = ["% rates table: needs \\usepackage{" + ",".join(LATEX_PACKAGES) + "}",
                 r"\begingroup", "\\" + size,
                 r"\setlength{\tabcolsep}{2pt}", r"\setlength{\LTcapwidth}{\linewidth}",
                 r"\begin{longtable}{" + self._latex_columns() + "}"]
        if caption:
            lines.append(r"\caption{" + caption + "}" + (r"\label{" + self.label + "}" if self.label else "") + r"\\")
        lines += [r"\toprule", header, r"\midrule", r"\endfirsthead"]
        if caption:
            lines.append(rf"\multicolumn{{{columns}}}{{@{{}}l}}{{\tablename~\thetable{{}} (continued)}} \\")
        lines += [r"\toprule", header, r"\midrule", r"\endhead",
                  r"\midrule", rf"\multicolumn{{{columns}}}{{r@{{}}}}{{continued on the next page}} \\", r"\endfoot",
                  r"\bottomrule", r"\endlastfoot"]
        previous: list[str] = []
        for row in self.rows:
            cells = [_tex(c) for c in row]
            shown = list(cells)
            for i in range(min(self.grouped, len(cells))):  # a group's key is printed on its first row only
                if cells[:i + 1] == previous[:i + 1]:
                    shown[i] = ""
            lines.append(row_text(shown))
            previous = cells
        lines.append(r"\end{longtable}")
        for note in self.notes:
            lines.append(r"{\raggedright\noindent " + _breakable(_tex(note)) + r"\par}")
        lines += [r"\medskip", r"\endgroup"]
        return "\n".join(lines) + "\n"

    def _column_need(self, i: int) -> float:
        """Characters column ``i``'s longest unbreakable word needs, with its gap."""
        return max(_longest_word(_cell(c)) for c in [self.columns[i]] + [row[i] for row in self.rows]) + 1.5

    def _latex_need(self) -> float:
        """Characters the columns' longest unbreakable words need, with their gaps."""
        return sum(self._column_need(i) for i in range(len(self.columns)))

    def _column_parts(self) -> list[Table]:
        """This table, or (when its words need more than a line in the smallest font) tables of consecutive
        columns that each fit one, every part led by the first column; the caption says which part, the notes
        follow the last."""
        capacity = LATEX_SIZES[-1][1]
        if self._latex_need() <= capacity or len(self.columns) < 3:
            return [self]
        key = self._column_need(0)
        groups: list[list[int]] = [[]]
        for i in range(1, len(self.columns)):
            if groups[-1] and key + sum(self._column_need(j) for j in groups[-1] + [i]) > capacity:
                groups.append([])
            groups[-1].append(i)
        parts = []
        for number, group in enumerate(groups, 1):
            which = f" (part {number} of {len(groups)})"
            indices = [0] + group
            parts.append(Table([self.columns[i] for i in indices], [[row[i] for i in indices] for row in self.rows],
                               caption=self.caption + which if self.caption else "",
                               label=self.label if number == 1 else "",
                               notes=self.notes if number == len(groups) else [],
                               caption_latex=self.caption_latex + which if self.caption_latex else "",
                               grouped=min(self.grouped, 1), small=self.small))
        return parts

    def _latex_layout(self) -> tuple[str, int]:
        """(font size, characters per line): the largest font in which every column's longest unbreakable word
        fits a portrait line and, where some font lets it, the whole table with its notes fits one page (the
        smallest font when no font fits the words: :meth:`_column_parts` splits such a table)."""
        need = self._latex_need()
        sizes = [(size, chars) for size, chars in (LATEX_SIZES[-1:] if self.small else LATEX_SIZES) if need <= chars]
        if not sizes:
            return LATEX_SIZES[-1]
        for size, chars in sizes:
            if self._estimated_lines(chars) <= PAGE_LINES[size]:
                return size, chars
        return sizes[0]  # longer than a page in every font: it breaks across pages in the largest

    def _latex_line_chars(self) -> int:
        return self._latex_layout()[1]

    def _estimated_lines(self, chars: int) -> int:
        """Lines of text the table (header, rows, notes) takes with ``chars`` characters per line."""
        widths = self._column_chars(chars)
        rows = [self.columns] + [[_cell(c).text for c in row] for row in self.rows]
        lines = sum(max(_wrapped_lines(str(text), width - 1.5) for text, width in zip(row, widths)) for row in rows)
        return lines + sum(_wrapped_lines(_cell(note).text, chars) for note in self.notes)

    def _column_chars(self, chars: int) -> list[float]:
        """Column widths in characters, gaps included, that share a line of ``chars``: each column gets at least
        its longest unbreakable word; the rest goes to the columns whose text wraps, in proportion to the square
        root of the text beyond that width (which minimises the table's total height when a row's height is its
        text over its width), none wider than its longest cell."""
        texts = [[str(name)] + [_cell(row[i]).text for row in self.rows] for i, name in enumerate(self.columns)]
        words = [max(_longest_word(_cell(c)) for c in [name] + [row[i] for row in self.rows])
                 for i, name in enumerate(self.columns)]
        natural = [max(_width(text) for text in col) + 1.5 for col in texts]
        need = [max(w, 1) + 1.5 for w in words]
        budget = max(chars, sum(need))
        weight = [math.sqrt(sum(max(0.0, _width(text) + 1.5 - w) for text in col))  # the text that must wrap
                  for col, w in zip(texts, need)]
        widths = list(need)
        while True:  # share what is left among the columns still narrower than their longest cell
            spare = budget - sum(widths)
            open_columns = [i for i in range(len(widths)) if weight[i] and widths[i] < natural[i]]
            if spare <= 1e-9 or not open_columns:
                break
            total = sum(weight[i] for i in open_columns)
            for i in open_columns:
                widths[i] = min(natural[i], widths[i] + spare * weight[i] / total)
        if budget - sum(widths) > 1e-9:  # every column at its longest cell: the text columns take the rest
            wide = [i for i in range(len(widths)) if weight[i]] or list(range(len(widths)))
            spare = budget - sum(widths)
            for i in wide:
                widths[i] += spare / len(wide)
        return widths

    def _latex_columns(self) -> str:
        r"""Ragged-right ``p`` columns of :meth:`_column_chars` as shares of ``\linewidth`` (gaps included)."""
        widths = self._column_chars(self._latex_line_chars())
        scale = 0.998 / sum(widths)  # a hair under the line: rounding the fractions must never overfill it
        return "".join(rf">{{\raggedright\arraybackslash}}p{{\dimexpr {w * scale:.4f}\linewidth-2\tabcolsep\relax}}"
                       for w in widths)

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
                           "notes": [_cell(note).text for note in self.notes]}, indent=1, default=str) + "\n"

    def render(self, fmt: str) -> str:
        if fmt == "latex":
            return self.to_latex()
        if fmt == "markdown":
            return self.to_markdown()
        if fmt == "json":
            return self.to_json()
        raise ValueError(f"unknown table format {fmt!r}")


def latex_document(*bodies: str) -> str:
    """A compilable ``article`` around table bodies: what ``--standalone`` writes, and what the tests compile
    (default page size and margins, so a table that fits here fits a paper's text width)."""
    return "\n".join([r"\documentclass{article}", rf"\usepackage{{{','.join(LATEX_PACKAGES)}}}",
                      r"\begin{document}", *bodies, r"\end{document}", ""])
