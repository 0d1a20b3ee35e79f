"""LaTeX for report tables: escaping cell text, a booktabs tabular, and a syntax check.

Tables are written as a bare ``tabular`` (no float, no caption) so a paper can wrap them
in its own ``table`` environment and ``\\input`` them. They need only ``booktabs``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TexProblem", "check_tex", "tabular", "tex_escape"]

_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
             "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
             "^": r"\textasciicircum{}"}
# Characters pdflatex cannot take from UTF-8 without extra packages.
_UNICODE = {"−": "$-$", "–": "--", "—": "---", "†": r"\dag{}", "‡": r"\ddag{}",
            "Δ": r"$\Delta$", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$",
            "…": r"\ldots{}", "→": r"$\rightarrow$", "±": r"$\pm$", "·": r"$\cdot$",
            "√": r"$\surd$", "π": r"$\pi$", "σ": r"$\sigma$", "\u00a0": "~"}
_POWER = re.compile(r"\^(\{[^}]*\}|[A-Za-z0-9]+)")
_NEGATIVE = re.compile(r"(?<![\w.])-(?=\d)")


def tex_escape(text: str) -> str:
    """Escape ``text`` for a LaTeX table cell.

    ``pass^k`` becomes a superscript, a leading minus of a number a math minus, and the
    few Unicode symbols the tables use their LaTeX commands; other non-ASCII characters
    are dropped to ``?`` so that pdflatex never fails on a cell.

    >>> tex_escape("real - sham_x 50% pass^2 -3.5")
    'real - sham\\\\_x 50\\\\% pass$^{2}$ $-$3.5'
    """
    powers: list[str] = []

    def _stash(match: re.Match[str]) -> str:
        powers.append(match.group(1).strip("{}"))
        return f"\x00{len(powers) - 1}\x00"

    text = _POWER.sub(_stash, str(text))
    out = []
    for ch in text:
        if ch in _SPECIALS:
            out.append(_SPECIALS[ch])
        elif ch in _UNICODE:
            out.append(_UNICODE[ch])
        elif ord(ch) > 127:
            out.append("?")
        else:
            out.append(ch)
    escaped = _NEGATIVE.sub("$-$", "".join(out))
    return re.sub("\x00(\\d+)\x00",
                  lambda m: "$^{" + tex_escape(powers[int(m.group(1))]) + "}$", escaped)


def tabular(header: Sequence[str], rows: Sequence[Sequence[str]], align: str,
            notes: Sequence[str] = (), comments: Sequence[str] = (),
            rules_after: Sequence[int] = ()) -> str:
    """A booktabs ``tabular``; ``notes`` become full-width rows under the bottom rule.

    Args:
        header: column titles (escaped here).
        rows: cells (escaped here).
        align: the column specification, one letter per column (``lrr``).
        notes: footnotes, one per line under the table.
        comments: ``%`` comment lines put before the table (e.g. ``partial``).
        rules_after: row indices after which a ``\\midrule`` separates blocks.
    """
    n = len(align)
    lines = [f"% {c}" for c in comments]
    lines += [f"\\begin{{tabular}}{{{align}}}", r"\toprule",
              " & ".join(tex_escape(h) for h in header) + r" \\", r"\midrule"]
    for i, row in enumerate(rows):
        lines.append(" & ".join(tex_escape(c) for c in row) + r" \\")
        if i in rules_after and i != len(rows) - 1:
            lines.append(r"\midrule")
    lines.append(r"\bottomrule")
    for note in notes:
        lines.append(f"\\multicolumn{{{n}}}{{@{{}}l}}{{\\footnotesize {tex_escape(note)}}}"
                     r" \\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TexProblem:
    """One problem the syntax check found: the line (1-based) and what is wrong."""

    line: int
    problem: str


def _strip_comment(line: str) -> str:
    return re.sub(r"(?<!\\)%.*$", "", line)


def _cells(row: str) -> int:
    row = row.strip()
    if row.endswith(r"\\"):
        row = row[:-2]
    total = 0
    for cell in re.split(r"(?<!\\)&", row):
        m = re.match(r"\s*\\multicolumn\{(\d+)\}", cell)
        total += int(m.group(1)) if m else 1
    return total


def _brace_problems(lineno: int, line: str) -> list[TexProblem]:
    depth = 0
    for i, ch in enumerate(line):
        escaped = i > 0 and line[i - 1] == "\\" and not (i > 1 and line[i - 2] == "\\")
        if ch == "{" and not escaped:
            depth += 1
        elif ch == "}" and not escaped:
            depth -= 1
            if depth < 0:
                return [TexProblem(lineno, "closing brace without an opening one")]
    return [TexProblem(lineno, "unbalanced braces")] if depth else []


def check_tex(text: str) -> list[TexProblem]:
    """Check a report table without LaTeX: what makes pdflatex fail or misalign.

    Checks balanced braces per line, unescaped ``_ % & # $`` outside math, the three
    booktabs rules in order, one ``tabular`` and the same number of cells in every row as
    the column specification has columns (``\\multicolumn`` counted by its span).

    >>> check_tex("\\\\begin{tabular}{lr}\\n\\\\toprule\\na & b_c \\\\\\\\\\n\\\\end{tabular}")[0]
    TexProblem(line=3, problem="unescaped '_' outside math")
    """
    problems: list[TexProblem] = []
    ncols = None
    seen: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line.strip():
            continue
        problems += _brace_problems(lineno, line)
        outside = re.sub(r"(?<!\\)\$[^$]*(?<!\\)\$", "", line)
        for ch in "_#^":
            if re.search(rf"(?<!\\){re.escape(ch)}", outside):
                problems.append(TexProblem(lineno, f"unescaped '{ch}' outside math"))
        if re.search(r"(?<!\\)\$", outside):
            problems.append(TexProblem(lineno, "unbalanced '$'"))
        m = re.match(r"\s*\\begin\{tabular\}\{([^}]*)\}", line)
        if m:
            ncols = len(re.sub(r"@\{[^}]*\}|[|\s]", "", m.group(1)))
            seen.append("begin")
            continue
        for rule in ("toprule", "midrule", "bottomrule"):
            if line.strip() == f"\\{rule}":
                seen.append(rule)
        if line.strip() == r"\end{tabular}":
            seen.append("end")
        elif ncols is not None and "end" not in seen and not line.strip().startswith("\\"):
            if not line.rstrip().endswith(r"\\"):
                problems.append(TexProblem(lineno, "row does not end with \\\\ (an unescaped "
                                           "'%' comments out the rest of a line)"))
            elif _cells(line) != ncols:
                problems.append(TexProblem(lineno, f"{_cells(line)} cells, the tabular has "
                                           f"{ncols}"))
    order = [s for s in seen if s != "midrule"]
    if order != ["begin", "toprule", "bottomrule", "end"]:
        problems.append(TexProblem(0, f"expected begin, toprule, bottomrule, end; got {order}"))
    if "midrule" not in seen:
        problems.append(TexProblem(0, "no \\midrule under the header"))
    return problems
