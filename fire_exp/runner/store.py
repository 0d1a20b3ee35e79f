"""The attempt store: ``attempts.jsonl`` of a run, written by the driver alone.

Each finished attempt is one JSON line, appended and fsynced after the attempt's log
folder is complete. A ``started`` line is written when an attempt begins, so the file
shows what was in flight when a run stopped. A torn last line (a crash mid-write) is
ignored on read and cut away before the next append.
"""

from __future__ import annotations

import os
from pathlib import Path

from fire_exp.records import (
    AttemptRecord,
    ReadResult,
    StartedRecord,
    append_records,
    read_records,
)


class AttemptStore:
    """Append-only attempts file of one run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()

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
            cut = data.rfind(b"\n") + 1
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())

    def read(self) -> ReadResult:
        if not self.path.exists():
            return ReadResult(finished=[], started=[], torn_tail=False)
        return read_records(self.path)

    def finished_ids(self) -> set[str]:
        return {r.attempt_id for r in self.read().finished}

    def started(self, record: StartedRecord) -> None:
        append_records(self.path, [record])

    def finished(self, record: AttemptRecord) -> None:
        append_records(self.path, [record])
