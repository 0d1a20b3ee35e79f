"""The agent's session: a session leader that runs the agent's commands (stdlib only).

Started in a new session (``setsid``), this process reads JSON requests on stdin and
answers one JSON line each on stdout. Every agent command is a ``bash -c`` child of it, so
the command and anything it leaves behind belong to the agent's session, like jobs of a
terminal. Every process carries the marker ``FIRE_ATTEMPT=<id>`` in its environment, so
processes that left the session (``setsid``) can still be found by process id.

Requests::

    {"op": "exec", "command": "...", "timeout": 30, "cwd": "/app", "env": {...},
     "env_extra": {...}}
    {"op": "hangup", "grace": 0.5}
    {"op": "ping"}

``hangup`` is the end of the agent's session, as when a terminal closes: every process
still in the session receives SIGHUP (``nohup`` ignores it), and every process whose
stdout or stderr is still one of the session's terminal streams is killed (its terminal is
gone). A server started with a plain ``&`` therefore dies; one started with ``setsid`` or
``nohup`` *and* redirected streams survives. The host then exits.

This file runs standalone (``python3 session_host.py MARKER LOGFILE``), also inside
containers, so it imports nothing outside the standard library.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

CHUNK = 65536
MAX_CAPTURE = 1 << 20  # per command and stream; the rest goes to the terminal log only
# Containers may carry an older python3 (process_group= is new in 3.11).
_OWN_GROUP: dict[str, Any] = ({"process_group": 0} if sys.version_info >= (3, 11)
                              else {"preexec_fn": os.setpgrp})


class Stream:
    """One command's stdout or stderr pipe, as the terminal sees it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.chunks: list[bytes] = []
        self.capturing = True  # False: later output goes to the terminal log only
        self.eof = False


class Terminal:
    """The session's terminal: drains every command's pipes for as long as the session lives.

    Output of the running command is captured for its result; output that background jobs
    write later goes to the terminal log, as it would scroll by in a real terminal.
    """

    def __init__(self, log_path: str | None) -> None:
        self._lock = threading.Lock()
        self._streams: dict[int, Stream] = {}
        self._inodes: set[int] = set()
        self._log = open(log_path, "ab") if log_path else None
        self._wake_r, self._wake_w = os.pipe()
        self._closed = False
        threading.Thread(target=self._drain, daemon=True).start()

    def pipe(self) -> tuple[Stream, int]:
        """A new stream and the write end to give the child."""
        r, w = os.pipe()
        stream = Stream(r)
        with self._lock:
            self._streams[r] = stream
            self._inodes.add(os.fstat(r).st_ino)
        os.write(self._wake_w, b"x")
        return stream, w

    def pending(self, stream: Stream) -> bool:
        """Whether the stream has unread output."""
        with self._lock:
            if stream.eof:
                return False
            ready, _, _ = select.select([stream.fd], [], [], 0)
            return bool(ready)

    def detach(self, *streams: Stream) -> None:
        """Stop capturing the streams for a result; later output goes to the log only."""
        with self._lock:
            for stream in streams:
                stream.capturing = False

    @property
    def inodes(self) -> set[int]:
        with self._lock:
            return set(self._inodes)

    def _drain(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                fds = list(self._streams)
            ready, _, _ = select.select(fds + [self._wake_r], [], [], 0.5)
            with self._lock:
                for fd in ready:
                    if fd == self._wake_r:
                        os.read(fd, CHUNK)
                    elif fd in self._streams:
                        self._read(self._streams[fd])

    def _read(self, stream: Stream) -> None:
        try:
            data = os.read(stream.fd, CHUNK)
        except OSError:
            data = b""
        if not data:
            stream.eof = True
            del self._streams[stream.fd]
            os.close(stream.fd)
            return
        if stream.capturing and sum(map(len, stream.chunks)) < MAX_CAPTURE:
            stream.chunks.append(data)
        if self._log:
            self._log.write(data)
            self._log.flush()

    def close(self) -> None:
        """Close every stream: the terminal is gone."""
        with self._lock:
            self._closed = True
            for fd in self._streams:
                os.close(fd)
            self._streams.clear()
        os.write(self._wake_w, b"x")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    return data[data.rindex(")") + 2:].split()


def session_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[3]) if fields else None  # fields[0] is the state; sid is field 6


def is_alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def marked_processes(marker: str) -> list[int]:
    """Process ids whose environment carries ``FIRE_ATTEMPT=<marker>``."""
    needle = f"FIRE_ATTEMPT={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def attached_streams(pid: int, inodes: set[int]) -> bool:
    """Whether the process's stdout or stderr is one of the session's terminal streams."""
    for fd in (1, 2):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:[") and int(link[6:-1]) in inodes:
            return True
    return False


def run_command(term: Terminal, marker: str, req: dict[str, Any]) -> dict[str, Any]:
    env = dict(req.get("env") or os.environ)
    env.update(req.get("env_extra") or {})  # e.g. a CLI's key: this command only
    env["FIRE_ATTEMPT"] = marker
    out, out_w = term.pipe()
    err, err_w = term.pipe()
    start = time.monotonic()
    # Its own process group inside the session, as a shell with job control does, so a
    # timeout can interrupt the command and its foreground children.
    proc = subprocess.Popen(["bash", "-c", req["command"]], stdin=subprocess.DEVNULL,
                            stdout=out_w, stderr=err_w, cwd=req.get("cwd") or None, env=env,
                            **_OWN_GROUP)
    os.close(out_w)
    os.close(err_w)
    timed_out = False
    try:
        proc.wait(timeout=float(req.get("timeout", 600)))
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    # Collect what is already written; background jobs may hold the pipes open for good.
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline and (term.pending(out) or term.pending(err)):
        time.sleep(0.01)
    time.sleep(0.02)
    term.detach(out, err)
    return {
        "exit_code": 124 if timed_out else proc.returncode,
        "stdout": b"".join(out.chunks).decode("utf-8", "replace"),
        "stderr": b"".join(err.chunks).decode("utf-8", "replace"),
        "timed_out": timed_out,
        "duration_s": round(time.monotonic() - start, 4),
    }


def hangup(term: Terminal, marker: str, grace: float) -> dict[str, Any]:
    me, my_sid = os.getpid(), os.getsid(0)
    marked = [p for p in marked_processes(marker) if p != me]
    inodes = term.inodes
    hung, killed = [], []
    for pid in marked:
        if session_of(pid) == my_sid:
            try:
                os.kill(pid, signal.SIGHUP)
                hung.append(pid)
            except ProcessLookupError:
                pass
    for pid in marked:
        if attached_streams(pid, inodes):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    term.close()
    time.sleep(grace)
    survivors = [p for p in marked if is_alive(p)]
    return {"hung_up": hung, "killed": killed, "survivors": survivors}


def main(argv: list[str]) -> int:
    marker = argv[1]
    term = Terminal(argv[2] if len(argv) > 2 else None)
    # Children must not inherit an ignored SIGHUP from whoever started us.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req["op"] == "exec":
            try:
                reply = run_command(term, marker, req)
            except OSError as exc:
                reply = {"exit_code": 127, "stdout": "", "stderr": f"{exc}\n",
                         "timed_out": False, "duration_s": 0.0}
        elif req["op"] == "ping":  # is the session up, and does it lead its session?
            reply = {"pid": os.getpid(), "sid": os.getsid(0)}
        elif req["op"] == "hangup":
            reply = hangup(term, marker, float(req.get("grace", 0.5)))
            out.write(json.dumps(reply) + "\n")
            out.flush()
            return 0
        else:
            reply = {"error": f"unknown op {req['op']!r}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
