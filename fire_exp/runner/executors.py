"""Executors: where attempts run. The local pool is the default; Ray spreads them out.

An executor receives :class:`AttemptJob` values, runs each with :func:`execute`, and hands
every record back to the driver through ``on_done`` in the driver's thread: only the
driver writes the attempt store.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fire_exp.config import RunConfig
from fire_exp.environments.base import Environment
from fire_exp.records import AttemptRecord, Cause
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.runner.build import Panel, build_panel, versions
from fire_exp.runner.schedule import ScheduledAttempt


@dataclass(frozen=True)
class AttemptJob:
    """One attempt to run; picklable, so a Ray worker can rebuild what it needs."""

    config: RunConfig
    item: ScheduledAttempt
    attempt_id: str
    attempt_dir: str  # absolute path of the attempt's log folder
    log_dir: str  # the same, relative to the run folder (for the record)


_PANELS: dict[str, Panel] = {}
_PANELS_LOCK = threading.Lock()


def panel_for(config: RunConfig) -> Panel:
    """The built panel of ``config``, cached per process (Ray workers build it once)."""
    key = config.config_hash()
    with _PANELS_LOCK:
        if key not in _PANELS:
            _PANELS[key] = build_panel(config)
        return _PANELS[key]


def execute(job: AttemptJob, panel: Panel | None = None,
            live: set[Environment] | None = None) -> AttemptRecord:
    """Run one job to its record (never raises for the attempt's own failure)."""
    panel = panel or panel_for(job.config)
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
    return record.model_copy(update={"log_dir": job.log_dir})


OnStart = Callable[[AttemptJob], None]
OnDone = Callable[[AttemptJob, AttemptRecord], None]


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

    def run(self, panel: Panel, jobs: Sequence[AttemptJob], on_start: OnStart,
            on_done: OnDone) -> None:
        """Run ``jobs`` in schedule order, ``workers`` at a time.

        On KeyboardInterrupt: cancels what has not started, tells running attempts to stop
        (their processes and containers are removed), waits for them, and re-raises.
        """
        live: set[Environment] = set()
        queue = list(jobs)
        running: dict[cf.Future[AttemptRecord], AttemptJob] = {}
        with cf.ThreadPoolExecutor(max_workers=self.workers) as pool:
            try:
                while queue or running:
                    while queue and len(running) < self.workers:
                        job = queue.pop(0)
                        on_start(job)
                        running[pool.submit(execute, job, panel, live)] = job
                    done, _ = cf.wait(running, timeout=0.25, return_when=cf.FIRST_COMPLETED)
                    for future in done:
                        job = running.pop(future)
                        on_done(job, future.result())
            except KeyboardInterrupt:
                for env in list(live):
                    env.cancelled.set()
                for future, job in running.items():
                    record = future.result()  # the attempt tears itself down
                    if record.cause is not Cause.CANCELLED:
                        on_done(job, record)  # it finished before it saw the interrupt
                raise
