"""The Chat Completions shapes the OpenAI-compatible agent sends back, and tool-call checks.

A server's answer carries provider fields (``index``, ``function_call``, ``refusal``,
``reasoning_content``, an ``arguments`` object instead of a string, a missing ``id`` ...).
What goes back to the server is rebuilt from scratch in the standard shapes of the Chat
Completions API reference (https://platform.openai.com/docs/api-reference/chat/create):

- assistant: ``{"role": "assistant", "content": str, "tool_calls": [{"id",
  "type": "function", "function": {"name", "arguments": str}}]}`` (no ``tool_calls`` key
  when there are none; ``content`` is ``""``, never null or missing, when there is no text
  beside the tool calls);
- tool result: ``{"role": "tool", "tool_call_id", "content": str}``.

A tool call the model got wrong (arguments that are not a JSON object in a string, a
missing id, an unknown tool, no command) is answered as a tool error, so the model can
correct itself; :class:`ToolCall` says what was wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TOOL_NAME = "bash"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant message, checked.

    Attributes:
        id: the call's id (generated when the model sent none).
        name: the function name as the model sent it.
        arguments: the arguments as a JSON string (an object is serialised).
        command: the ``command`` argument when the call is well formed.
        timeout: the optional ``timeout`` argument.
        problem: what was wrong with the call (None: well formed).
    """

    id: str
    name: str
    arguments: str
    command: str | None = None
    timeout: float | None = None
    problem: str | None = None

    def standard(self) -> dict[str, Any]:
        """The call as the API reference shapes it."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}

    def error_text(self) -> str:
        """The tool result that tells the model what it got wrong."""
        return (f"error: malformed tool call ({self.problem}). Call the `{TOOL_NAME}` tool "
                'with a JSON string of arguments like {"command": "ls -la"}.')


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep their text
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict)) or None
    return str(content)


def check_call(raw: Any, n: int, seen: set[str]) -> ToolCall:
    """Check the ``n``-th tool call of a reply; ``seen`` holds the ids already used."""
    call = raw if isinstance(raw, dict) else {}
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    name = str(function.get("name") or "")
    raw_args = function.get("arguments")
    arguments = raw_args if isinstance(raw_args, str) else json.dumps(raw_args or {})
    call_id = call.get("id")
    problem = None
    if not isinstance(call_id, str) or not call_id or call_id in seen:
        problem = "the call has no id" if not call_id else f"the id {call_id!r} repeats"
        call_id = f"call_fire_{n}"
    seen.add(call_id)
    if not isinstance(raw, dict):
        problem = "a tool call must be an object"
    elif name != TOOL_NAME:
        problem = problem or f"unknown tool {name!r}; the only tool is {TOOL_NAME}"
    elif not isinstance(raw_args, str):
        problem = problem or "arguments must be a JSON string, not " + type(raw_args).__name__
    if problem is not None:
        return ToolCall(call_id, name or TOOL_NAME, arguments, problem=problem)
    return _with_arguments(ToolCall(call_id, name, arguments))


def _with_arguments(call: ToolCall) -> ToolCall:
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolCall(call.id, call.name, call.arguments, problem=f"arguments are not JSON: "
                        f"{exc.msg} at character {exc.pos}")
    if not isinstance(args, dict):
        return ToolCall(call.id, call.name, call.arguments,
                        problem="arguments must be a JSON object")
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        return ToolCall(call.id, call.name, call.arguments,
                        problem='"command" must be a non-empty string')
    try:
        timeout = float(args["timeout"]) if args.get("timeout") else None
    except (TypeError, ValueError):
        return ToolCall(call.id, call.name, call.arguments, problem='"timeout" must be a number')
    return ToolCall(call.id, call.name, call.arguments, command=command, timeout=timeout)


def assistant_message(message: dict[str, Any]) -> tuple[dict[str, Any], list[ToolCall]]:
    """The standard assistant message to send back, and its checked tool calls."""
    raw_calls = message.get("tool_calls")
    calls: list[ToolCall] = []
    seen: set[str] = set()
    if isinstance(raw_calls, list):
        calls = [check_call(raw, n, seen) for n, raw in enumerate(raw_calls, start=1)]
    elif raw_calls:
        calls = [ToolCall("call_fire_1", TOOL_NAME, json.dumps(raw_calls, default=str),
                          problem="tool_calls must be a list")]
    content = _text(message.get("content"))
    # Always a string: llama-cpp-python's server refuses a null content (HTTP 500, "Input
    # should be a valid string") and its chat templates fail on a missing one.
    standard: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        standard["tool_calls"] = [c.standard() for c in calls]
    return standard, calls


def tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    """The standard tool-result message for ``call``."""
    return {"role": "tool", "tool_call_id": call.id, "content": content}
