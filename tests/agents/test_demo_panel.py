"""`fire-exp run panel=demo agent=openai` against the scripted server, end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fire_exp.records import read_records
from tests.agents.scripted_server import ScriptedServer, solution_responder

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-demo-fireexp-Hq93LxVb27Tn"


@pytest.mark.slow
def test_demo_panel_runs_with_the_openai_agent(tmp_path: Path) -> None:
    with ScriptedServer(solution_responder()) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=openai",
             f"agent.base_url={server.base_url}", "panel.arms=[real,baseline]",
             "panel.attempts=1", f"results_dir={tmp_path}"],
            capture_output=True, text=True, cwd=ROOT, timeout=600,
            env=os.environ | {"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr[-2000:]
    [attempts] = list(tmp_path.glob("demo/*/attempts.jsonl"))
    records = read_records(attempts).finished
    assert len(records) == 12
    assert {(r.task, r.arm) for r in records} == {
        (t, a) for t in {r.task for r in records} for a in ("real", "baseline")}
    assert all(r.agent == "openai" and r.cause is None and r.passed for r in records)
    assert all(r.usage.model == "scripted-model-1" and r.usage.input_tokens > 0
               and r.usage.cost_usd > 0 for r in records)
    assert all(h.get("authorization") == f"Bearer {KEY}" for h in server.headers)
    # The real arm nudged at stop on the server tasks (one more model call each).
    real = {r.task: r for r in records if r.arm == "real"}
    assert real["serve-status-page"].decisions == 1
    for path in attempts.parent.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
