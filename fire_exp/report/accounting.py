"""Paper tables of a run's accounting (attempts scheduled, finished, replaced, invalid, in
flight) and of its preregistration hashes (FIRE Table 10), from the analysis."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.report.render import ReportTable
from fire_exp.report.tables import arm_label

__all__ = ["accounting_table", "prereg_table"]


def accounting_table(result: AnalysisResult) -> ReportTable:
    """Per arm: scheduled, finished records, scored, replaced, invalid, in flight."""
    data = result.accounting
    rows = tuple((arm_label(str(r["arm"])), *["–" if pd.isna(r[c]) else str(int(r[c]))
                                              for c in data.columns[1:]])
                 for _, r in data.iterrows())
    notes = ["finished records include replaced and invalid ones; scored = one per "
             "(task, arm, replicate) after the frozen replacement rule; invalid records "
             "are excluded from scoring.",
             "scheduled: the preregistered schedule (prereg.json); '–' without one."]
    reasons = result.metadata.get("invalid_reasons")
    if isinstance(reasons, dict) and reasons:
        notes.append("invalid records by reason: " + "; ".join(
            f"{reason} {count}" for reason, count in reasons.items()) + ".")
    losses = result.metadata.get("node_losses")  # what losing Ray nodes cost, one per node
    if isinstance(losses, list):
        notes += [str(line) for line in losses]
    return ReportTable(
        "accounting", "Accounting: attempts scheduled, finished, replaced and invalid",
        ("arm", "scheduled", "finished records", "scored", "replaced", "invalid",
         "in flight"), rows, data, rules_after=(len(rows) - 2,), notes=tuple(notes))


def prereg_table(result: AnalysisResult) -> ReportTable:
    """FIRE Table 10: SHA-256 prefixes of every preregistered item."""
    data, meta = result.prereg, result.metadata
    if data.empty:
        return ReportTable("prereg", "Preregistration hashes", ("item", "sha256"),
                           (("–", "no prereg.json in the run folder"),), data, align="ll")
    manifest = meta.get("prereg", {})
    get = manifest.get if isinstance(manifest, dict) else {}.get
    notes = [f"Panel {get('panel', '?')}, frozen {get('frozen_at', '?')}, "
             f"fire-exp {get('harness_version', '?')}, seed {get('seed', '?')}; "
             "first 12 hex digits of each SHA-256 (full hashes in prereg.csv)."]
    path, matches = meta.get("plan_path"), meta.get("plan_matches_frozen")
    if path is not None and matches is not None:
        notes.append(f"The analysis plan used ({Path(str(path)).name}) "
                     f"{'matches' if matches else 'DIFFERS FROM'} the preregistered plan.")
    rows = tuple((str(i), str(s)[:12]) for i, s in zip(data["item"], data["sha256"],
                                                       strict=True))
    return ReportTable("prereg", "Preregistration hashes (FIRE Table 10)", ("item", "sha256"),
                       rows, data, align="ll", notes=tuple(notes))
