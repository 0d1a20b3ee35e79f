"""Runner: the schedule, attempts, the attempt store, executors, resume, replacement."""

from fire_exp.runner.attempt import AttemptSpec, code_funnel, run_attempt
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.execute import build_attempt, execute
from fire_exp.runner.executors import LocalExecutor
from fire_exp.runner.job_records import finish_record, harness_failure
from fire_exp.runner.launch import RunListener, RunOutcome, RunStart, launch_run
from fire_exp.runner.model import AttemptJob, Executor, Panel
from fire_exp.runner.panel import RunResult, run_panel
from fire_exp.runner.preregister import Frozen, freeze_panel, preregister
from fire_exp.runner.progress import PlainProgress, RichProgress, make_progress
from fire_exp.runner.replacement import ReplacementRule, owed_attempts
from fire_exp.runner.schedule import (
    ScheduledAttempt,
    attempt_seed,
    build_schedule,
    build_task_block_schedule,
)
from fire_exp.runner.stopping import Stop, StopMonitor
from fire_exp.runner.store import AttemptStore
from fire_exp.runner.validity import Validity, check_attempt

__all__ = [
    "AttemptJob",
    "AttemptSpec",
    "AttemptStore",
    "Executor",
    "Frozen",
    "LocalExecutor",
    "Panel",
    "PlainProgress",
    "ReplacementRule",
    "RichProgress",
    "RunListener",
    "RunOutcome",
    "RunResult",
    "RunStart",
    "ScheduledAttempt",
    "Stop",
    "StopMonitor",
    "Validity",
    "attempt_seed",
    "build_attempt",
    "build_panel",
    "build_schedule",
    "build_task_block_schedule",
    "check_attempt",
    "code_funnel",
    "execute",
    "finish_record",
    "freeze_panel",
    "harness_failure",
    "launch_run",
    "make_progress",
    "owed_attempts",
    "prepare_panel",
    "preregister",
    "run_attempt",
    "run_panel",
]
