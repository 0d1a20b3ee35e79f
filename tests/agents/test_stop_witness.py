"""Every Stop block witnessed, every expected Stop hook seen (coding_agents/stops.py, issue
36 point 5). The activity lines are the real bridge's (``HookBridge`` on the fire-core arm
``real``, whose ``service_port`` family instructs at Stop); the transcript is one
Claude Code would print (the dialect's own parser). An honest CLI goes on after a block;
one whose block never arrived stops, and the attempt is invalid with the named reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fire_exp.agents.coding_agents import parse_claude_stream
from fire_exp.agents.coding_agents.evidence import reconcile
from fire_exp.agents.coding_agents.stops import NO_STOP_HOOK, UNWITNESSED_STOP
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.policies.hook_store import read_activity
from fire_exp.policies.hooks import HookBridge, parse_payload

SESSION = "5f0c2a9e-fake-41d2-a7c3-claude"
TASK = (SUITES_DIR / "fire-mini" / "serve-status-page" / "instruction.md").read_text()
SERVE = "echo python3 status_server.py"  # what tests/agents/test_cli_agents.py runs there


class Bridge:
    def __init__(self, tmp_path: Path) -> None:
        real, controls = load_portfolio("fire-core"), load_portfolio("controls")
        self.state = tmp_path / "state"
        self.bridge = HookBridge(build_arm("real", real, controls).families, self.state, "real")
        self.call("UserPromptSubmit", prompt=TASK)

    def call(self, event: str, **fields: Any) -> dict[str, Any] | None:
        payload = {"session_id": SESSION, "transcript_path": "/t.jsonl", "cwd": "/app",
                   "hook_event_name": event} | fields
        return self.bridge.handle(parse_payload(event, payload))

    def bash(self, command: str, tool_id: str) -> None:
        self.call("PreToolUse", tool_name="Bash", tool_input={"command": command},
                  tool_use_id=tool_id)
        self.call("PostToolUse", tool_name="Bash", tool_input={"command": command},
                  tool_use_id=tool_id, tool_response={"stdout": "", "stderr": ""})

    def reasons(self, commands: list[tuple[str, str]], finished: bool = True,
                timed_out: bool = False) -> tuple[str, ...]:
        out = [{"type": "system", "subtype": "init", "session_id": SESSION}]
        for command, tool_id in commands:
            out.append({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": tool_id, "name": "Bash",
                 "input": {"command": command}}]}})
            out.append({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": "",
                 "is_error": False}]}})
        if finished:
            out.append({"type": "result", "subtype": "success", "session_id": SESSION,
                        "usage": {"input_tokens": 1, "output_tokens": 1}})
        transcript = parse_claude_stream([json.dumps(x) for x in out])
        return reconcile(transcript, read_activity(self.state).lines,
                         reports_denied_calls=True, timed_out=timed_out,
                         expects_stop=True).reasons


def test_a_block_the_cli_went_on_after_is_witnessed(tmp_path: Path) -> None:
    host = Bridge(tmp_path)
    host.bash(SERVE, "toolu_1")
    assert host.call("Stop", stop_hook_active=False) is not None  # the block
    host.bash("curl -s localhost:8000", "toolu_2")  # a later turn
    assert host.call("Stop", stop_hook_active=True) is None
    assert host.reasons([(SERVE, "toolu_1"), ("curl -s localhost:8000", "toolu_2")]) == ()


def test_a_block_answered_only_by_a_second_stop_is_witnessed(tmp_path: Path) -> None:
    host = Bridge(tmp_path)
    host.bash(SERVE, "toolu_1")
    assert host.call("Stop", stop_hook_active=False) is not None
    host.call("Stop", stop_hook_active=True)  # it went on and stopped again, no tool call
    assert host.reasons([(SERVE, "toolu_1")]) == ()


def test_a_block_the_cli_never_got_is_not_witnessed(tmp_path: Path) -> None:
    host = Bridge(tmp_path)
    host.bash(SERVE, "toolu_1")
    assert host.call("Stop", stop_hook_active=False) is not None  # its shim was killed
    reasons = host.reasons([(SERVE, "toolu_1")])
    assert len(reasons) == 1 and reasons[0].startswith(f"{UNWITNESSED_STOP}: 1 Stop block(s)")
    # A CLI killed at its timeout right after the block is excused.
    assert host.reasons([(SERVE, "toolu_1")], timed_out=True) == ()


def test_a_finished_cli_with_no_stop_hook_after_its_last_call_is_named(tmp_path: Path) -> None:
    host = Bridge(tmp_path)
    host.bash(SERVE, "toolu_1")
    assert host.reasons([(SERVE, "toolu_1")]) == (
        f"{NO_STOP_HOOK}: the CLI finished with no Stop hook call after its last tool call",)
    assert host.reasons([(SERVE, "toolu_1")], finished=False) == ()  # it did not finish
