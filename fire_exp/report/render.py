"""The one formatter: numbers as text, data tables, and paper tables in three formats.

``write_tables`` writes every table of an ``AnalysisResult`` as ``NAME.csv`` (full
precision) and ``NAME.md`` (``markdown_table``: 4 decimals) plus ``metadata.json`` and
``notes.md``; that is ``fire-exp analyze``'s output and the report's ``data/`` folder. A
``ReportTable`` holds the formatted cells of a paper table and, separately, the numbers
behind them at full precision (``data``), written as ``.csv``, ``.md`` and ``.tex``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.analysis.sequential import sequential_markdown
from fire_exp.report.latex import tabular
from fire_exp.report.rounding import cell4, fixed, is_missing, p_text

DATA_DIR = "data"  # the analysis' own tables, inside the report folder


def default_out(run: Path) -> Path:
    """``RUN/report`` for a run folder, ``<file stem>-report/`` beside an attempts file."""
    return run / "report" if run.is_dir() else run.parent / f"{run.stem}-report"

__all__ = ["ReportTable", "fmt_ci", "fmt_int", "fmt_num", "fmt_p", "fmt_pct", "markdown_table",
           "summary_markdown", "write_table", "write_tables"]


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
    return is_missing(x)


def fmt_num(x: object, digits: int = 1) -> str:
    """A number with fixed decimals, ``–`` for missing (``rounding.fixed``: 6.25 → 6.3).

    >>> fmt_num(25.0), fmt_num(float("nan")), fmt_num(-3.571, 2), fmt_num(-6.25), fmt_num(5, 0)
    ('25.0', '–', '-3.57', '-6.3', '5')
    """
    return fixed(x, digits)


def fmt_pct(x: object, digits: int = 1) -> str:
    """Percent or points with one decimal (the table's unit is in its header)."""
    return fixed(x, digits)


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
    return f"[{fixed(low, digits)}, {fixed(high, digits)}]"


def fmt_p(p: object) -> str:
    """A p-value with three decimals, ``<0.001`` below (``rounding.p_text``).

    >>> fmt_p(0.0625), fmt_p(1.0), fmt_p(2e-5)
    ('0.063', '1.000', '<0.001')
    """
    return p_text(p)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return _float_cells([value])[0]
    return str(value).replace("|", "\\|")


def _float_cells(values: list[float]) -> list[str]:
    """Non-NaN floats as table cells, four decimals (``rounding.cell4``; a list at once for
    a per-task table, whose costs are all distinct).

    >>> _float_cells([0.5, 2.0, 0.00012345, 0.0, -1.25])
    ['0.5', '2', '0.0001234', '0', '-1.25']
    """
    return [cell4(v) for v in values]


_FEW_ROWS = 512  # a table this short is formatted cell by cell; longer, by distinct values


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table of ``frame`` (floats to 4 decimals, NaN blank).

    >>> print(markdown_table(pd.DataFrame({"arm": ["real"], "p": [0.0625]})))
    | arm | p |
    | --- | --- |
    | real | 0.0625 |
    """
    if frame.empty:
        return "_(empty)_"
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    if len(frame) <= _FEW_ROWS:  # each cell formatted as it comes
        columns = [list(map(_fmt, values.tolist())) for _, values in frame.items()]
    else:
        columns = [_column_cells(frame.iloc[:, j]) for j in range(frame.shape[1])]
    body = ["| " + " | ".join(row) + " |" for row in zip(*columns, strict=True)]
    return "\n".join([head, rule, *body])


def _column_cells(values: pd.Series) -> list[str]:
    """The cells of one column, each distinct value formatted once (a column of 50,000
    tasks holds a few hundred distinct pass rates)."""
    if values.dtype.kind in "biuf":  # numbers: pandas finds the distinct values (NaN: -1)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        distinct = uniques.tolist()
        texts = _float_cells(distinct) if values.dtype.kind == "f" else map(_fmt, distinct)
        formatted = np.array([*texts, ""], dtype=object)
        cells: list[str] = formatted[codes].tolist()
        return cells
    if isinstance(values.dtype, pd.CategoricalDtype):  # task, arm, cohort names
        cats = _column_cells(pd.Series(values.cat.categories))
        codes = values.cat.codes.to_numpy()
        named: list[str] = np.array([*cats, ""], dtype=object)[codes].tolist()
        return named
    seen: dict[tuple[type, object], str] = {}
    out = []
    for v in values.to_numpy(dtype=object):
        key = (type(v), v)  # True, 1 and 1.0 are equal keys but print differently
        try:
            cell = seen.get(key)
        except TypeError:  # an unhashable cell (a list): format it as it comes
            cell = _fmt(v)
        if cell is None:  # NaN never equals itself: formatted each time, which is cheap
            cell = seen[key] = _fmt(v)
        out.append(cell)
    return out


def write_tables(result: AnalysisResult, out_dir: Path | str) -> list[Path]:
    """Write every table as ``NAME.csv`` and ``NAME.md``, plus metadata.json and notes.md.

    CSVs use full float precision (repr), so the same analysis gives bit-identical files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in result.tables().items():
        csv_path, md_path = out / f"{name}.csv", out / f"{name}.md"
        frame.to_csv(csv_path, index=False, lineterminator="\n")
        md_path.write_text(f"# {name}\n\n{markdown_table(frame)}\n", encoding="utf-8")
        written += [csv_path, md_path]
    meta = {**result.metadata, "notes": list(result.notes)}
    (out / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")
    notes = "".join(f"- {n}\n" for n in result.notes) or "- none\n"
    (out / "notes.md").write_text(f"# notes\n\n{notes}", encoding="utf-8")
    if result.sequential is not None:  # a sequential plan's test (analysis/sequential.py)
        (out / "sequential.json").write_text(json.dumps(result.sequential, indent=2,
                                                        sort_keys=True) + "\n", encoding="utf-8")
        (out / "sequential.md").write_text(sequential_markdown(result.sequential),
                                           encoding="utf-8")
        written += [out / "sequential.json", out / "sequential.md"]
    return [*written, out / "metadata.json", out / "notes.md"]


def summary_markdown(result: AnalysisResult) -> str:
    """Short Markdown summary: per-arm pass rates by cohort and the contrasts."""
    parts = [f"## Analysis ({result.metadata.get('plan')}, seed {result.metadata.get('seed')})"]
    pr = result.pass_rates
    if not pr.empty:
        wide = pr.pivot(index="arm", columns="cohort", values="pass_rate_pct")
        parts += ["### Pass rate (%) per arm", markdown_table(wide.reset_index())]
    c = result.contrasts
    if not c.empty:
        show = c[["contrast", "cohort", "role", "n_tasks", "estimate_pp", "ci_low_pp",
                  "ci_high_pp", "p_value", "p_method", "p_holm"]]
        parts += ["### Contrasts (points; 95 % percentile CI; sign-flip p)", markdown_table(show)]
    if not result.interaction.empty:
        parts += ["### Interaction", markdown_table(result.interaction[
            ["contrast", "cohort", "estimate_pp", "ci_low_pp", "ci_high_pp", "p_value"]])]
    if result.sequential is not None:
        parts.append(sequential_markdown(result.sequential).rstrip("\n"))
    if result.notes:
        parts += ["### Notes", "\n".join(f"- {n}" for n in result.notes)]
    return "\n\n".join(parts) + "\n"
