"""The agent's side of an attempt: every action passes through the policy runtime.

An agent never touches the policies directly, and the harness's own agents (simulated,
OpenAI, the oracle) run every command through the session. They call

- ``session.begin()`` once: raises ``SessionStart``; returns context a policy added;
- ``session.bash(command)`` per command: ``PreToolUse`` (a deny keeps the command from
  running and returns the reason as its result), the command, ``PostToolUse`` (a policy
  may add text to the result);
- ``session.stop()`` when it wants to finish: ``Stop``; an ``instruct`` returns the text
  the agent must work on next (a new turn), ``None`` means the agent may stop.

The session keeps the command log (the trajectory the extractors code) and enforces the
agent's deadline. ``session.context`` tells the agent which attempt and arm it runs in,
so no agent has to work that out from the policies or the environment.

``session.env`` is the box itself, and agents use it beside the session: the simulated
and OpenAI agents for the attempt's files (the task's script, the transcript's path), the
oracle to upload the task's solution (``tests/agents/test_session_use.py`` holds them to
that), and a coding-agent CLI for all of its run: its files, its hook transport, a few
checks of its own (``command -v``, ``id -u``) and its one command
(``Environment.exec_captured``). A CLI runs its own tools, so its tool calls reach the
policies through its hooks instead (``agents/coding_agents/agent.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fire_exp.environments.base import Environment
from fire_exp.policies.model import Event, Step
from fire_exp.policies.runtime import MAX_STOP_ROUNDS, PolicyRuntime

_OUTPUT_KEPT = 4000


@dataclass(frozen=True)
class AttemptContext:
    """What an agent may know about its attempt.

    Attributes:
        attempt_id: the attempt's id (``task/arm/rN``).
        arm: the attempt's arm.
        policy_arm: whether the arm runs policies (a non-policy arm installs no hooks).
        portfolio: the folder of the real portfolio the arm was built from (None: unknown).
        controls: the folder of the control sources (None: unknown).
        policies: the registered arm its policies are built as ("": the arm itself; a
            declared arm names the preset whose policies it runs).
        files: the files the arm placed in the working folder, relative to it.
    """

    attempt_id: str
    arm: str
    policy_arm: bool
    portfolio: str | None = None
    controls: str | None = None
    policies: str = ""
    files: tuple[str, ...] = ()


class AgentTimeout(Exception):
    """The agent's time budget ran out."""


@dataclass(frozen=True)
class ToolResult:
    """What the agent sees after one command."""

    output: str
    exit_code: int
    denied: bool = False
    context: str = ""  # text a policy added after the command
    timed_out: bool = False

    def as_text(self) -> str:
        """The result as one message for a model (output, then any added context)."""
        text = self.output if self.output else f"(exit code {self.exit_code}, no output)"
        if self.context:
            text += f"\n\n[policy] {self.context}"
        return text


class AgentSession:
    """One attempt's agent session.

    Args:
        env: the started environment.
        runtime: the arm's policy runtime (an empty one for the baseline arm).
        instruction: the task text the agent receives.
        timeout_s: the agent's time budget (the task's ``[agent].timeout_sec`` times the
            panel's ``agent_timeout_multiplier``).
        context: the attempt and arm the agent runs in.
        command_timeout_s: the longest any single command may run.
        task_text: the task's own instruction, which every event carries to the policies
            (None: ``instruction``; an arm's added text reaches the agent, not them).
    """

    def __init__(self, env: Environment, runtime: PolicyRuntime, instruction: str,
                 timeout_s: float, context: AttemptContext,
                 command_timeout_s: float = 120.0, task_text: str | None = None) -> None:
        self.env = env
        self.context = context
        self.runtime = runtime
        self.instruction = instruction
        self.task_text = instruction if task_text is None else task_text
        self.deadline = time.monotonic() + timeout_s
        self.command_timeout_s = command_timeout_s
        self.trajectory: list[Step] = []
        self.stop_rounds = 0

    @property
    def n_commands(self) -> int:
        return sum(1 for s in self.trajectory if s.kind == "command")

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def _check_deadline(self) -> None:
        if self.time_left() <= 0 or self.env.cancelled.is_set():
            raise AgentTimeout("the agent's time budget ran out")

    def begin(self) -> str:
        """Raise ``SessionStart``; returns any context a policy adds (else "")."""
        decision = self.runtime.handle(Event("SessionStart", self.task_text))
        return "" if decision.is_allow else decision.text

    def bash(self, command: str, timeout: float | None = None) -> ToolResult:
        """Run one command in the environment, through the policy runtime."""
        self._check_deadline()
        step = self.n_commands + 1
        pre = self.runtime.handle(Event("PreToolUse", self.task_text, command=command,
                                        step=step))
        if pre.kind == "deny":
            self.trajectory.append(Step(len(self.trajectory), "command", command, None,
                                        pre.text, denied=True))
            return ToolResult(output=pre.text, exit_code=1, denied=True)
        limit = min(timeout or self.command_timeout_s, self.command_timeout_s,
                    max(self.time_left(), 1.0))
        result = self.env.exec(command, timeout=limit)
        output = result.output[-_OUTPUT_KEPT:]
        self.trajectory.append(Step(len(self.trajectory), "command", command,
                                    result.exit_code, output))
        post = self.runtime.handle(Event("PostToolUse", self.task_text, command=command,
                                         output=output, exit_code=result.exit_code, step=step))
        context = pre.text if pre.kind == "instruct" else ""
        if post.kind != "allow":
            context = f"{context}\n\n{post.text}".strip()
        if result.timed_out and self.time_left() <= 0:
            raise AgentTimeout("the agent's time budget ran out during a command")
        return ToolResult(output=result.output, exit_code=result.exit_code, context=context,
                          timed_out=result.timed_out)

    def stop(self) -> str | None:
        """The agent wants to finish. Returns an instruction to work on, or None to stop."""
        self.trajectory.append(Step(len(self.trajectory), "stop"))
        active = self.stop_rounds > 0
        self.stop_rounds += 1
        decision = self.runtime.handle(Event("Stop", self.task_text, step=self.n_commands,
                                             stop_hook_active=active))
        if decision.is_allow or self.stop_rounds > MAX_STOP_ROUNDS:
            return None
        return decision.text
