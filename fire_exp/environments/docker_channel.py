"""The line channel to a process inside a container, over the hijacked socket of its exec.

The session host (``session_host.py``) runs in the container as the process of one
``docker exec`` whose stdin stays attached: the exec's hijacked socket carries one JSON
request per line in, and the Docker stream protocol (8-byte frame headers, stdout and
stderr multiplexed) carries one JSON reply per line out. One socket for the whole session
means one round trip per command, with no process started on the host.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure

_HEADER = 8
_STDOUT = 1
_POLL = 0.25  # seconds between looks at the cancel flag while waiting for a reply


class ExecChannel:
    """The hijacked socket of one ``docker exec`` (the session host, the hook relay), as a
    line channel.

    Args:
        sock: what ``APIClient.exec_start(..., socket=True)`` returned.
        cancelled: set on Ctrl-C; a wait for a reply then ends at once.
    """

    def __init__(self, sock: Any, cancelled: threading.Event | None = None) -> None:
        self._cancelled = cancelled or threading.Event()
        self._wrapper = sock
        self._sock: socket.socket = getattr(sock, "_sock", sock)
        self._stdout = bytearray()
        self.stderr = bytearray()

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait up to ``timeout`` seconds for its reply."""
        try:
            self._sock.sendall((json.dumps(req) + "\n").encode())
        except OSError as exc:
            raise EnvironmentFailure(f"the agent's session is gone: {exc}") from exc
        line = self._readline(time.monotonic() + timeout)
        try:
            reply: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as exc:  # the engine's own error text, not the host's
            text = line.decode(errors="replace").strip()
            raise EnvironmentFailure(f"the agent's session failed: {text[:400]}") from exc
        return reply

    def read_line(self, timeout: float) -> bytes:
        """The next stdout line of the exec'd process (for a process that speaks first)."""
        return self._readline(time.monotonic() + timeout)

    def send_line(self, data: bytes) -> None:
        """Write ``data`` (one line, with its newline) to the process's stdin."""
        self._sock.sendall(data)

    def _readline(self, deadline: float) -> bytes:
        while True:
            end = self._stdout.find(b"\n")
            if end >= 0:
                line = bytes(self._stdout[:end])
                del self._stdout[:end + 1]
                return line
            header = self._read_exact(_HEADER, deadline)
            payload = self._read_exact(int.from_bytes(header[4:8], "big"), deadline)
            (self._stdout if header[0] == _STDOUT else self.stderr).extend(payload)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EnvironmentFailure("the agent's session stopped answering")
            if self._cancelled.is_set():
                raise EnvironmentFailure("cancelled while a command was running")
            self._sock.settimeout(min(left, _POLL))
            try:
                data = self._sock.recv(n - len(buf))
            except TimeoutError:
                continue
            except OSError as exc:
                raise EnvironmentFailure(f"the agent's session died: {exc}") from exc
            if not data:
                tail = self.stderr.decode(errors="replace")[-600:]
                raise EnvironmentFailure("the agent's session died (the container stopped or "
                                         f"its session host exited){': ' + tail if tail else ''}")
            buf.extend(data)
        return bytes(buf)

    def close(self) -> None:
        """Close the socket (the session host sees end of input and exits)."""
        for closer in (self._sock, self._wrapper):
            try:
                closer.close()
            except Exception:  # noqa: BLE001, S110 - closing a dead socket is fine
                pass
