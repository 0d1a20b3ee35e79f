"""The real Codex CLI (codex-cli 0.163.0, the ``openai-codex-cli-bin`` wheel) against the
project's scripted Responses API server (``scripted_responses.py``), through fire-exp.

No fake here: the binary, its hooks, its ``--json`` output and its rollout file are
Codex's own. The model is the script; the model name is one Codex's catalogue does not
know (as any local model's), so ``apply_patch`` is offered only through the metadata the
dialect writes. Each test is one attempt, a few model turns (a second or two of Codex).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import CodexAgent
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.paths import SUITES_DIR
from fire_exp.records import Cause
from tests.agents.agent_support import RunFn, task_copy
from tests.agents.scripted_responses import (
    ResponsesServer,
    apply_patch,
    cut_stream,
    exec_command,
    hook_prompts,
    message,
    tool_outputs,
)
from tests.ci import missing

pytestmark = [pytest.mark.cli, pytest.mark.slow]
ARGS = ["--dangerously-bypass-hook-trust", "--sandbox", "danger-full-access"]  # the yaml's
MODEL = "scripted-coder"  # outside Codex's bundled catalogue
NOTE = "*** Begin Patch\n*** Add File: notes.txt\n+recovered from the WAL\n*** End Patch\n"


@pytest.fixture
def codex_binary() -> str:
    found = wheel_binary("codex")
    if found is None:
        missing("the Codex CLI wheel (pip install 'fire-exp[codex]')")
    return found


def codex(server: ResponsesServer, **kw: Any) -> CodexAgent:
    """``agent=codex agent.base_url=URL agent.model=scripted-coder``, as the yaml sets it."""
    return CodexAgent(model=MODEL, base_url=server.url(), args=ARGS, **kw)


def steps(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp_path / "attempt/logs/agent/commands.jsonl")
            .read_text().splitlines()]


def solve_wal() -> str:
    solve = SUITES_DIR / "fire-mini/recover-wal-orders/solution/solve.sh"
    return solve.read_text().replace("/tmp/evidence-copy", "../evidence-copy")


def test_the_real_codex_is_denied_edits_by_patch_and_is_read_back(
        codex_binary: str, run_task: RunFn, tmp_path: Path) -> None:
    denied = "sqlite3 evidence/orders.db .dump"  # the real arm denies it (database_evidence)
    script = [[exec_command(denied, "call_deny")], [apply_patch(NOTE)],
              [exec_command(solve_wal(), "call_solve")], [message("Done.")]]
    with ResponsesServer(script) as server:
        record = run_task("recover-wal-orders", "real", codex(server))
    assert record.passed and record.cause is None and record.error is None
    assert record.valid, record.invalid_reason  # transcript and hook calls agree, by id
    tools = [t.get("name") for t in server.requests[0]["tools"]]
    assert "apply_patch" in tools and "exec_command" in tools
    blocked = tool_outputs(server.requests[1])["call_deny"]
    assert blocked.startswith("Command blocked by PreToolUse hook:")
    log = steps(tmp_path)
    assert [(s["kind"], s["denied"]) for s in log] == \
        [("command", True), ("edit", False), ("command", False), ("stop", False)]
    assert log[0]["command"] == denied and log[2]["exit_code"] == 0  # bare, not bash -lc
    assert (tmp_path / "attempt/logs/agent/codex-rollout.jsonl").is_file()
    home = tmp_path / "attempt/hooks/codex-home"  # Codex's own state is not the record's
    assert sorted(p.name for p in home.iterdir()) == \
        ["config.toml", "fire-models.json", "hooks.json"]
    assert record.decisions == 1 and record.funnel.fired
    # 4 answers of the server: 1000+n input tokens each, 200 cached, 30 output
    usage = record.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == \
        (4006, 800, 120)
    assert usage.model == MODEL and usage.cost_usd == 0.0  # a local model, unpriced
    assert {h["authorization"] for h in server.headers} == {"Bearer fire-exp-no-key"}


def test_the_real_codex_gets_the_stop_instruction_in_its_next_request(
        codex_binary: str, run_task: RunFn, tmp_path: Path) -> None:
    script = [[exec_command("python3 status_server.py &", "call_1")], [message("Done.")],
              [exec_command("echo second turn", "call_2")], [message("Done again.")]]
    with ResponsesServer(script) as server:
        record = run_task("serve-status-page", "real", codex(server))
    assert record.cause is None, record.error
    assert record.valid, record.invalid_reason
    prompts = [hook_prompts(r) for r in server.requests]
    assert not any(prompts[:2]) and prompts[2], "the Stop reason reaches the next request"
    summary = json.loads((tmp_path / "attempt/logs/agent/hook-summary.json").read_text())
    assert summary["by_event"]["Stop"] == 2 and summary["load_errors"] == 0
    assert [s["command"] for s in steps(tmp_path) if s["kind"] == "command"] == \
        ["python3 status_server.py &", "echo second turn"]


def test_a_stream_cut_the_real_codex_recovers_from_is_judged_by_its_turn(
        codex_binary: str, run_task: RunFn, tmp_path: Path) -> None:
    """Codex prints ``{"type":"error","message":"Reconnecting... 1/5 …"}`` and asks again;
    the turn completes, so the attempt is an honest one, not ``agent_error``."""
    script = [cut_stream(), [exec_command("ls", "call_ls")], [message("Done.")]]
    with ResponsesServer(script) as server:
        record = run_task("csv-column-stats", "real", codex(server))
    stdout = (tmp_path / "attempt/logs/agent/cli-stdout.jsonl").read_text()
    assert '"message":"Reconnecting... 1/5' in stdout and len(server.requests) == 3
    assert record.cause is None and record.error is None, record.error
    assert record.valid and record.n_commands == 1


def running(command: str, call_id: str) -> dict[str, Any]:
    """An ``exec_command`` call that yields after half a second, its command still running
    (Codex answers "Process running with session ID N")."""
    return {"type": "function_call", "name": "exec_command", "call_id": call_id,
            "arguments": json.dumps({"cmd": command, "yield_time_ms": 500})}


def poll(body: dict[str, Any], call_id: str, wait_ms: int) -> dict[str, Any]:
    """A ``write_stdin`` call polling the session ``call_id``'s answer names."""
    session = re.search(r"session ID (\d+)", tool_outputs(body)[call_id])
    assert session, tool_outputs(body)
    return {"type": "function_call", "name": "write_stdin", "call_id": f"{call_id}_poll",
            "arguments": json.dumps({"session_id": int(session.group(1)), "chars": "",
                                     "yield_time_ms": wait_ms})}


