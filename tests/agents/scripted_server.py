"""A scripted OpenAI-compatible server on loopback, for tests and offline demos.

Not a model: it answers ``POST /v1/chat/completions`` from a script. A script is either a
list of replies (served in order; the last one repeats) or a function of the request body
and the request's number. ``GET /v1/models`` lists the scripted model. With ``strict=True``
it refuses, as llama.cpp's server does (HTTP 500, a validation error naming the field), any
message that is not in the standard Chat Completions shapes (:func:`shape_problem`). :func:`solution_responder` solves the bundled tasks by sending
the task's ``solution/solve.sh`` as one ``bash`` call and then stopping.

Run it standalone for ``agent=openai`` without a provider::

    python -m tests.agents.scripted_server --port 8765
    fire-exp run panel=demo agent=openai agent.base_url=http://127.0.0.1:8765/v1
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

Reply = dict[str, Any]  # {"status", "body" (dict or raw str), "headers", "delay_s"}
Responder = Callable[[dict[str, Any], int], Reply]
MODEL = "scripted-model-1"


def completion(message: dict[str, Any], *, tokens: tuple[int, int] = (100, 20),
               model: str = MODEL, route: str | None = "scripted/route-a") -> Reply:
    """A 200 reply carrying ``message`` as the first choice."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    body = {"id": "chatcmpl-scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant"} | message,
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                      "total_tokens": sum(tokens)}}
    return {"status": 200, "body": body, "headers": {"x-route": route} if route else {}}


