"""The real Claude Code CLI (2.1.332 from the ``claude-agent-sdk`` wheel) in a task's
container, against the project's scripted Anthropic Messages server on the host.

The wheel's binary (glibc; it runs on fire-exp/base:bookworm) is mounted read-only into
the box (``agent=claude-code`` with no ``binary:`` and no install step); its hooks reach
the arm's policies through the shim and relay. The tasks are bundled ones without network:
the CLI reaches the server on this host's loopback through the egress proxy's forward
listener for the plain-``http://`` endpoint. Two boxes, short scripted conversations:

- as ``fire-agent`` (the default): a command the arm denies, a ``Write`` edit, the task's
  solution, the end — the task passes, transcript and hook calls agree;
- as root (a task whose ``[agent] user`` is root): ``bypassPermissions`` is refused as
  root unless the dialect's ``IS_SANDBOX`` is set; a failed command reaches the policies
  as ``PostToolUseFailure``, and the ``always_verify`` arm's Stop reason reaches the next
  request.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from tests.agents.scripted_messages import (
    MessagesServer,
    bash,
    request_text,
    say,
    tool,
    tool_results,
)
from tests.ci import missing

pytestmark = [pytest.mark.cli, pytest.mark.docker, pytest.mark.slow]
ARGS = ["--permission-mode", "bypassPermissions"]  # configs/agent/claude-code.yaml's
MODEL = "scripted-claude-1"  # no vendor's model
DENIED = "sqlite3 evidence/orders.db .dump"  # the real arm denies it (database_evidence)


@pytest.fixture
def engine(docker_client: Any) -> Any:
    """The Docker engine (tests/environments' session fixture: no container left over)."""
    if wheel_binary("claude-code") is None:
        missing("the Claude Code CLI wheel (pip install 'fire-exp[claude-code]')")
    return docker_client


def claude(server: MessagesServer, suffix: str = "") -> ClaudeCodeAgent:
    """``agent.base_url=URL`` (``suffix`` ``/v1``: as a user used to OpenAI URLs writes it)."""
    agent = ClaudeCodeAgent(model=MODEL, base_url=server.base_url + suffix, args=ARGS)
    assert agent.install.spec.host_binary == wheel_binary("claude-code")  # mounted, no image
    return agent


def attempt(tmp_path: Path, task: Path, agent: ClaudeCodeAgent, arm: str) -> AttemptRecord:
    loaded = load_task(task)
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    env = DockerEnvironment(loaded, tmp_path / "attempt", f"real-claude-{arm}")
    spec = AttemptSpec(run="r", panel="p", attempt_id=f"real-claude-{arm}", task=loaded.name,
                       cohort="eligible", arm=arm, replicate=0, order=0, seed=0,
                       portfolio=str(real.path), controls=str(controls.path))
    return run_attempt(spec, env, agent, build_arm(arm, real, controls).families,
                       real.families, rng=np.random.default_rng(0))


def logs(tmp_path: Path, name: str) -> Any:
    path = tmp_path / "attempt/logs/agent" / name
    if name.endswith(".jsonl"):
        return [json.loads(x) for x in path.read_text().splitlines()]
    return json.loads(path.read_text())


def as_root(tmp_path: Path, name: str) -> Path:
    """A copy of the bundled task ``name`` whose agent runs as root."""
    task = tmp_path / "tasks" / name
    shutil.copytree(SUITES_DIR / "fire-mini" / name, task)
    toml = task / "task.toml"
    text = toml.read_text()
    assert "[agent]\n" in text and "user =" not in text
    toml.write_text(text.replace("[agent]\n", '[agent]\nuser = "root"\n'))
    return task


def test_the_real_claude_in_the_box_is_denied_edits_and_is_read_back(
        engine: Any, tmp_path: Path) -> None:
    solve = (SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh").read_text()
    script = [bash(DENIED, call_id="toolu_deny", text="Let me look at the database."),
              tool("Write", {"file_path": "/app/notes.txt", "content": "from the WAL\n"},
                   call_id="toolu_write"),
              bash(solve, call_id="toolu_solve"), say("Done.")]
    with MessagesServer(script) as server:
        record = attempt(tmp_path, SUITES_DIR / "fire-mini/recover-wal-orders",
                         claude(server), "real")
    assert record.passed and record.cause is None, record.error
    assert record.valid, record.invalid_reason  # transcript and hook calls agree, by id
    denied = next(r for r in tool_results(server.requests[1])
                  if r["tool_use_id"] == "toolu_deny")
    assert denied["is_error"] and denied["content"].startswith("PreToolUse:Bash hook error:")
    steps = logs(tmp_path, "commands.jsonl")
    assert [(s["kind"], s["denied"]) for s in steps] == \
        [("command", True), ("edit", False), ("command", False), ("stop", False)]
    assert steps[0]["command"] == DENIED and steps[1]["paths"] == ["/app/notes.txt"]
    assert record.decisions == 1 and record.funnel.fired
    assert (record.usage.input_tokens, record.usage.output_tokens) == (400, 80)
    assert record.usage.model == MODEL and record.usage.cost_usd == 0.0
    summary = logs(tmp_path, "hook-summary.json")
    assert summary["by_event"]["PreToolUse"] == 3 and summary["tamper"] == []
    init = logs(tmp_path, "cli-stdout.jsonl")
    assert any(o.get("claude_code_version") == "2.1.332" for o in init)
    assert {s.path.split("?")[0] for s in server.seen} == {"/v1/messages"}


def test_the_real_claude_as_root_runs_and_its_failure_and_stop_reach_the_policies(
        engine: Any, tmp_path: Path) -> None:
    script = [bash("ls /app/no-such-file", call_id="toolu_fail"), say("Finished."),
              bash("echo verified", call_id="toolu_ok"), say("Done.")]
    with MessagesServer(script) as server:
        agent = claude(server, "/v1")
        agent.preflight(DockerEnvironment.capabilities)  # the probe asks what the CLI will ask: /v1/messages
        record = attempt(tmp_path, as_root(tmp_path, "csv-column-stats"), agent,
                         "always_verify")
    assert {s.path.split("?")[0] for s in server.seen} == {"/v1/messages"}
    assert record.cause is None, record.error  # as root, with IS_SANDBOX: not refused
    assert record.valid, record.invalid_reason  # PostToolUseFailure is the call's post event
    assert "Stop hook feedback:" in request_text(server.requests[2])
    assert "Stop hook feedback:" not in request_text(server.requests[1])
    summary = logs(tmp_path, "hook-summary.json")
    assert summary["by_event"]["PostToolUseFailure"] == 1
    assert summary["by_event"]["PostToolUse"] == 1 and summary["by_event"]["Stop"] == 2
    steps = logs(tmp_path, "commands.jsonl")
    assert [(s["command"], s["exit_code"]) for s in steps if s["kind"] == "command"] == \
        [("ls /app/no-such-file", 2), ("echo verified", 0)]
    assert "No such file or directory" in steps[0]["output"]
