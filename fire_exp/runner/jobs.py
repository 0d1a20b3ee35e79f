"""An attempt as a job: what the driver sends to an executor, and the record it gets back.

The driver turns each owed attempt into an :class:`AttemptJob` (:func:`job_for`): the
attempt's identity (run, schedule cell with its seed, id, log folder) and the digest of
the driver's verified panel, never the config. Wherever the job runs,
:func:`build_attempt` assembles its objects from the panel and :func:`execute` runs it;
back on the driver, :func:`finish_record` gives every record its log folder and lineage
before the store writes it, and :func:`harness_failure` is the record of a job that
fire-exp itself could not run.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from fire_exp.agents.base import Agent
from fire_exp.arms.place import ArmSetup
from fire_exp.config import RunConfig
from fire_exp.environments.base import Environment
from fire_exp.policies.arms import ArmPolicies
from fire_exp.policies.model import Family
from fire_exp.records import AttemptRecord, Cause, Lineage, now_iso
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.runner.build import Panel, build_panel, versions
from fire_exp.runner.prereg import panel_hashes
from fire_exp.runner.replacement import replacement_id, replacement_seed
from fire_exp.runner.schedule import ScheduledAttempt
from fire_exp.runner.store import sync_tree


@dataclass(frozen=True)
class AttemptJob:
    """One attempt to run; picklable, so a Ray worker can run it.

    ``item`` carries the attempt's seed (a replacement's own seed); ``panel_digest`` is the
    hash of the driver's verified panel, which a worker checks its own build against.
    """

    run: str
    item: ScheduledAttempt
    attempt_id: str
    attempt_dir: str  # absolute path of the attempt's log folder on the driver
    log_dir: str  # the same, relative to the run folder (for the record)
    panel_digest: str = ""


JobQueue = deque[AttemptJob]
OnStart = Callable[[AttemptJob], None]
OnDone = Callable[[AttemptJob, AttemptRecord], None]


class Executor(Protocol):
    """Runs the jobs of ``queue`` until it is empty and nothing is in flight."""

    name: str

    def run(self, panel: Panel, queue: JobQueue, on_start: OnStart, on_done: OnDone) -> None:
        """On KeyboardInterrupt: stop what runs, report what finished, re-raise."""
        ...


def panel_digest(panel: Panel) -> str:
    """SHA-256 over the content hashes the preregistration freezes (not their paths)."""
    hashes = {key: value["sha256"] for key, value in panel_hashes(panel).items()}
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def job_for(panel: Panel, run_dir: Path, item: ScheduledAttempt, number: int = 0,
            digest: str = "") -> AttemptJob:
    """The job of scheduled attempt ``item`` (``number`` > 0: its replacement)."""
    attempt_id = replacement_id(item.attempt_id, number)
    item = replace(item, seed=replacement_seed(panel.seed, item, number))
    rel = Path("attempts") / attempt_id
    return AttemptJob(run=run_dir.name, item=item, attempt_id=attempt_id,
                      attempt_dir=str((run_dir / rel).resolve()), log_dir=rel.as_posix(),
                      panel_digest=digest)


@dataclass(frozen=True)
class Attempt:
    """An attempt's objects, built and ready: :meth:`run` is layer 1's ``run_attempt``."""

    spec: AttemptSpec
    environment: Environment
    agent: Agent
    arm: ArmPolicies
    coding: tuple[Family, ...]
    setup: ArmSetup | None = None  # what the arm changes besides its policies

    def run(self) -> AttemptRecord:
        """Run the attempt to its record (never raises for the attempt's own failure)."""
        return run_attempt(self.spec, self.environment, self.agent, self.arm.families,
                           self.coding, rng=np.random.default_rng(self.spec.seed),
                           versions=versions(), setup=self.setup)


def build_attempt(panel: Panel, job: AttemptJob) -> Attempt:
    """The objects of ``job``'s attempt: its spec, a fresh environment and agent, its arm."""
    item = job.item
    task = panel.tasks[item.task]
    arm = panel.arms[item.arm]
    setup = panel.setup_for(item.arm)
    spec = AttemptSpec(run=job.run, panel=panel.name, attempt_id=job.attempt_id,
                       task=item.task, cohort=item.cohort, arm=item.arm,
                       replicate=item.replicate, order=item.order, seed=item.seed,
                       config_hash=panel.config_hash,
                       portfolio=str(arm.portfolio or panel.portfolio.path),
                       controls=str(arm.controls or panel.controls.path),
                       policy_arm=arm.policy_arm, policies=setup.spec.policy_source)
    return Attempt(spec=spec,
                   environment=panel.environment_for(item.arm).make(
                       task, Path(job.attempt_dir), job.attempt_id),
                   agent=panel.agent_for(item.arm).make(), arm=arm,
                   coding=panel.portfolio.families, setup=setup)


def execute(job: AttemptJob, panel: Panel, live: set[Environment] | None = None
            ) -> AttemptRecord:
    """Run one job to its record; ``live`` holds its environment while it runs (so the
    driver can cancel it on Ctrl-C). The logs are on disk when this returns."""
    attempt = build_attempt(panel, job)
    if live is not None:
        live.add(attempt.environment)
    try:
        record = attempt.run()
    finally:
        if live is not None:
            live.discard(attempt.environment)
    sync_tree(Path(job.attempt_dir) / "logs")
    return record


def harness_failure(panel: Panel, job: AttemptJob, error: str, *,
                    invalid_reason: str | None = None) -> AttemptRecord:
    """The record of an attempt that fire-exp itself could not run (or lost).

    The error also goes to the attempt's ``logs/harness-error.txt``, so every record has
    its log folder.
    """
    item = job.item
    logs = Path(job.attempt_dir) / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "harness-error.txt").write_text(error + "\n", encoding="utf-8")
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
        finished_at=now_iso(), log_dir=job.log_dir)


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


_PANELS: dict[str, Panel] = {}
_PANELS_LOCK = threading.Lock()


def worker_panel(config: RunConfig, digest: str) -> Panel:
    """The panel a worker builds from the driver's config (once per process), checked
    against the driver's panel digest.

    Raises:
        RuntimeError: this machine's tasks or policy sources differ from the driver's.
        FireExpError: the panel does not build here.
    """
    key = config.config_hash()
    with _PANELS_LOCK:
        if key not in _PANELS:
            _PANELS[key] = build_panel(config)
        panel = _PANELS[key]
    if digest and panel_digest(panel) != digest:
        raise RuntimeError("this machine's tasks or policy sources differ from the "
                           "driver's preregistered panel")
    return panel