def tool_call(command: str, *, call_id: str = "call_1", timeout: float | None = None,
              raw_arguments: str | None = None, **kw: Any) -> Reply:
    """A reply that calls ``bash`` with ``command``."""
    args: dict[str, Any] = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    call = {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": raw_arguments or json.dumps(args)}}
    return completion({"content": None, "tool_calls": [call]}, **kw)


def text(content: str = "Done.", **kw: Any) -> Reply:
    """A reply without a tool call: the model wants to stop."""
    return completion({"content": content}, **kw)


def error(status: int, message: str = "scripted failure", **headers: str) -> Reply:
    """An HTTP error reply (429, 500, 401, ...)."""
    return {"status": status, "body": {"error": {"message": message}}, "headers": headers}


def cut_off(message: dict[str, Any] | None = None) -> Reply:
    """A 200 reply whose body stops mid-read (the Content-Length promises more)."""
    return completion(message or {"content": "Done."}) | {"cut_off": True}


_ROLES: dict[str, set[str]] = {"system": {"role", "content", "name"},
                               "user": {"role", "content", "name"},
                               "assistant": {"role", "content", "tool_calls", "name"},
                               "tool": {"role", "content", "tool_call_id"}}


def shape_problem(messages: Any) -> str | None:
    """Where ``messages`` leaves the standard Chat Completions shapes (None: nowhere)."""
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in _ROLES:
            return f"messages.{i}.role: Input should be 'system', 'user', 'assistant' or 'tool'"
        extra = sorted(set(m) - _ROLES[role])
        if extra:
            return f"messages.{i}.{extra[0]}: Extra inputs are not permitted"
        content = m.get("content")
        if role == "tool" and not (isinstance(m.get("tool_call_id"), str)
                                   and isinstance(content, str)):
            return f"messages.{i}: a tool message needs tool_call_id and string content"
        if role == "assistant":
            problem = _assistant_problem(i, m)
            if problem:
                return problem
        elif not isinstance(content, str):
            return f"messages.{i}.content: Input should be a valid string"
    return None


def _assistant_problem(i: int, m: dict[str, Any]) -> str | None:
    calls = m.get("tool_calls")
    if not isinstance(m.get("content"), str):  # as llama-cpp-python 0.3.36 and its templates
        return f"messages.{i}.content: Input should be a valid string"
    for j, call in enumerate(calls or []):
        where = f"messages.{i}.tool_calls.{j}"
        if not isinstance(call, dict) or set(call) != {"id", "type", "function"}:
            return f"{where}: Input should have exactly id, type, function"
        function = call["function"]
        if call["type"] != "function" or not isinstance(call["id"], str) \
                or not isinstance(function, dict) or set(function) != {"name", "arguments"} \
                or not isinstance(function["arguments"], str):
            return f"{where}.function.arguments: Input should be a valid string"
    return None


def malformed(raw: str = '{"choices": [') -> Reply:
    """A 200 reply whose body is not a completion."""
    return {"status": 200, "body": raw, "headers": {}}


def _task_for(prompt: str, suite: Path) -> Path | None:
    for task in sorted(p for p in suite.iterdir() if (p / "instruction.md").is_file()):
        lines = (task / "instruction.md").read_text(encoding="utf-8").splitlines()
        body = "\n".join(ln for ln in lines if not ln.startswith("<!--")).strip()
        if body and body[:200] in prompt:
            return task
    return None


def solution_responder(suite: Path = SUITES_DIR / "fire-mini") -> Responder:
    """Solve a bundled task: its ``solve.sh`` as one bash call, then stop at every turn."""

    def respond(request: dict[str, Any], n: int) -> Reply:
        messages = request.get("messages") or []
        prompt = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        acted = any(m.get("role") == "tool" for m in messages)
        task = _task_for(prompt, suite)
        if acted or task is None or not (task / "solution" / "solve.sh").is_file():
            return text("Done." if task else "I do not know this task.")
        return tool_call((task / "solution" / "solve.sh").read_text(encoding="utf-8"))

    return respond


class ScriptedServer:
    """An OpenAI-compatible HTTP server on ``127.0.0.1`` (an ephemeral port), in a thread.

    Args:
        script: replies in order (the last repeats), or a :data:`Responder`.

    Attributes:
        requests: every request body received, in order.
        headers: every request's headers (lower-cased names), in order.
    """

    def __init__(self, script: Sequence[Reply] | Responder, port: int = 0,
                 strict: bool = False) -> None:
        self.script = script
        self.strict = strict
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def httpd(self) -> ThreadingHTTPServer:
        """The HTTP server itself (to serve it in the foreground)."""
        return self._httpd

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reply_for(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
        problem = shape_problem(body.get("messages")) if self.strict else None
        if problem:
            return {"status": 500, "body": {"error": {
                "message": f"1 validation error for CreateChatCompletionRequest\n{problem}",
                "type": "internal_server_error"}}}
        if callable(self.script):
            return self.script(body, n)
        return self.script[min(n, len(self.script) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if not self.path.rstrip("/").endswith("/models"):
                    self.send_error(404)
                    return
                data = json.dumps({"object": "list", "data": [
                    {"id": MODEL, "object": "model", "owned_by": "fire-exp"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404)
                    return
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self.send_error(400, "request body is not JSON")
                    return
                reply = server.reply_for(body, {k.lower(): v for k, v in self.headers.items()})
                time.sleep(float(reply.get("delay_s", 0)))
                payload = reply["body"]
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(int(reply.get("status", 200)))
                self.send_header("Content-Type", "application/json")
                if reply.get("cut_off"):  # promise more than is sent, then hang up
                    data = data[:len(data) // 2]
                    self.send_header("Content-Length", str(2 * len(data) + 10))
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(data)))
                for name, value in (reply.get("headers") or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # quiet: tests read the requests from the server object

        return Handler


def serve_until_interrupted(httpd: Any, url: str) -> int:
    """Print ``url``, serve ``httpd`` until Ctrl-C, close it (the scripted servers' ``main``)."""
    print(url, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Serve :func:`solution_responder` until interrupted; prints the base URL."""
    parser = argparse.ArgumentParser(prog="python -m tests.agents.scripted_server")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ScriptedServer(solution_responder(), port=args.port)
    return serve_until_interrupted(server.httpd, server.base_url)


if __name__ == "__main__":
    raise SystemExit(main())
