"""The hook transport: how a coding-agent CLI's hook calls reach the arm's policies.

A CLI runs a command for each hook event (its settings name it, see
``fire_exp/policies/hook_settings.py``); the environment decides what that command is, by
its capabilities (``Environment.hook_transport``):

- ``HOST_HOOKS`` (:class:`HostHooks`): the box is this machine, so the command is
  fire-exp's own (``python -m fire_exp hook EVENT --portfolio ...``), run by the CLI. It
  loads the arm's policies itself and keeps their state in ``ATTEMPT/hooks/state``.
- ``HOOK_RELAY`` (:class:`RelayHooks`): the CLI is inside a box. The command is the shim
  (``hook_shim.sh``, POSIX sh), which leaves the payload in a spool folder and names it on
  a FIFO; the relay (``hook_relay.sh``, bash, root), started with
  :meth:`Environment.open_stream <fire_exp.environments.base.Environment.open_stream>`,
  sends it up that stream as ``REQ TOKEN ID EVENT BASE64``; :class:`~.server.HookServer`
  answers ``ANS TOKEN ID BASE64`` in this process through the endpoint's ``answer`` (the
  policies' ``HookAnswerer``). The policies, their state and the activity log never enter
  the box.
- neither (:class:`FileHooks`): a box with no stream (one-shot exec and file transfer
  only, Harbor's shape). The same shim and spool, without the FIFO; the relay's steps run
  as one-shot execs of ``hook_relay.sh`` (``files.py``: one collects the requests, one
  delivers each answer), read by the same :class:`~.server.HookServer`. It needs only the
  contract's core (``run``, ``write_file``), so every backend can run it.

The channel is the agent's to attack, so it is walled and watched. Shim, relay and spool
are root's; a CLI of another user can submit requests but not forge answers. ``TOKEN`` is
a per-attempt secret given to the relay on its stdin, and the server refuses any line
without it; the relay beats every second. On close the transport writes what it saw to
``ATTEMPT/hooks/channel.json`` (:meth:`RelayHooks.report`), ``tamper`` naming every sign
that the agent reached the channel: lines without the token, a lost relay, a heartbeat gap
over ``HEARTBEAT_GAP_S``, an over-long line, a symlink in the inbox, a line on the relay's
FIFO it cannot parse, a ``done`` for an answer it did not deliver. Each answer is a file
named by a random key only its shim knows (``answers/`` cannot be listed), so no other
process can read or remove it first; a request whose FIFO line garbage swallowed is still
served (the relay sweeps its inbox every second).

Shim, relay and server speak only the line protocol above; nothing here knows a backend
or a policy. The shim exits 0 with the answer, or 1 (a non-blocking hook error for both
CLIs) when the relay is gone or no answer comes; never 2, which would block the agent. So
a hook that gets no answer fails the same in every transport: the CLI's tool call has no
host hook event behind it, which the attempt's reconciliation names
(``agents/coding_agents/evidence.reconcile``), making the attempt invalid.
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.hook_transport.files import FileStream, SpoolBox
from fire_exp.environments.hook_transport.server import (
    HEARTBEAT_GAP_S,
    Answer,
    ChannelCounts,
    HookServer,
)

__all__ = [
    "BOX_ROOT",
    "HEARTBEAT_GAP_S",
    "MAX_PAYLOAD",
    "RELAY",
    "SHIM",
    "SPOOL",
    "HookEndpoint",
    "HookServer",
    "ChannelCounts",
    "FileHooks",
    "HookTransport",
    "HostHooks",
    "LineStream",
    "RelayHooks",
    "script",
    "tamper_reasons",
]

BOX_ROOT = "/opt/fire-exp"
SHIM = f"{BOX_ROOT}/bin/fire-exp-hook"
RELAY = f"{BOX_ROOT}/hook_relay.sh"
SPOOL = f"{BOX_ROOT}/hooks"
_HERE = Path(__file__).resolve().parent
_READY_S = 30.0
# A hook payload is the CLI's JSON for one tool call: the model's tool input (bounded by its
# output tokens, well under 1 MB) and, after the call, the tool's response (Claude Code cuts
# a command's output at 30,000 characters; an edit's response repeats the edited file). 8 MiB
# admits edits of files up to about 8 MB; its base64 line (under 11 MiB) fits the channel's
# line cap. A larger payload goes up as its size only and is answered empty (counted).
MAX_PAYLOAD = 8 << 20


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

    @property
    def oversize(self) -> int:
        """Lines dropped for being longer than the stream's cap."""
        ...

    @property
    def max_line(self) -> int:
        """The stream's cap: the longest line it passes, in bytes (the backend's)."""
        ...


