"""The hook transport: how a coding-agent CLI's hook calls reach the arm's policies.

A CLI runs a command for each hook event (its settings name it, see
``fire_exp/policies/hook_settings.py``); the environment decides what that command is, by
its capabilities (``Environment.hook_transport``):

- ``HOST_HOOKS`` (:class:`HostHooks`): the box is this machine, so the command is
  fire-exp's own (``python -m fire_exp hook EVENT --portfolio ...``), run by the CLI. It
  loads the arm's policies itself and keeps their state in ``ATTEMPT/hooks/state``.
- ``HOOK_RELAY`` (:class:`RelayHooks`): the CLI is inside a box. The command is the shim
  (``hook_shim.sh``, POSIX sh), which leaves the payload in a spool folder and names it on
  a FIFO; the relay (``hook_relay.sh``, bash), started with :meth:`Environment.open_stream
  <fire_exp.environments.base.Environment.open_stream>`, sends it up that stream as
  ``REQ ID EVENT BASE64``; :class:`~.server.HookServer` answers ``ANS ID BASE64`` in this
  process through the endpoint's ``answer`` (the policies' ``HookAnswerer``). The
  policies, their state and the activity log never enter the box.

Shim, relay and server speak only the line protocol above; nothing here knows a backend
or a policy. The shim exits 0 with the answer, or 1 (a non-blocking hook error for both
CLIs) when the relay is gone; never 2, which would block the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.hook_transport.server import Answer, HookServer

__all__ = [
    "BOX_ROOT",
    "RELAY",
    "SHIM",
    "SPOOL",
    "HookEndpoint",
    "HookServer",
    "HookTransport",
    "HostHooks",
    "LineStream",
    "RelayHooks",
    "script",
]

BOX_ROOT = "/opt/fire-exp"
SHIM = f"{BOX_ROOT}/bin/fire-exp-hook"
RELAY = f"{BOX_ROOT}/hook_relay.sh"
SPOOL = f"{BOX_ROOT}/hooks"
_HERE = Path(__file__).resolve().parent
_READY_S = 30.0


def script(name: str) -> Path:
    """The host path of ``hook_shim.sh`` or ``hook_relay.sh``."""
    return _HERE / name


class LineStream(Protocol):
    """A process in the box whose stdout and stdin are lines to this process."""

    def read_line(self) -> bytes:
        """The next line (without its newline); raises or returns b"" when it is over."""
        ...

    def send_line(self, data: bytes) -> None:
        """Send one line (with its newline)."""
        ...

    def close(self) -> None:
        """End the stream (the process reads end of input)."""
        ...


class RelayBox(Protocol):
    """What the relay needs of a box (an ``Environment`` with ``HOOK_RELAY``)."""

    def write_file(self, dest: str, data: bytes, mode: int = 0o644) -> None:
        """Write a file into the box."""
        ...

    def open_stream(self, argv: Sequence[str]) -> LineStream:
        """Start ``argv`` in the box as a line stream to this process."""
        ...


@dataclass(frozen=True)
class HookEndpoint:
    """Where hook calls end, in both of the transport's forms.

    Attributes:
        host_command: event -> the fire-exp command a CLI on this machine runs for it.
        answer: makes the in-process answerer ``(event, payload) -> answer text`` (called
            once, only by a transport that answers in this process).
        host_env: variables the host command needs (e.g. ``PYTHONPATH`` to fire-exp).
    """

    host_command: Callable[[str], str]
    answer: Callable[[], Answer]
    host_env: Mapping[str, str] = field(default_factory=dict)


class HookTransport(Protocol):
    """An open transport: the command per event, the variables the CLI needs, closing."""

    env: Mapping[str, str]

    def command(self, event: str) -> str:
        """The command a CLI's hook setting runs for ``event``."""
        ...

    def close(self) -> None:
        """Stop serving hook calls (answers in flight are sent first)."""
        ...


class HostHooks:
    """``HOST_HOOKS``: the CLI runs fire-exp's hook command on this machine."""

    def __init__(self, endpoint: HookEndpoint) -> None:
        self._endpoint = endpoint
        self.env: Mapping[str, str] = dict(endpoint.host_env)

    def command(self, event: str) -> str:
        return self._endpoint.host_command(event)

    def close(self) -> None:
        """Nothing runs between calls."""


class RelayHooks:
    """``HOOK_RELAY``: the shim in the box, the relay's stream, the server in this process."""

    def __init__(self, stream: LineStream, answer: Answer) -> None:
        self._stream = stream
        self.env: Mapping[str, str] = {}
        self.server = HookServer(stream.read_line, stream.send_line, answer)

    @classmethod
    def open(cls, env: RelayBox, endpoint: HookEndpoint) -> RelayHooks:
        """Copy the shim and the relay into ``env``'s box, start the relay, serve it.

        Raises:
            EnvironmentFailure: the relay did not start (the box lacks bash or mkfifo).
        """
        env.write_file(SHIM, script("hook_shim.sh").read_bytes(), 0o755)
        env.write_file(RELAY, script("hook_relay.sh").read_bytes(), 0o755)
        transport = cls(env.open_stream(["bash", RELAY, SPOOL]), endpoint.answer())
        try:
            transport.server.start(_READY_S)
        except TimeoutError as exc:
            transport.close()
            raise EnvironmentFailure("the hook relay did not start in the box (it needs "
                                     f"bash, mkfifo and base64): {exc}") from exc
        return transport

    @staticmethod
    def command_for(event: str) -> str:
        """The shim's command line for ``event``."""
        return f"{SHIM} {event}"

    def command(self, event: str) -> str:
        return self.command_for(event)

    def close(self) -> None:
        self.server.close()
        self._stream.close()  # the relay reads end of input and exits
