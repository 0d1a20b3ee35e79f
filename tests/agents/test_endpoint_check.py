"""A CLI agent's model endpoint is checked before the first attempt, in the CLI's own
protocol, and refused in one line naming the URL and the error; an attempt whose CLI never
got a model answer is the provider's failure, or stops the run when no attempt could get
past it.

The endpoint here is a tiny handler that answers what a test sets (200 with a stream, a
4xx/5xx, or nothing at all). The CLI output lines are those Codex 0.163.0 and Claude Code
2.1.332 printed against such endpoints (reference/real-cli.md; captured with the real
binaries against a 404 server, a 500 server and a closed port)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.base import ProviderError
from fire_exp.agents.coding_agents import ClaudeCodeAgent, CodexAgent
from fire_exp.agents.coding_agents.endpoint_check import check_endpoint
from fire_exp.agents.coding_agents.unreached import (
    configuration_error,
    egress_summary,
    failure_text,
    model_answered,
    never_answered,
)
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.errors import PreflightError, ProtocolError

KEY = "sk-h33ep-probe-Vb7Qm2"


class _Endpoint(BaseHTTPRequestHandler):
    """Answers every POST as ``plan`` says; records what it was sent."""

    plan: dict[str, Any]
    seen: list[dict[str, Any]]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "body": body,
                          "headers": {k.lower(): v for k, v in self.headers.items()}})
        status, payload = self.plan["status"], self.plan["body"].encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if status == 200 else
                         "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    plan: dict[str, Any] = {"status": 200, "body": ""}
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_Endpoint,), {"plan": plan, "seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", plan, seen
    server.shutdown()
    server.server_close()


RESPONSES_OK = ('event: response.created\ndata: {"type":"response.created","response":'
                '{"id":"resp_1","status":"in_progress"}}\n\n')
MESSAGES_OK = ('event: message_start\ndata: {"type":"message_start","message":{"id":"m",'
               '"role":"assistant","content":[]}}\n\n')


def test_codex_is_probed_with_a_responses_request_and_claude_with_a_messages_one(
        endpoint: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url, plan, seen = endpoint
    monkeypatch.setenv("H33EP_KEY", KEY)
    plan["body"] = RESPONSES_OK
    # The probe alone (preflight also asks the dialect, which runs Codex's binary).
    CodexAgent(binary="/bin/true", base_url=f"{url}/v1", model="qwen-local",
               api_key_env="H33EP_KEY").check_endpoint()
    plan["body"] = MESSAGES_OK
    # /v1 is dropped from Claude Code's base URL (ANTHROPIC_BASE_URL): the probe's too
    ClaudeCodeAgent(binary="/bin/true", base_url=f"{url}/v1", model="claude-local",
                    api_key_env="H33EP_KEY").preflight(DockerEnvironment.capabilities)
    codex, claude = seen
    assert codex["path"] == "/v1/responses" and codex["headers"]["authorization"] == \
        f"Bearer {KEY}"
    assert codex["body"]["model"] == "qwen-local" and codex["body"]["stream"] is True
    assert codex["body"]["max_output_tokens"] == 16
    assert claude["path"] == "/v1/messages" and claude["headers"]["x-api-key"] == KEY
    assert claude["headers"]["anthropic-version"] and claude["body"]["max_tokens"] == 1
    assert claude["body"]["model"] == "claude-local"


@pytest.mark.parametrize(("status", "body", "said", "fix"), [
    (404, '{"error":{"message":"model \'nope\' not found"}}', "HTTP 404", "agent.model=nope"),
    (401, '{"error":{"message":"bad key"}}', "HTTP 401", "H33EP_KEY"),
    (503, "overloaded", "HTTP 503", "server failed"),
    (200, 'event: error\ndata: {"type":"error","error":{"message":"no such model"}}\n\n',
     "opens with an error", "agent.model=nope"),
])
def test_an_endpoint_that_refuses_the_probe_refuses_the_panel_in_one_line(
        endpoint: Any, monkeypatch: pytest.MonkeyPatch, status: int, body: str, said: str,
        fix: str) -> None:
    url, plan, _ = endpoint
    plan.update(status=status, body=body)
    monkeypatch.setenv("H33EP_KEY", KEY)
    agent = CodexAgent(binary="/bin/true", base_url=f"{url}/v1", model="nope",
                       api_key_env="H33EP_KEY")
    with pytest.raises(PreflightError) as caught:
        agent.check_endpoint()  # preflight's probe (its dialect check runs Codex's binary)
    message = str(caught.value)
    assert f"POST {url}/v1/responses" in message and said in message and fix in message
    assert "\n" not in message and KEY not in message


def test_a_closed_port_and_a_silent_server_are_refused_naming_the_url() -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(PreflightError, match=rf"POST http://127.0.0.1:{port}/v1/messages: "
                                             r".*(refused|Errno).*start the model server"):
        check_endpoint("claude-code", "claude-code", f"http://127.0.0.1:{port}", "m",
                       "ANTHROPIC_API_KEY", None)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    try:
        with pytest.raises(PreflightError, match="no answer within 1 s"):
            check_endpoint("codex", "codex", f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
                           "m", "OPENAI_API_KEY", None, timeout_s=1.0)
    finally:
        silent.close()


def test_with_no_model_named_an_answering_endpoint_passes(endpoint: Any) -> None:
    url, plan, seen = endpoint
    plan.update(status=400, body='{"error":{"message":"model is required"}}')
    check_endpoint("codex", "codex", f"{url}/v1", None, "OPENAI_API_KEY", None)
    assert "model" not in seen[0]["body"]  # the CLI names its own


def test_the_cli_s_own_endpoint_is_not_probed() -> None:
    CodexAgent(binary="/bin/true").check_endpoint()  # no base_url: nothing to reach here


# What the real CLIs printed (see the module docstring).
CODEX_UNREACHABLE = [
    '{"type":"thread.started","thread_id":"01a236e0-0537-7f31-b1f9-1b9ed12639c4"}',
    '{"type":"turn.started"}',
    '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: '
    'error sending request)"}']
CODEX_404 = CODEX_UNREACHABLE[:2] + [
    '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 404 Not Found: model '
    '\'nope\' not found, url: http://127.0.0.1:18791/v1/responses)"}',
    '{"type":"turn.failed","error":{"message":"unexpected status 404 Not Found: model '
    '\'nope\' not found, url: http://127.0.0.1:18791/v1/responses"}}']
CODEX_500 = CODEX_UNREACHABLE[:2] + [
    '{"type":"turn.failed","error":{"message":"We\\u2019re currently experiencing high '
    'demand, which may cause temporary errors."}}']
CODEX_ANSWERED = CODEX_UNREACHABLE[:2] + [
    '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}',
    '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}}',
    '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}']
CLAUDE_404 = [
    '{"type":"system","subtype":"init","session_id":"5280","model":"nope"}',
    '{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":'
    '[{"type":"text","text":"There\'s an issue with the selected model (nope)."}]}}',
    '{"type":"result","subtype":"success","is_error":true,"api_error_status":404,'
    '"result":"There\'s an issue with the selected model (nope)."}']
CLAUDE_ANSWERED = ['{"type":"assistant","message":{"model":"claude-local","content":[]}}']
ROOT_REFUSAL = ("--dangerously-skip-permissions cannot be used with root/sudo privileges "
                "for security reasons")


def test_what_shows_a_model_answer() -> None:
    assert model_answered("codex", CODEX_UNREACHABLE) is False
    assert model_answered("codex", CODEX_404) is False
    assert model_answered("codex", CODEX_ANSWERED) is True  # a recovered retry: answered
    assert model_answered("claude-code", CLAUDE_404) is False  # the stand-in is no answer
    assert model_answered("claude-code", CLAUDE_ANSWERED) is True
    assert model_answered("claude-code", []) is False
    assert model_answered("other-cli", []) is None


def test_a_deterministic_error_is_told_apart_from_a_provider_failure() -> None:
    assert "HTTP 404" in (configuration_error(failure_text(CODEX_404)) or "")
    assert "HTTP 404" in (configuration_error(failure_text(CLAUDE_404)) or "")
    assert "as root" in (configuration_error(ROOT_REFUSAL) or "")
    assert "--bogus" in (configuration_error("error: unexpected argument '--bogus' found")
                         or "")
    assert "--bogus" in (configuration_error("error: unknown option '--bogus'") or "")
    for transient in (failure_text(CODEX_UNREACHABLE), failure_text(CODEX_500),
                      "HTTP 429: rate limited", "HTTP 400: prompt is too long"):
        assert configuration_error(transient) is None, transient


def test_never_answered_is_a_provider_failure_or_stops_the_run() -> None:
    def redact(text: str) -> str:
        return text.replace(KEY, "***")

    late = never_answered("codex", "codex", "http://127.0.0.1:9/v1", CODEX_UNREACHABLE,
                          f"key {KEY}", code=-9, timed_out=True, redact=redact,
                          tamper=("x",))
    assert isinstance(late, ProviderError) and late.before_action and late.tamper == ("x",)
    assert "never got a model answer from http://127.0.0.1:9/v1 (ran past the agent " \
        "timeout): Reconnecting" in str(late)
    stop = never_answered("claude-code", "claude", None, [], f"{ROOT_REFUSAL} {KEY}", code=1,
                          timed_out=False, redact=redact)
    assert isinstance(stop, ProtocolError) and "The run stops" in str(stop)
    assert KEY not in str(stop) and "its default endpoint" in str(stop)


def test_the_provider_failure_says_what_the_egress_proxy_saw(tmp_path: Path) -> None:
    log = tmp_path / "egress.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in [
        {"target": "127.0.0.1:9", "allowed": True, "request": "POST /v1/responses",
         "status": None, "note": "upstream unreachable: [Errno 111] Connection refused"},
        {"target": "chatgpt.com:443", "allowed": False, "note": "not in the agent's egress list"},
    ]) + "\n")
    said = egress_summary(log)
    assert said == ("; the egress proxy let 1 connection(s) through, 0 answered (upstream "
                    "unreachable: [Errno 111] Connection refused)")
    failure = never_answered("codex", "codex", "http://127.0.0.1:9/v1", CODEX_UNREACHABLE, "",
                             code=1, timed_out=False, redact=str, egress=said)
    assert str(failure).endswith(said)
    log.write_text(json.dumps({"target": "example.org:443", "allowed": False}) + "\n")
    assert egress_summary(log) == "; the egress proxy let nothing through (1 refused)"
    assert egress_summary(tmp_path / "none.jsonl") == ""
