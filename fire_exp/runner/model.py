"""The panel runner's objects: a built :class:`Panel`, one :class:`AttemptJob`, and the
:class:`Executor` that runs a panel's jobs.

``runner/build.py`` makes the panel; ``runner/panel.py`` turns its owed attempts into jobs
(:func:`job_for`) and hands them to the panel's executor. A panel names its executor and an
executor runs a panel, so the two are defined together here.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from fire_exp.agents.base import Agent
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.arms.place import ArmSetup
from fire_exp.arms.spec import preset
from fire_exp.config import RunConfig
from fire_exp.environments.base import Capability, Environment
from fire_exp.policies.arms import ArmPolicies
from fire_exp.policies.loader import Portfolio
from fire_exp.records import AttemptRecord
from fire_exp.runner.replacement import ReplacementRule, replacement_id, replacement_seed
from fire_exp.runner.schedule import ScheduledAttempt
from fire_exp.tasks.model import Task

__all__ = ["AgentFactory", "AttemptJob", "EnvironmentFactory", "Executor", "JobQueue",
           "OnDone", "OnStart", "Panel", "Report", "job_for"]

Report = Callable[[str], None]


@dataclass(frozen=True)
class AgentFactory:
    """Makes the panel's agent (one per attempt) from checked parameters."""

    name: str
    make_agent: Callable[..., Agent]
    params: Mapping[str, Any]

    def make(self) -> Agent:
        """A fresh agent."""
        return self.make_agent(**self.params)


@dataclass(frozen=True)
class EnvironmentFactory:
    """Makes each attempt's environment, and prepares the backend for the whole panel."""

    name: str
    backend: Callable[..., Environment]
    params: Mapping[str, Any]

    def make(self, task: Task, attempt_dir: Path, attempt_id: str) -> Environment:
        """The environment (box) of one attempt."""
        return self.backend(task, attempt_dir, attempt_id, **self.params)

    @property
    def backend_class(self) -> type[Environment] | None:
        """The backend's class (its capabilities), when the backend is one."""
        backend = self.backend
        return backend if isinstance(backend, type) and issubclass(backend, Environment) \
            else None

    def preflight(self) -> None:
        """Check the backend can run at all (an engine reachable). Raises PreflightError."""
        if self.backend_class is not None:
            self.backend_class.preflight(**self.params)

    def prepare(self, tasks: Sequence[Task], report: Report) -> None:
        """Build or check what every attempt needs (task images). Raises EnvironmentFailure."""
        if self.backend_class is not None:
            self.backend_class.prepare(tasks, report=report, **self.params)

    def reap_orphans(self, run_dir: Path | None = None, *, scratch: Path | None = None) -> int:
        """Remove what attempts of provably dead runs left behind (see
        Environment.reap_orphans); ``run_dir`` is the run whose lock the caller holds,
        ``scratch`` a Ray node's scratch root."""
        if self.backend_class is None:
            return 0
        return self.backend_class.reap_orphans(run_dir, scratch=scratch, **self.params)

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What the backend can do (none, when the backend is not an Environment class)."""
        return self.backend_class.capabilities if self.backend_class is not None \
            else frozenset()

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Refuse a task that needs what the backend cannot give (Environment.check_tasks).
        Raises PreflightError."""
        if self.backend_class is not None:
            self.backend_class.check_tasks(tasks, **self.params)

    def engine_identity(self) -> str:
        """What runs this process's boxes (Environment.engine_identity); the backend's name
        and this host when the backend is not an Environment class."""
        if self.backend_class is None:
            return f"{self.name}@{os.uname().nodename}"
        return self.backend_class.engine_identity(**self.params)


@dataclass(frozen=True)
class Panel:
    """A panel ready to run: every object an attempt needs, built and checked."""

    name: str
    seed: int
    tasks: dict[str, Task]
    cohorts: dict[str, str]
    portfolio: Portfolio
    controls: Portfolio
    arms: dict[str, ArmPolicies]
    analysis_plan: Path  # the plan file (hashed by the preregistration)
    plan: AnalysisPlan
    replacement: ReplacementRule
    agent: AgentFactory
    environment: EnvironmentFactory
    executor: Executor
    schedule: list[ScheduledAttempt]
    config: RunConfig  # what the panel was built from: hashed, and sent to Ray workers
    # Per arm: what it changes besides its policies (files, instruction), and its own
    # agent or environment where it changes their parameters (else the panel's).
    setups: dict[str, ArmSetup] = field(default_factory=dict)
    arm_agents: dict[str, AgentFactory] = field(default_factory=dict)
    arm_environments: dict[str, EnvironmentFactory] = field(default_factory=dict)

    def agent_for(self, arm: str) -> AgentFactory:
        """The agent factory of ``arm`` (the panel's unless the arm changes its parameters)."""
        return self.arm_agents.get(arm, self.agent)

    def environment_for(self, arm: str) -> EnvironmentFactory:
        """The environment factory of ``arm`` (the panel's unless the arm changes it)."""
        return self.arm_environments.get(arm, self.environment)

    def setup_for(self, arm: str) -> ArmSetup:
        """What ``arm`` changes besides its policies (a preset: nothing)."""
        return self.setups.get(arm) or ArmSetup(preset(arm))

    @functools.cached_property
    def config_hash(self) -> str:
        """SHA-256 of the config that defines the experiment (every record carries it)."""
        return self.config.config_hash()


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


def job_for(panel: Panel, run_dir: Path, item: ScheduledAttempt, number: int = 0,
            digest: str = "") -> AttemptJob:
    """The job of scheduled attempt ``item`` (``number`` > 0: its replacement)."""
    attempt_id = replacement_id(item.attempt_id, number)
    item = replace(item, seed=replacement_seed(panel.seed, item, number))
    rel = Path("attempts") / attempt_id
    return AttemptJob(run=run_dir.name, item=item, attempt_id=attempt_id,
                      attempt_dir=str((run_dir / rel).resolve()), log_dir=rel.as_posix(),
                      panel_digest=digest)
