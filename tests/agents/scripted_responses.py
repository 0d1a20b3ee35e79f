"""A scripted OpenAI Responses API server on loopback, as Codex 0.163 consumes it.

Not a model: it answers ``POST /v1/responses`` (``stream: true``) from a script, as
server-sent events in the order codex-cli 0.163.0 reads them::

    event: response.created          {"type": ..., "response": {"id": ...}}
    event: response.output_item.added {"type": ..., "output_index": i, "item": ITEM}
    event: response.output_item.done {"type": ..., "output_index": i, "item": ITEM}
    ...                               (one added/done pair per output item)
    event: response.completed        {"type": ..., "response": {"id", "usage": {...}}}

An output item is a ``message`` (the model's text: no tool call, the turn ends), a
``function_call`` (Codex's shell tool ``exec_command``, arguments ``{"cmd": ...}``) or a
``custom_tool_call`` (the freeform ``apply_patch`` tool, ``input`` the bare patch text).
``GET /v1/models`` lists the scripted model. A script is a list of replies (served in
order; the last repeats) or a function of the request body and its number; a reply is a
list of output items, or an :func:`http_error`. :func:`solution_responder` solves the
bundled tasks: the task's ``solution/solve.sh`` as one ``exec_command`` call, then "Done.".

Run it standalone for ``agent=codex`` against it (docs/agents.md, *A worked panel*)::

    python -m tests.agents.scripted_responses --port 8799
    fire-exp run panel=demo agent=codex agent.base_url=http://127.0.0.1:8799/v1 \\
        agent.model=scripted-coder
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fire_exp.paths import SUITES_DIR

__all__ = ["MODEL", "ResponsesServer", "apply_patch", "cut_stream", "exec_command",
           "hook_prompts", "http_error", "message", "slow_text", "solution_responder", "stall",
           "tool_outputs"]

CHECKED = "codex-cli 0.163.0"  # the client whose requests and stream reading this follows
MODEL = "scripted-coder"
Item = dict[str, Any]
Reply = list[Item] | dict[str, Any]  # output items, or {"status", "body"}
Responder = Callable[[dict[str, Any], int], Reply]


def message(text: str = "Done.") -> Item:
    """The model's text answer (no tool call: the turn ends)."""
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def exec_command(command: str, call_id: str = "call_1") -> Item:
    """A call of Codex's shell tool (``exec_command``) running ``command``."""
    return {"type": "function_call", "name": "exec_command", "call_id": call_id,
            "arguments": json.dumps({"cmd": command})}


def apply_patch(patch: str, call_id: str = "call_patch") -> Item:
    """A call of Codex's freeform ``apply_patch`` tool with ``patch`` (``*** Begin Patch``)."""
    return {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
            "input": patch}


def http_error(status: int, message_text: str = "scripted failure") -> dict[str, Any]:
    """An HTTP error reply instead of a stream."""
    return {"status": status, "body": {"error": {"message": message_text}}}


def cut_stream() -> dict[str, Any]:
    """A stream that stops after ``response.created`` (the connection closes before
    ``response.completed``): Codex reconnects and asks again."""
    return {"cut": True}


def slow_text(words: int, every_s: float) -> dict[str, Any]:
    """An answer whose text streams one word every ``every_s`` seconds
    (``response.output_text.delta`` events), completed after the last: a slow model."""
    return {"slow": words, "every_s": every_s}


def stall(seconds: float) -> dict[str, Any]:
    """``response.created``, then nothing for ``seconds`` (no event of output): a provider
    that accepted the request and hangs."""
    return {"slow": 0, "every_s": seconds}


def _input_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    items = request.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def tool_outputs(request: dict[str, Any]) -> dict[str, str]:
    """call_id -> the output Codex sent back for it (function and custom tool calls)."""
    out: dict[str, str] = {}
    for item in _input_items(request):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            value = item.get("output")
            out[str(item.get("call_id"))] = value if isinstance(value, str) else json.dumps(value)
    return out


def hook_prompts(request: dict[str, Any]) -> list[str]:
    """The text of every user message that carries a Stop hook's reason
    (``<hook_prompt …>REASON</hook_prompt>``, as Codex 0.163 sends it)."""
    found = []
    for item in _input_items(request):
        if item.get("role") != "user":
            continue
        for part in item.get("content") or []:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and "<hook_prompt" in text:
                found.append(text)
    return found


def _user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(part.get("text", "")) for item in _input_items(request)
                     if item.get("role") == "user" for part in item.get("content") or []
                     if isinstance(part, dict))


def solution_responder(suite: Path = SUITES_DIR / "fire-mini") -> Responder:
    """Solve a bundled task of ``suite``: its ``solve.sh`` as one call, then "Done." (a
    conversation with a tool output in it has acted already). Stateless: one server
    serves a whole panel."""
    tasks = {}
    for task in sorted(p for p in suite.iterdir() if (p / "solution" / "solve.sh").is_file()):
        text = (task / "instruction.md").read_text(encoding="utf-8").splitlines()
        body = "\n".join(ln for ln in text if not ln.startswith("<!--")).strip()
        tasks[body[:200]] = (task / "solution" / "solve.sh").read_text(encoding="utf-8")

    def respond(request: dict[str, Any], n: int) -> Reply:
        if tool_outputs(request):
            return [message("Done.")]
        prompt = _user_text(request)
        solve = next((script for head, script in tasks.items() if head and head in prompt),
                     None)
        return [exec_command(solve, f"call_{n}")] if solve else [message("Unknown task.")]

    return respond


