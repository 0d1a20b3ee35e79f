"""The report's table of a sequential plan's looks: each task as it completed, its paired
difference and the e-value after it, and why the run stopped (``sequential_looks``)."""

from __future__ import annotations

import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.report.render import ReportTable
from fire_exp.report.rounding import fixed

__all__ = ["looks_table"]


def _e(value: float) -> str:
    """An e-value: three decimals, large ones in powers of ten."""
    return f"{value:.2e}" if value >= 1000 else fixed(value, 3)


def looks_table(result: AnalysisResult) -> ReportTable | None:
    """One row per look of the sequential test (None without a sequential plan or looks)."""
    seq = result.sequential
    if seq is None or not seq.get("path"):
        return None
    data = pd.DataFrame(seq["path"])
    rows = tuple((str(k), str(r["task"]), fixed(100 * float(r["difference"])),
                  _e(float(r["e_value"]))) for k, r in enumerate(seq["path"], start=1))
    stop = seq.get("stop_line") or "it did not stop early (it ran to its end, or is running)"
    notes = (f"{seq['method']} e-process on {seq['contrast']} ({seq['cohort']}); it stops "
             f"at e >= {seq['threshold']:g}.", f"Decision: {seq['line']}.",
             f"Why the run stopped: {stop}.")
    return ReportTable("sequential_looks", "Sequential test: the e-value after each look",
                       ("look", "task", f"Δ {seq['contrast']} (points)", "e-value"), rows,
                       data, align="llrr", notes=notes)
