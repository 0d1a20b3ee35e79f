"""Progress of a run: a live rich display on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, Protocol, TextIO

from fire_exp.records import AttemptRecord


class Progress(Protocol):
    """What the panel runner reports as attempts finish."""

    def finished(self, record: AttemptRecord) -> None:
        """One attempt's record was written."""
        ...

    def add(self, n: int) -> None:
        """``n`` more attempts are owed (replacements)."""
        ...

    def close(self) -> None:
        """The run ended (or was interrupted)."""
        ...


class Tally:
    """Counts shared by both displays."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.passed: Counter[str] = Counter()
        self.ran: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()  # by cause
        self.t0 = time.monotonic()

    def count(self, record: AttemptRecord) -> None:
        self.done += 1
        self.ran[record.arm] += 1
        self.passed[record.arm] += int(record.passed)
        if record.cause is not None:
            self.failures[record.cause.value] += 1

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def remaining(self) -> float | None:
        """Seconds left at the pace so far (None before the first attempt)."""
        if not self.done:
            return None
        return self.elapsed() / self.done * max(self.total - self.done, 0)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class PlainProgress(Tally):
    """One log line per finished attempt."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        super().__init__(total)
        self.stream = sys.stderr if stream is None else stream  # stderr as it is now

    def finished(self, record: AttemptRecord) -> None:
        self.count(record)
        cause = f" [{record.cause.value}]" if record.cause else ""
        invalid = " INVALID" if not record.valid else ""
        print(f"[{self.done}/{self.total}] {record.attempt_id}: reward={record.reward}"
              f"{cause}{invalid} ({record.timings.total_s:.1f}s; elapsed "
              f"{_clock(self.elapsed())}, left ~{_clock(self.remaining())})",
              file=self.stream, flush=True)

    def add(self, n: int) -> None:
        self.total += n

    def close(self) -> None:
        pass


class RichProgress(Tally):
    """A live table: attempts done/total, passes per arm, failures, elapsed and remaining."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        super().__init__(total)
        # Live re-renders ``self`` (``__rich__``) on every refresh, so the clocks tick.
        self.live = Live(self, console=Console(file=sys.stderr if stream is None else stream),
                         refresh_per_second=4, transient=False)
        self.live.start()

    def __rich__(self) -> Any:
        return self._render()

    def _render(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        header = Text(f"attempts {self.done}/{self.total}   elapsed {_clock(self.elapsed())}"
                      f"   left ~{_clock(self.remaining())}")
        table = Table()
        table.add_column("arm")
        table.add_column("passed", justify="right")
        for arm in sorted(self.ran):
            table.add_row(arm, f"{self.passed[arm]}/{self.ran[arm]}")
        if self.failures:
            table.add_row("failures", ", ".join(f"{c} {n}" for c, n in
                                                sorted(self.failures.items())))
        return Group(header, table)

    def finished(self, record: AttemptRecord) -> None:
        self.count(record)
        self.live.refresh()

    def add(self, n: int) -> None:
        self.total += n

    def close(self) -> None:
        self.live.stop()


def make_progress(total: int, stream: TextIO | None = None) -> Progress:
    """The live display when ``stream`` (default: ``sys.stderr`` at the call, so a caller
    that redirected it gets the lines) is a terminal, plain lines otherwise."""
    stream = sys.stderr if stream is None else stream
    return RichProgress(total, stream) if stream.isatty() else PlainProgress(total, stream)
