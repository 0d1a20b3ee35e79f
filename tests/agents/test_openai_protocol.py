"""agent=openai speaks standard Chat Completions to a strict server, and fails loudly when the
server refuses what fire-exp built (issue 11, point 1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fire_exp.errors import PreflightError, ProtocolError
from fire_exp.records import Cause
from tests.agents.agent_support import KEY_ENV, RunFn
from tests.agents.scripted_server import (
    ScriptedServer,
    completion,
    cut_off,
    error,
    shape_problem,
    text,
    tool_call,
)
from tests.agents.test_openai import agent_for

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "protocols"


def provider_reply(tool: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    """A reply carrying the provider fields llama.cpp and others add to the message."""
    message: dict[str, Any] = {"content": None if tool else "Done.", "refusal": None,
                               "function_call": None, "reasoning_content": "thinking...",
                               "audio": None} | extra
    if tool:
        message["tool_calls"] = [tool]
    return completion(message)


def bash_call(command: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"index": 0, "id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def test_provider_fields_are_never_echoed_back(fake_key, run_task: RunFn) -> None:
    script = [provider_reply(bash_call("echo one")), provider_reply(bash_call("echo two", "c2")),
              provider_reply(None)]
    with ScriptedServer(script, strict=True) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is None and record.n_commands == 2
    assert len(server.requests) == 3
    assert all(shape_problem(r["messages"]) is None for r in server.requests)
    assistant = server.requests[1]["messages"][2]
    assert assistant == {"role": "assistant", "content": "",
                         "tool_calls": [{"id": "call_1", "type": "function", "function": {
                             "name": "bash", "arguments": '{"command": "echo one"}'}}]}


def test_the_llama_cpp_reply_recorded_in_the_fixtures_goes_back_clean(
        fake_key, run_task: RunFn) -> None:
    name = "llama-cpp-python-0.3.36-chatml-function-calling__chat-completion-tool-call.json"
    recorded = json.loads((FIXTURES / name).read_text())
    script = [{"status": 200, "body": recorded, "headers": {}}, text("Done.")]
    with ScriptedServer(script, strict=True) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is None and record.n_commands == 1
    assert shape_problem(server.requests[1]["messages"]) is None


MALFORMED = [
    {"id": "m1", "type": "function", "function": {"name": "bash", "arguments": "{not json"}},
    {"id": "m2", "type": "function", "function": {"name": "bash",
                                                  "arguments": {"command": "ls"}}},
    {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
    {"id": "m4", "type": "function", "function": {"name": "python", "arguments": "{}"}},
    {"id": "m5", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": 1}'}},
]


def test_malformed_tool_calls_go_back_as_tool_errors_and_are_counted(
        fake_key, run_task: RunFn) -> None:
    script = [completion({"content": None, "tool_calls": [call]}) for call in MALFORMED]
    script += [tool_call("echo fixed", call_id="ok"), text("Done.")]
    with ScriptedServer(script, strict=True) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is None and record.n_commands == 1  # only the good call ran
    assert record.usage.malformed_tool_calls == 5 and record.usage.model_calls == 7
    answers = [r["messages"][-1] for r in server.requests[1:6]]
    assert all(a["role"] == "tool" and a["content"].startswith("error: malformed tool call")
               for a in answers)
    assert "not JSON" in answers[0]["content"] and "not dict" in answers[1]["content"]
    assert "no id" in answers[2]["content"] and "unknown tool 'python'" in answers[3]["content"]
    # The id the harness gave the call without one is the id its tool result answers.
    sent = server.requests[3]["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == sent[-1]["tool_call_id"] == "call_fire_1"
    assert all(shape_problem(r["messages"]) is None for r in server.requests)


def test_a_validation_error_stops_the_run_after_one_request(fake_key, run_task: RunFn) -> None:
    body = {"error": {"message": "1 validation error for CreateChatCompletionRequest "
                      "messages.2.role Input should be 'tool'", "type": "internal_server_error"}}
    script = [tool_call("true"), {"status": 500, "body": body, "headers": {}}]
    with ScriptedServer(script) as server:
        with pytest.raises(ProtocolError, match=r"HTTP 500: .*messages\.2\.role"):
            run_task("csv-column-stats", "baseline", agent_for(server, retries=4))
    assert len(server.requests) == 2  # not retried


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried_and_stop_the_run(status: int, fake_key,
                                                         run_task: RunFn) -> None:
    with ScriptedServer([error(status, "refused: bad thing")]) as server:
        with pytest.raises(ProtocolError, match=f"HTTP {status}: .*refused: bad thing"):
            run_task("csv-column-stats", "baseline", agent_for(server, retries=4))
    assert len(server.requests) == 1


def test_a_body_cut_off_mid_read_is_retried_and_usage_kept(fake_key, run_task: RunFn) -> None:
    with ScriptedServer([cut_off(), tool_call("true"), text("Done.")]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, retries=2))
    assert record.cause is None and len(server.requests) == 3
    assert record.usage.input_tokens == 200 and record.usage.model_calls == 2


UNSUPPORTED = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.")


def _wants_completion_tokens(request: dict[str, Any], n: int) -> dict[str, Any]:
    if "max_tokens" in request:
        return error(400, UNSUPPORTED)
    return tool_call("true") if n < 2 else text("Done.")


def test_auto_switches_to_max_completion_tokens_once(fake_key, run_task: RunFn) -> None:
    with ScriptedServer(_wants_completion_tokens) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is None
    assert "max_tokens" in server.requests[0] and "max_completion_tokens" not in server.requests[0]
    assert all(r.get("max_completion_tokens") == 2048 and "max_tokens" not in r
               for r in server.requests[1:])
    assert len(server.requests) == 3


def test_a_fixed_token_field_is_not_switched(fake_key, run_task: RunFn) -> None:
    with ScriptedServer(_wants_completion_tokens) as server:
        with pytest.raises(ProtocolError, match="max_completion_tokens"):
            run_task("csv-column-stats", "baseline",
                     agent_for(server, max_tokens_param="max_tokens"))
    assert len(server.requests) == 1


def _small_context(limit: int) -> Any:
    def respond(request: dict[str, Any], n: int) -> dict[str, Any]:
        size = sum(len(m.get("content") or "") for m in request["messages"])
        if size > limit:
            return error(400, f"Requested tokens ({size}) exceed context window of {limit}")
        tools = sum(m["role"] == "tool" for m in request["messages"])
        return tool_call("head -c 3000 /dev/zero | tr '\\0' x") if tools < 4 else text("Done.")
    return respond


def test_context_exceeded_drops_the_oldest_tool_outputs(fake_key, run_task: RunFn,
                                                        tmp_path: Path) -> None:
    with ScriptedServer(_small_context(9000)) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is None and record.n_commands == 4
    last = server.requests[-1]["messages"]
    assert last[0]["role"] == "system" and last[1]["role"] == "user"
    assert "context window" in last[2 + 1]["content"]  # the oldest output was dropped
    assert last[-1]["content"].startswith("x")  # the latest output stayed


def test_context_still_exceeded_is_its_own_agent_cause(fake_key, run_task: RunFn) -> None:
    with ScriptedServer(_small_context(100)) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is Cause.AGENT_CONTEXT_EXCEEDED
    assert "exceed context window of 100" in (record.error or "")
    assert record.fair  # not replaceable: the model had its attempt


def test_cached_input_tokens_are_priced_at_the_cached_rate(fake_key, run_task: RunFn) -> None:
    reply = text("Done.", tokens=(1000, 100))
    reply["body"]["usage"]["prompt_tokens_details"] = {"cached_tokens": 800}
    prices = {"scripted-model-1": {"input": 1.0, "cached_input": 0.1, "output": 2.0}}
    with ScriptedServer([reply]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, prices=prices))
    assert record.usage.cached_input_tokens == 800
    assert record.usage.cost_usd == pytest.approx((200 * 1.0 + 800 * 0.1 + 100 * 2.0) / 1e6)


def test_preflight_passes_against_a_live_endpoint(fake_key) -> None:
    with ScriptedServer([text()]) as server:
        agent_for(server).preflight()
    assert server.requests == []  # the models list, not a completion


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_preflight_names_the_endpoint_and_how_to_start_a_server(fake_key) -> None:
    from fire_exp.agents.openai import OpenAIAgent

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    agent = OpenAIAgent(base_url=url, api_key_env=KEY_ENV)
    with pytest.raises(PreflightError, match=rf"{url}.*serve-model") as info:
        agent.preflight()
    assert "\n" not in str(info.value)


def test_preflight_names_an_unset_key_variable(monkeypatch) -> None:
    from fire_exp.agents.openai import OpenAIAgent

    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(PreflightError, match=KEY_ENV):
        OpenAIAgent(api_key_env=KEY_ENV).preflight()


@pytest.mark.slow
def test_fire_exp_run_stops_at_the_first_refused_request(tmp_path: Path) -> None:
    body = {"error": {"message": "1 validation error: messages.2.role Input should be 'tool'"}}
    with ScriptedServer([{"status": 500, "body": body, "headers": {}}]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=openai",
             f"agent.base_url={server.base_url}", "panel.attempts=1", "executor.workers=1",
             f"results_dir={tmp_path}", "analyze=false"],
            capture_output=True, text=True, cwd=ROOT, timeout=600,
            env=os.environ | {"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-x-123456789"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fire-exp run: error: agent=openai: the server refused")
    assert "messages.2.role" in last
    assert len(server.requests) == 1  # one attempt, one request: the panel was not burnt
