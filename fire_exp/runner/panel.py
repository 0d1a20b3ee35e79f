"""Layer 3: run a panel — schedule, executor, the attempt store, resume, replacement, progress.

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
from dataclasses import dataclass, field, replace
from pathlib import Path

from fire_exp.environments.base import Environment
from fire_exp.records import AttemptRecord, Lineage, StartedRecord
from fire_exp.registry import REGISTRY
from fire_exp.runner.attempt import now_iso
from fire_exp.runner.build import Panel
from fire_exp.runner.cleanup import deferred_interrupts, reap
from fire_exp.runner.executors import AttemptJob, Executor, panel_digest
from fire_exp.runner.progress import Progress, make_progress
from fire_exp.runner.replacement import (
    ReplacementRule,
    owed_attempts,
    replacement_id,
    replacement_seed,
    replacements_per_arm,
    split_id,
)
from fire_exp.runner.schedule import ScheduledAttempt
from fire_exp.runner.store import AttemptStore


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


def job_for(panel: Panel, run_dir: Path, item: ScheduledAttempt, number: int = 0,
            digest: str = "") -> AttemptJob:
    """The job of scheduled attempt ``item`` (``number`` > 0: its replacement)."""
    attempt_id = replacement_id(item.attempt_id, number)
    item = replace(item, seed=replacement_seed(panel.config.seed, item, number))
    rel = Path("attempts") / attempt_id
    return AttemptJob(config=panel.config, item=item, attempt_id=attempt_id,
                      attempt_dir=str((run_dir / rel).resolve()), log_dir=rel.as_posix(),
                      panel_digest=digest)


def _lineage(record: AttemptRecord, replaced: AttemptRecord | None,
             successor: str | None) -> Lineage:
    # cause: why this record is part of a chain — the cause of the attempt it replaces,
    # or, for an original that is replaced, its own.
    if replaced is not None:
        cause = replaced.cause.value if replaced.cause else None
    else:
        cause = record.cause.value if successor and record.cause else None
    return Lineage(replaces=replaced.attempt_id if replaced else None, replaced_by=successor,
                   cause=cause)


def run_panel(panel: Panel, run_dir: Path, progress: Progress | None = None,
              executor: Executor | None = None) -> RunResult:
    """Run every attempt of ``panel`` that ``run_dir`` does not have yet.

    Raises:
        KeyboardInterrupt: after the executor has stopped the attempts in flight; what
            finished is in the store, what was in flight runs again on resume.
        InputError: another process is running into ``run_dir``.
    """
    t0 = time.monotonic()
    rule = ReplacementRule.from_config(panel.config.panel.replacement,
                                       f"configs/panel/{panel.name}.yaml")
    with AttemptStore(run_dir / "attempts.jsonl") as store:
        reaped = reap(run_dir / "attempts")  # we hold the lock: these are a dead run's
        environment = REGISTRY.get("environment", panel.config.environment.name)
        if isinstance(environment, type) and issubclass(environment, Environment):
            environment.reap_orphans(run_dir)  # containers of provably dead runs
        owed = owed_attempts(panel.schedule, store.read().finished)
        digest = panel_digest(panel)
        queue = deque(job_for(panel, run_dir, o.item, o.number, digest) for o in owed)
        replaces = {job.attempt_id: o.replaces for job, o in zip(queue, owed, strict=True)}
        progress = progress or make_progress(len(queue))
        if executor is None:
            cfg = panel.config.executor
            executor = REGISTRY.get("executor", cfg.name)(**cfg.params)
        ran = 0

        def on_start(job: AttemptJob) -> None:
            with deferred_interrupts():
                # A stale folder from an interrupted attempt is replaced, never mixed in.
                shutil.rmtree(job.attempt_dir, ignore_errors=True)
                store.started(StartedRecord(run=panel.config.run, attempt_id=job.attempt_id,
                                            task=job.item.task, arm=job.item.arm,
                                            replicate=job.item.replicate,
                                            started_at=now_iso()))

        def on_done(job: AttemptJob, record: AttemptRecord) -> None:
            nonlocal ran
            with deferred_interrupts():
                successor = rule.successor(record)
                record = record.model_copy(update={"lineage": _lineage(
                    record, replaces.pop(job.attempt_id, None), successor)})
                store.finished(record)
                ran += 1
                if successor is not None:
                    base = panel.schedule[job.item.position]
                    queue.append(job_for(panel, run_dir, base, split_id(successor)[1], digest))
                    replaces[successor] = record
                    progress.add(1)
            progress.finished(record)

        try:
            executor.run(panel, queue, on_start, on_done)
        finally:
            progress.close()
        counts = replacements_per_arm(store.read().finished)
    return RunResult(run_dir=run_dir, attempts_path=store.path, scheduled=len(panel.schedule),
                     ran=ran, skipped=len(panel.schedule) - len(owed),
                     seconds=time.monotonic() - t0, replacements=counts, reaped=len(reaped))
