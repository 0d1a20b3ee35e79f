"""A scripted Anthropic Messages server, for driving the real Claude Code CLI in tests.

Not a model: it answers ``POST /v1/messages`` (Claude Code 2.1 adds ``?beta=true``) from a
script, in the Messages API's shapes as its public documentation describes them
(https://docs.anthropic.com/en/api/messages-streaming) and as Claude Code 2.1.332 was seen
to read them. A streaming request (``"stream": true``, what the CLI sends) is answered with
server-sent events::

    message_start         {"message": {id, type, role, model, content: [], usage}}
    content_block_start   {"index": i, "content_block": {"type": "text", "text": ""}}
    content_block_delta   {"index": i, "delta": {"type": "text_delta", "text": ...}}
    content_block_start   {"index": j, "content_block": {"type": "tool_use", id, name,
                                                         "input": {}}}
    content_block_delta   {"index": j, "delta": {"type": "input_json_delta",
                                                 "partial_json": ...}}
    content_block_stop    {"index": ...}
    message_delta         {"delta": {"stop_reason", "stop_sequence"}, "usage": {...}}
    message_stop

a non-streaming one with the whole message as JSON. A script is a list of turns (served
in order to the requests that offer tools, the last one repeating) or a function of the
request and its number among those. A request without tools (the CLI's own side
questions, e.g. a title for the session) gets a short text answer and is not counted.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-claude-1"
Block = dict[str, Any]  # a content block: {"type": "text", ...} or {"type": "tool_use", ...}


@dataclass(frozen=True)
class Turn:
    """One scripted assistant message: its content blocks, its usage, or an HTTP error."""

    blocks: tuple[Block, ...] = ()
    input_tokens: int = 100
    output_tokens: int = 20
    status: int = 200
    error: str = ""

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


Responder = Callable[[dict[str, Any], int], Turn]


def say(text: str = "Done.", **usage: int) -> Turn:
    """A turn that only speaks: the model wants to stop."""
    return Turn(({"type": "text", "text": text},), **usage)


def bash(command: str, *, call_id: str = "toolu_01", text: str = "", **usage: int) -> Turn:
    """A turn that runs ``command`` with Claude Code's ``Bash`` tool (after ``text``)."""
    return tool("Bash", {"command": command, "description": "run it"}, call_id=call_id,
                text=text, **usage)


def tool(name: str, tool_input: dict[str, Any], *, call_id: str = "toolu_01", text: str = "",
         **usage: int) -> Turn:
    """A turn that calls the tool ``name`` with ``tool_input`` (after ``text``)."""
    blocks: list[Block] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    return Turn(tuple(blocks), **usage)


def failure(status: int, message: str = "scripted failure") -> Turn:
    """An HTTP error answer (429, 500, 401, ...)."""
    return Turn(status=status, error=message)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``tool_result`` block of the request's messages, in order."""
    return [b for m in request.get("messages") or [] if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def request_text(request: dict[str, Any], *, system: bool = False) -> str:
    """All the text the request's messages carry (strings, text blocks, tool results),
    joined; ``system`` false: without the ``system`` messages Claude Code adds (hook
    context, its environment)."""
    parts: list[str] = []
    for message in request.get("messages") or []:
        if message.get("role") == "system" and not system:
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                parts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(parts)


def working_directory(request: dict[str, Any]) -> str | None:
    """The folder the CLI works in, as Claude Code 2.1 tells its model (``Primary working
    directory: DIR`` in a ``system`` message of the conversation)."""
    found = re.search(r"Primary working directory: (\S+)", request_text(request, system=True))
    return found.group(1) if found else None


def message(turn: Turn, n: int, model: str) -> dict[str, Any]:
    """``turn`` as a whole Messages API message (the non-streaming answer)."""
    return {"id": f"msg_scripted_{n:04d}", "type": "message", "role": "assistant",
            "model": model, "content": list(turn.blocks), "stop_reason": turn.stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}}


def events(turn: Turn, n: int, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``turn`` as the stream of (event name, data) a streaming request gets."""
    start = message(turn, n, model) | {"content": [], "stop_reason": None,
                                       "usage": {"input_tokens": turn.input_tokens,
                                                 "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(turn.blocks):
        if block["type"] == "text":
            opening: Block = {"type": "text", "text": ""}
            text = str(block["text"])
            deltas = [{"type": "text_delta", "text": text[k:k + 16]}
                      for k in range(0, len(text), 16)]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"],
                       "input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": raw[k:k + 24]}
                      for k in range(0, len(raw), 24)]
        yield "content_block_start", {"type": "content_block_start", "index": i,
                                      "content_block": opening}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                            "usage": {"output_tokens": turn.output_tokens}}
    yield "message_stop", {"type": "message_stop"}


@dataclass
class Seen:
    """One request the server got: its path, headers (lower-cased names) and body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def scripted(self) -> bool:
        """Whether the script answered it (the request offers tools: the agent's loop)."""
        return bool(self.body.get("tools"))


class MessagesServer:
    """An Anthropic Messages HTTP server on ``host`` (an ephemeral port), in a thread.

    Args:
        script: turns in order (the last repeats), or a :data:`Responder`.
        host: the address to listen on (``127.0.0.1``; a Docker bridge's gateway address
            for a box on that bridge).
        model: the model named in the answers.

    Attributes:
        seen: every request received, in order.
    """

    def __init__(self, script: Sequence[Turn] | Responder, *, host: str = "127.0.0.1",
                 port: int = 0, model: str = MODEL) -> None:
        self.script, self.model = script, model
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """What ``ANTHROPIC_BASE_URL`` is set to (the CLI appends ``/v1/messages``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the requests the script answered, in order."""
        return [s.body for s in self.seen if s.scripted]

    def __enter__(self) -> MessagesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def turn_for(self, seen: Seen) -> Turn:
        """The answer to ``seen`` (recorded first)."""
        with self._lock:
            n = len(self.requests)
            self.seen.append(seen)
        if not seen.scripted:
            return say("Scripted session")
        if callable(self.script):
            return self.script(seen.body, n)
        return self.script[min(n, len(self.script) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?", 1)[0].rstrip("/")
                headers = {k.lower(): v for k, v in self.headers.items()}
                if not path.endswith("/v1/messages"):
                    server.seen.append(Seen(self.path, headers))
                    self._json(404, {"type": "error", "error": {
                        "type": "not_found_error", "message": f"no route {path}"}})
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._json(400, {"type": "error", "error": {
                        "type": "invalid_request_error", "message": "body is not JSON"}})
                    return
                turn = server.turn_for(Seen(self.path, headers, body))
                n = len(server.seen)
                if turn.status != 200:
                    self._json(turn.status, {"type": "error", "error": {
                        "type": "api_error", "message": turn.error}})
                elif body.get("stream"):
                    self._stream(turn, n, str(body.get("model") or server.model))
                else:
                    self._json(200, message(turn, n, str(body.get("model") or server.model)))

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, turn: Turn, n: int, model: str) -> None:
                data = b"".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                                for name, payload in events(turn, n, model))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # quiet: tests read the requests from the server object

        return Handler
