"""A CLI in a no-network task reaches its plain-HTTP model endpoint on the host's own
loopback, streamed, and nothing else (a real Docker engine; the fake CLI of
tests/fixtures/cli_container runs the box's side as shell commands)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from tests.agents.test_cli_container_docker import agent_logs, attempt, mounted, script
from tests.agents.test_endpoint_tls import pki

__all__ = ["pki", "script"]  # the fixtures

pytestmark = pytest.mark.docker


class _Model(BaseHTTPRequestHandler):
    """The model endpoint, on the host's 127.0.0.1 only: ``/v1/stream`` sends one event,
    and the second once ``/v1/release`` was asked (after the box had read the first)."""

    protocol_version = "HTTP/1.1"
    release: threading.Event

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/v1/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk(b"data: one\n\n")
            self._chunk(b"data: two\n\n" if self.release.wait(60) else b"data: late\n\n")
            self._chunk(b"")
            return
        if self.path == "/v1/release":
            self.release.set()
        raw = json.dumps({"path": self.path, "host": self.headers.get("Host")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model() -> Iterator[int]:
    handler = type("Handler", (_Model,), {"release": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    handler.release.set()
    server.shutdown()
    server.server_close()


def test_a_no_network_box_streams_from_an_http_endpoint_on_the_host_loopback(
        docker_client: Any, script: Any, tmp_path: Path, model: int,
        pki: dict[str, Path]) -> None:
    logs = "/logs/agent"
    stream = (f'curl -sN "$ANTHROPIC_BASE_URL/v1/stream" > {logs}/stream.txt & pid=$!; '
              f"for i in $(seq 600); do grep -q one {logs}/stream.txt && break; sleep 0.1; "
              f'done; curl -s "$ANTHROPIC_BASE_URL/v1/release" > /dev/null; wait $pid')
    script([f'echo "$ANTHROPIC_BASE_URL" > {logs}/url.txt',
            stream,
            # HTTP_PROXY by hand, absolute-form: the same endpoint by the user's own URL
            f"curl -s --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{model}/v1/models "
            f"> {logs}/absolute.txt",
            # through the proxy (curl honours http_proxy): a host not in the list
            f"curl -s -o /dev/null -w '%{{http_code}}' http://example.org/ > {logs}/refused.txt",
            # the box's own loopback is not the host's
            f"curl -s -m 3 --noproxy '*' http://127.0.0.1:{model}/v1/models > /dev/null; "
            f"echo $? > {logs}/box-loopback.txt",
            # the CA bundle: named to Claude Code, root's and read-only to the agent's user
            f'cp "$NODE_EXTRA_CA_CERTS" {logs}/ca.pem; stat -c "%U %a" "$NODE_EXTRA_CA_CERTS" '
            f'> {logs}/ca.txt; (echo x >> "$NODE_EXTRA_CA_CERTS") 2> /dev/null; '
            f"echo $? >> {logs}/ca.txt"])
    agent = mounted(ClaudeCodeAgent, base_url=f"http://127.0.0.1:{model}",
                    ca_bundle=str(pki["ca"]))
    record = attempt(tmp_path, "csv-column-stats", "baseline", agent)
    assert record.cause is None, record.error
    got = agent_logs(tmp_path)
    url = (got / "url.txt").read_text().strip()
    assert url.startswith("http://") and f"127.0.0.1:{model}" not in url, url
    assert (got / "stream.txt").read_text() == "data: one\n\ndata: two\n\n"  # not "late"
    assert json.loads((got / "absolute.txt").read_text()) == {
        "path": "/v1/models", "host": f"127.0.0.1:{model}"}
    assert (got / "refused.txt").read_text() == "403"
    assert (got / "box-loopback.txt").read_text().strip() == "7"  # connection refused
    assert (got / "ca.pem").read_bytes() == pki["ca"].read_bytes()
    assert (got / "ca.txt").read_text().split() == ["root", "444", "1"]
    egress = [json.loads(x) for x in (got / "egress.jsonl").read_text().splitlines()]
    seen = sorted((e["target"], e["allowed"], e.get("request"), e.get("status"))
                  for e in egress)
    assert seen == sorted([
        (f"127.0.0.1:{model}", True, "GET /v1/stream", 200),
        (f"127.0.0.1:{model}", True, "GET /v1/release", 200),
        (f"127.0.0.1:{model}", True, "GET /v1/models", 200),
        ("example.org:80", False, "GET /", None)]), egress
    assert agent.base_url == f"http://127.0.0.1:{model}"  # the record's side keeps the user's
