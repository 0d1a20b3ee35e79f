"""The Codex dialect against codex-cli 0.163.0's own output (fixtures captured from the
real binary, tests/fixtures/protocols/README.md): the endpoint it writes, ``--json`` read
back, warnings that are not failures, and the rollout's denied calls merged in."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from fire_exp.agents.coding_agents import Codex, parse_codex_json
from fire_exp.agents.coding_agents.codex_rollout import merge_rollout, rollout_calls
from fire_exp.agents.coding_agents.packaged import wheel_binary
from fire_exp.environments.docker import DockerEnvironment
from tests.agents.protocol_fixtures import lines
from tests.ci import missing

DENY = "codex-0.163.0__exec-json-deny-stop.jsonl"
ROLLOUT = "codex-0.163.0__rollout-deny-stop.jsonl"


def test_json_commands_are_read_bare_and_a_denied_one_comes_from_the_rollout() -> None:
    transcript = parse_codex_json(lines(DENY))
    assert [c.command for c in transcript.commands] == ["echo ok", "echo tests"]
    assert transcript.finished and transcript.errors == []  # the trust warnings are items
    assert (transcript.input_tokens, transcript.cached_input_tokens) == (5010, 1000)
    merged = merge_rollout(transcript, rollout_calls(lines(ROLLOUT)))
    assert [(c.command, c.tool_use_id, c.ran) for c in merged.commands] == [
        ("rm -rf /tmp/nothing-here", "call_d", None), ("echo ok", "call_b", True),
        ("echo tests", "call_c", True)]


def test_a_rollout_that_does_not_line_up_adds_nothing() -> None:
    transcript = parse_codex_json(lines(DENY))
    calls = rollout_calls(lines(ROLLOUT))[:-1]  # one call that ran is missing
    assert merge_rollout(transcript, calls) is transcript


def test_a_command_still_running_is_a_call_where_it_started_and_its_exit_replaces_it() -> None:
    """codex-cli 0.163.0's ``--json`` for a command still running when ``exec_command``
    yields: ``item.started`` alone, then ``item.completed`` with the same id if it exits
    (the real binary's run in test_real_codex.py)."""
    def started(n: int, command: str) -> str:
        return json.dumps({"type": "item.started", "item": {
            "id": f"item_{n}", "type": "command_execution", "command": f"/bin/bash -lc '{command}'",
            "aggregated_output": "", "exit_code": None, "status": "in_progress"}})
    out = parse_codex_json([
        started(2, "sleep 12; echo slept"), started(3, "python3 -m http.server"),
        json.dumps({"type": "item.completed", "item": {
            "id": "item_2", "type": "command_execution",
            "command": "/bin/bash -lc 'sleep 12; echo slept'", "aggregated_output": "slept\n",
            "exit_code": 0, "status": "completed"}})])
    assert [(c.command, c.exit_code, c.output, c.ran) for c in out.commands] == [
        ("sleep 12; echo slept", 0, "slept\n", True), ("python3 -m http.server", None, "", True)]
    # The rollout shows the running one by its output so far, and gives both their ids.
    rollout = [json.dumps({"type": "response_item", "payload": {
        "type": "function_call", "name": "exec_command", "call_id": cid,
        "arguments": json.dumps({"cmd": cmd})}}) for cid, cmd in
        (("call_a", "sleep 12; echo slept"), ("call_b", "python3 -m http.server"))]
    rollout += [json.dumps({"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "call_b",
        "output": "Chunk ID: 1\nProcess running with session ID 7681\nOutput:\n"}}),
        json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": {
            "type": "CommandExecution", "id": "call_a"}}})]
    merged = merge_rollout(out, rollout_calls(rollout))
    assert [c.tool_use_id for c in merged.commands] == ["call_a", "call_b"]


def test_a_reconnect_the_turn_recovered_from_is_a_warning_not_an_error() -> None:
    recovered = parse_codex_json([
        '{"type":"turn.started"}',
        '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}',
        '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}'])
    assert recovered.finished and recovered.errors == []
    failed = parse_codex_json([
        '{"type":"error","message":"Reconnecting... 5/5"}',
        '{"type":"turn.failed","error":{"message":"stream disconnected"}}'])
    assert failed.errors == ["stream disconnected"]
    cut = parse_codex_json(['{"type":"error","message":"Reconnecting... 2/5"}'])
    assert not cut.finished and cut.errors == ["Reconnecting... 2/5"]


def test_the_endpoint_is_a_custom_responses_provider_with_the_templates_metadata() -> None:
    binary = wheel_binary("codex")
    if binary is None:
        missing("the Codex CLI wheel (pip install 'fire-exp[codex]')")
    endpoint = Codex(host_binary=binary).endpoint("/a", "http://10.0.0.2:8799/v1",
                                                  "my-local-model", "LOCAL_KEY")
    config = tomllib.loads(endpoint.files["/a/codex-home/config.toml"].decode())
    assert config["model_provider"] == "fire" and config["features"]["hooks"] is True
    assert config["model_providers"]["fire"] == {
        "name": "fire", "base_url": "http://10.0.0.2:8799/v1", "wire_api": "responses",
        "env_key": "LOCAL_KEY"}
    assert config["model_catalog_json"] == "/a/codex-home/fire-models.json"
    entry = json.loads(endpoint.files[config["model_catalog_json"]])["models"][0]
    assert entry["slug"] == "my-local-model" and entry["apply_patch_tool_type"] == "freeform"
    known = Codex(host_binary=binary).endpoint("/a", "http://h:1/v1", "gpt-5.5", "K")
    assert set(known.files) == {"/a/codex-home/config.toml"}  # bundled: no catalogue


def test_a_local_model_without_a_codex_binary_is_refused_by_name() -> None:
    from fire_exp.environments.failure import EnvironmentFailure

    with pytest.raises(EnvironmentFailure, match="no Codex binary on this machine"):
        Codex(host_binary=None).endpoint("/a", "http://h:1/v1", "local", "K")


def test_a_local_model_codex_cannot_describe_is_refused_before_the_panel(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fire_exp.agents.coding_agents import CodexAgent, packaged
    from fire_exp.errors import PreflightError

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(packaged, "WHEELS", {})  # no wheel, no codex on PATH
    agent = CodexAgent(base_url="http://127.0.0.1:1/v1", model="local-coder")
    with pytest.raises(PreflightError, match="no Codex binary on this machine to read model "
                                             "'local-coder'"):
        agent.preflight(DockerEnvironment.capabilities)


def test_instructions_replace_codexs_own_through_its_model_instructions_file() -> None:
    from fire_exp.errors import InputError

    dialect = Codex(instructions="Run shell commands, then stop.")
    files = dialect.files("/a", None)
    assert files["/a/codex-home/instructions.md"] == b"Run shell commands, then stop."
    argv = dialect.argv("codex", "Do it.", workdir="/app", agent_dir="/a", model="m",
                        args=["--x"], hooked=False)
    assert argv[-4:] == ["-c", 'model_instructions_file="/a/codex-home/instructions.md"',
                         "--x", "Do it."]
    stock = Codex()  # Codex's own instructions: no file, no setting
    assert set(stock.files("/a", None)) == {"/a/codex-home/config.toml"}
    assert "-c" not in stock.argv("codex", "Do it.", workdir="/app", agent_dir="/a",
                                  model="m", args=[], hooked=False)
    from fire_exp.config import ComponentConfig
    from fire_exp.runner.build import agent_factory

    with pytest.raises(InputError, match="^configs/agent/codex.yaml: instructions: empty"):
        agent_factory(ComponentConfig("codex", {"instructions": "  "}))
