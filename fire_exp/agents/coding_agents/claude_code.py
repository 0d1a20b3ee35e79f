"""Claude Code as a dialect: ``claude -p --output-format stream-json``, hooks in ``--settings``.

Output (``stream-json --verbose``): one JSON object per line; ``assistant`` messages carry
``tool_use`` blocks (``Bash`` with ``input.command``; the file-edit tools
``Edit``/``MultiEdit``/``Write``/``NotebookEdit`` with ``file_path`` or ``notebook_path``),
``user`` messages the matching ``tool_result``; the final ``result`` line carries
``total_cost_usd`` and ``usage``; the ``system``/``init`` line names the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fire_exp.agents.coding_agents.agent import CodingCliAgent
from fire_exp.agents.coding_agents.dialect import (
    CliCommand,
    CliEndpoint,
    CliTranscript,
    as_dict,
    content_text,
    json_objects,
)
from fire_exp.policies.hook_settings import MATCHERS
from fire_exp.policies.tool_payloads import EDIT_TOOLS, edit_paths

SETTINGS = "claude-settings.json"


class ClaudeCode:
    """The Claude Code dialect (checked against Claude Code 2.0)."""

    target = "claude-code"
    hook_protocol = "claude-code"
    tool_matcher = MATCHERS["claude-code"]
    checked_version = "2.0"
    default_binary = "claude"
    install_hint = "pip install 'fire-exp[claude-code]'"
    reports_denied_calls = True
    default_key_env = "ANTHROPIC_API_KEY"

    def files(self, agent_dir: str, settings: Mapping[str, Any] | None) -> dict[str, bytes]:
        if settings is None:
            return {}
        return {f"{agent_dir}/{SETTINGS}": json.dumps(settings, indent=1).encode()}

    def settings_file(self) -> str:
        return SETTINGS

    def endpoint(self, agent_dir: str, base_url: str | None, model: str | None,
                 api_key_env: str) -> CliEndpoint:
        """``ANTHROPIC_BASE_URL`` for ``base_url``; the key always as ``ANTHROPIC_API_KEY``
        (the only variable Claude Code reads it from)."""
        env = {"ANTHROPIC_BASE_URL": base_url} if base_url else {}
        key_as = None if api_key_env == self.default_key_env else self.default_key_env
        return CliEndpoint(env=env, key_as=key_as)

    def env(self, agent_dir: str) -> dict[str, str]:
        return {}

    def argv(self, binary: str, instruction: str, *, workdir: str, agent_dir: str,
             model: str | None, args: Sequence[str], hooked: bool) -> list[str]:
        argv = [binary, "-p", instruction, "--output-format", "stream-json", "--verbose"]
        if hooked:
            argv += ["--settings", f"{agent_dir}/{SETTINGS}"]
        if model:
            argv += ["--model", model]
        return argv + list(args)

    def parse(self, lines: Iterable[str]) -> CliTranscript:
        return parse_claude_stream(lines)

    def default_model(self) -> str | None:
        return None


class ClaudeCodeAgent(CodingCliAgent):
    """Claude Code, headless (``claude -p``), with the arm's policies as hooks.

    Args: as :class:`~fire_exp.agents.coding_agents.agent.CodingCliAgent`; ``binary`` is the
    ``claude`` executable, ``args`` e.g. ``["--permission-mode", "bypassPermissions"]``.
    """

    name = "claude-code"
    dialect = ClaudeCode()


def parse_claude_stream(lines: Iterable[str]) -> CliTranscript:
    """Parse Claude Code's ``stream-json`` output."""
    out = CliTranscript()
    pending: dict[str, tuple[str, tuple[str, ...]]] = {}  # tool_use id -> command, paths
    order: list[str] = []
    results: dict[str, tuple[str, bool]] = {}
    for obj in json_objects(lines):
        kind = obj.get("type")
        message = as_dict(obj.get("message"))
        if kind == "system" and obj.get("subtype") == "init":
            out.model = obj.get("model") or out.model
            session = obj.get("session_id")
            out.session_id = session if isinstance(session, str) and session else None
        elif kind == "assistant":
            out.model = message.get("model") or out.model
            for block in message.get("content") or []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name, tool_input = block.get("name"), as_dict(block.get("input"))
                if name == "Bash":
                    pending[str(block.get("id"))] = (str(tool_input.get("command")), ())
                elif name in EDIT_TOOLS:
                    pending[str(block.get("id"))] = (str(name), edit_paths(name, tool_input))
                else:
                    continue
                order.append(str(block.get("id")))
        elif kind == "user":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = (content_text(block.get("content")),
                                                              bool(block.get("is_error")))
        elif kind == "result":
            out.finished = True
            usage = as_dict(obj.get("usage"))
            out.input_tokens = sum(int(usage.get(k) or 0) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            out.cached_input_tokens = int(usage.get("cache_read_input_tokens") or 0)
            out.output_tokens = int(usage.get("output_tokens") or 0)
            if obj.get("total_cost_usd") is not None:
                out.cost_usd = float(obj["total_cost_usd"])
            if obj.get("is_error"):
                out.errors.append(str(obj.get("result") or obj.get("subtype") or "error"))
    for tool_id in order:
        output, is_error = results.get(tool_id, ("", False))
        command, paths = pending[tool_id]
        # Only a successful result shows the tool ran: a denied call's result is an error.
        ran = True if tool_id in results and not is_error else None
        out.commands.append(CliCommand(command, output, 1 if is_error else 0, is_error, paths,
                                       tool_use_id=tool_id, ran=ran))
    return out


