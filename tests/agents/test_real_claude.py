"""The real Claude Code CLI (2.1.332, bundled by the ``claude-agent-sdk`` wheel) against the
project's scripted Anthropic Messages server (``scripted_messages.py``), through fire-exp,
on this machine (environment=local; tests/agents/test_real_claude_docker.py runs it in a
task's container).

No fake here: the binary, its hooks and its stream-json are Claude Code's own. The model
is the script, named as no vendor model is (as any local model), so the cost the CLI
computes at a list price must not be the record's. Where the tests run as root (CI's
containers, this machine) the CLI runs as root and needs the ``IS_SANDBOX`` the dialect
sets: the root case. Each test is one attempt of a few model turns (a few seconds).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.paths import SUITES_DIR
from tests.agents.agent_support import RunFn
from tests.agents.scripted_messages import (
    MessagesServer,
    Turn,
    bash,
    request_text,
    say,
    tool,
    tool_results,
    working_directory,
)
from tests.ci import missing

pytestmark = [pytest.mark.cli, pytest.mark.slow]
ARGS = ["--permission-mode", "bypassPermissions"]  # configs/agent/claude-code.yaml's
MODEL = "scripted-claude-1"  # no vendor's model
DUMP = "sqlite3 evidence/orders.db .dump"  # the real arm denies it (database_evidence)
OUTCOMES = '''"""A test family: at Stop, the exit codes of the commands it saw finish."""
from fire_exp.policies import ALLOW, Family, instruct, rule


class Outcomes(Family):
    name = "outcomes"
    description = "report the exit codes the hooks delivered"

    def eligible(self, task_text):
        return True

    def track(self, event, state):
        if event.name == "PostToolUse" and event.command:
            state["codes"] = state.get("codes", []) + [event.exit_code]

    @rule(events=("Stop",), limit=1)
    def report(self, event, state):
        return instruct(f"exit codes seen: {state.get('codes')}") if state.get("codes") \\
            else ALLOW


FAMILIES = [Outcomes()]
'''


@pytest.fixture
def claude_binary() -> str:
    found = wheel_binary("claude-code")
    if found is None:
        missing("the Claude Code CLI wheel (pip install 'fire-exp[claude-code]')")
    return found


def claude(server: MessagesServer) -> ClaudeCodeAgent:
    """``agent=claude-code agent.base_url=URL agent.model=scripted-claude-1``."""
    return ClaudeCodeAgent(model=MODEL, base_url=server.base_url, args=ARGS)


def logs(tmp_path: Path, name: str) -> Any:
    path = tmp_path / "attempt/logs/agent" / name
    if name.endswith(".jsonl"):
        return [json.loads(x) for x in path.read_text().splitlines()]
    return json.loads(path.read_text())


def solve_wal() -> str:
    solve = SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh"
    return solve.read_text().replace("/tmp/evidence-copy", "../evidence-copy")


def test_the_real_claude_is_denied_edits_with_write_and_is_read_back(
        claude_binary: str, run_task: RunFn, tmp_path: Path) -> None:
    def respond(request: dict[str, Any], n: int) -> Turn:
        notes = f"{working_directory(request)}/notes.txt"
        return [bash(DUMP, call_id="toolu_deny", text="Let me look at the database."),
                tool("Write", {"file_path": notes, "content": "from the WAL\n"},
                     call_id="toolu_write"),
                bash(solve_wal(), call_id="toolu_solve"), say("Done.")][min(n, 3)]

    with MessagesServer(respond) as server:
        record = run_task("recover-wal-orders", "real", claude(server))
    assert record.passed and record.cause is None and record.error is None
    assert record.valid, record.invalid_reason  # transcript and hook calls agree, by id
    denied = next(r for r in tool_results(server.requests[1])
                  if r["tool_use_id"] == "toolu_deny")
    assert denied["is_error"] and denied["content"].startswith("PreToolUse:Bash hook error:")
    steps = logs(tmp_path, "commands.jsonl")
    assert [(s["kind"], s["denied"]) for s in steps] == \
        [("command", True), ("edit", False), ("command", False), ("stop", False)]
    assert steps[0]["command"] == DUMP and steps[2]["exit_code"] == 0
    assert steps[1]["paths"][0].endswith("/notes.txt")
    assert record.decisions == 1 and record.funnel.fired
    summary = logs(tmp_path, "hook-summary.json")
    assert summary["by_event"]["PreToolUse"] == 3 and summary["by_event"]["PostToolUse"] == 2
    # 4 answers of 100 input and 20 output tokens; the CLI's own list-price cost is not ours
    usage = record.usage
    assert (usage.input_tokens, usage.output_tokens) == (400, 80)
    assert usage.model == MODEL and usage.cost_usd == 0.0
    result = logs(tmp_path, "cli-stdout.jsonl")[-1]
    assert result["type"] == "result" and result["total_cost_usd"] > 0  # fictitious, kept out
    # Only model requests, with the placeholder key, to the scripted server
    assert {s.path for s in server.seen} == {"/v1/messages?beta=true"}
    assert {s.headers["x-api-key"] for s in server.seen} == {"fire-exp-no-key"}


def test_a_failed_command_reaches_the_policies_and_the_stop_reason_the_next_request(
        claude_binary: str, run_task: RunFn, tmp_path: Path) -> None:
    """A family that reports, at Stop, the exit codes the hooks delivered: the failure
    arrives as PostToolUseFailure with its code, and the reason in the next request."""
    portfolio = tmp_path / "portfolio"
    portfolio.mkdir()
    (portfolio / "outcomes.py").write_text(OUTCOMES)
    script = [bash("echo ok", call_id="toolu_ok"),
              bash("echo out; exit 3", call_id="toolu_fail"), say("Finished."), say("Done.")]
    with MessagesServer(script) as server:
        record = run_task("csv-column-stats", "real", claude(server), portfolio=portfolio)
    assert record.cause is None, record.error
    assert record.valid, record.invalid_reason  # PostToolUseFailure is the call's post event
    assert "exit codes seen" not in request_text(server.requests[2])
    assert "Stop hook feedback:\nexit codes seen: [0, 3]" in request_text(server.requests[3])
    summary = logs(tmp_path, "hook-summary.json")
    assert summary["by_event"]["PostToolUseFailure"] == 1
    assert summary["by_event"]["Stop"] == 2 and summary["load_errors"] == 0
    steps = logs(tmp_path, "commands.jsonl")
    assert [(s["command"], s["exit_code"]) for s in steps if s["kind"] == "command"] == \
        [("echo ok", 0), ("echo out; exit 3", 3)]
    assert steps[1]["output"] == "out"
    if os.geteuid() == 0:  # the root case: bypassPermissions ran, IS_SANDBOX set
        assert record.n_commands == 2
