"""What each declared arm changed, and what its attempts consumed, side by side.

A panel that declares its arms (``panel.declare``) freezes what each one changes in its
manifest (``prereg.json``, ``arms``). This table puts that beside each arm's models,
tokens and cost over every finished record, so arms that differ in model or price are
compared on what they cost as well as on what they passed. A run of preset arms only (the
paper's five) has no such table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from fire_exp.records import ReadResult

__all__ = ["ARM_CHANGES_COLUMNS", "arm_changes_frame"]

ARM_CHANGES_COLUMNS = ["arm", "description", "changes", "models", "records", "input_tokens",
                       "output_tokens", "tokens_per_record", "total_cost_usd",
                       "cost_per_record_usd"]


def _declared(prereg: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    arms = (prereg or {}).get("arms")
    return {str(k): v for k, v in arms.items() if isinstance(v, Mapping)} \
        if isinstance(arms, Mapping) else {}


def arm_changes_frame(read: ReadResult | None, prereg: Mapping[str, Any] | None,
                      order: list[str]) -> pd.DataFrame:
    """Per declared arm (in ``order``): what it changed, its models, tokens and cost.

    Empty when the manifest declares no arm.
    """
    declared = _declared(prereg)
    if not declared:
        return pd.DataFrame(columns=ARM_CHANGES_COLUMNS)
    records = read.finished if read is not None else []
    rows = []
    for arm in [*order, *sorted(set(declared) - set(order))]:
        spec = declared.get(arm, {})
        mine = [r for r in records if r.arm == arm]
        tokens_in = sum(r.usage.input_tokens for r in mine)
        tokens_out = sum(r.usage.output_tokens for r in mine)
        cost = sum(r.usage.cost_usd for r in mine)
        rows.append({
            "arm": arm, "description": str(spec.get("description", "")),
            "changes": "; ".join(map(str, spec.get("changes", ["nothing"]))),
            "models": ", ".join(sorted({r.usage.model or "" for r in mine} - {""})) or "–",
            "records": len(mine), "input_tokens": tokens_in, "output_tokens": tokens_out,
            "tokens_per_record": round((tokens_in + tokens_out) / len(mine), 1) if mine
            else None,
            "total_cost_usd": round(cost, 6),
            "cost_per_record_usd": round(cost / len(mine), 6) if mine else None})
    return pd.DataFrame(rows, columns=ARM_CHANGES_COLUMNS)
