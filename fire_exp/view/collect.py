"""What the run explorer shows, gathered once: records, preregistration, the analysis.

Every number of the overview comes from ``fire_exp.analysis.analyze`` (its tables, metadata
and notes, rendered generically by name so a table the analysis adds simply appears); the
grid counts come from the analysis' scored attempts, as the report's heatmap does.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fire_exp.agents.chat_client import redact
from fire_exp.analysis import AnalysisPlan, AnalysisResult, analyze, load_attempts, load_plan
from fire_exp.analysis.load import LoadedAttempts, loaded_from_records
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, RecordsFileError, read_records
from fire_exp.report.accounting import read_prereg
from fire_exp.report.figures import arms_in_order

__all__ = ["Redact", "RunData", "collect", "format_cell", "secret_redactor", "table_data"]

# Names of environment variables whose values are secrets (API keys, tokens, passwords).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_MIN_SECRET = 8  # shorter values would redact ordinary words
Redact = Callable[[str], str]


def secret_redactor(environ: Mapping[str, str] | None = None) -> Redact:
    """A function replacing every secret-looking environment value with ``***``.

    The logs were redacted when written; this catches a secret the viewer's environment
    holds that reached a log anyway (the same ``redact`` the agents use).
    """
    env = os.environ if environ is None else environ
    secrets = sorted({v for k, v in env.items() if _SECRET_NAME.search(k)
                      and len(v) >= _MIN_SECRET}, key=len, reverse=True)

    def apply(text: str) -> str:
        for secret in secrets:
            text = redact(text, secret)
        return text
    return apply


def format_cell(value: object) -> object:
    """A table cell for the page: floats to 4 decimals (NaN empty, inf as text)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return str(value)  # "inf", as the Markdown tables print it
        return float(f"{value:.4g}") if abs(value) < 1e-3 and value != 0 else round(value, 4)
    if isinstance(value, int):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return format_cell(value.item())
    return str(value)


def table_data(name: str, frame: pd.DataFrame) -> dict[str, Any]:
    """One analysis table as ``{name, columns, rows}``."""
    rows = [[format_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return {"name": name, "columns": [str(c) for c in frame.columns], "rows": rows}


@dataclass(frozen=True)
class RunData:
    """A run as the explorer reads it.

    Attributes:
        source: the attempts file.
        run_dir: the folder the records' ``log_dir`` is relative to.
        records: every finished record (replaced and invalid ones included); empty for CSV.
        loaded: the analysis' scored attempts.
        result: the analysis.
        plan_path: the analysis plan used.
        prereg: the run's preregistration manifest, if any.
        prereg_sha256: SHA-256 of ``prereg.json``.
        plan: the analysis plan object.
    """

    source: Path
    run_dir: Path
    records: tuple[AttemptRecord, ...]
    loaded: LoadedAttempts
    result: AnalysisResult
    plan_path: Path | None
    prereg: dict[str, Any] | None
    prereg_sha256: str | None
    plan: AnalysisPlan

    @property
    def main_cohort(self) -> str:
        """The primary contrast's cohort if the attempts have it, else ``all``."""
        cohort = self.plan.primary.cohort
        return cohort if cohort in set(self.loaded.attempts["cohort"]) else "all"

    @property
    def suite_cohort(self) -> str:
        """``all`` when the plan analyses it, else the main cohort (as the report)."""
        return "all" if "all" in self.plan.cohorts else self.main_cohort

    def task_dir(self, task: str) -> Path | None:
        """The task folder the preregistration hashed, if it still exists."""
        entry = (self.prereg or {}).get("hashes", {}).get(f"task:{task}", {})
        path = Path(entry.get("path", "")) if isinstance(entry, dict) else None
        return path if path is not None and path.is_dir() else None


def attempts_file(run: Path) -> Path:
    """The attempts file of ``run`` (a run folder or the file itself)."""
    path = run / "attempts.jsonl" if run.is_dir() else run
    if not path.is_file():
        raise InputError(path, "<file>", "no such attempts file",
                         "pass a run folder holding attempts.jsonl, or an attempts file")
    return path


def collect(run: Path | str, plan: AnalysisPlan | Path | str) -> RunData:
    """Read ``run`` (a run folder or an attempts file) and analyse it with ``plan``.

    Raises:
        InputError: a missing or malformed attempts file or plan, or no scored attempt.
    """
    source = attempts_file(Path(run))
    plan_path = None if isinstance(plan, AnalysisPlan) else Path(plan)
    plan = plan if isinstance(plan, AnalysisPlan) else load_plan(plan)
    records: tuple[AttemptRecord, ...] = ()
    if source.suffix.lower() == ".csv":
        loaded = load_attempts(source)
    else:
        try:
            read = read_records(source)
        except RecordsFileError as exc:
            raise InputError(exc.path, f"line {exc.line}, field '{exc.field}'", str(exc),
                             "fix or remove that line") from exc
        records = tuple(read.finished)
        loaded = loaded_from_records(read, source)
    if loaded.attempts.empty:
        raise InputError(source, "<attempts>", "no finished, valid attempt to view yet",
                         "wait for the first attempt to finish")
    prereg_path = source.parent / "prereg.json"
    prereg = read_prereg(prereg_path)
    digest = hashlib.sha256(prereg_path.read_bytes()).hexdigest() if prereg else None
    return RunData(source, source.parent, records, loaded, analyze(loaded, plan), plan_path,
                   prereg, digest, plan)


def ordered_arms(data: RunData) -> list[str]:
    """The run's arms in the paper's order."""
    arms = {r.arm for r in data.records} | set(data.loaded.attempts["arm"])
    return arms_in_order(sorted(arms))
