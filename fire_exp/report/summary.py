"""The short summary ``fire-exp run`` prints: per-arm pass rates by cohort."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from fire_exp.records import read_records


def summarize_run(run_dir: Path, plan: Path) -> str:
    records = read_records(run_dir / "attempts.jsonl").finished
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        for cohort in (r.cohort, "all"):
            cells[(r.arm, cohort)][0] += int(r.passed)
            cells[(r.arm, cohort)][1] += 1
    arms = list(dict.fromkeys(r.arm for r in records))
    lines = ["| arm | eligible | silent | all |", "| --- | --- | --- | --- |"]
    for arm in arms:
        row = [f"{cells[(arm, c)][0]}/{cells[(arm, c)][1]}" for c in ("eligible", "silent", "all")]
        lines.append(f"| {arm} | " + " | ".join(row) + " |")
    return "\n".join(lines)
