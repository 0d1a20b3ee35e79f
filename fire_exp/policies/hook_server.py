"""The host's half of the hook transport: answer hook calls that come up from a container.

A CLI running inside an attempt's container calls the hook shim (``hook_shim.sh``); the
shim hands the payload to the hook relay (``hook_relay.sh``), whose stdout and stdin are a
stream to this process. Up the stream come lines ``REQ ID EVENT BASE64(payload)``; down
go ``ANS ID BASE64(answer)``. :class:`HookServer` reads the requests on a thread of its
own and answers each on a worker thread (a CLI may run hooks concurrently), through
:class:`HookAnswerer`, which does what ``fire-exp hook`` does for one call, in process.

Everything the policies need stays on this side of the wall: the portfolio (loaded and,
for a frozen manifest, verified here), the session state and the activity log.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable
from pathlib import Path

from fire_exp.policies.hooks import Cli, HookBridge, bridge_error, load_arm_families, parse_payload

ReadLine = Callable[[], bytes]
WriteLine = Callable[[bytes], None]


class HookAnswerer:
    """One arm's policies as the answer to hook calls (``fire-exp hook``, in process).

    The portfolio is loaded once. A portfolio that does not load (or does not match its
    manifest) answers nothing and logs a load error on every call, as the bridge command
    does, so the validity guard sees it.

    Args:
        portfolio, arm, controls: what ``fire-exp hook`` takes (a name, folder or manifest).
        state_dir: the session state and activity log, on the host.
        cli: ``claude-code`` or ``codex`` (recorded in the activity log).
    """

    def __init__(self, portfolio: str, arm: str, state_dir: Path, cli: Cli,
                 controls: str | None = None) -> None:
        self.state_dir = state_dir
        self.load_error: str | None = None
        self.bridge: HookBridge | None = None
        try:
            families = load_arm_families(portfolio, arm, controls)
            self.bridge = HookBridge(families, state_dir, arm, cli)
        except Exception as exc:  # noqa: BLE001 - reported on every call, as the command does
            self.load_error = f"policy load error: {exc}"

    def answer(self, event: str, raw: bytes) -> str:
        """The stdout of ``fire-exp hook EVENT`` for the payload ``raw`` ("" for none)."""
        text = raw.decode("utf-8", "replace")
        try:
            call = parse_payload(event, json.loads(text))
        except (json.JSONDecodeError, ValueError) as exc:
            bridge_error(self.state_dir, event, f"malformed hook input: {exc}; got {text[:200]!r}")
            return ""
        if self.bridge is None:
            bridge_error(self.state_dir, event, str(self.load_error), session_id=call.session_id,
                         load=True)
            return ""
        try:
            answer = self.bridge.handle(call)
        except Exception as exc:  # noqa: BLE001 - the bridge never blocks the agent
            bridge_error(self.state_dir, event, f"bridge error: {type(exc).__name__}: {exc}",
                         session_id=call.session_id)
            return ""
        return "" if answer is None else json.dumps(answer) + "\n"


class HookServer:
    """Serve the relay's requests until the stream ends or :meth:`close` is called.

    Args:
        read_line: returns the next line from the relay (without its newline); raises or
            returns ``b""`` when the stream is over.
        write_line: sends one line (with its newline) to the relay.
        answer: ``(event, payload) -> answer text``, e.g. ``HookAnswerer.answer``.
    """

    def __init__(self, read_line: ReadLine, write_line: WriteLine,
                 answer: Callable[[str, bytes], str]) -> None:
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
