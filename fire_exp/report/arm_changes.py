"""The report's table of declared arms (``AnalysisResult.arm_changes``): what each arm
changed, beside the models, tokens and cost of its attempts (``arms.{tex,md,csv}``)."""

from __future__ import annotations

import pandas as pd

from fire_exp.report.render import ReportTable, fmt_int
from fire_exp.report.tables import arm_label

__all__ = ["arm_changes_table"]


def _money(value: object) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.4f}"  # type: ignore[arg-type]


def arm_changes_table(frame: pd.DataFrame) -> ReportTable:
    """Per arm: what it changed, its models, tokens in and out, cost in total and per record."""
    header = ("arm", "what it changes", "model", "records", "tokens in", "tokens out",
              "tokens / record", "cost $", "cost $ / record")
    rows = tuple((arm_label(str(r.arm)), str(r.changes), str(r.models), fmt_int(r.records),
                  fmt_int(r.input_tokens), fmt_int(r.output_tokens),
                  "–" if pd.isna(r.tokens_per_record) else f"{r.tokens_per_record:.0f}",
                  _money(r.total_cost_usd), _money(r.cost_per_record_usd))
                 for r in frame.itertuples(index=False))
    notes = ("What each arm changes, as frozen in the run's prereg.json (declared arms: "
             "panel.declare; the others are presets that change their policies only).",
             "Tokens and cost over every finished record of the arm, replaced and invalid "
             "ones included; a simulated agent's tokens and prices are modelled.",
             *(f"{r.arm}: {r.description}" for r in frame.itertuples(index=False)
               if r.description))
    return ReportTable("arms", "Arms: what each one changes, and what it cost", header, rows,
                       frame, align="lll" + "r" * 6, notes=notes)