def _usage(n: int) -> dict[str, Any]:
    """Token counts of the ``n``-th answer (made up, distinct per answer)."""
    return {"input_tokens": 1000 + n, "input_tokens_details": {"cached_tokens": 200},
            "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1030 + n}


def sse(items: Sequence[Item], n: int, model: str = MODEL) -> bytes:
    """The event stream of one answer with ``items``."""
    return b"".join(_event(e) for e in _events(items, n, model))


def _events(items: Sequence[Item], n: int, model: str = MODEL) -> list[dict[str, Any]]:
    """The events of one answer: created, each item added and done, completed."""
    rid = f"resp_scripted_{n}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {
        "id": rid, "object": "response", "model": model, "status": "in_progress"}}]
    for i, item in enumerate(items):
        item = {"id": f"item_{n}_{i}"} | item
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": {
        "id": rid, "object": "response", "model": model, "status": "completed",
        "usage": _usage(n)}})
    return events


def _event(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


class ResponsesServer:
    """A Responses API server on ``host`` (an ephemeral port), in a thread.

    Args:
        script: replies in order (the last repeats), or a :data:`Responder`.
        host: the address to listen on (a box reaches the host through an address it can
            route to, not the host's loopback).

    Attributes:
        requests: every ``/responses`` request body, in order.
        headers: their headers (lower-cased names).
    """

    def __init__(self, script: Sequence[Reply] | Responder, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def httpd(self) -> ThreadingHTTPServer:
        """The HTTP server itself (to serve it in the foreground)."""
        return self._httpd

    def url(self, host: str = "127.0.0.1") -> str:
        """The base URL as a client at ``host`` names it (Codex appends ``/responses``)."""
        return f"http://{host}:{self.port}/v1"

    def __enter__(self) -> ResponsesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reply_for(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Reply]:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
        if callable(self.script):
            return n, self.script(body, n)
        return n, self.script[min(n, len(self.script) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if not self.path.split("?")[0].rstrip("/").endswith("/models"):
                    self._send(404, b'{"error": {"message": "not found"}}', "application/json")
                    return
                data = json.dumps({"object": "list", "data": [
                    {"id": MODEL, "object": "model", "owned_by": "fire-exp"}]}).encode()
                self._send(200, data, "application/json")

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.split("?")[0].rstrip("/").endswith("/responses"):
                    self._send(404, b'{"error": {"message": "not found"}}', "application/json")
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "not JSON"}}', "application/json")
                    return
                n, reply = server.reply_for(body, {k.lower(): v for k, v in self.headers.items()})
                if isinstance(reply, dict) and "slow" in reply:
                    self._slow(n, int(reply["slow"]), float(reply["every_s"]))
                    return
                if isinstance(reply, dict) and reply.get("cut"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()  # no length: the body ends when the connection does
                    self.wfile.write(sse([], n).split(b"\n\n")[0] + b"\n\n")
                    self.close_connection = True
                    return
                if isinstance(reply, dict):
                    self._send(int(reply["status"]), json.dumps(reply["body"]).encode(),
                               "application/json")
                    return
                self._send(200, sse(reply, n, str(body.get("model") or MODEL)),
                           "text/event-stream")

            def _slow(self, n: int, words: int, every_s: float) -> None:
                """The events of :func:`sse` for one message, its text one delta at a
                time (none: :func:`stall`), chunked, as a streaming server sends them."""
                text = " ".join(f"word{i}" for i in range(words)) or "Done."
                created, added, *done = _events([message(text)], n)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                item = added["item"] | {"status": "in_progress", "content": []}
                try:
                    self._chunk(_event(created))
                    if words:  # the item, empty, before its text
                        self._chunk(_event(added | {"item": item}))
                    for i in range(max(words, 1)):
                        time.sleep(every_s)
                        if words:
                            self._chunk(_event({"type": "response.output_text.delta",
                                                "item_id": item["id"], "output_index": 0,
                                                "content_index": 0, "delta": f"word{i} "}))
                    for event in done if words else [added, *done]:
                        self._chunk(_event(event))
                    self._chunk(b"")
                except OSError:
                    pass  # the client went away (its CLI was stopped)
                self.close_connection = True

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # quiet: tests read the requests from the server object

        return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve :func:`solution_responder` until interrupted; prints the base URL."""
    parser = argparse.ArgumentParser(prog="python -m tests.agents.scripted_responses")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ResponsesServer(solution_responder(), port=args.port)
    from tests.agents.scripted_server import serve_until_interrupted

    return serve_until_interrupted(server.httpd, server.url())


if __name__ == "__main__":
    raise SystemExit(main())
