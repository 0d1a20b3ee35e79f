"""The agent's session: a session leader that runs the agent's commands (stdlib only).

Started in a new session (``setsid``), this process reads JSON requests on stdin and
answers one JSON line each on stdout. Every agent command is a ``bash -c`` child of it
(``--shell``: which bash; a Docker box's is the box runtime's, ``docker_runtime.py``), so
the command and anything it leaves behind belong to the agent's session, like jobs of a
terminal. Every process carries the marker ``FIRE_ATTEMPT=<id>`` in its environment, so
processes that left the session (``setsid``) can still be found by process id.

Requests::

    {"op": "exec", "command": "...", "timeout": 30, "cwd": "/app", "env": {...},
     "env_extra": {...}, "user": "fire-agent", "home": "/home/x", "capture": "/dir"}
    {"op": "hangup", "grace": 0.5}
    {"op": "ping"}

``user`` runs the command as that box user (the host itself stays root, out of the
agent's reach: an unprivileged agent can neither signal it nor read its files); ``home``
is that user's ``HOME``. ``"shield": true`` (a coding-agent CLI) runs it with the user's
group as its real group and :data:`CLI_GID` as its effective and saved one, through
``bash -p`` (which keeps them) into the CLI's ``exec``: an exec with effective and real
groups apart makes the CLI non-dumpable, so the commands it starts (their shells drop the
effective group: same user, same groups, none of the CLI's) can neither ``ptrace`` it nor
read or write its memory or ``environ`` through ``/proc`` (the kernel's
``ptrace_may_access`` refuses both the credentials' mismatch and the non-dumpable
process). They may still signal it: a killed CLI ends its run early, which the record
names. ``capture`` records the command's stdout and stderr into
``DIR/stdout`` and ``DIR/stderr`` — files of the host's own user (0600 in a 0700 folder)
written from pipes the host reads — until the command's process exits. Whoever else still
holds those pipes then (a process that took the CLI's output through ``/proc``) is named
in the reply and killed, so nothing is appended after the command ended; the reply gives
each file's size and SHA-256, so a later change to a file is evident. The reply also
names the signal that ended the command (``signal``) and the out-of-memory kills of the
box's cgroup while it ran (``oom_kills``; None where the cgroup cannot be read): a
command killed by a signal nobody outside the box sent was killed from inside.

``hangup`` is the end of the agent's session, as when a terminal closes: every process
still in the session receives SIGHUP (``nohup`` ignores it), and every process whose
stdout or stderr is still one of the session's terminal streams is killed (its terminal is
gone). A server started with a plain ``&`` therefore dies; one started with ``setsid`` or
``nohup`` *and* redirected streams survives. The host then exits.

The watchdog: when the host's input ends before a hangup (the harness died, even by
SIGKILL: its end of the pipe or of the ``docker exec`` closes), every process of the
attempt (marker ``FIRE_ATTEMPT``) is killed at once and the host exits, so nothing the
agent started — a CLI holding its key — outlives the harness by more than a moment.

The files transport, for a box whose provider offers only one-shot exec and file transfer
(``--files FOLDER LEASE_S``, see ``session_files.py``): the host runs detached, reads its
requests from a FIFO, writes each reply to a file of its own, and its watchdog watches a
lease file the harness renews, since no stream ends when the harness dies.

This file runs standalone (``python3 session_host.py MARKER LOGFILE``), with ``procs.py``
beside it: on this machine with the harness's Python (the local environment), in a
container with the box runtime's python3, never the image's. So it imports nothing outside
the standard library and that one module; nothing on the host side imports it
(``inbox/__init__.py``). Its children get the environment the host was started with
(:data:`BOX_ENV`), not what Python added to its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

if __package__:  # imported as a module of fire_exp (the test suite's doctest collection)
    from . import procs
else:  # run as a program: procs.py was shipped beside it
    import procs  # type: ignore[no-redef]

CHUNK = 65536
# The users agent commands ran as: every process of theirs is the attempt's.
AGENT_UIDS: set[int] = set()
MAX_CAPTURE = 1 << 20  # per command and stream; the rest goes to the terminal log only
# The effective group of a shielded command (a CLI): no user or file of the box has it.
CLI_GID = 64999
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
            try:
                self._log.write(data)
                self._log.flush()
            except OSError:  # a full disk: the session goes on, its log stops here
                self._log = None

    def close(self) -> None:
        """Close every stream: the terminal is gone."""
        with self._lock:
            self._closed = True
            for fd in self._streams:
                os.close(fd)
            self._streams.clear()
        os.write(self._wake_w, b"x")


class Capture:
    """A command's stdout and stderr, recorded by this process into files of its own."""

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.lstat(folder).st_uid != os.getuid():
            raise OSError(f"{folder} is not the session host's own folder")
        os.chmod(folder, 0o700)
        self.files: dict[str, dict[str, Any]] = {}
        self.fds: dict[int, tuple[str, int, Any]] = {}  # read end -> name, file, digest
        self.write_ends: list[int] = []
        for name in ("stdout", "stderr"):
            path = os.path.join(folder, name)
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            r, w = os.pipe()
            self.fds[r] = (name, out, hashlib.sha256())
            self.files[name] = {"path": path, "bytes": 0, "sha256": ""}
            self.write_ends.append(w)
        self.inodes = [os.fstat(r).st_ino for r in self.fds]

    def pump(self, until: Any) -> None:
        """Record what arrives until ``until()`` is true (the command exited)."""
        while self.fds and not until():
            self._read_ready(0.05)

    def finish(self, deadline_s: float = 5.0) -> list[int]:
        """After the command exited: kill whoever else holds its pipes, record what they
        held until end of file, close. Returns the holders' process ids."""
        holders = sorted({p for ino in self.inodes for p in procs.pipe_holders(ino)})
        for pid in holders:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + deadline_s
        while self.fds and time.monotonic() < deadline:
            self._read_ready(0.05)
        for r in list(self.fds):
            self._close(r)
        return holders

    def _read_ready(self, wait: float) -> None:
        ready, _, _ = select.select(list(self.fds), [], [], wait)
        for r in ready:
            data = os.read(r, CHUNK)
            if not data:
                self._close(r)
                continue
            name, out, digest = self.fds[r]
            os.write(out, data)
            digest.update(data)
            self.files[name]["bytes"] += len(data)

    def _close(self, r: int) -> None:
        name, out, digest = self.fds.pop(r)
        self.files[name]["sha256"] = digest.hexdigest()
        os.close(out)
        os.close(r)


