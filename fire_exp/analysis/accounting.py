"""Accounting of a run: what was scheduled, finished, replaced, invalid or still in flight,
and the preregistration hashes it was frozen with (FIRE Table 10).

The schedule comes from the run's ``prereg.json`` (its length is the number scheduled);
without one only the attempts file speaks. A run with fewer finished attempts than
scheduled, or with started lines that have no finished line, is *partial*.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fire_exp.analysis.frame import LoadedAttempts
from fire_exp.records import AttemptRecord, ReadResult

__all__ = ["RunStatus", "accounting_frame", "invalid_reasons", "node_losses", "prereg_frame",
           "run_status", "tier_label"]


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

    scheduled: int | None = None
    finished: int = 0
    in_flight: int = 0
    partial: bool = False
    message: str = ""


def _in_flight(read: ReadResult | None) -> list[tuple[str, str, int]]:
    if read is None:
        return []
    done = {r.attempt_id for r in read.finished}
    return [(s.task, s.arm, s.replicate) for s in read.started if s.attempt_id not in done]


def run_status(read: ReadResult | None, prereg: Mapping[str, Any] | None) -> RunStatus:
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


def tier_label(read: ReadResult | None, fallback: str) -> str:
    """The run's agent tier when all its records name the same one, else ``fallback``."""
    tiers = {r.tier for r in read.finished} if read else set()
    return str(next(iter(tiers))) if len(tiers) == 1 and None not in tiers else fallback


def _count(column: pd.Series) -> Counter[str]:
    """Rows per value of a column (value_counts: a Counter over a Series iterates in Python)."""
    return Counter({str(k): int(v) for k, v in column.value_counts().items()})


def accounting_frame(loaded: LoadedAttempts, read: ReadResult | None,
                     prereg: Mapping[str, Any] | None, arms: list[str]) -> pd.DataFrame:
    """Per arm (``arms`` first, then scheduled arms without a record) and in total:
    scheduled, finished records, scored, replaced, invalid, in flight."""
    sched = Counter(s["arm"] for s in (prereg or {}).get("schedule", []))
    finished = Counter(r.arm for r in read.finished) if read else _count(loaded.attempts["arm"])
    invalid = Counter(r.arm for r in read.finished if not r.valid) if read else Counter()
    flying = Counter(arm for _, arm, _ in _in_flight(read))
    scored = _count(loaded.attempts["arm"])
    replaced = _count(loaded.superseded["arm"])
    rows = [{"arm": a, "scheduled": sched[a] if prereg else None,
             "finished_records": finished[a], "scored": scored[a], "replaced": replaced[a],
             "invalid": invalid[a], "in_flight": flying[a]}
            for a in [*arms, *sorted(set(sched) - set(arms))]]
    data = pd.DataFrame(rows)
    total = {"arm": "total", **{c: (None if data[c].isna().all() else int(data[c].sum()))
                                for c in data.columns if c != "arm"}}
    return pd.concat([data, pd.DataFrame([total])], ignore_index=True)


def invalid_reasons(read: ReadResult | None) -> dict[str, int]:
    """Why finished records are invalid: records per kind of reason (a reason's text before
    its first ':'; a record naming several kinds counts under each), most frequent first."""
    kinds: Counter[str] = Counter()
    for record in read.finished if read else []:
        if not record.valid:
            parts = (record.invalid_reason or "no reason given").split("; ")
            kinds.update({p.split(":", 1)[0].strip() for p in parts})
    return dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def prereg_frame(prereg: Mapping[str, Any] | None) -> pd.DataFrame:
    """Every preregistered item with the path it was frozen from and its SHA-256."""
    if prereg is None:
        return pd.DataFrame(columns=["item", "path", "sha256"])
    return pd.DataFrame([{"item": k, "path": v.get("path", ""), "sha256": v.get("sha256", "")}
                         for k, v in sorted(prereg["hashes"].items())])


def node_losses(records: list[AttemptRecord]) -> list[str]:
    """One line per Ray node on which attempts failed for infrastructure reasons (a lost
    worker or node, a stopped engine): how many, by cause, and what the frozen replacement
    rule made of them. Records of a one-machine run name no node: no lines."""
    lost: dict[str, list[AttemptRecord]] = {}
    for record in records:
        if record.node is not None and record.infrastructure_failure:
            lost.setdefault(record.node, []).append(record)
    lines = []
    for node, failed in sorted(lost.items()):
        causes = Counter(str(r.cause) for r in failed)
        replaced = sum(r.lineage.replaced_by is not None for r in failed)
        lines.append(
            f"lost on node {node}: {len(failed)} attempt{'s' if len(failed) != 1 else ''} ("
            + ", ".join(f"{c} {n}" for c, n in sorted(causes.items()))
            + f"); {replaced} replaced under the frozen replacement rule, "
            f"{len(failed) - replaced} stand as failures")
    return lines
