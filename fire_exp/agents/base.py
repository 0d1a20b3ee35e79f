"""The agent protocol, and the two sanity agents of the ecosystem: oracle and nop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from fire_exp.agents.session import AgentSession
from fire_exp.records import Cause, Usage
from fire_exp.settings import NoSettings

if TYPE_CHECKING:
    from fire_exp.environments.base import Capability, Environment
    from fire_exp.tasks.model import Task


class ProviderError(Exception):
    """The model provider failed. ``before_action`` tells the replacement rule whether
    the agent had acted yet (only then is the attempt the agent's failure); ``tamper`` is
    the outcome's (what the hooks' evidence says against the run)."""

    def __init__(self, message: str, before_action: bool, tamper: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.before_action = before_action
        self.tamper = tuple(tamper)


@dataclass(frozen=True)
class AgentOutcome:
    """How the agent's run ended."""

    gave_up: bool = False
    usage: Usage = field(default_factory=Usage)
    cause: Cause | None = None  # set when the run ended by a failure (step limit, ...)
    error: str | None = None
    # Why the record cannot be trusted to show the arm's treatment (each reason named: a
    # tool call no hook saw, a denied command that ran, ...); any makes it invalid.
    tamper: tuple[str, ...] = ()


class Agent(Protocol):
    """What runs in an attempt's session. Agents run commands only through ``session``
    (or, for a coding-agent CLI, its hooks); see ``agents/session.py`` for what else of
    the box (``session.env``) an agent may use.

    ``session.context`` says which attempt and arm the agent runs in.
    """

    name: str
    tier: str | None

    def preflight(self, capabilities: Set[Capability]) -> None:
        """Check, before a panel's first attempt, that the agent can run at all in a box
        with ``capabilities`` (its binary, key, server). Raises
        :class:`~fire_exp.errors.PreflightError`."""
        ...

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        """Work on ``session.instruction`` until done; return how it ended."""
        ...


@runtime_checkable
class BoxedAgent(Protocol):
    """An agent that runs inside the attempt's box (a coding-agent CLI).

    Before the panel, ``prepare_boxes`` installs it for every task where the backend has
    the ``INSTALL_AGENT`` capability; before each attempt's box starts, ``place`` tells the
    box what it needs.
    """

    def prepare_boxes(self, backend: type[Environment] | None, tasks: Sequence[Task],
                      env_params: Mapping[str, Any]) -> None:
        """Install the agent into every task's box and try it, where ``backend`` (the
        environment's class; None: not a class) can. Raises EnvironmentFailure."""
        ...

    def place(self, env: Environment) -> None:
        """Before ``env.start()``: configure the box this agent will run in."""
        ...


def preflight_agent(agent: Agent, capabilities: Set[Capability]) -> None:
    """Run ``agent.preflight(capabilities)``; an agent written before the hook existed has
    none."""
    check = getattr(agent, "preflight", None)
    if callable(check):
        check(capabilities)


class NopAgent:
    """Does nothing and stops: every task must fail under it."""

    name = "nop"
    tier: str | None = None
    settings_model = NoSettings

    def preflight(self, capabilities: Set[Capability]) -> None:
        """Nothing to check."""

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        session.begin()
        while session.stop() is not None:
            pass
        return AgentOutcome()


class OracleAgent:
    """Runs the task's ``solution/solve.sh``: every task must pass under it."""

    name = "oracle"
    tier: str | None = None
    settings_model = NoSettings

    def preflight(self, capabilities: Set[Capability]) -> None:
        """Nothing to check (a task without a solution fails its own attempt)."""

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        session.begin()
        solution = session.env.task.solution_dir
        if not (solution / "solve.sh").is_file():
            return AgentOutcome(cause=Cause.AGENT_ERROR, error="the task has no solution/solve.sh")
        dest = session.env.paths.solution
        session.env.upload(solution, dest)
        session.bash(f'bash "{dest}/solve.sh"', timeout=session.time_left())
        while session.stop() is not None:
            pass
        return AgentOutcome()
