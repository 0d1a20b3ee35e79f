"""Tasks: the Harbor task model, its loaders and the bundled suites."""

from fire_exp.tasks.loader import is_task_dir, load_task, load_tasks, strip_canary
from fire_exp.tasks.model import (
    AgentConfig,
    EnvironmentConfig,
    Task,
    VerifierConfig,
    task_digest,
)
from fire_exp.tasks.suites import resolve_suite

__all__ = [
    "AgentConfig",
    "EnvironmentConfig",
    "Task",
    "VerifierConfig",
    "is_task_dir",
    "load_task",
    "load_tasks",
    "resolve_suite",
    "strip_canary",
    "task_digest",
]
