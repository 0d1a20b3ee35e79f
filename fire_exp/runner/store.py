"""The attempt store: ``attempts.jsonl`` of a run, written by the driver alone.

Each finished attempt is one JSON line, appended and fsynced after the attempt's log
folder is complete. A ``started`` line is written when an attempt begins, so the file
shows what was in flight when a run stopped. A torn last line (a crash mid-write) is
ignored on read and cut away before the next append. One driver at a time: the store
holds an exclusive lock on ``attempts.lock`` for as long as it is open (the kernel
releases it when the process dies, however it dies).

Crash testing: ``FIRE_EXP_CRASH_AT=N:POINT`` makes the process SIGKILL itself at its N-th
append (1-based), ``POINT`` being ``before`` (nothing written), ``torn`` (half the line
written and flushed) or ``after`` (the line written and fsynced).
"""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path
from typing import IO

from fire_exp.errors import InputError
from fire_exp.records import (
    AttemptRecord,
    ReadResult,
    StartedRecord,
    read_records,
    record_to_line,
)

CRASH_ENV = "FIRE_EXP_CRASH_AT"


class AttemptStore:
    """Append-only attempts file of one run.

    Args:
        path: the run's ``attempts.jsonl``.

    Raises:
        InputError: another live process holds the run folder.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _lock(path.with_name("attempts.lock"))
        self._repair_tail()
        self._writes = 0
        self._crash = _crash_plan()

    def close(self) -> None:
        """Release the run folder."""
        if not self._lock.closed:
            self._lock.close()

    def __enter__(self) -> AttemptStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _repair_tail(self) -> None:
        """Cut a torn final line so the next append starts on a fresh line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
            fh.truncate(data.rfind(b"\n") + 1)
            fh.flush()
            os.fsync(fh.fileno())

    def read(self) -> ReadResult:
        """The records so far.

        Raises:
            RecordsFileError: a complete line is malformed (names the line and field).
        """
        if not self.path.exists():
            return ReadResult(finished=[], started=[], torn_tail=False)
        return read_records(self.path)

    def started(self, record: StartedRecord) -> None:
        self._append(record_to_line(record))

    def finished(self, record: AttemptRecord) -> None:
        self._append(record_to_line(record))

    def _append(self, line: str) -> None:
        self._writes += 1
        data = (line + "\n").encode()
        point = self._crash.get(self._writes)
        if point == "before":
            _die()
        with open(self.path, "ab") as fh:
            if point == "torn":
                fh.write(data[: len(data) // 2])
                fh.flush()
                _die()
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if point == "after":
            _die()


def _lock(path: Path) -> IO[str]:
    fh = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        owner = fh.read().strip() or "another process"
        fh.close()
        raise InputError(path.parent, "attempts.lock", f"the run folder is in use by {owner}",
                         "wait for that run to end, or choose another run=NAME") from None
    fh.truncate(0)
    fh.write(f"pid {os.getpid()}\n")
    fh.flush()
    return fh


def _crash_plan() -> dict[int, str]:
    spec = os.environ.get(CRASH_ENV, "")
    plan: dict[int, str] = {}
    for part in filter(None, spec.split(",")):
        number, _, point = part.partition(":")
        plan[int(number)] = point or "after"
    return plan


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def sync_tree(folder: Path) -> None:
    """fsync every file under ``folder`` (an attempt's logs reach the disk before its line)."""
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