def _as_user(req: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Popen arguments that run the child as ``req["user"]`` (none: as this process),
    shielded (``req["shield"]``: its effective group :data:`CLI_GID`) if asked."""
    name = req.get("user")
    if not name:
        return {}
    if sys.version_info < (3, 9):  # noqa: UP036 - a container may carry an older python3
        raise OSError("running the agent as another user needs python3 >= 3.9 in the box")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise OSError(f"no user {name!r} in the box") from None
    env.update(HOME=req.get("home") or entry.pw_dir, USER=name, LOGNAME=name)
    if entry.pw_uid != 0:
        AGENT_UIDS.add(entry.pw_uid)
    if req.get("shield"):
        return {"preexec_fn": _shield(entry.pw_uid, entry.pw_gid)}
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _shield(uid: int, gid: int) -> Any:
    """The child's switch to ``uid`` with real group ``gid`` and effective group
    :data:`CLI_GID` (see the module docstring); its own process group too."""
    def switch() -> None:
        os.setpgrp()
        os.setgroups([])
        os.setresgid(gid, CLI_GID, CLI_GID)
        os.setresuid(uid, uid, uid)
    return switch


def _environ_at_start() -> dict[str, str]:
    """The environment this process was started with, as the kernel keeps it. Python may
    have added to ``os.environ`` before any code of ours ran (``LC_CTYPE``, its C locale
    coercion, in a box without ``LANG``); the agent's commands get what the box gave."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}


BOX_ENV = _environ_at_start()
# The agent's shell (``--shell``): ``bash`` from PATH, or a box runtime's (docker_runtime.py).
SHELL: list[str] = ["bash"]


def run_command(term: Terminal, marker: str, req: dict[str, Any]) -> dict[str, Any]:
    env = dict(req.get("env") or BOX_ENV)
    env.update(req.get("env_extra") or {})  # e.g. a CLI's key: this command only
    env["FIRE_ATTEMPT"] = marker
    user = _as_user(req, env)
    capture = Capture(req["capture"]) if req.get("capture") else None
    out: Stream | None = None
    err: Stream | None = None
    if capture is None:
        (out, out_w), (err, err_w) = term.pipe(), term.pipe()
    else:
        out_w, err_w = capture.write_ends
    oom_before = procs.oom_kills()
    start = time.monotonic()
    # Its own process group inside the session, as a shell with job control does, so a
    # timeout can interrupt the command and its foreground children.
    shell = [*SHELL, "-p", "-c"] if "preexec_fn" in user else [*SHELL, "-c"]
    group = {} if "preexec_fn" in user else _OWN_GROUP  # a shield makes its own group
    try:
        proc = subprocess.Popen([*shell, req["command"]], stdin=subprocess.DEVNULL,
                                stdout=out_w, stderr=err_w, cwd=req.get("cwd") or None,
                                env=env, **group, **user)
    finally:
        os.close(out_w)
        os.close(err_w)
    timed_out = False
    limit = start + float(req.get("timeout", 600))
    if capture is not None:
        capture.pump(lambda: proc.poll() is not None or time.monotonic() > limit)
    try:
        proc.wait(timeout=max(limit - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    reply: dict[str, Any] = {}
    if capture is not None:
        reply["holders"] = capture.finish()
        reply["capture"] = capture.files
    else:
        _collect(term, out, err)
    oom_after = procs.oom_kills()
    return reply | {
        "exit_code": 124 if timed_out else proc.returncode,
        "stdout": _text(out), "stderr": _text(err),
        "timed_out": timed_out,
        "duration_s": round(time.monotonic() - start, 4),
        "signal": -proc.returncode if proc.returncode < 0 and not timed_out else None,
        "oom_kills": None if oom_before is None or oom_after is None
        else oom_after - oom_before,
    }


def _collect(term: Terminal, out: Stream | None, err: Stream | None) -> None:
    """Collect what is already written; background jobs may hold the pipes open for good."""
    assert out is not None and err is not None
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline and (term.pending(out) or term.pending(err)):
        time.sleep(0.01)
    time.sleep(0.02)
    term.detach(out, err)


def _text(stream: Stream | None) -> str:
    return b"".join(stream.chunks).decode("utf-8", "replace") if stream is not None else ""


def hangup(term: Terminal, marker: str, grace: float) -> dict[str, Any]:
    me, my_sid = os.getpid(), os.getsid(0)
    marked = [p for p in procs.marked_processes(marker, AGENT_UIDS) if p != me]
    inodes = term.inodes
    hung, killed = [], []
    for pid in marked:
        if procs.session_of(pid) == my_sid:
            try:
                os.kill(pid, signal.SIGHUP)
                hung.append(pid)
            except ProcessLookupError:
                pass
    for pid in marked:
        if procs.attached_streams(pid, inodes):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    term.close()
    time.sleep(grace)
    survivors = [p for p in marked if procs.is_alive(p)]
    return {"hung_up": hung, "killed": killed, "survivors": survivors}


class Watchdog:
    """Reads the host's requests; when its input ends before a hangup, the harness is gone:
    every process of the attempt dies and the host exits.

    With a lease (the files transport: the input is a FIFO that never ends) the harness
    is gone when it has not renewed the lease file (its modification time) for
    ``lease_s`` seconds, or removed it.
    """

    def __init__(self, marker: str, stdin: Any, lease: tuple[str, float] | None = None
                 ) -> None:
        self.marker = marker
        self.requests: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._ended = False
        self._lease = lease
        threading.Thread(target=self._read, args=(stdin,), daemon=True).start()

    def end(self) -> None:
        """The session ended by a hangup: end of input is expected from now on."""
        with self._lock:
            self._ended = True

    def _read(self, stdin: Any) -> None:
        if self._lease is None:
            for line in stdin:
                if line.strip():
                    self.requests.put(line)
        else:
            self._read_leased(stdin.fileno(), *self._lease)
        with self._lock:
            if self._ended:
                return
            procs.kill_marked(self.marker, uids=AGENT_UIDS)
        os._exit(0)

    def _read_leased(self, fd: int, path: str, lease_s: float) -> None:
        pending = b""
        while not _lapsed(path, lease_s):
            ready, _, _ = select.select([fd], [], [], 0.25)
            if not ready:
                continue
            data = os.read(fd, CHUNK)
            if not data:
                return
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                if line.strip():
                    self.requests.put(line.decode())


def _lapsed(path: str, lease_s: float) -> bool:
    try:
        return time.time() - os.stat(path).st_mtime > lease_s
    except OSError:
        return True


class Replies:
    """Where replies go: one JSON line each on stdout, or (the files transport) one file
    each, ``FOLDER/ID``, named by the request's ``id`` and written whole before it appears."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder

    def send(self, req: dict[str, Any], reply: dict[str, Any]) -> None:
        line = json.dumps(reply) + "\n"
        if self.folder is None:
            sys.stdout.write(line)
            sys.stdout.flush()
            return
        name = str(req.get("id", ""))
        if not name.isdigit():
            name = "unnumbered"
        part = os.path.join(self.folder, name + ".part")
        with open(part, "w") as fh:
            fh.write(line)
        os.rename(part, os.path.join(self.folder, name))


def answer(term: Terminal, marker: str, req: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request other than a hangup."""
    if req["op"] == "exec":
        try:
            return run_command(term, marker, req)
        except OSError as exc:
            return {"exit_code": 127, "stdout": "", "stderr": f"{exc}\n",
                    "timed_out": False, "duration_s": 0.0}
    if req["op"] == "ping":  # is the session up, and does it lead its session?
        return {"pid": os.getpid(), "sid": os.getsid(0)}
    return {"error": f"unknown op {req['op']!r}"}


def main(argv: list[str]) -> int:
    """``session_host.py MARKER [LOGFILE] [--files FOLDER LEASE_S] [--shell JSON]``: with
    ``--files``, requests arrive on stdin (a FIFO), replies go to ``FOLDER/replies/ID`` and
    the lease is ``FOLDER/lease`` (the files transport, ``session_files.py``); ``--shell``
    is the agent's shell as a JSON list of words (default ``["bash"]``), run with ``-c``."""
    args = argv[1:]
    files = None
    if "--shell" in args:
        at = args.index("--shell")
        SHELL[:] = [str(word) for word in json.loads(args[at + 1])]
        del args[at:at + 2]
    if "--files" in args:
        at = args.index("--files")
        files = (args[at + 1], float(args[at + 2]))
        del args[at:at + 3]
    marker = args[0]
    if files and os.getsid(0) != os.getpid():
        os.setsid()  # started detached by a one-shot exec: lead a session of our own
    term = Terminal(args[1] if len(args) > 1 else None)
    # Children must not inherit an ignored SIGHUP from whoever started us.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    lease = (os.path.join(files[0], "lease"), files[1]) if files else None
    watchdog = Watchdog(marker, sys.stdin, lease)
    replies = Replies(os.path.join(files[0], "replies") if files else None)
    while True:
        req = json.loads(watchdog.requests.get())
        if req["op"] == "hangup":
            watchdog.end()
            replies.send(req, hangup(term, marker, float(req.get("grace", 0.5))))
            return 0
        replies.send(req, answer(term, marker, req))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
