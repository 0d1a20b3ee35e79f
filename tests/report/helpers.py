"""Builders for the report tests: attempt records, preregistrations, Harbor job folders."""

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
                 "replicate": r.replicate, "order": 0, "seed": 0}
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


def harbor_trial(job: Path, task: str, n: int, *, reward: float | None,
                 exception: str | None = None, agent: str = "terminus-2",
                 model: str = "m1", started: str = "2026-01-01T00:00:00",
                 cost: float = 0.01) -> Path:
    """Write ``job/TASK__ID/result.json`` in Harbor's trial result format."""
    trial = f"{task}__{job.name[:3]}{n:04d}"
    folder = job / trial
    folder.mkdir(parents=True)

    def phase(a: str, b: str) -> dict[str, str]:
        return {"started_at": f"2026-01-01T00:{a}", "finished_at": f"2026-01-01T00:{b}"}

    result = {
        "id": f"id-{trial}", "task_name": task, "trial_name": trial,
        "trial_uri": f"file://{folder}", "task_id": {"path": f"tasks/{task}"},
        "task_checksum": f"sha-{task}", "source": "terminal-bench",
        "agent_info": {"name": agent, "version": "1.0",
                       "model_info": {"name": model, "provider": "p"}},
        "agent_result": {"n_input_tokens": 1000, "n_cache_tokens": 100,
                         "n_output_tokens": 200, "cost_usd": cost, "metadata": None},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": None if exception is None else {
            "exception_type": exception, "exception_message": f"{exception} happened",
            "exception_traceback": "Traceback ...", "occurred_at": started},
        "started_at": started, "finished_at": "2026-01-01T01:00:00",
        "environment_setup": phase("00:00", "00:10"), "agent_setup": phase("00:10", "00:20"),
        "agent_execution": phase("00:20", "02:20"), "verifier": phase("02:20", "02:50"),
    }
    (folder / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return folder
