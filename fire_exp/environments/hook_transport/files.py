"""The hook transport of a box with no stream: the spool, reached by one-shot execs.

Harbor's and Modal's sandboxes run a command to its end and copy files; nothing keeps a
stream open, so the relay of ``HOOK_RELAY`` cannot run there. The hook command in the box
is the same shim (``hook_shim.sh``): it leaves its request in the spool's inbox and waits
for the answer file only it can name. What differs is who moves the request: instead of
a relay reading a FIFO, the harness runs ``hook_relay.sh``'s one-shot modes through the
box's :meth:`~fire_exp.environments.base.Environment.run` (one ``collect`` at a time,
which waits up to :data:`COLLECT_WAIT_S` for a request and sends up every one it finds,
then a heartbeat; one ``deliver`` per answer, which writes it where the shim waits): the
primitives the session host of such a box is reached by (``session_files.FileChannel``),
through the contract (``run``, ``write_file``), so any backend can run it.

:class:`FileStream` is those execs as the :class:`~.LineStream` the relay's host side
reads, so :class:`~.RelayHooks` and :class:`~.server.HookServer` serve it unchanged: the
same lines, keyed answers, the same counts and ``channel.json`` written on the host. The
policies and their record stay in this process; nothing is read back from the box but the
requests. What a stream has and this has not: the relay's heartbeat measures the
harness's own polling here, not a process the agent could stop, so a gap is reported
but is no sign of tampering; the channel is lost (``relay_lost``, which is) when
:data:`MISSES` collects in a row fail.

The execs run as the box's default user, so the spool is walled from the agent as the
relay's is (root's, the agent another user) only where that user is root; in a box where
the agent's commands and the harness's run as one user (local, the one-shot test box)
there is no wall to keep, as with ``HOST_HOOKS``.
"""

from __future__ import annotations

import shlex
import threading
from collections import deque
from collections.abc import Mapping
from typing import Protocol

from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.failure import EnvironmentFailure

COLLECT_WAIT_S = 1  # seconds one collect waits in the box for a request (whole seconds)
MISSES = 3  # collects in a row that fail before the channel counts as lost
STEP_S = 60.0  # the most one exec of the transport may take
ARGV_ANSWER = 64 << 10  # base64 bytes of an answer passed in argv; a longer one by file
MAX_LINE = 16 << 20  # bytes of one request line (base64 of MAX_PAYLOAD fits)


class OneShotResult(Protocol):
    """What a one-shot exec returned (``ExecResult``)."""

    @property
    def exit_code(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def output(self) -> str: ...


class SpoolBox(Protocol):
    """What the spool needs of a box: its harness folder, files in, one-shot commands."""

    @property
    def files(self) -> AttemptPaths:
        """The attempt's folder on the host (``channel.json`` goes there)."""
        ...

    def write_file(self, dest: str, data: bytes, mode: int = 0o644) -> None:
        """Write a file into the box."""
        ...

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None) -> OneShotResult:
        """Run a bash command line in the box to its end (``Environment.run``)."""
        ...


class FileStream:
    """The relay's line stream, made of one-shot execs of ``hook_relay.sh`` (see the
    module docstring).

    Args:
        box: the box.
        relay: the box path of ``hook_relay.sh``; ``spool``: the spool's box folder.
        token: the attempt's token (every line carries it; no secret here).
        max_payload: the largest request payload sent up whole.
    """

    max_line = MAX_LINE

    def __init__(self, box: SpoolBox, relay: str, spool: str, token: str,
                 max_payload: int) -> None:
        self._box = box
        self._argv = ["bash", relay, spool, str(max_payload)]
        self._spool = spool
        self._token = token
        self._lines: deque[bytes] = deque()
        self._closed = threading.Event()
        self.oversize = 0

    def _step(self, *args: str) -> OneShotResult:
        return self._box.run(shlex.join([*self._argv, *args]), STEP_S, cwd="/")

    def setup(self) -> None:
        """Lay out the spool (raises EnvironmentFailure if it cannot); its ``READY`` is the
        first line read."""
        done = self._step("setup", self._token)
        if done.exit_code != 0:
            raise EnvironmentFailure(f"the hook spool was not laid out (exit {done.exit_code}"
                                     f"): {done.output.strip()[-400:]}")
        self._take(done.stdout)

    def read_line(self) -> bytes:
        """The next line a collect sent up; b"" once closed or :data:`MISSES` collects in a
        row failed."""
        misses = 0
        while not self._lines:
            if self._closed.is_set() or misses >= MISSES:
                return b""
            try:
                done = self._step("collect", self._token, str(COLLECT_WAIT_S))
                failed = done.exit_code != 0
            except EnvironmentFailure:
                failed = True
            if failed:
                misses += 1
                continue
            self._take(done.stdout)
        return self._lines.popleft()

    def _take(self, stdout: str) -> None:
        for line in stdout.encode().splitlines():
            if len(line) > self.max_line:
                self.oversize += 1
            elif line:  # an empty line would read as the stream's end
                self._lines.append(line)

    def send_line(self, data: bytes) -> None:
        """Deliver one ``ANS TOKEN ID BASE64`` line as the answer file of request ID
        (raises OSError once closed: the stream is over)."""
        if self._closed.is_set():
            raise OSError("the hook spool is closed")
        words = data.decode("ascii").split()
        request_id, answer = words[2], (words[3] if len(words) > 3 else "")
        if len(answer) > ARGV_ANSWER:  # beyond what one argument may hold
            self._box.write_file(f"{self._spool}/work/{request_id}.ans", answer.encode(),
                                 0o600)
            answer = "-"
        try:
            done = self._step("deliver", self._token, request_id, answer)
        except EnvironmentFailure as exc:
            raise OSError(str(exc)) from exc
        if done.exit_code != 0:
            raise OSError(f"the answer to hook call {request_id} was not delivered: "
                          f"{done.output.strip()[-200:]}")

    def close(self) -> None:
        """Stop collecting; remove every request and answer left in the spool."""
        self._closed.set()
        try:
            self._step("clear", self._token)
        except EnvironmentFailure:
            pass  # the box is gone, and its spool with it
