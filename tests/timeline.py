"""Where the suite's time goes: one JSON line per test when ``FIRE_TEST_TIMELINE`` names a file.

Each line: the test's node id, its xdist worker, its wall start and end (``time.time()``,
so lines of different workers share one clock), its group, and the CPU seconds its worker
process and that process's waited-for children spent meanwhile (a Docker daemon's or a
model server's CPU is not counted: they are no test's children). Lines are appended with
one ``write`` each, so workers never interleave inside a line. ``python -m tests.timeline
FILE`` prints the critical path: the busiest workers, the longest tests, the groups' spans.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import parallel

ENV = "FIRE_TEST_TIMELINE"


class Timeline:
    """The plugin: inside the engine lock's wrapper, so a wait for the lock is not timed."""

    def __init__(self, path: str) -> None:
        self.path = path

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[object]:
        start, cpu = time.time(), os.times()
        try:
            return (yield)
        finally:
            self._write(item, start, cpu)

    def _write(self, item: pytest.Item, start: float, cpu: os.times_result) -> None:
        end, after = time.time(), os.times()
        line = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "start": round(start, 3), "end": round(end, 3),
                "group": parallel.group_of(item),
                "cpu": round(sum(after[:4]) - sum(cpu[:4]), 3)}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)


def register(config: pytest.Config) -> None:
    """Record the timeline when ``FIRE_TEST_TIMELINE`` names a file (each worker appends)."""
    path = os.environ.get(ENV)
    if path:
        config.pluginmanager.register(Timeline(path), "fire-timeline")


def summary(path: Path, top: int = 25) -> str:
    """The run's span, each worker's busy time, the longest tests and each group's span."""
    lines = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
    if not lines:
        return f"{path}: no test recorded"
    first = min(x["start"] for x in lines)
    last = max(x["end"] for x in lines)
    out = [f"{len(lines)} tests, span {last - first:.0f} s, "
           f"CPU in the workers {sum(x['cpu'] for x in lines):.0f} s"]
    busy: dict[str, float] = defaultdict(float)
    spans: dict[str, list[float]] = {}
    for x in lines:
        busy[x["worker"]] += x["end"] - x["start"]
        if x["group"]:
            span = spans.setdefault(x["group"], [x["start"], x["end"], 0.0])
            span[0], span[1] = min(span[0], x["start"]), max(span[1], x["end"])
            span[2] += x["end"] - x["start"]
    out += [f"worker {w}: busy {s:.0f} s" for w, s in sorted(busy.items())]
    out += [f"group {g}: {s - first:.0f}..{e - first:.0f} s (tests {t:.0f} s)"
            for g, (s, e, t) in sorted(spans.items())]
    out.append(f"the {top} longest (wall s, cpu s, worker, from..to):")
    for x in sorted(lines, key=lambda x: x["start"] - x["end"])[:top]:
        out.append(f"  {x['end'] - x['start']:7.1f} {x['cpu']:7.1f} {x['worker']:>4} "
                   f"{x['start'] - first:6.0f}..{x['end'] - first:<6.0f} {x['test']}")
    by_file: dict[str, float] = defaultdict(float)
    for x in lines:
        by_file[x["test"].split("::")[0]] += x["end"] - x["start"]
    out.append(f"the {top} costliest files (summed wall s):")
    for name, total in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"  {total:7.1f} {name}")
    return "\n".join(out)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:3])))
