"""One headless turn of a real agent CLI against a served model, outside any panel.

The check that the endpoint serves what each binary needs (``fire-exp serve-model
--check``, the served-model test, ``benchmarks/bench_served_model.py``): Codex 0.163 as
``codex exec --json`` with a custom Responses provider given by ``-c`` overrides, Claude
Code 2.1 as ``claude -p --output-format stream-json`` with ``ANTHROPIC_BASE_URL``; both
with the lean switches of :mod:`fire_exp.serve.lean`, a private home, stdin closed, in a
folder of their own. Panels run the CLIs through ``agent=codex|claude-code`` instead
(docs/agents.md); this module is the plain view of the wire.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.errors import PreflightError
from fire_exp.serve.lean import CODEX_INSTRUCTIONS, LEAN_ARGS
from fire_exp.serve.server import Endpoint

__all__ = ["CliTurn", "cli_binary", "read_turn", "run_turn"]

_WHEELS = {"codex": ("codex_cli_bin", "bin/codex", "openai-codex-cli-bin==0.163.0"),
           "claude-code": ("claude_agent_sdk", "_bundled/claude", "claude-agent-sdk")}


@dataclass
class CliTurn:
    """What one CLI turn did, read from its JSON event stream."""

    agent: str
    returncode: int = 0
    seconds: float = 0.0
    final_text: str = ""
    commands: list[str] = field(default_factory=list)  # the tool calls that ran a command
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = field(default_factory=list)  # failed turns, retries, API errors
    max_turns_reached: bool = False  # Claude Code's own --max-turns ended the turn

    @property
    def ok(self) -> bool:
        """The turn ended normally (or at the CLI's own turn limit) and nothing on the wire
        failed."""
        return (self.returncode == 0 or self.max_turns_reached) and not self.errors


def cli_binary(agent: str) -> Path:
    """The CLI's binary inside its PyPI wheel."""
    module, rel, requirement = _WHEELS[agent]
    spec = importlib.util.find_spec(module)
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders or not (Path(folders[0]) / rel).is_file():
        raise PreflightError(f"{agent}: the {module} wheel is not installed",
                             f"pip install '{requirement}'")
    return Path(folders[0]) / rel


def _codex_command(endpoint: Endpoint, prompt: str, workdir: Path, lean: bool,
                   home: Path) -> list[str]:
    provider = {"name": "local", "base_url": f"{endpoint.root}/v1", "wire_api": "responses",
                "env_key": "LOCAL_MODEL_KEY"}
    overrides = [f"model={json.dumps(endpoint.model)}", 'model_provider="local"']
    overrides += [f"model_providers.local.{k}={json.dumps(v)}" for k, v in provider.items()]
    if lean:  # agent.instructions, as the Codex dialect passes it
        (home / "instructions.md").write_text(CODEX_INSTRUCTIONS, encoding="utf-8")
        overrides.append(f"model_instructions_file={json.dumps(str(home / 'instructions.md'))}")
    return [str(cli_binary("codex")), "exec", "--json", "--skip-git-repo-check",
            "--cd", str(workdir), "--dangerously-bypass-hook-trust",
            "--sandbox", "danger-full-access",
            *[arg for o in overrides for arg in ("-c", o)],
            *(LEAN_ARGS["codex"] if lean else []), prompt]


def _claude_command(endpoint: Endpoint, prompt: str, lean: bool,
                    max_turns: int | None) -> list[str]:
    return [str(cli_binary("claude-code")), "-p", prompt, "--output-format", "stream-json",
            "--verbose", "--permission-mode", "bypassPermissions", "--model", endpoint.model,
            *(LEAN_ARGS["claude-code"] if lean else []),
            *(["--max-turns", str(max_turns)] if max_turns else [])]


def run_turn(agent: str, endpoint: Endpoint, prompt: str, folder: Path,
             timeout: float = 900, lean: bool = True, max_turns: int | None = None) -> CliTurn:
    """Run one turn of ``agent`` (``codex`` | ``claude-code``) in ``folder/work`` with its
    home in ``folder/home``, with the lean switches unless ``lean`` is false; what it did.
    ``max_turns`` bounds Claude Code's model calls with its own ``--max-turns`` (a small
    model may call a tool for ever); Codex has no such switch."""
    work, home = folder / "work", folder / "home"
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8"}
    if agent == "codex":
        command = _codex_command(endpoint, prompt, work, lean, home)
        env |= {"CODEX_HOME": str(home), "LOCAL_MODEL_KEY": "local"}
    else:
        command = _claude_command(endpoint, prompt, lean, max_turns)
        env |= {"ANTHROPIC_BASE_URL": endpoint.root, "ANTHROPIC_API_KEY": "local",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}  # IS_SANDBOX: bypass as root
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=work, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return CliTurn(agent, returncode=-1, seconds=time.monotonic() - start,
                       errors=[f"no answer within {timeout:.0f} s"])
    turn = read_turn(agent, proc.stdout.splitlines())
    turn.returncode, turn.seconds = proc.returncode, time.monotonic() - start
    if proc.returncode != 0 and not turn.errors and not turn.max_turns_reached:
        turn.errors.append(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return turn


def read_turn(agent: str, lines: list[str]) -> CliTurn:
    """What a CLI's JSON event stream (``codex exec --json``, Claude Code's
    ``stream-json``) says the turn did: its commands, tokens and wire errors."""
    turn = CliTurn(agent)
    events = [_json(line) for line in lines]
    (_read_codex if agent == "codex" else _read_claude)(turn, [e for e in events if e])
    return turn


def _json(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _read_codex(turn: CliTurn, events: list[dict[str, Any]]) -> None:
    for event in events:
        kind, item = event.get("type"), event.get("item") or {}
        if kind == "item.completed" and item.get("type") == "command_execution":
            turn.commands.append(str(item.get("command", "")))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            turn.final_text = str(item.get("text", ""))
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            turn.input_tokens += int(usage.get("input_tokens", 0))
            turn.output_tokens += int(usage.get("output_tokens", 0))
        elif kind in ("turn.failed", "error"):  # "error": a retry ("Reconnecting...") too
            turn.errors.append(json.dumps(event)[:300])


def _read_claude(turn: CliTurn, events: list[dict[str, Any]]) -> None:
    for event in events:
        kind = event.get("type")
        if kind == "assistant":
            for block in (event.get("message") or {}).get("content") or []:
                if block.get("type") == "tool_use":
                    turn.commands.append(json.dumps(block.get("input")))
        elif kind == "system" and event.get("subtype") == "api_retry":
            turn.errors.append(json.dumps(event)[:300])
        elif kind == "result":
            usage = event.get("usage") or {}
            turn.final_text = str(event.get("result", ""))
            turn.input_tokens = int(usage.get("input_tokens", 0)) + \
                int(usage.get("cache_read_input_tokens", 0))
            turn.output_tokens = int(usage.get("output_tokens", 0))
            if event.get("subtype") == "error_max_turns":
                turn.max_turns_reached = True  # the CLI's own bound, not a failure on the wire
            elif event.get("is_error"):
                turn.errors.append(json.dumps(event)[:300])
