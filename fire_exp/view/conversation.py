"""What the agent said: its conversation, read from the transcript its agent wrote.

Three shapes, one result. ``agent=openai`` and the simulated agent write
``transcript.jsonl`` in Chat Completions shapes (``system``, ``user``, ``assistant`` with
``tool_calls``, ``tool`` results, ``harness`` events); Claude Code prints ``stream-json``
and Codex ``--json`` into ``cli-stdout.jsonl`` (the formats the dialects in
``fire_exp.agents.coding_agents`` parse for commands). Each becomes a list of messages; a message that
made the session act says how many commands (``actions``, in the command log's order) or
whether the agent stopped (``stop``), which is how ``attempt.interleave`` puts the
conversation and the command log in the order things happened.

A tool result that is a command's output is not repeated (the command log holds it); a
policy's instruction at a stop is shown as its policy event, not again as a user message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fire_exp.agents.coding_agents.dialect import unwrap_shell
from fire_exp.agents.tool_calls import assistant_message
from fire_exp.policies.tool_payloads import EDIT_TOOLS

__all__ = ["claude_messages", "codex_messages", "openai_messages", "read_conversation"]

Message = dict[str, Any]


def _message(role: str, text: str = "", *, calls: Iterable[str] = (),
             commands: Iterable[str] = (), stop: bool = False, label: str = "") -> Message:
    """One message: ``calls`` are tool calls the command log does not hold (a malformed call,
    a CLI's file read); ``commands`` are those it does, one step each, in its order."""
    commands = list(commands)
    return {"kind": "message", "role": role, "text": text, "calls": list(calls),
            "commands": commands, "actions": len(commands), "stop": stop, "label": label}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content, default=str)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def openai_messages(rows: Iterable[dict[str, Any]]) -> list[Message]:
    """Messages of a Chat Completions transcript (``agent=openai``, the simulated agent)."""
    out: list[Message] = []
    malformed: set[str] = set()
    for row in rows:
        role = row.get("role")
        if role == "assistant":
            _, calls = assistant_message(row)
            malformed |= {c.id for c in calls if c.command is None}
            usage = _dict(row.get("usage"))
            label = (f"{usage.get('input')} tokens in, {usage.get('output')} out"
                     if usage else "")
            out.append(_message("assistant", _text(row.get("content")),
                                calls=[f"malformed tool call: {c.problem}" for c in calls
                                       if c.command is None],
                                commands=[c.command for c in calls if c.command is not None],
                                stop=not calls, label=label))
        elif role == "tool":
            if row.get("tool_call_id") in malformed:
                out.append(_message("tool", _text(row.get("content")), label="tool error"))
        elif role == "user" and row.get("source") == "policy":
            continue
        elif role in ("system", "user"):
            out.append(_message(str(role), _text(row.get("content"))))
        elif role == "harness":
            detail = _text(row.get("content")) or ""
            out.append(_message("harness", f"{row.get('event')}{': ' if detail else ''}"
                                           f"{detail}"))
    return out


def _tool_call(block: dict[str, Any]) -> tuple[str, bool]:
    """A Claude Code ``tool_use`` block as one line, and whether it is a logged action."""
    name, args = str(block.get("name")), _dict(block.get("input"))
    if name == "Bash":
        return str(args.get("command", "")), True
    shown = args.get("file_path") or args.get("notebook_path") or args.get("pattern") \
        or args.get("path") or args.get("url") or ""
    return f"{name} {shown}".strip(), name in EDIT_TOOLS


def claude_messages(rows: Iterable[dict[str, Any]]) -> list[Message]:
    """Messages of Claude Code's ``stream-json`` output."""
    out: list[Message] = []
    actions: set[str] = set()
    for row in rows:
        kind, message = row.get("type"), _dict(row.get("message"))
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        if kind == "assistant":
            text = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
            thinking = [str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"]
            calls: list[str] = []
            commands: list[str] = []
            for block in (b for b in blocks if b.get("type") == "tool_use"):
                line, is_action = _tool_call(block)
                (commands if is_action else calls).append(line)
                if is_action:
                    actions.add(str(block.get("id")))
            if thinking:
                out.append(_message("assistant", "\n".join(thinking), label="thinking"))
            if text or calls or commands:
                out.append(_message("assistant", "\n".join(text), calls=calls,
                                    commands=commands))
        elif kind == "user":
            if isinstance(message.get("content"), str):
                out.append(_message("user", message["content"]))
            for block in blocks:
                if block.get("type") == "tool_result" and \
                        str(block.get("tool_use_id")) not in actions:
                    out.append(_message("tool", _text(block.get("content")),
                                        label="tool error" if block.get("is_error") else ""))
                elif block.get("type") == "text":
                    out.append(_message("user", str(block.get("text", ""))))
        elif kind == "result":
            turns = row.get("num_turns")
            out.append(_message("harness", f"{row.get('subtype') or 'result'}"
                                           f"{f' after {turns} turns' if turns else ''}"))
    return out


def codex_messages(rows: Iterable[dict[str, Any]]) -> list[Message]:
    """Messages of ``codex exec --json`` output."""
    out: list[Message] = []
    for row in rows:
        kind, item = row.get("type"), _dict(row.get("item"))
        if kind in ("turn.failed", "error"):
            error = _dict(row.get("error")) or row
            out.append(_message("harness", f"{kind}: {error.get('message') or ''}".strip()))
        if kind != "item.completed":
            continue
        what = item.get("type")
        if what == "agent_message":
            out.append(_message("assistant", str(item.get("text", ""))))
        elif what == "reasoning":
            out.append(_message("assistant", str(item.get("text", "")), label="reasoning"))
        elif what == "command_execution":
            # bare, as the command log has it (Codex shows ``/bin/bash -lc '…'``)
            out.append(_message("assistant",
                                commands=[unwrap_shell(str(item.get("command", "")))]))
        elif what == "file_change":
            paths = [str(c.get("path")) for c in item.get("changes") or []
                     if isinstance(c, dict) and c.get("path")]
            out.append(_message("assistant", commands=[f"apply_patch {' '.join(paths)}"]))
        elif what == "error":
            out.append(_message("harness", f"error: {item.get('message') or ''}".strip()))
        elif what:
            name = item.get("tool") or item.get("query") or ""
            out.append(_message("assistant", calls=[f"{what} {name}".strip()]))
    return out


def _objects(text: str) -> Iterable[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue  # a CLI's banner or warning
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            yield row


def read_conversation(transcript: str | None, cli_stdout: str | None,
                      agent: str) -> list[Message]:
    """The conversation of an attempt from whichever transcript its agent wrote.

    Args:
        transcript: the text of ``transcript.jsonl`` (None: absent).
        cli_stdout: the text of ``cli-stdout.jsonl`` (None: absent).
        agent: the record's agent (``claude-code`` and ``codex`` print different shapes).
    """
    if transcript is not None:
        return openai_messages(_objects(transcript))
    if cli_stdout is None:
        return []
    rows = list(_objects(cli_stdout))
    is_codex = agent == "codex" or any(str(r.get("type", "")).startswith(("item.", "thread."))
                                       for r in rows[:20])
    return codex_messages(rows) if is_codex else claude_messages(rows)
