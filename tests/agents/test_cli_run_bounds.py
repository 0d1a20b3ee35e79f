"""A Codex turn the agent's timeout stopped: ``codex exec --json`` (0.163) shows no usage
(only ``turn.completed`` has it) and, when the model's every call was one Codex answers
with an error of its own, no item at all; its rollout file counts each response
(``token_count``). Recorded from the real binary against the served Qwen2.5-Coder-0.5B,
which called ``write_stdin`` on a process that did not exist until its 40 s ran out."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fire_exp.agents.base import ProviderError
from fire_exp.agents.coding_agents.codex import CodexAgent, parse_codex_json, rollout_path
from fire_exp.agents.coding_agents.codex_rollout import rollout_usage
from fire_exp.agents.coding_agents.unreached import model_answered
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.redaction import Redactor
from fire_exp.policies.runtime import PolicyRuntime
from fire_exp.records import Cause

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protocols"
STDOUT = FIXTURES / "codex-0.163.0__exec-json-timeout-write-stdin.jsonl"
ROLLOUT = FIXTURES / "codex-0.163.0__rollout-timeout-write-stdin.jsonl"


def test_the_rollout_counts_what_the_output_does_not() -> None:
    out = STDOUT.read_text().splitlines()
    transcript = parse_codex_json(out)
    assert not transcript.finished and transcript.output_tokens == 0
    assert model_answered("codex", out) is False  # the output alone shows no answer
    usage = rollout_usage(ROLLOUT.read_text().splitlines())
    assert usage is not None
    # The last token_count's running total; six responses, each a write_stdin call.
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens,
            usage.responses) == (8838, 7351, 354, 6)


def _session(tmp_path: Path) -> SimpleNamespace:
    files = AttemptPaths(tmp_path)
    files.agent_logs.mkdir(parents=True)
    files.cli_stdout.write_text(STDOUT.read_text())
    files.cli_stderr.write_text("")
    rollout_path(files).write_text(ROLLOUT.read_text())
    env = SimpleNamespace(files=files, redactor=Redactor())
    return SimpleNamespace(env=env, trajectory=[], runtime=PolicyRuntime([], "task"))


def test_a_timed_out_turn_is_the_agents_with_its_tokens(tmp_path: Path) -> None:
    agent = CodexAgent(base_url="http://127.0.0.1:1/v1", model="qwen2.5-coder-0.5b",
                       prices={})
    outcome = agent._outcome(_session(tmp_path), None, 124, timed_out=True)  # type: ignore[arg-type]  # noqa: SLF001 - the read-back alone
    assert outcome.cause == Cause.AGENT_TIMEOUT  # a fair attempt, not provider_failed
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens,
            outcome.usage.cached_input_tokens) == (8838, 354, 7351)
    assert outcome.usage.cost_usd == 0.0


def test_without_the_rollout_the_same_output_measured_nothing(tmp_path: Path) -> None:
    session = _session(tmp_path)
    rollout_path(session.env.files).unlink()
    agent = CodexAgent(base_url="http://127.0.0.1:1/v1", model="qwen2.5-coder-0.5b",
                       prices={})
    with pytest.raises(ProviderError, match="never got a model answer"):
        agent._outcome(session, None, 124, timed_out=True)  # type: ignore[arg-type]  # noqa: SLF001 - the read-back alone


def test_a_claude_run_its_own_max_turns_ended_is_the_agents_step_limit(tmp_path: Path) -> None:
    """Claude Code 2.1.332 at ``--max-turns``: exit 1, a ``result`` of subtype
    ``error_max_turns`` with the run's usage (tests/serve/test_serve_parts.py has the
    shape). The attempt ends ``agent_step_limit`` with those tokens, not ``agent_error``
    and, with no command run, not ``provider_failed``."""
    from fire_exp.agents.coding_agents.claude_code import ClaudeCodeAgent

    call = {"type": "assistant", "message": {"id": "m1", "model": "qwen2.5-coder-0.5b",
            "content": [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {
                "file_path": "/app/a", "old_string": "x", "new_string": "x"}}]}}
    refused = {"type": "user", "message": {"content": [{"type": "tool_result", "is_error": True,
               "tool_use_id": "t1", "content": "<tool_use_error>No changes to make: "
               "old_string and new_string are exactly the same.</tool_use_error>"}]}}
    result = {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 2,
              "usage": {"input_tokens": 2708, "cache_read_input_tokens": 2670,
                        "output_tokens": 61}}
    session = _session(tmp_path)
    session.env.files.cli_stdout.write_text(
        "\n".join(json.dumps(x) for x in (call, refused, result)) + "\n")
    agent = ClaudeCodeAgent(base_url="http://127.0.0.1:1", model="qwen2.5-coder-0.5b",
                            prices={})
    outcome = agent._outcome(session, None, 1, timed_out=False)  # type: ignore[arg-type]  # noqa: SLF001 - the read-back alone
    assert outcome.cause == Cause.AGENT_STEP_LIMIT, outcome.error
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (2708 + 2670, 61)
    other = dict(result, subtype="error_during_execution")
    session.env.files.cli_stdout.write_text(
        "\n".join(json.dumps(x) for x in (call, refused, other)) + "\n")
    with pytest.raises(ProviderError):  # any other error result, no command run: as before
        agent._outcome(session, None, 1, timed_out=False)  # type: ignore[arg-type]  # noqa: SLF001 - the read-back alone


def test_a_run_its_own_turn_limit_ended_owes_no_stop_hook(tmp_path: Path) -> None:
    """Claude Code 2.1 ended by ``--max-turns`` calls no Stop hook (seen on the real binary
    in a served panel): a policy arm's run that ended so is no "stop with no hook event"
    tampering; one that finished normally without it still is."""
    from fire_exp.agents.coding_agents.dialect import CliTranscript
    from fire_exp.agents.coding_agents.evidence import reconcile

    lines: list[dict[str, object]] = []  # the host's hook activity: no Stop call
    bounded = CliTranscript(finished=True, step_limit=True)
    assert reconcile(bounded, lines, reports_denied_calls=True, expects_stop=True).reasons == ()
    finished = CliTranscript(finished=True)
    reasons = reconcile(finished, lines, reports_denied_calls=True, expects_stop=True).reasons
    assert any("no Stop hook call" in r for r in reasons), reasons
