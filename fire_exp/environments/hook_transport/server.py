"""The host's end of the hook relay: answer hook calls that come up a line stream.

Up the stream come lines ``READY PID`` (once) and ``REQ ID EVENT BASE64(payload)``; down go
``ANS ID BASE64(answer)``. :class:`HookServer` reads the requests on a thread of its own and
answers each on a worker thread (a CLI may run hooks concurrently) through the ``answer``
callable it was given; it knows nothing of policies.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Callable

ReadLine = Callable[[], bytes]
WriteLine = Callable[[bytes], None]
Answer = Callable[[str, bytes], str]


class HookServer:
    """Serve the relay's requests until the stream ends or :meth:`close` is called.

    Args:
        read_line: returns the next line from the relay (without its newline); raises or
            returns ``b""`` when the stream is over.
        write_line: sends one line (with its newline) to the relay.
        answer: ``(event, payload) -> answer text`` (the policies' side, e.g.
            ``fire_exp.policies.hook_answerer.HookAnswerer.answer``).
    """

    def __init__(self, read_line: ReadLine, write_line: WriteLine,
                 answer: Answer) -> None:
        self._read_line, self._write_line, self._answer = read_line, write_line, answer
        self._send_lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self.requests = 0
        self.malformed = 0
        self.relay_pid: int | None = None
        self.ready = threading.Event()
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._serve, daemon=True, name="hook-server")

    def start(self, ready_timeout: float = 30.0) -> None:
        """Start reading; wait until the relay said READY (raises TimeoutError if not)."""
        self._reader.start()
        if not self.ready.wait(ready_timeout):
            raise TimeoutError("the hook relay did not start")

    def _serve(self) -> None:
        try:
            while not self.closed.is_set():
                line = self._read_line()
                if not line:
                    return
                self._dispatch(line)
        except Exception:  # noqa: BLE001, S110 - the stream ended (container gone, closed)
            pass
        finally:
            self.closed.set()
            self.ready.set()

    def _dispatch(self, line: bytes) -> None:
        words = line.decode("ascii", "replace").split(" ")
        if words[0] == "READY" and len(words) == 2 and words[1].isdigit():
            self.relay_pid = int(words[1])
            self.ready.set()
            return
        if words[0] != "REQ" or len(words) not in (3, 4):
            self.malformed += 1
            return
        try:
            payload = base64.b64decode(words[3] if len(words) == 4 else "", validate=True)
        except binascii.Error:
            self.malformed += 1
            return
        self.requests += 1
        worker = threading.Thread(target=self._reply, args=(words[1], words[2], payload),
                                  daemon=True, name=f"hook-{words[2]}")
        self._workers.append(worker)
        worker.start()

    def _reply(self, request_id: str, event: str, payload: bytes) -> None:
        answer = self._answer(event, payload)
        line = f"ANS {request_id} {base64.b64encode(answer.encode()).decode()}\n".encode()
        with self._send_lock:
            try:
                self._write_line(line)
            except OSError:
                pass  # the relay is gone; the shim reports it to the CLI

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving: wait for answers in flight, then stop reading."""
        for worker in list(self._workers):
            worker.join(timeout)
        self.closed.set()