@pytest.mark.parametrize("end", ["turn ends", "polled to its exit", "CLI timed out"])
def test_a_command_still_running_when_codex_yields_is_a_call_of_the_transcript(
        codex_binary: str, run_task: RunFn, tmp_path: Path, end: str) -> None:
    """Codex 0.163 shows a command still running when ``exec_command`` yields by its
    ``item.started`` alone until it exits (then ``item.completed``, same id), and fires its
    PostToolUse only then: a server left running at the end of the turn, or at the agent's
    timeout, is an honest call, not a hook event with no tool call (which made the attempt
    invalid)."""
    command = "sleep 4; echo slept" if end == "polled to its exit" else "sleep 60"

    def respond(body: dict[str, Any], n: int) -> list[dict[str, Any]]:
        if n == 0:
            return [running(command, "call_long")]
        if n == 1 and end != "turn ends":  # the timeout (5 s) stops the CLI in this poll
            return [poll(body, "call_long", 8000 if end == "polled to its exit" else 30000)]
        return [message("Done.")]

    task = task_copy(tmp_path, "csv-column-stats", 5.0) if end == "CLI timed out" \
        else "csv-column-stats"
    with ResponsesServer(respond) as server:
        record = run_task(task, "real", codex(server))
    assert record.valid, record.invalid_reason
    assert record.cause == (Cause.AGENT_TIMEOUT if end == "CLI timed out" else None), \
        record.error
    [step] = [s for s in steps(tmp_path) if s["kind"] == "command"]
    assert step["command"] == command and not step["denied"]
    # Its exit status when it exited while Codex watched; none when it was still running.
    assert (step["exit_code"], step["output"]) == \
        ((0, "slept\n") if end == "polled to its exit" else (None, ""))
    hooks = json.loads((tmp_path / "attempt/logs/agent/hook-summary.json").read_text())
    assert hooks["by_event"]["PreToolUse"] == 1
    assert hooks["by_event"].get("PostToolUse", 0) == (end == "polled to its exit")
