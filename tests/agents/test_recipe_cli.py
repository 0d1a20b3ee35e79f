"""The recipe "add a coding-agent CLI" (docs/architecture.md), followed to the letter.

:class:`ToyCli` is a third dialect, defined here and known to no other file: its command
line, its hook settings file, its output parser and its cost. ``tests/agents/toy_cli.py``
plays the CLI. The arm's policies reach it through the hook transport of the box, and its
run is read back into the record like Claude Code's or Codex's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import CliCommand, CliEndpoint, CliTranscript, CodingCliAgent
from fire_exp.agents.coding_agents.dialect import json_objects
from tests.agents.agent_support import RunFn

TOY = Path(__file__).with_name("toy_cli.py")
SETTINGS = "toy-hooks.json"


class ToyCli:
    """The toy-cli dialect (checked against toy-cli 1.0)."""

    target = "toy-cli"
    hook_protocol = "claude-code"  # it answers hooks as Claude Code does
    tool_matcher = "Bash"
    checked_version = "1.0"
    default_binary = "toy-cli"
    install_hint = "it ships with fire-exp's tests"
    reports_cost = False  # priced from the agent's prices
    reports_denied_calls = True  # its output has a {"denied": CMD} line
    default_key_env = "TOY_API_KEY"

    def files(self, agent_dir: str, settings: Mapping[str, Any] | None) -> dict[str, bytes]:
        if settings is None:
            return {}
        return {f"{agent_dir}/{SETTINGS}": json.dumps(settings).encode()}

    def settings_file(self) -> str:
        return SETTINGS

    def env(self, agent_dir: str, *, root: bool = False) -> dict[str, str]:
        return {}

    def endpoint(self, agent_dir: str, base_url: str | None, model: str | None,
                 api_key_env: str) -> CliEndpoint:
        return CliEndpoint(env={"TOY_BASE_URL": base_url} if base_url else {})

    def argv(self, binary: str, instruction: str, *, workdir: str, agent_dir: str,
             model: str | None, args: Sequence[str], hooked: bool) -> list[str]:
        hooks = ["--hooks", f"{agent_dir}/{SETTINGS}"] if hooked else []
        return [binary, "--prompt", instruction, *hooks, *args]

    def parse(self, lines: Iterable[str]) -> CliTranscript:
        out = CliTranscript()
        for obj in json_objects(lines):
            if "denied" in obj:
                out.commands.append(CliCommand(str(obj["denied"])))
            elif "ran" in obj:
                out.commands.append(CliCommand(str(obj["ran"]), str(obj.get("output", "")),
                                               int(obj.get("exit", 0))))
            elif obj.get("done"):
                out.finished, out.model = True, str(obj.get("model"))
                out.input_tokens, out.output_tokens = obj["tokens"]
        return out

    def default_model(self) -> str | None:
        return None


class ToyCliAgent(CodingCliAgent):
    name = "toy-cli"
    dialect = ToyCli()


def script(monkeypatch: pytest.MonkeyPatch, commands: list[str]) -> None:
    monkeypatch.setenv("TOY_CLI_SCRIPT", json.dumps(commands))


def test_a_dialect_from_the_recipe_is_denied_by_the_arm_and_read_back(
        monkeypatch: pytest.MonkeyPatch, run_task: RunFn, tmp_path: Path) -> None:
    solve = (Path(__file__).resolve().parents[2] / "fire_exp/suites/fire-mini/"
             "recover-wal-orders/solution/solve.sh").read_text()
    script(monkeypatch, ["sqlite3 evidence/orders.db .dump",
                         solve.replace("/tmp/evidence-copy", "../evidence-copy")])
    agent = ToyCliAgent(binary=str(TOY), env_passthrough=["TOY_CLI_SCRIPT"],
                        prices={"toy-1": {"input": 1.0, "output": 2.0}})
    record = run_task("recover-wal-orders", "real", agent)
    assert record.passed and record.cause is None and record.error is None
    assert record.valid, record.invalid_reason  # no ids: commands matched by their text
    # UserPromptSubmit, 2 x PreToolUse, 1 x PostToolUse (the denied one never ran), Stop
    assert record.events == 5 and record.decisions == 1 and record.funnel.fired
    steps = [json.loads(x) for x in (tmp_path / "attempt/logs/agent/commands.jsonl")
             .read_text().splitlines()]
    assert [(s["kind"], s["denied"]) for s in steps] == \
        [("command", True), ("command", False), ("stop", False)]
    assert record.usage.route == "toy-cli" and record.usage.model == "toy-1"
    assert record.usage.cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    settings = json.loads((tmp_path / "attempt/hooks" / SETTINGS).read_text())
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "Bash"


def test_the_baseline_of_a_new_dialect_gets_no_hooks(monkeypatch: pytest.MonkeyPatch,
                                                     run_task: RunFn, tmp_path: Path) -> None:
    script(monkeypatch, ["true"])
    record = run_task("csv-column-stats", "baseline",
                      ToyCliAgent(binary=str(TOY), env_passthrough=["TOY_CLI_SCRIPT"]))
    assert record.cause is None and record.events == 0 and record.n_commands == 1
    assert not (tmp_path / "attempt/hooks" / SETTINGS).exists()
