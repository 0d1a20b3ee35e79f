"""agent=openai against a real scripted HTTP server on loopback, through run_attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.agents.openai import OpenAIAgent
from fire_exp.agents.session import MAX_STOP_ROUNDS
from fire_exp.records import Cause, record_to_line
from tests.agents.agent_support import FAKE_KEY, KEY_ENV, RunFn, task_copy
from tests.agents.scripted_server import (
    ScriptedServer,
    error,
    malformed,
    solution_responder,
    text,
    tool_call,
)

PRICES = {"scripted-model-1": {"input": 1.0, "output": 2.0}}


def agent_for(server: ScriptedServer, **kw: object) -> OpenAIAgent:
    params: dict = {"base_url": server.base_url, "model": "scripted-model-1",
                    "api_key_env": KEY_ENV, "backoff_s": 0.01, "prices": PRICES} | kw
    return OpenAIAgent(**params)


def commands(tmp_path: Path) -> list[dict]:
    path = tmp_path / "attempt" / "logs" / "agent" / "commands.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def transcript(tmp_path: Path) -> list[dict]:
    path = tmp_path / "attempt" / "logs" / "agent" / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_solves_a_task_and_sends_instruction_tool_and_key(fake_key, run_task: RunFn) -> None:
    with ScriptedServer(solution_responder()) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.passed and record.cause is None and record.n_commands == 1
    first = server.requests[0]
    assert first["messages"][1]["role"] == "user"
    assert "sales.csv" in first["messages"][1]["content"]
    assert first["tools"][0]["function"]["name"] == "bash"
    assert first["model"] == "scripted-model-1"
    assert server.headers[0]["authorization"] == f"Bearer {FAKE_KEY}"
    assert len(server.requests) == 2  # the tool call, then the stop


def test_pretooluse_deny_returns_the_reason_as_the_tool_result(fake_key, run_task: RunFn,
                                                               tmp_path: Path) -> None:
    script = [tool_call("sqlite3 evidence/orders.db 'SELECT count(*) FROM orders'"),
              text("Giving up.")]
    with ScriptedServer(script) as server:
        record = run_task("recover-wal-orders", "real", agent_for(server))
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert tool_message["content"].startswith("Denied: this command can open the evidence")
    assert record.decisions == 1 and record.funnel.fired
    assert [c["denied"] for c in commands(tmp_path) if c["kind"] == "command"] == [True]
    assert not record.passed


def test_stop_instruction_becomes_the_next_user_message_and_the_loop_goes_on(
        fake_key, run_task: RunFn) -> None:
    script = [tool_call("echo python3 status_server.py"), text("Done."),
              tool_call("echo probing", call_id="call_2"), text("Done now.")]
    with ScriptedServer(script) as server:
        record = run_task("serve-status-page", "real", agent_for(server))
    nudge = server.requests[2]["messages"][-1]
    assert nudge["role"] == "user" and "setsid nohup" in nudge["content"]
    assert server.requests[2]["messages"][-2] == {"role": "assistant", "content": "Done."}
    assert len(server.requests) == 4 and record.n_commands == 2  # worked on after the nudge
    assert record.decisions == 1 and record.cause is None


def test_nudge_limit_lets_the_agent_stop_after_one_nudge(fake_key, run_task: RunFn) -> None:
    with ScriptedServer([text("Done.")]) as server:
        record = run_task("csv-column-stats", "always_verify", agent_for(server))
    assert len(server.requests) == 2  # stop, nudge, stop allowed (limit 1)
    assert record.decisions == 1 and record.cause is None


def test_a_rule_without_a_limit_is_stopped_by_the_backstop(fake_key, run_task: RunFn,
                                                           tmp_path: Path) -> None:
    portfolio = tmp_path / "nagging"
    portfolio.mkdir()
    (portfolio / "nag.py").write_text(
        "from fire_exp.policies import Family, instruct, rule\n"
        "class Nag(Family):\n"
        "    name = 'nag'\n"
        "    def eligible(self, task_text): return True\n"
        "    @rule(events=('Stop',), limit=None)\n"
        "    def again(self, event, state): return instruct('Check once more.')\n"
        "FAMILIES = [Nag()]\n")
    with ScriptedServer([text("Done.")]) as server:
        record = run_task("csv-column-stats", "real", agent_for(server), portfolio=portfolio)
    assert len(server.requests) == MAX_STOP_ROUNDS + 1
    assert record.decisions == MAX_STOP_ROUNDS + 1  # the last nudge is overruled
    assert record.cause is None


def test_step_limit(fake_key, run_task: RunFn, tmp_path: Path) -> None:
    with ScriptedServer([tool_call("true")]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, max_steps=3))
    assert record.cause is Cause.AGENT_STEP_LIMIT and record.n_commands == 3
    assert record.reward == 0.0  # the verifier still ran
    assert transcript(tmp_path)[-1]["event"] == "step_limit"


def test_agent_timeout_keeps_the_usage(fake_key, run_task: RunFn, tmp_path: Path) -> None:
    task = task_copy(tmp_path, "csv-column-stats", timeout_sec=2.0)
    with ScriptedServer([tool_call("sleep 30")]) as server:
        record = run_task(task, "baseline", agent_for(server))
    assert record.cause is Cause.AGENT_TIMEOUT
    assert record.usage.input_tokens == 100 and record.reward is not None


def test_a_model_slower_than_the_agent_timeout_is_a_timeout(fake_key, run_task: RunFn,
                                                             tmp_path: Path) -> None:
    task = task_copy(tmp_path, "csv-column-stats", timeout_sec=1.5)
    with ScriptedServer([text("too late") | {"delay_s": 4.0}]) as server:
        record = run_task(task, "baseline", agent_for(server, retries=5))
    assert record.cause is Cause.AGENT_TIMEOUT  # not retried past the deadline
    assert len(server.requests) == 1 and record.reward is not None


def test_retries_429_500_and_malformed_answers(fake_key, run_task: RunFn) -> None:
    script = [error(429, "slow down", **{"Retry-After": "0"}), error(500), malformed(),
              malformed('{"choices": []}'), text("Done.")]
    with ScriptedServer(script) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, retries=4))
    assert len(server.requests) == 5
    assert record.cause is None and record.usage.input_tokens == 100


def test_a_request_that_times_out_is_retried(fake_key, run_task: RunFn) -> None:
    slow = text("too late") | {"delay_s": 3.0}
    with ScriptedServer([slow, text("Done.")]) as server:
        record = run_task("csv-column-stats", "baseline",
                          agent_for(server, request_timeout_s=0.5))
    assert len(server.requests) == 2 and record.cause is None
    assert record.usage.input_tokens == 100  # only the answer that arrived counts


def test_retries_exhausted_before_any_command_is_a_provider_failure(
        fake_key, run_task: RunFn) -> None:
    with ScriptedServer([error(503)]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, retries=2))
    assert len(server.requests) == 3
    assert record.cause is Cause.PROVIDER_FAILED and record.reward is None
    assert "HTTP 503" in (record.error or "")


def test_provider_failure_after_a_command_is_the_agents_error(fake_key, run_task: RunFn) -> None:
    with ScriptedServer([tool_call("true"), error(500)]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, retries=1))
    assert record.cause is Cause.AGENT_ERROR and record.n_commands == 1


def test_missing_key_names_the_variable(monkeypatch, run_task: RunFn) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ScriptedServer([text()]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.cause is Cause.PROVIDER_FAILED and KEY_ENV in (record.error or "")
    assert server.requests == []


def test_bad_tool_arguments_run_nothing(fake_key, run_task: RunFn) -> None:
    script = [tool_call("", raw_arguments="{not json"), text("Done.")]
    with ScriptedServer(script) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    assert record.n_commands == 0
    assert server.requests[1]["messages"][-1]["content"].startswith("error: malformed tool")
    assert record.usage.malformed_tool_calls == 1


def test_tokens_cost_model_and_route(fake_key, run_task: RunFn) -> None:
    script = [tool_call("true", tokens=(1000, 300), route="eu/replica-7"),
              text("Done.", tokens=(1500, 100), route="eu/replica-7")]
    with ScriptedServer(script) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server))
    usage = record.usage
    assert (usage.input_tokens, usage.output_tokens) == (2500, 400)
    assert usage.cost_usd == pytest.approx((2500 * 1.0 + 400 * 2.0) / 1e6)
    assert usage.model == "scripted-model-1" and usage.route == "eu/replica-7"


def test_the_key_is_written_nowhere(fake_key, run_task: RunFn, tmp_path: Path) -> None:
    script = [tool_call("echo the key is $FIRE_TEST_OPENAI_KEY; env | sort"),
              error(500, f"upstream rejected key {FAKE_KEY}"), text("Done.")]
    with ScriptedServer(script) as server:
        record = run_task("csv-column-stats", "always_verify", agent_for(server, retries=2))
    assert server.headers[0]["authorization"] == f"Bearer {FAKE_KEY}"  # it was used
    assert FAKE_KEY not in record_to_line(record)
    written = [p for p in (tmp_path / "attempt").rglob("*") if p.is_file()]
    assert any(p.name == "transcript.jsonl" for p in written)
    for path in written:
        assert FAKE_KEY.encode() not in path.read_bytes(), path


def test_a_failed_key_is_redacted_from_the_error(fake_key, run_task: RunFn) -> None:
    with ScriptedServer([error(500, f"bad key {FAKE_KEY}")]) as server:
        record = run_task("csv-column-stats", "baseline", agent_for(server, retries=0))
    assert record.cause is Cause.PROVIDER_FAILED
    assert "***" in (record.error or "") and FAKE_KEY not in (record.error or "")


def test_a_key_in_the_variable_name_slot_is_refused() -> None:
    from fire_exp.config import ComponentConfig
    from fire_exp.errors import InputError
    from fire_exp.runner.build import agent_factory

    with pytest.raises(InputError, match="^configs/agent/openai.yaml: api_key_env: looks like "
                       "a key, not a variable name"):
        agent_factory(ComponentConfig("openai", {"api_key_env": "sk-live-123"}))


