"""One streamed request per protocol, shaped as each real CLI sends it, to a served model.

Used by the served-model test and ``benchmarks/bench_served_model.py``: a Responses request
as Codex 0.163 sends it (``input`` items with a ``developer`` message, ``stream``, a function
tool beside a ``custom`` one) and a Messages request as Claude Code 2.1 sends it (``system``
as a list of text parts, a ``role: "system"`` message mid-conversation, ``stream``, a tool).
``force_tool`` asks for a tool call (``tool_choice`` required / any); whether one comes is
the model's: the served template (``fire_exp/serve/templates``) makes a fenced json call a
tool call, and anything else the model writes stays text. Each result says what came back: the SSE
event types, the text, the tool calls, the tokens the server counted, and the seconds.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProbeResult", "messages_probe", "responses_probe"]

_SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}},
                 "required": ["command"]}


@dataclass
class ProbeResult:
    """What one streamed request got back."""

    protocol: str
    seconds: float = 0.0
    status: int = 0
    events: list[str] = field(default_factory=list)
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None


def _stream(url: str, body: dict[str, Any], headers: dict[str, str],
            timeout: float) -> tuple[int, list[tuple[str, dict[str, Any]]], str | None]:
    """POST ``body``; the SSE ``(event type, data)`` pairs, or the error the server gave."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            events = []
            for raw in reply:
                line = raw.decode().strip()
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                    data = json.loads(line[5:])
                    events.append((str(data.get("type", "")), data))
            return int(reply.status), events, None
    except urllib.error.HTTPError as exc:
        return exc.code, [], exc.read().decode(errors="replace")[:500]


def responses_probe(root: str, model: str, prompt: str, max_tokens: int = 48,
                    force_tool: bool = False, timeout: float = 600) -> ProbeResult:
    """POST /v1/responses as Codex does; the result of its SSE stream."""
    body = {"model": model, "stream": True, "store": False, "max_output_tokens": max_tokens,
            "parallel_tool_calls": False,
            "tool_choice": "required" if force_tool else "auto",
            "input": [{"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": "You are a coding agent."}]},
                      {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": prompt}]}],
            "tools": [{"type": "function", "name": "exec_command", "strict": False,
                       "description": "Run a shell command.", "parameters": _SHELL_SCHEMA},
                      {"type": "custom", "name": "apply_patch", "description": "Patch files.",
                       "format": {"type": "text"}}]}
    result = ProbeResult("responses")
    start = time.monotonic()
    result.status, events, result.error = _stream(f"{root}/v1/responses", body,
                                                  {"authorization": "Bearer local"}, timeout)
    result.seconds = time.monotonic() - start
    for kind, data in events:
        result.events.append(kind)
        if kind == "response.output_text.delta":
            result.text += str(data.get("delta", ""))
        elif kind == "response.output_item.done" and \
                data.get("item", {}).get("type") == "function_call":
            item = data["item"]
            result.tool_calls.append({"name": item.get("name"),
                                      "arguments": item.get("arguments")})
        elif kind == "response.completed":
            usage = data.get("response", {}).get("usage") or {}
            result.input_tokens = int(usage.get("input_tokens", 0))
            result.output_tokens = int(usage.get("output_tokens", 0))
    return result


def messages_probe(root: str, model: str, prompt: str, max_tokens: int = 48,
                   force_tool: bool = False, timeout: float = 600) -> ProbeResult:
    """POST /v1/messages as Claude Code does; the result of its SSE stream."""
    body: dict[str, Any] = {
        "model": model, "stream": True, "max_tokens": max_tokens,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1;"},
                   {"type": "text", "text": "You are a coding agent.",
                    "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]},
                     {"role": "system", "content": [{"type": "text",
                                                     "text": "Primary working directory: /app"}]}],
        "tools": [{"name": "Bash", "description": "Run a shell command.",
                   "input_schema": _SHELL_SCHEMA}]}
    if force_tool:
        body["tool_choice"] = {"type": "any"}
    result = ProbeResult("messages")
    start = time.monotonic()
    headers = {"x-api-key": "local", "anthropic-version": "2023-06-01"}
    result.status, events, result.error = _stream(f"{root}/v1/messages?beta=true", body,
                                                  headers, timeout)
    result.seconds = time.monotonic() - start
    blocks: dict[int, dict[str, Any]] = {}
    for kind, data in events:
        result.events.append(kind)
        if kind == "message_start":
            usage = data.get("message", {}).get("usage") or {}
            result.input_tokens = int(usage.get("input_tokens", 0))
        elif kind == "content_block_start":
            blocks[int(data.get("index", 0))] = dict(data.get("content_block") or {},
                                                     partial="")
        elif kind == "content_block_delta":
            delta, block = data.get("delta") or {}, blocks.get(int(data.get("index", 0)), {})
            result.text += str(delta.get("text", ""))
            block["partial"] = block.get("partial", "") + str(delta.get("partial_json", ""))
        elif kind == "message_delta":
            usage = data.get("usage") or {}
            result.output_tokens = int(usage.get("output_tokens", 0))
            result.input_tokens = int(usage.get("input_tokens", result.input_tokens))
    result.tool_calls = [{"name": b.get("name"), "arguments": b.get("partial")}
                         for b in blocks.values() if b.get("type") == "tool_use"]
    return result
