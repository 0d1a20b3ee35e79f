"""Run a panel — schedule, executor, the attempt store, resume, replacement, progress.

A run folder ``results/PANEL/RUN/`` holds ``prereg.json`` (the manifest the run was
verified against), ``attempts.jsonl`` and ``attempts/TASK/ARM/rN/`` (each attempt's logs;
replacement ``k`` in ``rN#k``). Running into a folder that already has records resumes it:
exactly the attempts the store does not show as finished run, in schedule order — the
scheduled attempts without a record, and the replacements that written records name in
``lineage.replaced_by``. Attempts that were in flight when the last run stopped (a
``started`` line without a ``finished`` one) run again from a clean folder.
"""

from __future__ import annotations

import shutil
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from fire_exp.records import AttemptRecord, StartedRecord, now_iso
from fire_exp.runner.cleanup import deferred_interrupts, reap
from fire_exp.runner.job_records import finish_record
from fire_exp.runner.model import AttemptJob, Executor, Panel, job_for
from fire_exp.runner.nothing_measured import NothingMeasured
from fire_exp.runner.progress import Progress, make_progress
from fire_exp.runner.replacement import owed_attempts, replacements_per_arm, split_id
from fire_exp.runner.stopping import Stop, StopMonitor
from fire_exp.runner.store import AttemptStore
from fire_exp.runner.worker_panel import panel_digest


@dataclass(frozen=True)
class RunResult:
    """What a run did."""

    run_dir: Path
    attempts_path: Path
    scheduled: int
    ran: int  # attempts run by this invocation, replacements included
    skipped: int  # scheduled attempts already complete before this invocation (resume)
    seconds: float
    replacements: dict[str, int] = field(default_factory=dict)  # per arm, whole run
    reaped: int = 0  # leftover processes of an earlier, killed run that were killed
    stop: Stop | None = None  # why the run stopped before its end (runner/stopping.py)
    sequential: str = ""  # where the sequential test stands at the end (a sequential plan)


def run_panel(panel: Panel, run_dir: Path, progress: Progress | None = None,
              executor: Executor | None = None) -> RunResult:
    """Run every attempt of ``panel`` that ``run_dir`` does not have yet.

    The run is named after its folder. ``executor`` overrides the panel's (tests).

    Raises:
        KeyboardInterrupt: after the executor has stopped the attempts in flight; what
            finished is in the store, what was in flight runs again on resume.
        InputError: another process is running into ``run_dir``.
    """
    t0 = time.monotonic()
    rule = panel.replacement
    with AttemptStore(run_dir / "attempts.jsonl") as store:
        reaped = reap(run_dir / "attempts")  # we hold the lock: these are a dead run's
        panel.environment.reap_orphans(run_dir)  # containers of provably dead runs
        finished = store.read().finished
        owed = owed_attempts(panel.schedule, finished)
        digest = panel_digest(panel)
        queue = deque(job_for(panel, run_dir, o.item, o.number, digest) for o in owed)
        replaces = {job.attempt_id: o.replaces for job, o in zip(queue, owed, strict=True)}
        monitor = StopMonitor.for_panel(panel, finished, run_dir)
        if monitor is not None:
            monitor.check(queue)  # a resumed run decides again from its records first
            monitor.clear_stale()
        progress = progress or make_progress(len(queue))
        guard = NothingMeasured(len(queue))
        ran = 0

        def on_start(job: AttemptJob) -> None:
            with deferred_interrupts():
                # A stale folder from an interrupted attempt is replaced, never mixed in.
                shutil.rmtree(job.attempt_dir, ignore_errors=True)
                store.started(StartedRecord(run=job.run, attempt_id=job.attempt_id,
                                            task=job.item.task, arm=job.item.arm,
                                            replicate=job.item.replicate,
                                            started_at=now_iso()))
                if monitor is not None:
                    monitor.started()

        def on_done(job: AttemptJob, record: AttemptRecord) -> None:
            nonlocal ran
            with deferred_interrupts():
                successor = rule.successor(record)
                record = finish_record(record, job, replaces.pop(job.attempt_id, None),
                                       successor)
                store.finished(record)
                ran += 1
                if successor is not None:
                    base = panel.schedule[job.item.position]
                    queue.append(job_for(panel, run_dir, base, split_id(successor)[1], digest))
                    replaces[successor] = record
                    progress.add(1)
                if monitor is not None:
                    monitor.finished(record)
                    monitor.check(queue)
            progress.finished(record)
            guard.finished(record)  # raises when the first attempts never got an answer

        try:
            (executor or panel.executor).run(panel, queue, on_start, on_done)
        finally:
            progress.close()
        finished = store.read().finished
        if monitor is not None:
            monitor.close(len(owed_attempts(panel.schedule, finished)))
        counts = replacements_per_arm(finished)
    return RunResult(run_dir=run_dir, attempts_path=store.path, scheduled=len(panel.schedule),
                     ran=ran, skipped=len(panel.schedule) - len(owed),
                     seconds=time.monotonic() - t0, replacements=counts, reaped=len(reaped),
                     stop=monitor.stop if monitor is not None else None,
                     sequential=monitor.state.line() if monitor and monitor.state else "")
