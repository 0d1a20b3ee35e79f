"""The report's tables of arms: every arm's frozen design (``arm_design.{tex,md,csv}``),
and for declared arms (``AnalysisResult.arm_changes``) what each changed beside the
models, tokens and cost of its attempts (``arms.{tex,md,csv}``)."""

from __future__ import annotations

import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.report.design import arm_designs
from fire_exp.report.render import ReportTable, fmt_int
from fire_exp.report.tables import arm_label

__all__ = ["arm_changes_table", "arm_design_table"]


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


def arm_design_table(result: AnalysisResult) -> ReportTable:
    """Per arm: whether it runs policies, what it changes and the frozen items it rests on
    (``design.arm_designs``; every panel has this table, ``arm_design.{tex,md,csv}``)."""
    designs = arm_designs(result)
    rows = tuple((arm_label(d.arm), d.policies, "; ".join(d.changes),
                  ", ".join(f"{item} {sha}" for item, sha in d.items) or "–")
                 for d in designs)
    data = pd.DataFrame([{"arm": d.arm, "declared": d.declared, "policies": d.policies,
                          "changes": "; ".join(d.changes), "description": d.description,
                          "items": " ".join(f"{i}={s}" for i, s in d.items)}
                         for d in designs])
    notes = ("As frozen in the run's prereg.json: a declared arm (panel.declare) as "
             "composed, a preset as the arm registry builds it; SHA-256 prefixes of the "
             "frozen files each arm depends on.",
             *(f"{d.arm}: {d.description}" for d in designs if d.description))
    return ReportTable("arm_design", "Arms: what each one changes (frozen design)",
                       ("arm", "policies", "what it changes", "frozen items (SHA-256)"),
                       rows, data, align="llll", notes=notes)
