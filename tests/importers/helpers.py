"""Builders for the importer tests: Harbor job folders."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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
