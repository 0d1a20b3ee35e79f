"""What an interrupted or killed run leaves behind, and keeping interrupts out of writes.

Every process an attempt starts carries ``FIRE_ATTEMPT=<marker>`` and ``FIRE_WORKDIR`` (its
box's working folder) in its environment. A driver killed with SIGKILL cannot stop its
attempts, so a resumed run first kills the processes whose working folder lies in its own
run folder: it holds the run's lock, so none of them belongs to a live run.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from fire_exp.environments.inbox.procs import environ, is_alive, pids, start_time


def attempt_processes(root: Path) -> dict[int, str]:
    """Processes of this user whose ``FIRE_WORKDIR`` lies under ``root``: pid -> marker."""
    prefix = str(root.resolve()) + os.sep
    found: dict[int, str] = {}
    for pid in pids():
        if pid == os.getpid():
            continue
        try:
            env = environ(pid)
        except OSError:
            continue
        marker, workdir = env.get(b"FIRE_ATTEMPT"), env.get(b"FIRE_WORKDIR")
        if marker is not None and workdir is not None and \
                (workdir.decode(errors="replace") + os.sep).startswith(prefix):
            found[pid] = marker.decode(errors="replace")
    return found


def marker_owner(marker: str) -> tuple[str, int, str | None] | None:
    """``(attempt, pid, start)`` of a local environment's marker, ``ATTEMPT.PID-START.OBJECT``
    (the owner's pid and start time: a pid alone may name another process once the pids
    wrap) or ``ATTEMPT.PID.OBJECT`` as before (start None); None for another shape.

    >>> marker_owner("t.a.0.1234-567.7f"), marker_owner("t.1.7f"), marker_owner("t.x.7f")
    (('t.a.0', 1234, '567'), ('t', 1, None), None)
    """
    parts = marker.rsplit(".", 2)
    if len(parts) != 3:
        return None
    pid, dash, start = parts[1].partition("-")
    if not pid.isdigit() or (dash and not start.isdigit()):
        return None
    return parts[0], int(pid), start if dash else None


def owner_alive(marker: str) -> bool:
    """Whether the process that made an attempt's marker (:func:`marker_owner`) still runs;
    a marker of another shape counts as owned by a live process (nothing is killed on a
    guess).

    >>> owner_alive("t.1.7f"), owner_alive("t.1-0.7f"), owner_alive("t.x.7f")
    (True, False, True)
    """
    owner = marker_owner(marker)
    if owner is None:
        return True
    _, pid, start = owner
    return is_alive(pid) and (start is None or start_time(pid) == start)


def reap(root: Path, *, orphans_only: bool = False) -> list[int]:
    """SIGKILL attempt processes working under ``root``; returns their ids.

    Args:
        root: a run folder, or a Ray worker's scratch folder.
        orphans_only: kill only processes whose owner (the marker's pid) has died.
    """
    killed = []
    for pid, marker in attempt_processes(root).items():
        if orphans_only and owner_alive(marker):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return killed


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, so a store write is never cut in two.

    Outside the main thread (where Python runs signal handlers) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[signal.Signals] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        pending.append(signal.Signals(signum))

    saved = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if pending:
            handler = saved[pending[0]]
            if callable(handler):
                handler(pending[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(pending[0])
