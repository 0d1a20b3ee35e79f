"""Accounting of a run: what was scheduled, finished, replaced, invalid or still in flight,
and the preregistration hashes it was verified against (FIRE Table 10).

The schedule comes from the run's ``prereg.json`` (its length is the number scheduled);
without one only the attempts file speaks. A run with fewer finished attempts than
scheduled, or with started lines that have no finished line, is *partial*.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fire_exp.errors import InputError
from fire_exp.records import ReadResult
from fire_exp.report.render import ReportTable
from fire_exp.report.tables import ReportInputs, arm_label

__all__ = ["RunStatus", "accounting_table", "prereg_table", "read_prereg", "run_status"]


@dataclass(frozen=True)
class RunStatus:
    """How complete a run is.

    Attributes:
        scheduled: attempts in the preregistered schedule (None without prereg.json).
        finished: scheduled (task, arm, replicate) slots with at least one finished line.
        in_flight: started attempts without a finished line.
        partial: whether the run is unfinished.
        message: one sentence for banners (empty when complete).
    """

    scheduled: int | None
    finished: int
    in_flight: int
    partial: bool
    message: str


def read_prereg(path: Path) -> dict[str, Any] | None:
    """The run's preregistration manifest, or None when the run has none."""
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, "<json>", f"not valid JSON: {exc.msg}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("hashes"), dict):
        raise InputError(path, "hashes", "not a fire-exp preregistration manifest")
    return manifest


def _in_flight(read: ReadResult | None) -> list[tuple[str, str, int]]:
    if read is None:
        return []
    done = {r.attempt_id for r in read.finished}
    return [(s.task, s.arm, s.replicate) for s in read.started if s.attempt_id not in done]


def run_status(read: ReadResult | None, prereg: dict[str, Any] | None) -> RunStatus:
    """Whether the run is finished, from its records and its schedule."""
    slots = {(r.task, r.arm, r.replicate) for r in read.finished} if read else set()
    flying = len(_in_flight(read))
    scheduled = None if prereg is None else len(prereg.get("schedule", [])) or int(
        prereg.get("n_attempts", 0))
    parts = []
    if scheduled is not None and len(slots) < scheduled:
        parts.append(f"{len(slots)} of {scheduled} scheduled attempts finished")
    if flying:
        parts.append(f"{flying} started attempt(s) without a finished record")
    message = "; ".join(parts) + ("; the tables report what is finished" if parts else "")
    return RunStatus(scheduled, len(slots), flying, bool(parts), message)


def accounting_table(inp: ReportInputs, read: ReadResult | None,
                     prereg: dict[str, Any] | None) -> ReportTable:
    """Per arm: scheduled, finished records, scored, replaced, invalid, in flight."""
    sched = Counter(s["arm"] for s in (prereg or {}).get("schedule", []))
    finished = Counter(r.arm for r in read.finished) if read else Counter(
        inp.loaded.attempts["arm"])
    invalid = Counter(r.arm for r in read.finished if not r.valid) if read else Counter()
    flying = Counter(arm for _, arm, _ in _in_flight(read))
    scored = Counter(inp.loaded.attempts["arm"])
    replaced = Counter(inp.loaded.superseded["arm"])
    arms = [a for a in inp.arms] + sorted(set(sched) - set(inp.arms))
    records = [{"arm": a, "scheduled": sched[a] if prereg else None, "finished_records":
                finished[a], "scored": scored[a], "replaced": replaced[a],
                "invalid": invalid[a], "in_flight": flying[a]} for a in arms]
    data = pd.DataFrame(records)
    total = {"arm": "total", **{c: (None if data[c].isna().all() else int(data[c].sum()))
                                for c in data.columns if c != "arm"}}
    data = pd.concat([data, pd.DataFrame([total])], ignore_index=True)
    rows = tuple((arm_label(str(r["arm"])), *["–" if pd.isna(r[c]) else str(int(r[c]))
                                              for c in data.columns[1:]])
                 for _, r in data.iterrows())
    return ReportTable(
        "accounting", "Accounting: attempts scheduled, finished, replaced and invalid",
        ("arm", "scheduled", "finished records", "scored", "replaced", "invalid",
         "in flight"), rows, data, rules_after=(len(rows) - 2,),
        notes=("finished records include replaced and invalid ones; scored = one per "
               "(task, arm, replicate) after the frozen replacement rule; invalid records "
               "are excluded from scoring.",
               "scheduled: the preregistered schedule (prereg.json); '–' without one."))


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prereg_table(prereg: dict[str, Any] | None, plan_path: Path | None) -> ReportTable:
    """FIRE Table 10: SHA-256 prefixes of every preregistered item."""
    if prereg is None:
        return ReportTable("prereg", "Preregistration hashes", ("item", "sha256"),
                           (("–", "no prereg.json in the run folder"),),
                           pd.DataFrame(columns=["item", "path", "sha256"]), align="ll")
    items = [{"item": k, "path": v.get("path", ""), "sha256": v.get("sha256", "")}
             for k, v in sorted(prereg["hashes"].items())]
    notes = [f"Panel {prereg.get('panel', '?')}, frozen {prereg.get('frozen_at', '?')}, "
             f"fire-exp {prereg.get('harness_version', '?')}, seed {prereg.get('seed', '?')}; "
             "first 12 hex digits of each SHA-256 (full hashes in prereg.csv)."]
    frozen = prereg["hashes"].get("analysis_plan", {}).get("sha256")
    if frozen and plan_path is not None and plan_path.is_file():
        same = _file_sha(plan_path) == frozen
        notes.append(f"The analysis plan used ({plan_path.name}) "
                     f"{'matches' if same else 'DIFFERS FROM'} the preregistered plan.")
    rows = tuple((i["item"], i["sha256"][:12]) for i in items)
    return ReportTable("prereg", "Preregistration hashes (FIRE Table 10)", ("item", "sha256"),
                       rows, pd.DataFrame(items), align="ll", notes=tuple(notes))
