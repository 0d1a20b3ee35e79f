"""The host's end of the hook relay: answer hook calls that come up a line stream.

Every line carries the attempt's secret token (``TOKEN``), which the host gave the relay on
its stdin and the agent cannot read (unless it is root and reads the relay's memory). Up
the stream come ``READY TOKEN PID`` (once), ``REQ TOKEN ID EVENT BASE64(payload)``,
``BIG TOKEN ID EVENT SIZE`` (a payload over the relay's limit), ``ODD TOKEN ID`` (a symlink
or special file in the inbox, refused), ``GARBAGE TOKEN`` (a line on the relay's FIFO it
could not parse), ``STRAY TOKEN`` (a ``done`` line for an answer it did not deliver) and
``HB TOKEN`` every second; down go
``ANS TOKEN ID BASE64(answer)``. A line without the token is refused and counted: it was
written into the relay's descriptors by something other than the relay.

:class:`HookServer` reads on a thread of its own and answers each request on a worker
thread (a CLI may run hooks concurrently) through the ``answer`` callable it was given; it
knows nothing of policies. What it saw is :class:`ChannelCounts`.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

ReadLine = Callable[[], bytes]
WriteLine = Callable[[bytes], None]
Answer = Callable[[str, bytes], str]

# The relay beats every second. Five missed beats is more than a busy host delays a line
# (the reader thread does nothing but read), and less than the time an agent needs to stop
# the relay, forge answers by hand and resume it.
HEARTBEAT_GAP_S = 5.0


@dataclass(frozen=True)
class ChannelCounts:
    """What the server saw on the stream, at one moment.

    Attributes:
        requests: hook calls that came up with the token (REQ and BIG).
        answered: answers sent down.
        bad_token: lines without the attempt's token (forged into the relay's stdout).
        malformed: lines with the token but not of the protocol's shapes.
        too_large: payloads over the relay's limit (sent as BIG, answered empty).
        odd_files: inbox entries the relay refused (a symlink, a FIFO, a hard link).
        fifo_garbage: lines on the relay's FIFO it could not parse (no shim writes one).
        stray_done: ``done`` lines for answers the relay did not deliver, or with another
            key (another process trying to consume an answer).
        heartbeats: HB lines with the token.
        max_heartbeat_gap_s: the longest time without a heartbeat while the relay served
            (from READY, to the last line or to :meth:`HookServer.close`).
        relay_lost: the stream ended before :meth:`HookServer.close` was called.
    """

    requests: int
    answered: int
    bad_token: int
    malformed: int
    too_large: int
    odd_files: int
    fifo_garbage: int
    stray_done: int
    heartbeats: int
    max_heartbeat_gap_s: float
    relay_lost: bool


class HookServer:
    """Serve the relay's requests until the stream ends or :meth:`close` is called.

    Args:
        read_line: returns the next line from the relay (without its newline); raises or
            returns ``b""`` when the stream is over.
        write_line: sends one line (with its newline) to the relay.
        answer: ``(event, payload) -> answer text`` (the policies' side, e.g.
            ``fire_exp.policies.hook_answerer.HookAnswerer.answer``).
        token: the attempt's secret, which every line carries.
        clock: seconds, monotonic (injected for the heartbeat's tests).
    """

    def __init__(self, read_line: ReadLine, write_line: WriteLine, answer: Answer,
                 token: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._read_line, self._write_line, self._answer = read_line, write_line, answer
        self._token, self._clock = token.encode(), clock
        self._send_lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._counts = dict.fromkeys(("requests", "answered", "bad_token", "malformed",
                                      "too_large", "odd_files", "fifo_garbage", "stray_done",
                                      "heartbeats"), 0)
        self._last_beat: float | None = None
        self._max_gap = 0.0
        self.relay_pid: int | None = None
        self.relay_lost = False
        self.ready = threading.Event()
        self.closed = threading.Event()
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._serve, daemon=True, name="hook-server")

    @property
    def requests(self) -> int:
        return self._counts["requests"]

    @property
    def malformed(self) -> int:
        return self._counts["malformed"]

    def start(self, ready_timeout: float = 30.0) -> None:
        """Start reading; wait until the relay said READY (raises TimeoutError if not)."""
        self._reader.start()
        if not self.ready.wait(ready_timeout) or self.relay_pid is None:
            raise TimeoutError("the hook relay did not start")

    def counts(self) -> ChannelCounts:
        """What the server has seen so far (the gap runs on to now while it serves)."""
        gap = self._max_gap
        if self._last_beat is not None and not self.closed.is_set():
            gap = max(gap, self._clock() - self._last_beat)
        return ChannelCounts(**self._counts, max_heartbeat_gap_s=round(gap, 3),
                             relay_lost=self.relay_lost)

    def _serve(self) -> None:
        try:
            while not self.closed.is_set():
                line = self._read_line()
                if not line or self.closed.is_set():  # a line read after close is not served
                    break
                self._dispatch(line)
        except Exception:  # noqa: BLE001, S110 - the stream ended (container gone, closed)
            pass
        finally:
            if not self._closing.is_set():
                self.relay_lost = True
                self._beat()  # the gap runs to the stream's end
            self.closed.set()
            self.ready.set()

    def _beat(self) -> None:
        now = self._clock()
        if self._last_beat is not None:
            self._max_gap = max(self._max_gap, now - self._last_beat)
        self._last_beat = now

    def _dispatch(self, line: bytes) -> None:
        words = line.split(b" ")
        if len(words) < 2 or not hmac.compare_digest(words[1], self._token):
            self._counts["bad_token"] += 1
            return
        kind, args = words[0], [w.decode("ascii", "replace") for w in words[2:]]
        if kind == b"HB" and not args:
            self._counts["heartbeats"] += 1
            self._beat()
        elif kind == b"READY" and len(args) == 1 and args[0].isdigit() and not self.ready.is_set():
            self.relay_pid = int(args[0])
            self._beat()
            self.ready.set()
        elif kind == b"REQ" and len(args) in (2, 3):
            self._request(args[0], args[1], args[2] if len(args) == 3 else "")
        elif kind == b"BIG" and len(args) == 3 and args[2].isdigit():
            self._counts["requests"] += 1
            self._counts["too_large"] += 1
            self._send(args[0], "")
        elif kind == b"GARBAGE" and not args:
            self._counts["fifo_garbage"] += 1
        elif kind == b"STRAY" and not args:
            self._counts["stray_done"] += 1
        elif kind == b"ODD" and len(args) == 1:
            self._counts["odd_files"] += 1
            self._send(args[0], "")
        else:
            self._counts["malformed"] += 1

    def _request(self, request_id: str, event: str, data: str) -> None:
        try:
            payload = base64.b64decode(data, validate=True)
        except binascii.Error:
            self._counts["malformed"] += 1
            return
        self._counts["requests"] += 1
        worker = threading.Thread(target=self._reply, args=(request_id, event, payload),
                                  daemon=True, name=f"hook-{event}")
        self._workers.append(worker)
        worker.start()

    def _reply(self, request_id: str, event: str, payload: bytes) -> None:
        self._send(request_id, self._answer(event, payload))

    def _send(self, request_id: str, answer: str) -> None:
        data = base64.b64encode(answer.encode()).decode()
        line = f"ANS {self._token.decode()} {request_id} {data}\n".encode()
        with self._send_lock:
            try:
                self._write_line(line)
                self._counts["answered"] += 1
            except OSError:
                pass  # the relay is gone; the shim reports it to the CLI

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving: wait for answers in flight, then stop reading."""
        self._closing.set()
        for worker in list(self._workers):
            worker.join(timeout)
        if not self.closed.is_set():
            self._beat()  # the gap runs to the close
        self.closed.set()
