"""Read a coding CLI's machine-readable output back into an attempt.

- Claude Code ``claude -p --output-format stream-json --verbose``: one JSON object per line;
  ``assistant`` messages carry ``tool_use`` blocks (``Bash`` with ``input.command``),
  ``user`` messages the matching ``tool_result``; the final ``result`` line carries
  ``total_cost_usd`` and ``usage``; the ``system``/``init`` line names the model.
- Codex ``codex exec --json``: ``item.completed`` events whose item is a
  ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``);
  ``turn.completed`` events carry ``usage``; ``turn.failed`` and ``error`` report failures.

Lines that are not JSON (a CLI's banner, a warning) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CliCommand:
    """One shell command the CLI ran (or tried to run)."""

    command: str
    output: str = ""
    exit_code: int | None = None
    is_error: bool = False


@dataclass
class CliTranscript:
    """What a CLI run did, as far as its output tells."""

    commands: list[CliCommand] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
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
    pending: dict[str, str] = {}  # tool_use id -> command
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
                if isinstance(block, dict) and block.get("type") == "tool_use" \
                        and block.get("name") == "Bash":
                    pending[str(block.get("id"))] = str(_dict(block.get("input")).get("command"))
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
            out.output_tokens = int(usage.get("output_tokens") or 0)
            if obj.get("total_cost_usd") is not None:
                out.cost_usd = float(obj["total_cost_usd"])
            if obj.get("is_error"):
                out.errors.append(str(obj.get("result") or obj.get("subtype") or "error"))
    for tool_id in order:
        output, is_error = results.get(tool_id, ("", False))
        out.commands.append(CliCommand(pending[tool_id], output, 1 if is_error else 0, is_error))
    return out


def parse_codex_json(lines: Iterable[str]) -> CliTranscript:
    """Parse ``codex exec --json`` output."""
    out = CliTranscript()
    for obj in _objects(lines):
        kind = obj.get("type")
        item = _dict(obj.get("item"))
        if kind == "item.completed" and item.get("type") == "command_execution":
            code = item.get("exit_code")
            out.commands.append(CliCommand(
                str(item.get("command", "")), str(item.get("aggregated_output") or ""),
                code if isinstance(code, int) else None,
                item.get("status") not in (None, "completed")))
        elif kind == "turn.completed":
            out.finished = True
            usage = _dict(obj.get("usage"))
            out.input_tokens += int(usage.get("input_tokens") or 0)
            out.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            error = _dict(obj.get("error")) or obj
            out.errors.append(str(error.get("message") or kind))
    return out
