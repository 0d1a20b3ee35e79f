"""Layer 3: run a panel — schedule, executor, the attempt store, resume, progress.

A run folder ``results/PANEL/RUN/`` holds ``prereg.json`` (the manifest the run was
verified against), ``attempts.jsonl`` and ``attempts/TASK/ARM/rN/`` (each attempt's logs).
Running into a folder that already has finished attempts resumes it: only scheduled
attempts without a finished record run, in schedule order.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from fire_exp.records import AttemptRecord, StartedRecord
from fire_exp.registry import REGISTRY
from fire_exp.runner.attempt import now_iso
from fire_exp.runner.build import Panel
from fire_exp.runner.executors import AttemptJob
from fire_exp.runner.store import AttemptStore


@dataclass(frozen=True)
class RunResult:
    """What a run did."""

    run_dir: Path
    attempts_path: Path
    scheduled: int
    ran: int
    skipped: int  # already finished before this invocation (resume)
    seconds: float


class PlainProgress:
    """One log line per finished attempt (the live display is used on a terminal)."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.stream = total, stream
        self.done = 0
        self.passed: Counter[str] = Counter()
        self.failed = 0
        self.t0 = time.monotonic()

    def finished(self, record: AttemptRecord) -> None:
        self.done += 1
        self.passed[record.arm] += int(record.passed)
        cause = f" [{record.cause.value}]" if record.cause else ""
        elapsed = time.monotonic() - self.t0
        print(f"[{self.done}/{self.total}] {record.attempt_id}: reward={record.reward}"
              f"{cause} ({record.timings.total_s:.1f}s; elapsed {elapsed:.0f}s)",
              file=self.stream, flush=True)


def job_for(panel: Panel, run_dir: Path, item_index: int) -> AttemptJob:
    item = panel.schedule[item_index]
    rel = Path("attempts") / item.task / item.arm / f"r{item.replicate}"
    return AttemptJob(config=panel.config, item=item, attempt_id=item.attempt_id,
                      attempt_dir=str((run_dir / rel).resolve()), log_dir=rel.as_posix())


def run_panel(panel: Panel, run_dir: Path, progress: PlainProgress | None = None) -> RunResult:
    """Run every scheduled attempt of ``panel`` that ``run_dir`` has not finished yet."""
    t0 = time.monotonic()
    store = AttemptStore(run_dir / "attempts.jsonl")
    done = store.finished_ids()
    jobs = [job_for(panel, run_dir, i) for i, item in enumerate(panel.schedule)
            if item.attempt_id not in done]
    progress = progress or PlainProgress(len(jobs))
    executor_cfg = panel.config.executor
    executor = REGISTRY.get("executor", executor_cfg.name)(**executor_cfg.params)

    def on_start(job: AttemptJob) -> None:
        # A stale folder from an interrupted attempt is replaced, never mixed in.
        shutil.rmtree(job.attempt_dir, ignore_errors=True)
        store.started(StartedRecord(run=panel.config.run, attempt_id=job.attempt_id,
                                    task=job.item.task, arm=job.item.arm,
                                    replicate=job.item.replicate, started_at=now_iso()))

    def on_done(job: AttemptJob, record: AttemptRecord) -> None:
        store.finished(record)
        progress.finished(record)

    executor.run(panel, jobs, on_start, on_done)
    return RunResult(run_dir=run_dir, attempts_path=store.path, scheduled=len(panel.schedule),
                     ran=len(jobs), skipped=len(done), seconds=time.monotonic() - t0)
