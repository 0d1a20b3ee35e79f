"""Read a coding CLI's machine-readable output back into an attempt.

- Claude Code ``claude -p --output-format stream-json --verbose``: one JSON object per line;
  ``assistant`` messages carry ``tool_use`` blocks (``Bash`` with ``input.command``; the
  file-edit tools ``Edit``/``MultiEdit``/``Write``/``NotebookEdit`` with ``file_path`` or
  ``notebook_path``), ``user`` messages the matching ``tool_result``; the final ``result``
  line carries ``total_cost_usd`` and ``usage``; the ``system``/``init`` line names the model.
- Codex ``codex exec --json``: ``item.completed`` events whose item is a
  ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``) or a
  ``file_change`` (``changes: [{path, kind}]``); ``turn.completed`` events carry ``usage``
  (``input_tokens``, ``cached_input_tokens``, ``output_tokens``); ``thread.started`` /
  ``session.created`` / ``turn.started`` may name the model; ``turn.failed`` and ``error``
  report failures.

Lines that are not JSON (a CLI's banner, a warning) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fire_exp.policies.tool_payloads import EDIT_TOOLS, edit_paths


@dataclass(frozen=True)
class CliCommand:
    """One shell command the CLI ran (or tried to run), or a file edit (``paths`` set;
    ``command`` is then the tool's name)."""

    command: str
    output: str = ""
    exit_code: int | None = None
    is_error: bool = False
    paths: tuple[str, ...] = ()


@dataclass
class CliTranscript:
    """What a CLI run did, as far as its output tells."""

    commands: list[CliCommand] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, served from the provider's cache
    cost_usd: float | None = None  # None: the CLI does not report cost
    model: str | None = None
    errors: list[str] = field(default_factory=list)
    finished: bool = False  # a final result/turn event was seen


def _objects(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def parse_claude_stream(lines: Iterable[str]) -> CliTranscript:
    """Parse Claude Code's ``stream-json`` output."""
    out = CliTranscript()
    pending: dict[str, tuple[str, tuple[str, ...]]] = {}  # tool_use id -> command, paths
    order: list[str] = []
    results: dict[str, tuple[str, bool]] = {}
    for obj in _objects(lines):
        kind = obj.get("type")
        message = _dict(obj.get("message"))
        if kind == "system" and obj.get("subtype") == "init":
            out.model = obj.get("model") or out.model
        elif kind == "assistant":
            out.model = message.get("model") or out.model
            for block in message.get("content") or []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name, tool_input = block.get("name"), _dict(block.get("input"))
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
                    results[str(block.get("tool_use_id"))] = (_text(block.get("content")),
                                                              bool(block.get("is_error")))
        elif kind == "result":
            out.finished = True
            usage = _dict(obj.get("usage"))
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
        out.commands.append(CliCommand(command, output, 1 if is_error else 0, is_error, paths))
    return out


def parse_codex_json(lines: Iterable[str]) -> CliTranscript:
    """Parse ``codex exec --json`` output."""
    out = CliTranscript()
    for obj in _objects(lines):
        kind = obj.get("type")
        item = _dict(obj.get("item"))
        out.model = _codex_model(obj) or out.model
        if kind == "item.completed" and item.get("type") == "command_execution":
            code = item.get("exit_code")
            out.commands.append(CliCommand(
                str(item.get("command", "")), str(item.get("aggregated_output") or ""),
                code if isinstance(code, int) else None,
                item.get("status") not in (None, "completed")))
        elif kind == "item.completed" and item.get("type") == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            paths = tuple(str(c["path"]) for c in changes if c.get("path"))
            failed = item.get("status") not in (None, "completed")
            out.commands.append(CliCommand("apply_patch", "", 1 if failed else 0, failed, paths))
        elif kind == "turn.completed":
            out.finished = True
            usage = _dict(obj.get("usage"))
            out.input_tokens += int(usage.get("input_tokens") or 0)
            out.cached_input_tokens += int(usage.get("cached_input_tokens") or 0)
            out.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            error = _dict(obj.get("error")) or obj
            out.errors.append(str(error.get("message") or kind))
    return out


def _codex_model(obj: dict[str, Any]) -> str | None:
    """The model a Codex event names (``model`` at the top, or in its ``session``/``turn``)."""
    for holder in (obj, _dict(obj.get("session")), _dict(obj.get("turn")),
                   _dict(obj.get("thread"))):
        model = holder.get("model")
        if isinstance(model, str) and model:
            return model
    return None
