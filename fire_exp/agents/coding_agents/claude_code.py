"""Claude Code as a dialect: ``claude -p --output-format stream-json``, hooks in ``--settings``.

Output (``stream-json --verbose``, Claude Code 2.1): one JSON object per line. The
``system``/``init`` line names the model, the tools and the version; each content block of
a model message is an ``assistant`` line of its own (one message id): ``tool_use`` blocks
are ``Bash`` with ``input.command`` or the file-edit tools ``Edit``/``MultiEdit``/``Write``/
``NotebookEdit`` with ``file_path`` or ``notebook_path``; ``user`` lines carry the matching
``tool_result`` (a failed command's is an error reading ``Exit code N`` and its output; a
call a hook denied, ``PreToolUse:Bash hook error: REASON``); ``system``/``api_retry``
lines mark a retried request; the final ``result`` line carries ``usage``,
``permission_denials`` and ``total_cost_usd`` — the last computed at the vendor's list
price for the model's name, whatever endpoint served it (see ``CodingCliAgent.usage``).
A run its own ``--max-turns`` (in ``agent.args``) ended exits 1 with a ``result`` of
subtype ``error_max_turns``, its usage complete: the attempt's ``agent_step_limit``, a fair
end (an ``assistant`` line's usage has no output tokens yet: only ``result`` counts them).

Endpoint (:meth:`ClaudeCode.endpoint`): ``ANTHROPIC_BASE_URL``, the key as
``ANTHROPIC_API_KEY``, and the variables that keep the CLI to its model requests (no
telemetry, no update check). As root, ``--permission-mode bypassPermissions`` is refused
("cannot be used with root/sudo privileges") unless ``IS_SANDBOX=1`` says the CLI runs in a
sandbox, which a task's box is (:meth:`ClaudeCode.env`). Its configuration folder
(``CLAUDE_CONFIG_DIR``) is the attempt's own, so a user's settings and hooks stay out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fire_exp.agents.coding_agents.agent import CodingCliAgent
from fire_exp.agents.coding_agents.answers import ModelFault
from fire_exp.agents.coding_agents.dialect import (
    CliCommand,
    CliEndpoint,
    CliTranscript,
    anthropic_base,
    as_dict,
    content_text,
    json_objects,
)
from fire_exp.policies.hook_settings import MATCHERS
from fire_exp.policies.tool_payloads import EDIT_TOOLS, command_exit, edit_paths

SETTINGS = "claude-settings.json"
# How Claude Code 2.1 answers a call it refuses before any hook runs, and the refusals of
# a malformed call (arguments that fail the tool's schema, a tool it was not offered).
TOOL_USE_ERROR = "<tool_use_error>"
REFUSED = ("InputValidationError", "Error: No such tool available", "No such tool available")
CONFIG_DIR = "claude-config"  # CLAUDE_CONFIG_DIR, in the box's agent folder
# Claude Code 2.1.332 with these sends only its model requests (POST /v1/messages).
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_AUTOUPDATER": "1"}
# The variables naming the models the CLI picks by itself (Claude Code 2.1 settings).
MODEL_ALIASES = ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                 "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                 "CLAUDE_CODE_SUBAGENT_MODEL")


class ClaudeCode:
    """The Claude Code dialect (checked against Claude Code 2.1.332, the version the
    ``claude-agent-sdk`` wheel of the ``claude-code`` extra bundles)."""

    target = "claude-code"
    hook_protocol = "claude-code"
    tool_matcher = MATCHERS["claude-code"]
    checked_version = "2.1"
    default_binary = "claude"
    install_hint = "pip install 'fire-exp[claude-code]'"
    reports_cost = True
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
        """``ANTHROPIC_BASE_URL`` for ``base_url`` (a trailing ``/v1`` dropped: the CLI
        appends ``/v1/messages``); the key always as ``ANTHROPIC_API_KEY`` (the only
        variable Claude Code reads it from); no traffic but the model requests. With a
        ``model`` at another endpoint, every model alias the CLI resolves on its own (the
        small model of its side requests, a subagent's) is that model, which the endpoint
        serves. The model itself is ``--model`` (:meth:`argv`)."""
        env = dict(QUIET)
        if base_url:
            env["ANTHROPIC_BASE_URL"] = anthropic_base(base_url)
            if model:
                env |= dict.fromkeys(MODEL_ALIASES, model)
        key_as = None if api_key_env == self.default_key_env else self.default_key_env
        return CliEndpoint(env=env, key_as=key_as)

    def env(self, agent_dir: str, *, root: bool = False) -> dict[str, str]:
        """A private configuration folder (the session files the CLI writes land there, and
        no user's own settings or hooks are read); ``IS_SANDBOX`` as root."""
        env = {"CLAUDE_CONFIG_DIR": f"{agent_dir}/{CONFIG_DIR}"}
        return env | ({"IS_SANDBOX": "1"} if root else {})

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
    names: dict[str, str] = {}  # tool_use id -> the tool the model named
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
                names[str(block.get("id"))] = str(name)
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
            text = obj.get("result")
            out.final_text = text if isinstance(text, str) and not obj.get("is_error") else None
            if obj.get("total_cost_usd") is not None:
                out.cost_usd = float(obj["total_cost_usd"])
            if obj.get("subtype") == "error_max_turns":  # its own --max-turns: exit 1
                out.step_limit = True
            elif obj.get("is_error"):
                out.errors.append(str(obj.get("result") or obj.get("subtype") or "error"))
    out.faults = [f for f in (_fault(names[i], results.get(i)) for i in names) if f]
    for tool_id in order:
        if _fault(names[tool_id], results.get(tool_id)) is None:  # refused: it never ran
            command, paths = pending[tool_id]
            out.commands.append(_command(tool_id, command, paths, results.get(tool_id)))
    return out


def _fault(name: str, result: tuple[str, bool] | None) -> ModelFault | None:
    """A call Claude Code refused before running it (``<tool_use_error>``, which no hook
    sees): malformed (:data:`REFUSED`), or an edit that could not apply; else None."""
    output, is_error = result or ("", False)
    said = output.strip().removeprefix(TOOL_USE_ERROR).removesuffix("</tool_use_error>")
    if not is_error or not output.strip().startswith(TOOL_USE_ERROR):
        return None
    if said.startswith(REFUSED):
        return ModelFault("malformed", name, said)
    return ModelFault("unapplied", name, said) if name in EDIT_TOOLS else None


def _command(tool_id: str, command: str, paths: tuple[str, ...],
             result: tuple[str, bool] | None) -> CliCommand:
    """One call with its result: a success, or an error with the command's exit code.

    Only a result a run gives shows the tool ran: a success, or a command's ``Exit code
    N``; a denied call's result is an error too (``PreToolUse:Bash hook error: ...``).
    """
    output, is_error = result or ("", False)
    if not is_error:
        return CliCommand(command, output, 0, False, paths, tool_use_id=tool_id,
                          ran=True if result else None)
    failed = None if paths else command_exit(output)
    if failed is None:
        return CliCommand(command, output, 1, True, paths, tool_use_id=tool_id)
    return CliCommand(command, failed[0], failed[1], True, paths, tool_use_id=tool_id,
                      ran=True)


