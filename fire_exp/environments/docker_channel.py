"""The line channel to a process inside a container, over the hijacked socket of its exec.

The session host (``session_host.py``) runs in the container as the process of one
``docker exec`` whose stdin stays attached: the exec's hijacked socket carries one JSON
request per line in, and the Docker stream protocol (8-byte frame headers, stdout and
stderr multiplexed) carries one JSON reply per line out. One socket for the whole session
means one round trip per command, with no process started on the host.

What comes up the stream is written by processes the agent can reach, so it is bounded:
a line longer than the channel's ``max_line`` is dropped up to its newline and counted
(``oversize``), the buffer is scanned once (only the bytes that arrived since the last
look), frames are read in chunks whatever length their header claims, and only the tail of
stderr is kept.
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
STREAM_S = 7 * 24 * 3600.0  # an open_stream lives as long as the attempt
_POLL = 0.25  # seconds between looks at the cancel flag while waiting for a reply
_CHUNK = 1 << 16  # bytes read from the socket at a time, whatever a frame's length says
# A session host's reply carries up to 1 MiB of each of stdout and stderr
# (session_host.MAX_CAPTURE), up to 6 bytes a character once JSON-escaped: 16 MiB holds it.
SESSION_LINE_MAX = 16 << 20
STDERR_KEPT = 64 << 10  # bytes: the tail quoted when the process dies


class ExecChannel:
    """The hijacked socket of one ``docker exec`` (the session host, the hook relay), as a
    line channel.

    Args:
        sock: what ``APIClient.exec_start(..., socket=True)`` returned.
        cancelled: set on Ctrl-C; a wait for a reply then ends at once.
        max_line: the longest stdout line kept (bytes, without its newline); a longer one
            is dropped and counted in ``oversize``.

    Attributes:
        oversize: stdout lines dropped for being longer than ``max_line``.
        peak_buffered: the most bytes the stdout buffer ever held (at most ``max_line``
            plus one read).
        stderr: the last ``STDERR_KEPT`` bytes of the process's stderr.
    """

    def __init__(self, sock: Any, cancelled: threading.Event | None = None,
                 max_line: int = SESSION_LINE_MAX) -> None:
        self._cancelled = cancelled or threading.Event()
        self._wrapper = sock
        self._sock: socket.socket = getattr(sock, "_sock", sock)
        self.max_line = max_line
        self._stdout = bytearray()
        self._scanned = 0  # bytes of _stdout already known to hold no newline
        self._skipping = False  # inside an over-long line: drop up to its newline
        self._frame_left = 0  # bytes of the current frame not read yet
        self._frame_stdout = True
        self.oversize = 0
        self.peak_buffered = 0
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
            line = self._take_line()  # after every read: the buffer never passes the cap
            if line is not None:
                return line
            if not self._frame_left:
                header = self._read_exact(_HEADER, deadline)
                self._frame_left = int.from_bytes(header[4:8], "big")
                self._frame_stdout = header[0] == _STDOUT
                continue
            data = self._recv(min(self._frame_left, _CHUNK), deadline)
            self._frame_left -= len(data)
            if self._frame_stdout:
                self._feed(data)
            else:
                self.stderr.extend(data)
                del self.stderr[:-STDERR_KEPT]

    def _feed(self, data: bytes) -> None:
        """Append stdout bytes; while skipping an over-long line, drop up to its newline."""
        if self._skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            self._skipping = False
            data = data[end + 1:]
        self._stdout.extend(data)
        self.peak_buffered = max(self.peak_buffered, len(self._stdout))

    def _take_line(self) -> bytes | None:
        """The next whole line within ``max_line``, or None until more bytes arrive."""
        while True:
            end = self._stdout.find(b"\n", self._scanned)
            if end < 0:
                self._scanned = len(self._stdout)
                if self._scanned > self.max_line:
                    self._drop_long_line()
                return None
            line = bytes(self._stdout[:end])
            del self._stdout[:end + 1]
            self._scanned = 0
            if len(line) <= self.max_line:
                return line
            self.oversize += 1

    def _drop_long_line(self) -> None:
        self.oversize += 1
        self._stdout.clear()
        self._scanned = 0
        self._skipping = True

    def _read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            buf.extend(self._recv(n - len(buf), deadline))
        return bytes(buf)

    def _recv(self, most: int, deadline: float) -> bytes:
        """Up to ``most`` bytes (at least one) from the socket, before ``deadline``."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EnvironmentFailure("the agent's session stopped answering")
            if self._cancelled.is_set():
                raise EnvironmentFailure("cancelled while a command was running")
            self._sock.settimeout(min(left, _POLL))
            try:
                data = self._sock.recv(most)
            except TimeoutError:
                continue
            except OSError as exc:
                raise EnvironmentFailure(f"the agent's session died: {exc}") from exc
            if not data:
                tail = self.stderr.decode(errors="replace")[-600:]
                raise EnvironmentFailure("the agent's session died (the container stopped or "
                                         f"its session host exited){': ' + tail if tail else ''}")
            return data

    def close(self) -> None:
        """Close the socket (the session host sees end of input and exits)."""
        for closer in (self._sock, self._wrapper):
            try:
                closer.close()
            except Exception:  # noqa: BLE001, S110 - closing a dead socket is fine
                pass


class ExecStream:
    """An :class:`ExecChannel` as a line stream (``Environment.open_stream``)."""

    def __init__(self, sock: Any) -> None:
        self._closed = threading.Event()
        self._channel = ExecChannel(sock, self._closed)

    def read_line(self) -> bytes:
        return self._channel.read_line(STREAM_S)

    def send_line(self, data: bytes) -> None:
        self._channel.send_line(data)

    def close(self) -> None:
        self._closed.set()
        self._channel.close()  # the process reads end of input

    @property
    def oversize(self) -> int:
        return self._channel.oversize

    @property
    def max_line(self) -> int:
        return self._channel.max_line
