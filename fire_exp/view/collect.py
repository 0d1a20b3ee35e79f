"""What the run explorer shows, gathered once: records, preregistration, the analysis.

Every number of the overview comes from ``fire_exp.analysis.analyze`` (its tables, metadata
and notes, rendered generically by name so a table the analysis adds simply appears); the
grid's counts are the analysis' ``tasks`` table, as in the report's heatmap.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fire_exp.analysis import AnalysisPlan, AnalysisResult, RunInputs, analyze, read_run
from fire_exp.environments.redaction import redact_text, secret_values
from fire_exp.paths import PACKAGE_DIR
from fire_exp.records import AttemptRecord
from fire_exp.report.rounding import cell4, fixed, is_missing, p_text, rate_of

__all__ = ["Redact", "RunData", "cell_text", "collect", "format_cell", "secret_redactor", "table_data",
           "without_machine_paths"]

# Names of environment variables whose values are secrets (API keys, tokens, passwords).
Redact = Callable[[str], str]


def secret_redactor(environ: Mapping[str, str] | None = None) -> Redact:
    """A function replacing every secret-looking environment value with ``***``.

    The logs were redacted when written; this catches a secret the viewer's environment
    holds that reached a log anyway (the same ``redact`` the agents use).
    """
    secrets = secret_values(environ)
    return lambda text: redact_text(text, secrets)


def is_percent(column: str) -> bool:
    """Whether a table column holds percentages or percentage points (``*_pct``, ``*_pp``)."""
    return column.endswith(("_pct", "_pp"))


def is_p_value(column: str) -> bool:
    """Whether a table column holds p-values (``p_value``, ``p_holm``, ``delta_p``, ...)."""
    return column in ("p_value", "p_holm") or column.endswith("_p")


def format_cell(value: object, decimals: int = 4) -> object:
    """A cell of an attempt's data for the page: floats to ``decimals`` places by the one
    rounding rule (``rounding.cell4`` at 4), NaN empty, inf as text."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return str(value)  # "inf", as the Markdown tables print it
        return float(cell4(value) if decimals == 4 else fixed(value, decimals)) + 0.0
    if isinstance(value, int):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return format_cell(value.item(), decimals)
    return str(value)


def cell_text(column: str, value: object) -> object:
    """One analysis-table cell as the report prints it: percentages and points to one
    decimal, p-values to three (``<0.001`` below), other floats to four; counts stay
    numbers, NaN is empty (None)."""
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return str(value)
        if is_percent(column):
            return fixed(value, 1)
        return p_text(value) if is_p_value(column) else cell4(value)
    return str(value)


# A rate column and the (numerator, denominator) count columns beside it: shown with its
# denominator when that is small, as the report prints it ("100.0 (1 of 1)").
RATE_COUNTS = {"near_miss_pct": ("near_miss", "passed_in_state")}


def _row_cells(columns: list[str], row: tuple[Any, ...]) -> list[object]:
    cells = [cell_text(c, v) for c, v in zip(columns, row, strict=True)]
    for rate, (k, n) in RATE_COUNTS.items():
        if rate in columns and k in columns and n in columns:
            num, den = row[columns.index(k)], row[columns.index(n)]
            if not (is_missing(num) or is_missing(den)):
                cells[columns.index(rate)] = rate_of(int(num), int(den))
    return cells


def table_data(name: str, frame: pd.DataFrame) -> dict[str, Any]:
    """One analysis table as ``{name, columns, numeric, rows}``: each float cell is the text
    the report prints for it (``cell_text``), so the page never rounds a table again."""
    columns = [str(c) for c in frame.columns]
    numeric = [frame[c].dtype.kind in "biuf" for c in frame.columns]
    rows = [_row_cells(columns, row) for row in frame.itertuples(index=False, name=None)]
    return {"name": name, "columns": columns, "numeric": numeric, "rows": rows}


@dataclass(frozen=True)
class RunData:
    """A run as the explorer reads it.

    Attributes:
        inputs: what ``read_run`` read (scored attempts, raw records, manifest, file).
        result: the analysis.
        records: every finished record (replaced and invalid ones included); empty for CSV.
        prereg_sha256: SHA-256 of ``prereg.json`` (None without one).
    """

    inputs: RunInputs
    result: AnalysisResult
    records: tuple[AttemptRecord, ...]
    prereg_sha256: str | None

    @property
    def source(self) -> Path:
        """The attempts file."""
        assert self.inputs.path is not None  # read_run always reads a file
        return self.inputs.path

    @property
    def run_dir(self) -> Path:
        """The folder the records' ``log_dir`` is relative to."""
        return self.source.parent

    def task_dir(self, task: str) -> Path | None:
        """The task folder the preregistration hashed, if it still exists."""
        entry = (self.inputs.prereg or {}).get("hashes", {}).get(f"task:{task}", {})
        path = Path(entry.get("path", "")) if isinstance(entry, dict) else None
        return path if path is not None and path.is_dir() else None


def collect(run: Path | str, plan: AnalysisPlan | Path | str | None = None) -> RunData:
    """Read ``run`` (a run folder or an attempts file) and analyse it.

    Args:
        run: a run folder or an attempts file (JSONL or CSV).
        plan: the analysis plan; None: the one frozen with the run (as ``fire-exp report``).

    Raises:
        InputError: a missing or malformed attempts file, manifest or plan, or no scored
            attempt.
    """
    inputs = read_run(run)
    result = analyze(inputs, plan)
    records = tuple(inputs.records.finished) if inputs.records is not None else ()
    prereg = inputs.path.parent / "prereg.json" if inputs.path is not None else None
    digest = (hashlib.sha256(prereg.read_bytes()).hexdigest()
              if inputs.prereg is not None and prereg is not None else None)
    return RunData(inputs, result, records, digest)


def _machine_folders(data: RunData) -> list[tuple[str, str]]:
    """Folders of the machine that builds the site, longest first, and what replaces them:
    the run folder, the plan's folder, the fire-exp checkout and the working folder (their
    contents named relative to them) and the home folder (``~``)."""
    plan = data.result.metadata.get("plan_path")
    folders = {data.run_dir, data.run_dir.resolve(), PACKAGE_DIR.parent, Path.cwd(),
               *([Path(str(plan)).parent] if plan else [])}
    pairs = [(str(f) + "/", "") for f in folders if len(f.parts) > 1]
    pairs += [(str(f), f.name) for f in folders if len(f.parts) > 1]
    pairs += [(str(Path.home()) + "/", "~/")] if len(Path.home().parts) > 1 else []
    return sorted(pairs, key=lambda p: -len(p[0]))


def without_machine_paths(value: Any, data: RunData) -> Any:
    """``value`` (text, or lists and dicts of it) without the paths of the machine that
    builds the site (``_machine_folders``)."""
    if isinstance(value, dict):
        return {k: without_machine_paths(v, data) for k, v in value.items()}
    if isinstance(value, list):
        return [without_machine_paths(v, data) for v in value]
    if isinstance(value, str) and "/" in value:
        for folder, replacement in _machine_folders(data):
            value = value.replace(folder, replacement)
    return value