class RelayBox(Protocol):
    """What the relay needs of a box (an ``Environment`` with ``HOOK_RELAY``)."""

    @property
    def files(self) -> AttemptPaths:
        """The attempt's folder on the host (``channel.json`` goes there)."""
        ...

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
    """``HOOK_RELAY``: the shim in the box, the relay's stream, the server in this process.

    Args:
        stream: the relay's stream (its first line down must be ``token``).
        answer: the policies' answerer.
        token: the attempt's secret.
        report_path: where :meth:`close` writes :meth:`report` (None: nowhere).
    """

    # A heartbeat gap over this is a sign that the relay was stopped (None: no sign).
    heartbeat_limit: float | None = HEARTBEAT_GAP_S

    def __init__(self, stream: LineStream, answer: Answer, token: str,
                 report_path: Path | None = None) -> None:
        self._stream = stream
        self._report_path = report_path
        self.env: Mapping[str, str] = {}
        self.server = HookServer(stream.read_line, stream.send_line, answer, token)

    @classmethod
    def open(cls, env: RelayBox, endpoint: HookEndpoint) -> RelayHooks:
        """Copy the shim and the relay into ``env``'s box, start the relay, serve it.

        Raises:
            EnvironmentFailure: the relay did not start (the box lacks bash or mkfifo).
        """
        env.write_file(SHIM, script("hook_shim.sh").read_bytes(), 0o755)
        env.write_file(RELAY, script("hook_relay.sh").read_bytes(), 0o755)
        token = secrets.token_hex(16)
        stream = env.open_stream(["bash", RELAY, SPOOL, str(MAX_PAYLOAD)])
        transport = cls(stream, endpoint.answer(), token, env.files.hook_channel)
        try:
            stream.send_line(f"{token}\n".encode())  # the relay's stdin: nobody else's
            transport.server.start(_READY_S)
        except (TimeoutError, OSError) as exc:
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

    def report(self) -> dict[str, Any]:
        """What the channel saw: counts, the heartbeat's largest gap and ``tamper``, the
        named signs that the agent reached the channel (empty when there are none)."""
        counts = self.server.counts()
        oversize = self._stream.oversize
        return {"requests": counts.requests, "answered": counts.answered,
                "refused": {"bad_token": counts.bad_token, "malformed": counts.malformed,
                            "oversize": oversize, "odd_file": counts.odd_files,
                            "fifo_garbage": counts.fifo_garbage,
                            "stray_done": counts.stray_done},
                "too_large": counts.too_large, "heartbeats": counts.heartbeats,
                "max_heartbeat_gap_s": counts.max_heartbeat_gap_s,
                "relay_lost": counts.relay_lost,
                "tamper": tamper_reasons(counts, oversize, self._stream.max_line,
                                         gap_limit=self.heartbeat_limit)}

    def close(self) -> None:
        """Stop serving, end the relay, write :meth:`report` where the attempt keeps it."""
        self.server.close()
        self._stream.close()  # the relay reads end of input and exits
        if self._report_path is not None:
            self._report_path.parent.mkdir(parents=True, exist_ok=True)
            self._report_path.write_text(json.dumps(self.report(), indent=1) + "\n")



class FileHooks(RelayHooks):
    """A box with no stream: the shim and spool of :class:`RelayHooks`, the relay's steps
    as one-shot execs (:class:`~.files.FileStream`), in the box's ``harness`` folder.

    The heartbeat here times the harness's own collects, which no agent can stop: a gap is
    reported, never a sign of tampering; collects that keep failing end the channel
    (``relay_lost``, which is).
    """

    heartbeat_limit = None

    def __init__(self, stream: LineStream, answer: Answer, token: str,
                 report_path: Path | None, shim: str, spool: str) -> None:
        super().__init__(stream, answer, token, report_path)
        self.shim, self.spool = shim, spool

    @classmethod
    def open_spool(cls, env: SpoolBox, endpoint: HookEndpoint, harness: str) -> FileHooks:
        """Copy the shim and the relay into the box folder ``harness`` of ``env``, lay out
        the spool there, serve it.

        Raises:
            EnvironmentFailure: the spool was not laid out (the box lacks bash or base64).
        """
        shim, relay, spool = (f"{harness}/bin/fire-exp-hook", f"{harness}/hook_relay.sh",
                              f"{harness}/hooks")
        env.write_file(shim, script("hook_shim.sh").read_bytes(), 0o755)
        env.write_file(relay, script("hook_relay.sh").read_bytes(), 0o755)
        token = secrets.token_hex(16)
        stream = FileStream(env, relay, spool, token, MAX_PAYLOAD)
        stream.setup()
        transport = cls(stream, endpoint.answer(), token, env.files.hook_channel, shim, spool)
        try:
            transport.server.start(_READY_S)
        except TimeoutError as exc:
            transport.close()
            raise EnvironmentFailure(f"the hook spool did not answer: {exc}") from exc
        return transport

    def command(self, event: str) -> str:
        """The shim's command line for ``event``, told its spool."""
        return shlex.join([self.shim, event, self.spool])


def tamper_reasons(counts: ChannelCounts, oversize: int, max_line: int, *,
                   gap_limit: float | None = HEARTBEAT_GAP_S) -> list[str]:
    """The named signs, in ``counts`` and the stream's ``oversize`` (lines over its cap of
    ``max_line`` bytes), that something other than the relay wrote to the channel or
    stopped it (the relay alone never does these); a heartbeat gap over ``gap_limit``
    (None: no gap is a sign) is one."""
    reasons = []
    if counts.relay_lost:
        reasons.append("hook relay lost: its stream ended while the agent ran")
    if gap_limit is not None and counts.max_heartbeat_gap_s > gap_limit:
        reasons.append(f"hook relay heartbeat gap of {counts.max_heartbeat_gap_s:.1f} s "
                       f"(over {gap_limit:g} s: the relay was stopped)")
    if counts.bad_token:
        reasons.append(f"{counts.bad_token} line(s) on the hook channel without the "
                       "attempt's token (written into the relay's output)")
    if counts.malformed:
        reasons.append(f"{counts.malformed} malformed line(s) with the attempt's token on "
                       "the hook channel")
    if oversize:
        reasons.append(f"{oversize} line(s) on the hook channel over {max_line} "
                       "bytes (a flood of the relay's output)")
    if counts.odd_files:
        reasons.append(f"{counts.odd_files} symlink(s) or special file(s) in the hook inbox")
    if counts.fifo_garbage:
        reasons.append(f"{counts.fifo_garbage} line(s) on the hook relay's FIFO it could not "
                       "parse (no shim writes one)")
    if counts.stray_done:
        reasons.append(f"{counts.stray_done} 'done' line(s) on the hook relay's FIFO for "
                       "answers it did not deliver (another process consuming answers)")
    return reasons
