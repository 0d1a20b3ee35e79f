"""The process utilities of an attempt, read from ``/proc`` (standard library only).

One copy, used on both sides: the session host imports it inside the box (it is shipped
beside the program, see ``inbox/__init__.py``), and the host side imports it as
``fire_exp.environments.inbox.procs`` (the local environment's cleanup, the runner's reaping
of dead runs, Docker's orphan check). Every process of an attempt carries the marker
``FIRE_ATTEMPT=<marker>`` in its environment, so one that left the agent's session
(``setsid``) is still found by its environment.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def pids() -> Iterator[int]:
    """The process ids on this machine (or in this box) right now."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    return data[data.rindex(")") + 2:].split()


def start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22; None:
    it is gone): with the pid, names one process, as pids are used again."""
    fields = _stat_fields(pid)
    return fields[19] if fields and fields[0] not in ("Z", "X") else None


def session_of(pid: int) -> int | None:
    """The session id of ``pid`` (None: it is gone)."""
    fields = _stat_fields(pid)
    return int(fields[3]) if fields else None  # fields[0] is the state; sid is field 6


def is_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _libc() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


_LIBC = _libc()


def as_owner(pid: int, read: Callable[..., T], *args: Any) -> T:
    """``read(*args)`` a file of ``/proc/PID``; refused, again with this thread's file-system
    user switched to the process's owner. Root in a container lacks CAP_SYS_PTRACE, so it
    may read another user's ``environ`` and ``fd`` only as that user (the agent's)."""
    try:
        return read(*args)
    except PermissionError:
        if _LIBC is None or os.geteuid() != 0:
            raise
    owner = os.stat(f"/proc/{pid}")
    _LIBC.setfsgid(owner.st_gid)  # per thread: the caller's other threads stay root
    _LIBC.setfsuid(owner.st_uid)
    try:
        return read(*args)
    finally:
        _LIBC.setfsuid(0)
        _LIBC.setfsgid(0)


def _read_environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as fh:
        return fh.read()


def environ(pid: int) -> dict[bytes, bytes]:
    """The environment ``pid`` started with. Raises OSError when it cannot be read."""
    raw = as_owner(pid, _read_environ, pid)
    return dict(v.split(b"=", 1) for v in raw.split(b"\0") if b"=" in v)


def marked_processes(marker: str, uids: Collection[int] = ()) -> list[int]:
    """Process ids whose environment carries ``FIRE_ATTEMPT=<marker>``, and every process
    of the users ``uids`` (the agent's own user: none of its processes escapes by dropping
    the marker from its environment)."""
    wanted = marker.encode()
    found = []
    for pid in pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid in uids or \
                    environ(pid).get(b"FIRE_ATTEMPT") == wanted:
                found.append(pid)
        except OSError:
            continue
    return found


def kill_marked(marker: str, wait_s: float = 5.0, uids: Collection[int] = ()) -> list[int]:
    """SIGKILL every other process carrying the marker (and of ``uids``), again until none
    is left, so a process forked while we kill is caught too; returns the ids killed."""
    me, deadline = os.getpid(), time.monotonic() + wait_s
    killed: list[int] = []
    while time.monotonic() < deadline:
        alive = [p for p in marked_processes(marker, uids) if p != me and is_alive(p)]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed += [p for p in alive if p not in killed]
        time.sleep(0.02)
    return killed


def attached_streams(pid: int, inodes: Collection[int]) -> bool:
    """Whether the process's stdout or stderr is one of the pipes ``inodes``."""
    for fd in (1, 2):
        try:
            link = as_owner(pid, os.readlink, f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:[") and int(link[6:-1]) in inodes:
            return True
    return False


def pipe_holders(inode: int) -> list[int]:
    """Process ids other than this one with a descriptor on the pipe ``inode``."""
    me, link = os.getpid(), f"pipe:[{inode}]"

    def holds(pid: int) -> bool:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == link
                   for fd in os.listdir(f"/proc/{pid}/fd"))

    found = []
    for pid in pids():
        if pid == me:
            continue
        try:
            if as_owner(pid, holds, pid):
                found.append(pid)
        except OSError:
            continue
    return found


def oom_kills() -> int | None:
    """This cgroup's out-of-memory kills so far (None: no cgroup v2 to read)."""
    try:
        with open("/sys/fs/cgroup/memory.events") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None
