"""A report table and its three renderings: ``.csv`` (numbers), ``.md`` and ``.tex``.

A ``ReportTable`` holds the formatted cells a reader sees and, separately, the numbers
behind them at full precision (``data``), so the CSV can be checked against the analysis
while the Markdown and LaTeX stay readable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pandas as pd

from fire_exp.report.latex import tabular

__all__ = ["ReportTable", "fmt_ci", "fmt_int", "fmt_num", "fmt_p", "fmt_pct", "write_table"]


@dataclass(frozen=True)
class ReportTable:
    """One paper table.

    Attributes:
        name: file stem (``contrasts`` → ``contrasts.tex``, ``.md``, ``.csv``).
        title: one-line caption (Markdown heading and a ``%`` comment in the .tex).
        header: column titles.
        rows: formatted cells, one tuple per row, as long as ``header``.
        data: the numbers behind the cells (written as the CSV).
        align: LaTeX column specification, one letter per column.
        notes: footnotes (under the table in every format).
        rules_after: row indices after which a rule separates blocks.
    """

    name: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    data: pd.DataFrame
    align: str = ""
    notes: tuple[str, ...] = ()
    rules_after: tuple[int, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"table {self.name}: row {row} has {len(row)} cells, "
                                 f"header has {len(self.header)}")
        if not self.align:
            object.__setattr__(self, "align", "l" + "r" * (len(self.header) - 1))

    def markdown(self, banner: str = "") -> str:
        """The table as GitHub Markdown with its title, banner and notes."""
        parts = [f"# {self.title}"]
        if banner:
            parts.append(f"> **{banner}**")
        if self.rows:
            lines = ["| " + " | ".join(self.header) + " |",
                     "| " + " | ".join("---" for _ in self.header) + " |"]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                      for row in self.rows]
            parts.append("\n".join(lines))
        else:
            parts.append("_(no rows)_")
        if self.notes:
            parts.append("\n".join(f"- {n}" for n in self.notes))
        return "\n\n".join(parts) + "\n"

    def latex(self, comments: Sequence[str] = ()) -> str:
        """The table as a booktabs ``tabular`` with ``%`` comment lines on top."""
        rows = self.rows or (("(no rows)",) + ("",) * (len(self.header) - 1),)
        return tabular(self.header, rows, self.align, self.notes,
                       (self.title, *comments), self.rules_after)


def write_table(table: ReportTable, out: Path, partial: str = "") -> list[Path]:
    """Write ``table`` as ``.csv``, ``.md`` and ``.tex`` in ``out``.

    Args:
        partial: when non-empty the run is unfinished: a banner in the Markdown and a
            ``% partial: …`` comment in the LaTeX.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{table.name}.{ext}" for ext in ("csv", "md", "tex")]
    table.data.to_csv(paths[0], index=False, lineterminator="\n")
    paths[1].write_text(table.markdown(f"Partial run: {partial}" if partial else ""),
                        encoding="utf-8")
    paths[2].write_text(table.latex([f"partial: {partial}"] if partial else []),
                        encoding="utf-8")
    return paths


def _nan(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: object, digits: int = 1) -> str:
    """A number with fixed decimals, ``–`` for missing.

    >>> fmt_num(25.0), fmt_num(float("nan")), fmt_num(-3.571, 2), fmt_num(-6.25), fmt_num(5, 0)
    ('25.0', '–', '-3.57', '-6.3', '5')
    """
    if _nan(x):
        return "–"
    value = float(x)  # type: ignore[arg-type]
    if not math.isfinite(value):
        return str(value)
    # Half away from zero, as the paper prints 6.25 → 6.3 (Python's format is half-even).
    text = str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits),
                                             rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fmt_pct(x: object, digits: int = 1) -> str:
    """Percent or points with one decimal (the table's unit is in its header)."""
    return fmt_num(x, digits)


def fmt_int(x: object) -> str:
    """A count, ``–`` for missing."""
    return "–" if _nan(x) else str(int(x))  # type: ignore[call-overload]


def fmt_ci(low: object, high: object, digits: int = 1) -> str:
    """An interval ``[low, high]``.

    >>> fmt_ci(7.14, 46.43)
    '[7.1, 46.4]'
    """
    if _nan(low) or _nan(high):
        return "–"
    return f"[{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


def fmt_p(p: object) -> str:
    """A p-value with three decimals, ``<0.001`` below.

    >>> fmt_p(0.0625), fmt_p(1.0), fmt_p(2e-5)
    ('0.063', '1.000', '<0.001')
    """
    if _nan(p):
        return "–"
    value = float(p)  # type: ignore[arg-type]
    if value < 0.001:
        return "<0.001"
    # Half up, as papers print exact p-values (0.0625 → 0.063), not Python's half-even.
    return str(Decimal(repr(value)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))
