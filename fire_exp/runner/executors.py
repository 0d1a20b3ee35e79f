"""Executors: where attempts run. The local pool is the default; Ray spreads them out.

An executor (:class:`~fire_exp.runner.model.Executor`) takes
:class:`~fire_exp.runner.model.AttemptJob` values from a queue (the driver may add
replacements to it while the run goes on), runs each with
:func:`~fire_exp.runner.execute.execute`, and hands
every record back through ``on_done`` in the driver's thread: only the driver writes the
attempt store. ``on_start`` runs in the driver's thread too, before the job is sent off.
"""

from __future__ import annotations

import concurrent.futures as cf
from typing import Annotated

from pydantic import Field

from fire_exp.environments.base import Environment
from fire_exp.errors import ProtocolError
from fire_exp.records import AttemptRecord, Cause
from fire_exp.runner.execute import execute
from fire_exp.runner.job_records import harness_failure
from fire_exp.runner.model import AttemptJob, JobQueue, OnDone, OnStart, Panel
from fire_exp.settings import Settings, ceiling

GRACE_S = 2.0  # after Ctrl-C, how long attempts may take to notice before they are torn down

Workers = Annotated[int, Field(ge=1), ceiling(256)]


class LocalExecutorSettings(Settings):
    """``configs/executor/local.yaml``: attempts in flight at once on this machine."""

    workers: Workers = 2


_LOCAL = LocalExecutorSettings()


class LocalExecutor:
    """A pool of worker threads on this machine (attempts wait on processes, not the GIL).

    Args:
        workers: attempts in flight at once.
    """

    name = "local"
    settings_model = LocalExecutorSettings

    def __init__(self, workers: int = _LOCAL.workers) -> None:
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
            except ProtocolError:  # the run stops: the attempts in flight end now
                for env in list(live):
                    env.cancelled.set()
                raise


def _result(future: cf.Future[AttemptRecord], job: AttemptJob, panel: Panel) -> AttemptRecord:
    try:
        return future.result()
    except ProtocolError:
        raise  # the run stops (run_attempt)
    except Exception as exc:  # noqa: BLE001 - a fault outside run_attempt is the harness's
        return harness_failure(panel, job, f"{type(exc).__name__}: {exc}")


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
