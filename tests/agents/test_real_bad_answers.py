"""Bad answers of a model stay the model's (issue 35, point 4): the real Codex CLI (0.163)
and the real Claude Code (2.1) against the project's scripted servers, which answer as a
weak local model does — a malformed tool call, prose where a call belongs, an empty
answer, a patch that does not apply.

Each is one attempt of the real arm on a bundled task (environment=local). What is
asserted, from the record: the attempt is a fair one that the verifier scored (no
provider, harness or protocol cause, nothing the replacement rule may replace), its
``error`` names what the model did, a malformed call is counted in
``usage.malformed_tool_calls``, the CLI's own answer to a bad call reached the model in its
next request (the CLI said what was wrong; fire-exp replaced nothing), and the evidence
check does not take the bad call for tampering (the attempt stays valid).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent, CodexAgent
from fire_exp.agents.coding_agents.answers import EMPTY, MALFORMED, PROSE, UNAPPLIED
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.records import REPLACEABLE_CAUSES, AttemptRecord
from tests.agents.agent_support import RunFn
from tests.agents.scripted_messages import MessagesServer, Turn, say, tool, tool_results
from tests.agents.scripted_responses import (
    ResponsesServer,
    apply_patch,
    message,
    tool_outputs,
)
from tests.ci import missing

pytestmark = [pytest.mark.cli, pytest.mark.slow]
CODEX_ARGS = ["--dangerously-bypass-hook-trust", "--sandbox", "danger-full-access"]
CLAUDE_ARGS = ["--permission-mode", "bypassPermissions"]
# What Qwen2.5-Coder-0.5B wrote instead of its template's <tool_call> block.
PROSE_CALL = '```json\n{"name": "exec_command", "arguments": {"cmd": "ls data"}}\n```'
STALE_PATCH = ("*** Begin Patch\n*** Update File: data/sales.csv\n@@\n-region,price\n"
               "+region,amount\n*** End Patch\n")


def _binary(agent: str) -> None:
    if wheel_binary(agent) is None:
        missing(f"the {agent} CLI wheel (pip install 'fire-exp[{agent}]')")


def assert_the_models_own(record: AttemptRecord, named: str) -> None:
    """A fair attempt, scored by the verifier, whose error names the model's answer."""
    assert record.cause is None and record.fair and not record.infrastructure_failure, \
        (record.cause, record.error)
    assert record.cause not in REPLACEABLE_CAUSES and record.reward is not None
    assert not record.passed  # nothing of the task was done
    assert record.error is not None and named in record.error, record.error
    assert record.valid, record.invalid_reason  # a bad call is not tampering


# Codex: the model's answers as Responses output items; the next request shows what Codex
# told the model about its call.
CODEX_CASES: dict[str, tuple[list[list[dict[str, Any]]], str, int]] = {
    "arguments that are not JSON": (
        [[{"type": "function_call", "name": "exec_command", "call_id": "call_bad",
           "arguments": '{"cmd": "ls'}], [message("Done.")]], MALFORMED, 1),
    "a tool it was not offered": (
        [[{"type": "function_call", "name": "run_shell", "call_id": "call_bad",
           "arguments": json.dumps({"cmd": "ls"})}], [message("Done.")]], MALFORMED, 1),
    "prose instead of a call": ([[message(PROSE_CALL)]], PROSE, 0),
    "an empty answer": ([[]], EMPTY, 0),
    "a patch that does not apply": (
        [[apply_patch(STALE_PATCH, "call_bad")], [message("Done.")]], UNAPPLIED, 0),
}


@pytest.mark.parametrize("case", list(CODEX_CASES))
def test_a_bad_answer_to_the_real_codex_stays_the_models(case: str, run_task: RunFn) -> None:
    _binary("codex")
    script, named, malformed = CODEX_CASES[case]
    with ResponsesServer(script) as server:
        agent = CodexAgent(model="scripted-coder", base_url=server.url(), args=CODEX_ARGS)
        record = run_task("csv-column-stats", "real", agent)
    assert_the_models_own(record, named)
    assert record.usage.malformed_tool_calls == malformed
    assert record.n_commands == 0
    if len(script) > 1:  # the call went back to the model with Codex's own answer to it
        assert tool_outputs(server.requests[1]).get("call_bad"), server.requests[1]["input"]


def _claude_cases() -> dict[str, tuple[list[Turn], str, int]]:
    return {
        "a call without its required argument": (
            [tool("Bash", {"description": "list"}, call_id="toolu_bad"), say("Done.")],
            MALFORMED, 1),
        "a tool it was not offered": (
            [tool("run_shell", {"cmd": "ls"}, call_id="toolu_bad"), say("Done.")],
            MALFORMED, 1),
        "prose instead of a call": ([say(PROSE_CALL)], PROSE, 0),
        "an empty answer": ([Turn(())], EMPTY, 0),
        "an edit that does not apply": (
            [tool("Edit", {"file_path": "data/sales.csv", "old_string": "region,price",
                           "new_string": "region,amount"}, call_id="toolu_bad"),
             say("Done.")], UNAPPLIED, 0),
    }


@pytest.mark.parametrize("case", list(_claude_cases()))
def test_a_bad_answer_to_the_real_claude_stays_the_models(case: str, run_task: RunFn) -> None:
    _binary("claude-code")
    script, named, malformed = _claude_cases()[case]
    with MessagesServer(script) as server:
        agent = ClaudeCodeAgent(model="scripted-claude-1", base_url=server.base_url,
                                args=CLAUDE_ARGS)
        record = run_task("csv-column-stats", "real", agent)
    assert_the_models_own(record, named)
    assert record.usage.malformed_tool_calls == malformed
    assert record.n_commands == 0
    if len(script) > 1:  # the CLI's own error result went back to the model
        [result] = [r for r in tool_results(server.requests[1])
                    if r["tool_use_id"] == "toolu_bad"]
        assert result["is_error"], result

