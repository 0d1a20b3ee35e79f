"""Executors: where attempts run. The local pool is the default; Ray spreads them out.

An executor takes :class:`AttemptJob` values from a queue (the driver may add
replacements to it while the run goes on), runs each with :func:`execute`, and hands
every record back through ``on_done`` in the driver's thread: only the driver writes the
attempt store. ``on_start`` runs in the driver's thread too, before the job is sent off.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from fire_exp.config import RunConfig
from fire_exp.environments.base import Environment
from fire_exp.errors import ProtocolError
from fire_exp.records import AttemptRecord, Cause
from fire_exp.runner.attempt import AttemptSpec, now_iso, run_attempt
from fire_exp.runner.build import Panel, build_panel, versions
from fire_exp.runner.schedule import ScheduledAttempt
from fire_exp.runner.store import sync_tree
from fire_exp.runner.validity import LOAD_FAILED

GRACE_S = 2.0  # after Ctrl-C, how long attempts may take to notice before they are torn down


@dataclass(frozen=True)
class AttemptJob:
    """One attempt to run; picklable, so a Ray worker can rebuild what it needs.

    ``item`` carries the attempt's seed (a replacement's own seed); ``panel_digest`` is the
    hash of the driver's verified panel, which a worker checks its own build against.
    """

    config: RunConfig
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


_PANELS: dict[str, Panel] = {}
_PANELS_LOCK = threading.Lock()


def panel_for(config: RunConfig) -> Panel:
    """The built panel of ``config``, cached per process (Ray workers build it once)."""
    key = config.config_hash()
    with _PANELS_LOCK:
        if key not in _PANELS:
            _PANELS[key] = build_panel(config)
        return _PANELS[key]


def panel_digest(panel: Panel) -> str:
    """SHA-256 over the content hashes the preregistration freezes (not their paths)."""
    from fire_exp.runner.prereg import panel_hashes

    hashes = {key: value["sha256"] for key, value in panel_hashes(panel).items()}
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def _worker_panel(job: AttemptJob) -> Panel:
    panel = panel_for(job.config)
    if job.panel_digest and panel_digest(panel) != job.panel_digest:
        raise RuntimeError("this machine's tasks or policy sources differ from the "
                           "driver's preregistered panel")
    return panel


def execute(job: AttemptJob, panel: Panel | None = None,
            live: set[Environment] | None = None) -> AttemptRecord:
    """Run one job to its record (never raises for the attempt's own failure).

    Without ``panel`` (a Ray worker), the panel is built here from ``job.config`` and
    checked against ``job.panel_digest``; if that fails the attempt is recorded as a
    harness failure and flagged invalid (its policies did not load).
    """
    if panel is None:
        try:
            panel = _worker_panel(job)
        except Exception as exc:  # noqa: BLE001 - becomes the attempt's record
            return harness_failure(job, f"{type(exc).__name__}: {exc}",
                                   invalid_reason=f"{LOAD_FAILED}: {exc}")
    item = job.item
    task = panel.tasks[item.task]
    env = panel.make_environment(task, Path(job.attempt_dir), job.attempt_id)
    if live is not None:
        live.add(env)
    try:
        spec = AttemptSpec(run=job.config.run, panel=panel.name, attempt_id=job.attempt_id,
                           task=item.task, cohort=item.cohort, arm=item.arm,
                           replicate=item.replicate, order=item.order, seed=item.seed,
                           config_hash=job.config.config_hash())
        record = run_attempt(spec, env, panel.make_agent(), panel.arms[item.arm].families,
                             panel.portfolio.families, rng=np.random.default_rng(item.seed),
                             versions=versions())
    finally:
        if live is not None:
            live.discard(env)
    sync_tree(Path(job.attempt_dir) / "logs")
    return record.model_copy(update={"log_dir": job.log_dir})


def harness_failure(job: AttemptJob, error: str, *, task_digest: str = "",
                    invalid_reason: str | None = None) -> AttemptRecord:
    """The record of an attempt that fire-exp itself could not run (or lost).

    The error also goes to the attempt's ``logs/harness-error.txt``, so every record has
    its log folder.
    """
    item, config = job.item, job.config
    logs = Path(job.attempt_dir) / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "harness-error.txt").write_text(error + "\n", encoding="utf-8")
    except OSError:
        pass  # the record itself carries the error
    tier = config.agent.params.get("tier")
    return AttemptRecord(
        run=config.run, panel=config.panel.name, attempt_id=job.attempt_id, task=item.task,
        task_digest=task_digest, cohort=item.cohort, arm=item.arm, replicate=item.replicate,
        order=item.order, seed=item.seed, agent=config.agent.name,
        tier=str(tier) if tier is not None else None, environment=config.environment.name,
        reward=None, passed=False, cause=Cause.HARNESS_FAILED, error=error,
        valid=invalid_reason is None, invalid_reason=invalid_reason,
        config_hash=config.config_hash(), versions=versions(), started_at=now_iso(),
        finished_at=now_iso(), log_dir=job.log_dir)


class LocalExecutor:
    """A pool of worker threads on this machine (attempts wait on processes, not the GIL).

    Args:
        workers: attempts in flight at once.
    """

    name = "local"

    def __init__(self, workers: int = 2, **_: object) -> None:
        if workers < 1:
            raise ValueError("executor.workers must be at least 1")
        self.workers = workers

    def run(self, panel: Panel, queue: JobQueue, on_start: OnStart, on_done: OnDone) -> None:
        """Run the queue's jobs, ``workers`` at a time.

        On KeyboardInterrupt: starts nothing more, tells running attempts to stop, tears
        down what has not stopped after a short grace (its processes and containers are
        removed), records the attempts that had finished, and re-raises.
        """
        live: set[Environment] = set()
        running: dict[cf.Future[AttemptRecord], AttemptJob] = {}
        with cf.ThreadPoolExecutor(max_workers=self.workers) as pool:
            try:
                while queue or running:
                    while queue and len(running) < self.workers:
                        job = queue.popleft()
                        on_start(job)
                        running[pool.submit(execute, job, panel, live)] = job
                    done, _ = cf.wait(running, timeout=0.25, return_when=cf.FIRST_COMPLETED)
                    for future in done:
                        job = running.pop(future)
                        on_done(job, _result(future, job, panel))
            except KeyboardInterrupt:
                _abandon(live, running, panel, on_done)
                raise


def _result(future: cf.Future[AttemptRecord], job: AttemptJob, panel: Panel) -> AttemptRecord:
    try:
        return future.result()
    except ProtocolError:
        raise  # the run stops (run_attempt)
    except Exception as exc:  # noqa: BLE001 - a fault outside run_attempt is the harness's
        return harness_failure(job, f"{type(exc).__name__}: {exc}",
                               task_digest=panel.tasks[job.item.task].digest)


def _abandon(live: set[Environment], running: dict[cf.Future[AttemptRecord], AttemptJob],
             panel: Panel, on_done: OnDone) -> None:
    """Cancel every running attempt and wait for it; record those that had finished."""
    for env in list(live):
        env.cancelled.set()
    pending = set(running)
    torn_down = False
    while pending:
        try:
            _, pending = cf.wait(pending, timeout=GRACE_S)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: tear down now, still wait for the attempts to end
        if pending and not torn_down:
            for env in list(live):
                env.stop()
            torn_down = True
    for future, job in running.items():
        record = _result(future, job, panel)
        if record.cause is not Cause.CANCELLED:
            on_done(job, record)  # it finished before it saw the interrupt
