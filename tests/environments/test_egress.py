"""The egress proxy is bounded: it caps its connections, logs each refusal and error, and
keeps serving after any error (descriptors exhausted included)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.egress import MAX_CONNECTIONS, EgressProxy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def upstream() -> Iterator[int]:
    """A model endpoint on this host: answers each connection with one line."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"model endpoint\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def _connect_through(address: str, port: int) -> bytes:
    """A CONNECT to 127.0.0.1:``port`` through the proxy; what came back."""
    host, proxy_port = address.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(proxy_port)), timeout=10) as conn:
        conn.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
            if reply.endswith(b"model endpoint\n") or b" 50" in reply.split(b"\r\n")[0]:
                break
        return reply


def _log(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _until(predicate: object, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_flood_past_the_cap_is_refused_and_logged_and_the_proxy_serves_on(
        tmp_path: Path, upstream: int) -> None:
    log = tmp_path / "egress.jsonl"
    proxy = EgressProxy("127.0.0.1", [f"127.0.0.1:{upstream}"], log)
    extra = 20
    flood = []
    try:
        host, port = proxy.address.removeprefix("http://").rsplit(":", 1)
        # Connections that say nothing: each holds one of the proxy's slots.
        flood = [socket.create_connection((host, int(port))) for _ in range(MAX_CONNECTIONS
                                                                             + extra)]
        refusals = lambda: [e for e in _log(log) if "(the cap)" in str(e["note"])]  # noqa: E731
        _until(lambda: len(refusals()) >= extra, "the connections past the cap were not refused")
        assert len(refusals()) == extra
        assert all(e["allowed"] is False for e in refusals())
        for conn in flood:
            conn.close()
        # The slots come back: a normal request goes through (after the flood's ends are read).
        replies: list[bytes] = []
        _until(lambda: replies.append(_connect_through(proxy.address, upstream)) or
               replies[-1].startswith(b"HTTP/1.1 200"), f"no request got through: {replies}")
        assert replies[-1].endswith(b"model endpoint\n")
        assert _connect_through(proxy.address, upstream).startswith(b"HTTP/1.1 200")
    finally:
        for conn in flood:
            conn.close()
        proxy.close()
    allowed = [e for e in _log(log) if e["allowed"]]
    assert allowed and all(e["target"] == f"127.0.0.1:{upstream}" for e in allowed)


_EXHAUSTED = textwrap.dedent("""
    import os, resource, sys
    from pathlib import Path
    from fire_exp.environments.egress import EgressProxy
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    proxy = EgressProxy("127.0.0.1", [sys.argv[1]], Path(sys.argv[2]))
    print(proxy.address, flush=True)
    fillers = []
    try:
        while True:
            fillers.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    print("exhausted", flush=True)
    sys.stdin.readline()  # the parent connected: give the descriptors back
    for fd in fillers:
        os.close(fd)
    print("released", flush=True)
    sys.stdin.readline()
    proxy.close()
""")


def test_the_proxy_keeps_serving_after_the_harness_ran_out_of_descriptors(
        tmp_path: Path, upstream: int) -> None:
    log = tmp_path / "egress.jsonl"
    child = subprocess.Popen([sys.executable, "-c", _EXHAUSTED, f"127.0.0.1:{upstream}",
                              str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert child.stdin is not None and child.stdout is not None
    try:
        address = child.stdout.readline().strip()
        assert child.stdout.readline().strip() == "exhausted"
        got: list[bytes] = []
        worker = threading.Thread(target=lambda: got.append(_connect_through(address, upstream)))
        worker.start()  # queued in the backlog: every accept fails with EMFILE meanwhile
        _until(lambda: any("accept failed" in str(e["note"]) for e in _log(log)),
               "the accept error was not logged")
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "released"
        worker.join(30)
        assert got and got[0].startswith(b"HTTP/1.1 200") and got[0].endswith(b"model endpoint\n")
        assert _connect_through(address, upstream).startswith(b"HTTP/1.1 200")
    finally:
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(30)
    notes = [str(e["note"]) for e in _log(log)]
    assert any("Too many open files" in n for n in notes), notes
    assert any(n.startswith("accepting again after") for n in notes), notes
