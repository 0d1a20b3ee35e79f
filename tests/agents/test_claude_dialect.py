"""The Claude Code dialect (Claude Code 2.1): its endpoint, root, cost and failed commands.

The fake CLI (tests/agents/fake_cli.py, Claude Code 2.1.332's shapes) runs the attempts;
tests/agents/test_real_claude*.py run the real binary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.agents.coding_agents.claude_code import ClaudeCode
from fire_exp.agents.coding_agents.dialect import CliTranscript
from tests.agents.agent_support import RunFn

FAKE = Path(__file__).with_name("fake_cli.py")
PASS = ["FAKE_CLI_SCRIPT"]
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_AUTOUPDATER": "1"}


def test_the_endpoint_is_the_base_url_without_v1_and_every_model_alias_is_the_model() -> None:
    point = ClaudeCode().endpoint("/agent", "http://10.0.0.5:8080/v1", "qwen-coder", "MY_KEY")
    assert point.env == QUIET | {
        "ANTHROPIC_BASE_URL": "http://10.0.0.5:8080",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "qwen-coder", "ANTHROPIC_DEFAULT_SONNET_MODEL":
        "qwen-coder", "ANTHROPIC_DEFAULT_OPUS_MODEL": "qwen-coder",
        "ANTHROPIC_SMALL_FAST_MODEL": "qwen-coder", "CLAUDE_CODE_SUBAGENT_MODEL": "qwen-coder"}
    assert point.key_as == "ANTHROPIC_API_KEY"  # the key of MY_KEY, as Claude reads it
    assert (point.files, point.args) == ({}, ())
    argv = ClaudeCode().argv("claude", "do it", workdir="/app", agent_dir="/agent",
                             model="qwen-coder", args=[], hooked=False)
    assert argv[argv.index("--model") + 1] == "qwen-coder"


def test_the_vendor_endpoint_keeps_the_cli_quiet_and_names_no_model() -> None:
    point = ClaudeCode().endpoint("/agent", None, None, "ANTHROPIC_API_KEY")
    assert point.env == QUIET and point.key_as is None


def test_as_root_the_cli_is_told_it_runs_in_a_sandbox() -> None:
    dialect = ClaudeCode()
    assert dialect.env("/agent", root=True) == {"CLAUDE_CONFIG_DIR": "/agent/claude-config",
                                                "IS_SANDBOX": "1"}
    assert "IS_SANDBOX" not in dialect.env("/agent")
    assert dialect.checked_version == "2.1"


@pytest.mark.parametrize("base_url,prices,cost", [
    (None, {}, 0.0123),  # the vendor's endpoint: the CLI's own figure
    ("http://127.0.0.1:9/v1", {}, 0.0),  # a local model, unpriced: 0, never the list price
    ("http://127.0.0.1:9/v1", {"local-1": {"input": 1.0, "output": 2.0}},
     (1500 * 1.0 + 250 * 2.0) / 1e6)])
def test_a_cost_the_cli_computes_is_never_reported_for_another_endpoint(
        base_url: str | None, prices: dict[str, dict[str, float]], cost: float) -> None:
    agent = ClaudeCodeAgent(binary=str(FAKE), model="local-1", base_url=base_url,
                            prices=prices)
    transcript = CliTranscript(input_tokens=1500, output_tokens=250, cost_usd=0.0123,
                               model="local-1")
    usage = agent.usage(transcript)
    assert usage.cost_usd == pytest.approx(cost) and usage.model == "local-1"


def test_a_passed_base_url_variable_also_keeps_the_cli_s_cost_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    agent = ClaudeCodeAgent(binary=str(FAKE), env_passthrough=["ANTHROPIC_BASE_URL"])
    assert agent.usage(CliTranscript(cost_usd=0.5, model="m")).cost_usd == 0.0


def test_a_failed_command_reaches_the_policies_and_the_command_log_with_its_exit_code(
        monkeypatch: pytest.MonkeyPatch, run_task: RunFn, tmp_path: Path) -> None:
    """The copy fails (PostToolUseFailure, exit 1): no backup, so the dump stays denied."""
    monkeypatch.setenv("FAKE_CLI_SCRIPT", json.dumps({"commands": [
        "cp -a evidence/missing /tmp/evidence-copy", "sqlite3 /tmp/evidence-copy/orders.db "
        ".dump"], "retry": True}))
    # As root (this machine's tests may run so) the fake refuses this without IS_SANDBOX.
    agent = ClaudeCodeAgent(binary=str(FAKE), env_passthrough=PASS,
                            args=["--permission-mode", "bypassPermissions"])
    record = run_task("recover-wal-orders", "real", agent)
    assert record.valid, record.invalid_reason  # the failure is the copy's post event
    logs = tmp_path / "attempt/logs/agent"
    steps = [json.loads(x) for x in (logs / "commands.jsonl").read_text().splitlines()]
    assert [(s["exit_code"], s["denied"]) for s in steps[:2]] == [(1, False), (None, True)]
    assert "No such file or directory" in steps[0]["output"]
    summary = json.loads((logs / "hook-summary.json").read_text())
    assert summary["by_event"]["PostToolUseFailure"] == 1
    assert "PostToolUse" not in summary["by_event"]
