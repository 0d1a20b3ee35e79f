"""Runner: the schedule, attempts, the attempt store, executors, preregistration."""

from fire_exp.runner.attempt import AttemptSpec, code_funnel, run_attempt
from fire_exp.runner.build import Panel, build_panel
from fire_exp.runner.executors import AttemptJob, LocalExecutor, execute
from fire_exp.runner.panel import RunResult, run_panel
from fire_exp.runner.schedule import ScheduledAttempt, attempt_seed, build_schedule
from fire_exp.runner.store import AttemptStore

__all__ = [
    "AttemptJob",
    "AttemptSpec",
    "AttemptStore",
    "LocalExecutor",
    "Panel",
    "RunResult",
    "ScheduledAttempt",
    "attempt_seed",
    "build_panel",
    "build_schedule",
    "code_funnel",
    "execute",
    "run_attempt",
    "run_panel",
]
