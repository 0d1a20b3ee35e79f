"""The environment lifecycle every backend implements (local folder, Docker container).

An environment is one attempt's box. Its lifecycle, in order::

    start()                 build/prepare the box; raises EnvironmentFailure
    upload(src, dest)       copy files in (the oracle's solution, the verifier's tests)
    exec(command, timeout)  run one agent command in the agent's session
    end_agent_session()     the agent is done: what it left attached to its session dies
    run_verifier()          upload tests/, run tests/test.sh, read the reward file
    stop()                  remove everything the attempt started; idempotent, never raises

Tasks see the same paths in every backend through environment variables
(``FIRE_WORKDIR``, ``FIRE_LOGS``, ``FIRE_TESTS``, ``FIRE_SOLUTION``, ``FIRE_PORT``), with the
container paths (``/app``, ``/logs``, ``/tests``, ``/solution``, port 8000) as defaults, so
a task written for fire-exp runs under Harbor unchanged.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from fire_exp.errors import FireExpError
from fire_exp.records import Cause
from fire_exp.tasks.model import Task


class EnvironmentFailure(FireExpError):
    """The box could not be prepared or died: the model had no fair attempt.

    Inside an attempt the runner records it as ``environment_failed``; outside one (the
    ``images`` and ``cleanup`` commands) the CLI prints it as one line.
    """

    cause = Cause.ENVIRONMENT_FAILED


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def output(self) -> str:
        """stdout and stderr together, as a terminal would show them."""
        if self.stderr and self.stdout:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


@dataclass(frozen=True)
class SessionEnd:
    """What ending the agent's session did to the processes the agent started."""

    hung_up: list[int] = field(default_factory=list)  # sent SIGHUP (in the agent's session)
    killed: list[int] = field(default_factory=list)  # still attached to the session's streams
    survivors: list[int] = field(default_factory=list)  # detached: still running


@dataclass(frozen=True)
class VerifierResult:
    """The verifier's verdict by the Harbor contract (reference/harbor-tasks.md)."""

    reward: float | None  # None: no valid reward (cause says why)
    rewards: dict[str, float] = field(default_factory=dict)
    cause: Cause | None = None
    message: str = ""
    duration_s: float = 0.0
    stdout: str = ""


@dataclass(frozen=True)
class BoxPaths:
    """The paths a task sees inside the box."""

    workdir: str
    logs: str
    tests: str
    solution: str


class Environment(ABC):
    """One attempt's box. Use as a context manager: ``with env: ...`` starts and stops it.

    Args:
        task: the task to prepare.
        attempt_dir: the attempt's own log folder on the host; the box's ``/logs`` ends up
            in ``attempt_dir / "logs"``.
        attempt_id: a unique id; every process or container the attempt starts carries it.
    """

    name: str = "abstract"

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str) -> None:
        self.task = task
        self.attempt_dir = attempt_dir
        self.attempt_id = attempt_id
        # Set by the runner on Ctrl-C; long waits in a backend should watch it.
        self.cancelled = threading.Event()

    @property
    @abstractmethod
    def paths(self) -> BoxPaths:
        """The box's paths for the working folder, logs, tests and solution."""

    @abstractmethod
    def start(self) -> None:
        """Prepare the box. Raises EnvironmentFailure when it cannot."""

    @abstractmethod
    def upload(self, src: Path, dest: str) -> None:
        """Copy the directory ``src`` of the host to ``dest`` in the box."""

    @abstractmethod
    def exec(self, command: str, timeout: float) -> ExecResult:
        """Run ``command`` with bash in the agent's session, working folder as cwd."""

    @abstractmethod
    def end_agent_session(self) -> SessionEnd:
        """End the agent's session: kill what is still attached to it; detached work lives."""

    @abstractmethod
    def run_verifier(self) -> VerifierResult:
        """Upload ``tests/``, run ``tests/test.sh`` under its timeout, read the reward."""

    @abstractmethod
    def stop(self) -> None:
        """Remove every process, container or file the attempt started. Never raises."""

    @classmethod
    def preflight(cls, **params: Any) -> None:
        """Check, before a panel's first attempt, that this backend can run at all.

        ``params`` are the environment config's parameters. Raises PreflightError.
        """
        return None  # a backend that needs nothing outside this process

    @classmethod
    def prepare(cls, tasks: Sequence[Task], *, report: Callable[[str], None],
                **params: Any) -> None:
        """Build or check what every attempt of ``tasks`` needs (images), before the first.

        ``report`` receives one line of progress per task. Raises EnvironmentFailure
        naming the task, so a broken task stops the run before anything is recorded.
        """
        report(f"environment {cls.name}: nothing to prepare for {len(tasks)} tasks")

    @classmethod
    def reap_orphans(cls) -> int:
        """Remove what attempts of runs that died (SIGKILL) left behind; returns how many.

        Called when a run starts or resumes. Processes are reaped by the runner through
        their marker; a backend with resources of its own (containers) overrides this.
        """
        return 0

    def __enter__(self) -> Environment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
