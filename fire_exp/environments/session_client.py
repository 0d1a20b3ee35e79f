"""The one client of the agent's session host, for every backend.

The session host (``inbox/session_host.py``) runs in the box and answers JSON requests,
one reply each (its docstring has the protocol). How the bytes travel is the backend's
:class:`Channel`: a child process's pipes (:class:`PipeChannel`, the local environment),
the hijacked socket of one ``docker exec`` (``docker_channel.ExecChannel``), or files and
a FIFO reached by one-shot execs (``session_files.FileChannel``, a box that offers nothing
else). The requests, the replies and what they mean are written here once.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any, Protocol

from fire_exp.environments.base import ExecResult, SessionEnd
from fire_exp.environments.failure import EnvironmentFailure

REPLY_MARGIN = 30.0  # seconds past a command's own timeout before the client gives up on it
HANGUP_GRACE = 0.3  # seconds the host waits after the hangup before naming the survivors


class Channel(Protocol):
    """How requests reach one session host and its replies come back."""

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``req``; its reply, within ``timeout`` seconds. Raises EnvironmentFailure."""

    def close(self) -> None:
        """Close the harness's end (without a hangup first: the host's watchdog then kills
        every process of the attempt, as when the harness dies)."""


class PipeChannel:
    """A session host that is a child process of this one: its stdin and stdout.

    The host enforces every command's timeout itself, so a reply is awaited without one.
    """

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        proc = self.proc
        if proc.poll() is not None:
            raise EnvironmentFailure("the agent's session has ended")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            raise EnvironmentFailure(f"the agent's session died: {exc}") from exc
        line = proc.stdout.readline()
        if not line:
            raise EnvironmentFailure("the agent's session died")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        """Close the host's input and wait for it to exit (killed if it will not)."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SessionClient:
    """The agent's session in a box, through ``channel``: its commands and its end.

    Requests are sent one at a time (a lock); after :meth:`hangup` or :meth:`close` every
    request raises EnvironmentFailure ("the agent's session has ended").
    """

    def __init__(self, channel: Channel, *, margin: float = REPLY_MARGIN) -> None:
        self._channel: Channel | None = channel
        self.margin = margin
        self.host_pid: int | None = None  # the host's pid in the box, once pinged
        self._lock = threading.Lock()  # one request at a time
        # Held only to swap the channel: close() from another thread (stop, Ctrl-C) must
        # not wait for a request in flight, it ends it.
        self._swap = threading.Lock()

    @property
    def open(self) -> bool:
        """Whether the session is still there to send requests to."""
        return self._channel is not None

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request and its reply (``timeout``: the most seconds to wait for it)."""
        with self._lock:
            with self._swap:
                channel = self._channel
            if channel is None:
                raise EnvironmentFailure("the agent's session has ended")
            return channel.request(req, timeout)

    def ping(self) -> int:
        """Wait until the host answers and check that it leads its own session (what the
        end-of-session semantics rest on); returns its pid in the box."""
        reply = self.request({"op": "ping"}, self.margin)
        if reply.get("pid") != reply.get("sid"):
            raise EnvironmentFailure(f"the agent's session host is not a session leader: "
                                     f"{reply}")
        self.host_pid = int(reply["pid"])
        return self.host_pid

    def exec_reply(self, command: str, timeout: float, *, cwd: str,
                   env: dict[str, str] | None = None, env_extra: dict[str, str] | None = None,
                   user: str | None = None, home: str | None = None,
                   capture: str | None = None, shield: bool = False) -> dict[str, Any]:
        """The host's whole reply to one command of the agent's session.

        Args:
            command: a bash command line; ``timeout``: seconds, enforced by the host.
            cwd: its working folder in the box.
            env: its whole environment (None: the host's own).
            env_extra: variables for this command only (a CLI's key).
            user, home: the box user to run as and its ``HOME`` (None: the host's user).
            capture: a folder of the host's where it records stdout and stderr.
            shield: run it out of reach of the commands it starts (a coding-agent CLI).
        """
        req: dict[str, Any] = {"op": "exec", "command": command, "timeout": timeout,
                               "cwd": cwd}
        optional = {"env": env, "env_extra": env_extra, "user": user, "home": home,
                    "capture": capture, "shield": shield or None}
        req |= {key: value for key, value in optional.items() if value}
        return self.request(req, timeout + self.margin)

    def exec(self, command: str, timeout: float, *, cwd: str, **options: Any) -> ExecResult:
        """One command of the agent's session (options as for :meth:`exec_reply`)."""
        return result(self.exec_reply(command, timeout, cwd=cwd, **options))

    def hangup(self, grace: float = HANGUP_GRACE) -> SessionEnd:
        """End the session as a closing terminal does (the host then exits); the channel
        is closed whatever happened."""
        try:
            reply = self.request({"op": "hangup", "grace": grace}, self.margin)
        finally:
            self.close()
        return SessionEnd(hung_up=reply["hung_up"], killed=reply["killed"],
                          survivors=reply["survivors"])

    def close(self) -> None:
        """Close the channel (no hangup: the host's watchdog ends every process of the
        attempt). Closing twice is harmless."""
        with self._swap:
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()


def result(reply: dict[str, Any]) -> ExecResult:
    """The :class:`ExecResult` in an exec reply."""
    return ExecResult(exit_code=reply["exit_code"], stdout=reply["stdout"],
                      stderr=reply["stderr"], timed_out=reply["timed_out"],
                      duration_s=reply["duration_s"])
