"""The records the driver writes for jobs: every record completed with its log folder and
replacement lineage (:func:`finish_record`), and the record of a job that fire-exp itself
could not run (:func:`harness_failure`)."""

from __future__ import annotations

from pathlib import Path

from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.capabilities import network_not_enforced
from fire_exp.environments.redaction import redact_text, secret_values
from fire_exp.records import AttemptRecord, Cause, Lineage, now_iso
from fire_exp.runner.build import versions
from fire_exp.runner.model import AttemptJob, Panel

__all__ = ["finish_record", "harness_failure"]


def harness_failure(panel: Panel, job: AttemptJob, error: str, *,
                    invalid_reason: str | None = None) -> AttemptRecord:
    """The record of an attempt that fire-exp itself could not run (or lost).

    The error also goes to the attempt's ``logs/harness-error.txt``, so every record has
    its log folder.
    """
    item = job.item
    error = redact_text(error, secret_values())  # a traceback may quote a secret
    files = AttemptPaths(Path(job.attempt_dir))
    try:
        files.logs.mkdir(parents=True, exist_ok=True)
        files.harness_error.write_text(error + "\n", encoding="utf-8")
    except OSError:
        pass  # the record itself carries the error
    tier = panel.agent.params.get("tier")
    return AttemptRecord(
        run=job.run, panel=panel.name, attempt_id=job.attempt_id, task=item.task,
        task_digest=panel.tasks[item.task].digest, cohort=item.cohort, arm=item.arm,
        replicate=item.replicate, order=item.order, seed=item.seed, agent=panel.agent.name,
        tier=str(tier) if tier is not None else None, environment=panel.environment.name,
        reward=None, passed=False, cause=Cause.HARNESS_FAILED, error=error,
        valid=invalid_reason is None, invalid_reason=invalid_reason,
        config_hash=panel.config_hash, versions=versions(), started_at=now_iso(),
        finished_at=now_iso(), log_dir=job.log_dir,
        network_not_enforced=network_not_enforced(
            panel.tasks[item.task], panel.environment_for(item.arm).capabilities))


def finish_record(record: AttemptRecord, job: AttemptJob, replaced: AttemptRecord | None,
                  successor: str | None) -> AttemptRecord:
    """The record as the store writes it: its log folder and its replacement lineage.

    ``replaced`` is the record this attempt replaces (None for an original); ``successor``
    the id of the attempt that replaces this one (None: it stands). The lineage's cause is
    why the chain exists: the cause of the replaced attempt, or, for an original that is
    replaced, its own.
    """
    if replaced is not None:
        cause = replaced.cause.value if replaced.cause else None
    else:
        cause = record.cause.value if successor and record.cause else None
    lineage = Lineage(replaces=replaced.attempt_id if replaced else None,
                      replaced_by=successor, cause=cause)
    return record.model_copy(update={"log_dir": job.log_dir, "lineage": lineage})
