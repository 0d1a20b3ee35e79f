"""The policy model: events, decisions, rules and families.

A *family* answers one failure mechanism. It has

- eligibility over the task text (E): ``eligible(task_text)``;
- a *tracking* rule that only updates per-attempt state (S): ``track(event, state)``;
- *action* rules, each a guard (G) plus an intervention (A) with a nudge limit, declared
  with the :func:`rule` decorator;
- a registered behavior extractor (B) over the command log: ``code(trajectory, task_text)``,
  which the runner applies identically in every arm to fill the funnel.

A policy source is a Python file that defines ``FAMILIES = [...]``.

>>> class Loud(Family):
...     name = "loud"
...     def eligible(self, task_text): return "server" in task_text
...     @rule(events=("Stop",), limit=1)
...     def remind(self, event, state): return instruct("Probe the server before stopping.")
>>> [r.name for r in Loud().rules()]
['remind']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

EventName = Literal["SessionStart", "PreToolUse", "PostToolUse", "Stop"]
EVENT_NAMES: tuple[EventName, ...] = ("SessionStart", "PreToolUse", "PostToolUse", "Stop")
State = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """One entry of an attempt's command log: a command (run or denied), a file edit by a
    CLI's edit tool (``paths``: every file it wrote; ``command`` names the tool), or a stop
    request."""

    index: int
    kind: Literal["command", "stop", "edit"]
    command: str = ""
    exit_code: int | None = None
    output: str = ""
    denied: bool = False
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Event:
    """What the agent is about to do or just did, in the vocabulary of agent hooks.

    Attributes:
        name: ``SessionStart`` (the task text), ``PreToolUse`` (a command about to run),
            ``PostToolUse`` (its result), ``Stop`` (the agent wants to finish).
        task_text: the task instruction, on every event.
        command: the command (``PreToolUse`` / ``PostToolUse``).
        output: the command's output (``PostToolUse``).
        exit_code: the command's exit code (``PostToolUse``).
        step: index of the command in the session (0 for SessionStart).
        stop_hook_active: the agent is already continuing because of an earlier Stop nudge.
        paths: the files a file-edit tool writes (``Edit``, ``Write``, ``apply_patch`` ...);
            such a write event has an empty ``command``.
        tool: the tool's name as the agent reported it (``Bash`` for a command).
    """

    name: EventName
    task_text: str
    command: str = ""
    output: str = ""
    exit_code: int | None = None
    step: int = 0
    stop_hook_active: bool = False
    paths: tuple[str, ...] = ()
    tool: str = "Bash"


@dataclass(frozen=True)
class Decision:
    """A policy's answer to an event."""

    kind: Literal["allow", "instruct", "deny"]
    text: str = ""

    @property
    def is_allow(self) -> bool:
        return self.kind == "allow"


ALLOW = Decision("allow")


def allow() -> Decision:
    """Let the event pass unchanged."""
    return ALLOW


def instruct(text: str) -> Decision:
    """Put ``text`` in the agent's context (at ``Stop`` it forces another turn)."""
    if not text.strip():
        raise ValueError("an instruct decision needs non-empty text")
    return Decision("instruct", text)


def deny(text: str) -> Decision:
    """Keep the command from running; the agent sees ``text`` as its result."""
    if not text.strip():
        raise ValueError("a deny decision needs a non-empty reason")
    return Decision("deny", text)


@dataclass(frozen=True)
class Coding:
    """A family's deterministic codes for one attempt (None: cannot be coded)."""

    state: bool | None
    behavior: bool | None


RuleFn = Callable[[Event, State], Decision]


@dataclass(frozen=True)
class Rule:
    """An action rule: a guard and an intervention on some events, with a nudge limit.

    ``limit`` is how many non-allow decisions the rule may make per attempt; ``None``
    repeats until the guard no longer holds (the database-evidence denial).
    """

    family: str
    name: str
    events: tuple[EventName, ...]
    limit: int | None
    decide: RuleFn

    @property
    def key(self) -> str:
        return f"{self.family}.{self.name}"


@dataclass(frozen=True)
class _RuleSpec:
    events: tuple[EventName, ...]
    limit: int | None


F = TypeVar("F", bound=Callable[..., Any])


def rule(events: Sequence[EventName], limit: int | None = 1) -> Callable[[F], F]:
    """Declare a method of a :class:`Family` as an action rule."""
    bad = [e for e in events if e not in EVENT_NAMES]
    if bad:
        raise ValueError(f"unknown events {bad}; use {EVENT_NAMES}")

    def mark(fn: F) -> F:
        fn.__fire_rule__ = _RuleSpec(tuple(events), limit)  # type: ignore[attr-defined]
        return fn

    return mark


class Family:
    """Base class of a policy family. Subclasses set ``name`` and override what they use."""

    name: str = ""
    description: str = ""

    def eligible(self, task_text: str) -> bool:
        """Eligibility predicate E over the task description."""
        return False

    def track(self, event: Event, state: State) -> None:
        """Tracking rule: update per-attempt ``state``; never decides."""

    def rules(self) -> list[Rule]:
        """The action rules declared with :func:`rule`, in definition order."""
        found = []
        for attr in type(self).__dict__.values():
            spec = getattr(attr, "__fire_rule__", None)
            if spec is not None:
                found.append(Rule(self.name, attr.__name__, spec.events, spec.limit,
                                  attr.__get__(self)))
        for base in type(self).__mro__[1:]:
            for attr in base.__dict__.values():
                spec = getattr(attr, "__fire_rule__", None)
                if spec is not None and all(r.name != attr.__name__ for r in found):
                    found.append(Rule(self.name, attr.__name__, spec.events, spec.limit,
                                      attr.__get__(self)))
        return found

    def code(self, trajectory: Sequence[Step], task_text: str) -> Coding:
        """Registered extractor: risky state observed and registered behavior seen."""
        return Coding(state=None, behavior=None)
