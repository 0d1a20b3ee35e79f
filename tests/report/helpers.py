"""Builders for the report tests: attempt records and preregistrations."""

from __future__ import annotations

import json
from pathlib import Path

from fire_exp.records import AttemptRecord, Funnel

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
ANALYSIS_DATA = REPO / "tests" / "analysis" / "data"
DEMO_RUN = DATA / "demo_run"


def make_record(task: str = "t1", arm: str = "real", replicate: int = 0, *,
                passed: bool = True, cohort: str = "eligible", **extra: object) -> AttemptRecord:
    """A finished attempt record with sensible defaults."""
    return AttemptRecord(run="r", panel="p", attempt_id=f"{task}/{arm}/r{replicate}",
                         task=task, task_digest="d", cohort=cohort, arm=arm,
                         replicate=replicate, order=0, seed=1, agent="sim",
                         environment="local", reward=float(passed), passed=passed,
                         **extra)  # type: ignore[arg-type]


def panel_records(n_tasks: int = 6, arms: tuple[str, ...] = ("real", "sham", "baseline"),
                  attempts: int = 3) -> list[AttemptRecord]:
    """A small deterministic panel: success depends on task, arm and replicate."""
    out = []
    for t in range(n_tasks):
        for a, arm in enumerate(arms):
            for r in range(attempts):
                passed = (t * 7 + a * 3 + r * 5) % 4 != 0
                state = (t + r) % 2 == 0
                out.append(make_record(
                    f"task-{t}", arm, r, passed=passed,
                    cohort="eligible" if t < n_tasks // 2 else "silent",
                    funnel=Funnel(state=state, fired=arm != "baseline" and state,
                                  behavior=(t + a) % 3 != 0, passed=passed)))
    return out


def write_prereg(folder: Path, records: list[AttemptRecord]) -> Path:
    """A minimal prereg.json whose schedule holds one slot per record."""
    schedule = [{"position": i, "task": r.task, "cohort": r.cohort, "arm": r.arm,
                 "replicate": r.replicate, "order": 0, "seed": r.seed}
                for i, r in enumerate(records)]
    manifest = {"format": "fire-exp-prereg/1", "panel": "p", "frozen_at": "2026-01-01",
                "harness_version": "0.1.0", "seed": 0, "n_attempts": len(schedule),
                "hashes": {"analysis_plan": {"path": "analysis/default.yaml",
                                             "sha256": "0" * 64},
                           "task:t1": {"path": "tasks/t1", "sha256": "ab" * 32}},
                "schedule": schedule}
    path = folder / "prereg.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path
