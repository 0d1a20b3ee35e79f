"""The egress proxy forwards plain HTTP to allowed endpoints only: absolute-form requests
(a client's ``HTTP_PROXY``) and origin-form ones at an endpoint's forward listener (the URL
the box is given), any method, bodies intact, server-sent events unbuffered."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from fire_exp.environments.egress import EgressProxy


class _Model(BaseHTTPRequestHandler):
    """A model endpoint on this host's loopback (HTTP/1.1, chunked streams, keep-alive)."""

    protocol_version = "HTTP/1.1"
    release: threading.Event

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/v1/stream":
            self._stream()
            return
        if self.path in ("/v1/answer", "/v1/created"):
            self._answer(self.path == "/v1/answer")
            return
        self._json({"path": self.path, "host": self.headers.get("Host")})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._json({"path": self.path, "host": self.headers.get("Host"), "bytes": len(body),
                    "connection": self.headers.get("Connection"),
                    "proxy_auth": self.headers.get("Proxy-Authorization")})

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self) -> None:
        """One event, then the second only once the client has read the first (or
        ``late`` after 30 s: a proxy that held the first event back never lets it be read)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(b"data: one\n\n")
        second = b"data: two\n\n" if self.release.wait(30) else b"data: late\n\n"
        self._chunk(second)
        self._chunk(b"")

    def _answer(self, writes: bool) -> None:
        """A Responses stream (OpenAI's event names, as Codex 0.163 reads them): created,
        then a delta of the model's text if ``writes``; held open until released."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(_event({"type": "response.created", "response": {"id": "r1"}}))
        if writes:
            self._chunk(_event({"type": "response.output_text.delta", "delta": "Hel"}))
            self._chunk(_event({"type": "response.output_text.delta", "delta": "lo"}))
        self.release.wait(30)
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model() -> Iterator[tuple[int, threading.Event]]:
    release = threading.Event()
    handler = type("Handler", (_Model,), {"release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], release
    release.set()
    server.shutdown()
    server.server_close()


def _event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _read_stream(lines: Iterator[bytes], release: threading.Event) -> list[bytes]:
    """The stream's data lines; the second is asked for once the first was read."""
    got = []
    for line in lines:
        if line.startswith(b"data:"):
            got.append(line)
            release.set()
    return got


def test_absolute_form_requests_reach_allowed_endpoints_only(
        tmp_path: Path, model: tuple[int, threading.Event]) -> None:
    port, release = model
    log = tmp_path / "egress.jsonl"
    proxy = EgressProxy("127.0.0.1", [f"127.0.0.1:{port}"], log)
    via = {"http": proxy.address}
    try:
        posted = requests.post(f"http://127.0.0.1:{port}/v1/responses", json={"x": "y" * 50000},
                               proxies=via, timeout=30,
                               headers={"Proxy-Authorization": "Basic c2VjcmV0"})
        with requests.get(f"http://127.0.0.1:{port}/v1/stream", proxies=via, stream=True,
                          timeout=60) as streamed:
            events = _read_stream(streamed.iter_lines(), release)
        refused = requests.get(f"http://127.0.0.1:{port + 1}/v1/models", proxies=via,
                               timeout=30)
    finally:
        proxy.close()
    assert posted.status_code == 200 and posted.headers["Connection"] == "close"
    body = posted.json()
    assert body["path"] == "/v1/responses" and body["bytes"] > 50000
    assert body["host"] == f"127.0.0.1:{port}" and body["connection"] == "close"
    assert body["proxy_auth"] is None  # the proxy's own headers stay with the proxy
    assert events == [b"data: one", b"data: two"]  # the first arrived before the second
    assert refused.status_code == 403
    # One line per request; a connection's line is written when it ends, so the streamed
    # one's may follow the refusal's (seen under load): the lines, not their order.
    assert sorted((e["target"], e["allowed"], e.get("request"), e.get("status") or 0)
                  for e in _log(log)) == sorted([
        (f"127.0.0.1:{port}", True, "POST /v1/responses", 200),
        (f"127.0.0.1:{port}", True, "GET /v1/stream", 200),
        (f"127.0.0.1:{port + 1}", False, "GET /v1/models", 0)])


def test_an_http_endpoint_appears_at_its_forward_listener_with_its_own_host(
        tmp_path: Path, model: tuple[int, threading.Event]) -> None:
    port, release = model
    log = tmp_path / "egress.jsonl"
    url = f"http://localhost:{port}/v1"
    proxy = EgressProxy("127.0.0.1", [url, "127.0.0.1:9"], log)
    try:
        inside = proxy.url_in_box(url)
        assert inside.startswith("http://127.0.0.1:") and inside.endswith("/v1")
        assert inside != url and int(inside.split(":")[2].split("/")[0]) in proxy.ports[1:]
        assert proxy.url_in_box("https://api.example.org/v1") == "https://api.example.org/v1"
        posted = requests.post(inside + "/messages?beta=true", data=b"z" * 70000, timeout=30)
        # A client that honours HTTP_PROXY sends the box's URL to the proxy: same endpoint.
        proxied = requests.post(inside + "/messages", data=b"{}", timeout=30,
                                proxies={"http": proxy.address})
        host, listener = inside.removeprefix("http://").split("/")[0].split(":")
        conn = http.client.HTTPConnection(host, int(listener), timeout=60)
        conn.request("GET", "/v1/stream")
        events = _read_stream(iter(conn.getresponse().readline, b""), release)
        conn.close()
    finally:
        proxy.close()
    for answer in (posted, proxied):
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["host"] == f"localhost:{port}", body  # the endpoint's own name
        assert body["path"].startswith("/v1/messages")
    assert posted.json()["bytes"] == 70000
    assert [e.rstrip(b"\r\n") for e in events] == [b"data: one", b"data: two"]
    assert all(e["allowed"] and e["status"] == 200 for e in _log(log))


def test_the_proxy_variables_keep_the_box_loopback_direct_unless_an_https_endpoint_is_there(
        tmp_path: Path) -> None:
    plain = EgressProxy("127.0.0.1", ["http://127.0.0.1:8799/v1"], tmp_path / "a.jsonl")
    tls = EgressProxy("127.0.0.1", ["https://localhost:8443/v1"], tmp_path / "b.jsonl")
    try:
        assert plain.variables["HTTP_PROXY"] == plain.variables["HTTPS_PROXY"] == plain.address
        assert plain.variables["NO_PROXY"] == "localhost,127.0.0.1,127.0.0.1"
        # The https endpoint is on the host's loopback: the box's own is not it.
        assert tls.variables["no_proxy"] == "127.0.0.1,127.0.0.1"
        assert tls.ports == [tls.port]  # https: tunnelled, no forward listener
    finally:
        plain.close()
        tls.close()


def test_a_request_to_an_unreachable_allowed_endpoint_is_a_logged_502(tmp_path: Path) -> None:
    log = tmp_path / "egress.jsonl"
    proxy = EgressProxy("127.0.0.1", ["http://127.0.0.1:9/v1"], log)  # discard: nobody
    try:
        answer = requests.get(proxy.url_in_box("http://127.0.0.1:9/v1") + "/models", timeout=30)
    finally:
        proxy.close()
    assert answer.status_code == 502
    (entry,) = _log(log)
    assert entry["allowed"] and entry["note"].startswith("upstream unreachable")


def test_the_first_event_of_the_models_output_is_logged_while_the_answer_streams(
        tmp_path: Path, model: tuple[int, threading.Event]) -> None:
    """The host's evidence that the model was answering (a CLI stopped mid-answer shows no
    answer of its own): a line as the first output event passes, before the answer ends;
    a stream of ``response.created`` alone (a server that hangs after it) gives none."""
    port, release = model
    log = tmp_path / "egress.jsonl"
    proxy = EgressProxy("127.0.0.1", [f"http://127.0.0.1:{port}/v1"], log)
    inside = proxy.url_in_box(f"http://127.0.0.1:{port}/v1")
    try:
        with requests.get(inside + "/created", stream=True, timeout=60) as hung, \
                requests.get(inside + "/answer", stream=True, timeout=60) as answering:
            lines = answering.iter_lines()
            assert b'"Hel"' in next(line for line in lines if line.startswith(b"data") and
                                   b"delta" in line)
            streaming = [e for e in _poll(log, "output") if e.get("output") == "streaming"]
            assert [e["request"] for e in streaming] == ["GET /v1/answer"]  # still open
            assert hung.status_code == 200
            release.set()
            list(lines)
    finally:
        proxy.close()
    ended = {e["request"]: e["output_events"] for e in _log(log) if "output_events" in e}
    assert ended == {"GET /v1/answer": 2, "GET /v1/created": 0}


def _poll(log: Path, key: str) -> list[dict[str, Any]]:
    """The log's lines once one has ``key`` (the proxy writes from its own thread)."""
    for _ in range(600):  # bounds the wait; not a test of speed
        lines = _log(log) if log.is_file() else []
        if any(key in e for e in lines):
            return lines
        threading.Event().wait(0.05)
    return _log(log)


@pytest.mark.parametrize(("stream", "events"), [
    # OpenAI Responses (codex-cli 0.163's stream): text, a call's arguments, reasoning
    (b'event: response.created\ndata: {"type":"response.created"}\n\n'
     b'event: response.output_item.added\ndata: {"type":"response.output_item.added"}\n\n'
     b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
     b'"delta":"a"}\n\n'
     b'data: {"type":"response.function_call_arguments.delta","delta":"{"}\n\n'
     b'data: {"type": "response.reasoning_text.delta", "delta": "b"}\r\n\r\n', 3),
    # Anthropic Messages (Claude Code 2.1's): message_start and pings are not output
    (b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'
     b'event: ping\ndata: {"type": "ping"}\n\n'
     b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
     b'"delta":{"type":"text_delta","text":"Hi"}}\n\n', 1),
    # Chat Completions: the role-only first chunk carries no token; text and a tool call do
    (b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
     b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'
     b'data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}\n\n'
     b'data: [DONE]\n\n', 2),
    (b": keep-alive\n\n", 0),
])
def test_output_events_are_counted_however_the_body_is_cut(stream: bytes, events: int) -> None:
    from fire_exp.environments.egress_http import OutputEvents

    for size in (1, 7, len(stream)):
        counter = OutputEvents()
        for start in range(0, len(stream), size):
            counter.feed(stream[start:start + size])
        assert counter.count == events, size
