"""Walking an attempt's command log: the loop every behavior extractor shares.

An extractor (a family's ``code``) replays the command log over a small state, the same
state its tracking rule keeps from events, and reads two things off it: whether the risky
state held when the agent first asked to stop, and what the state is at the end.
:func:`replay` does the walking; the extractor keeps only its own judgement.

>>> from fire_exp.policies.model import Step
>>> log = [Step(0, "command", "make"), Step(1, "stop"), Step(2, "command", "make check")]
>>> def see(state, step): state["checked"] = "check" in step.command or state.get("checked")
>>> walk = replay(log, see, risky=lambda s: not s.get("checked"))
>>> walk.risky_at_stop, walk.state["checked"], walk.commands
(True, True, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fire_exp.policies.model import State, Step

Observe = Callable[[State, Step], None]


@dataclass(frozen=True)
class Walk:
    """What :func:`replay` saw.

    Attributes:
        state: the state after the whole command log.
        risky_at_stop: ``risky(state)`` at the agent's first stop request; if it never
            asked to stop, at the end; None without a ``risky`` predicate.
        commands: command steps in the log, denied ones included.
    """

    state: State
    risky_at_stop: bool | None
    commands: int


def replay(trajectory: Sequence[Step], observe: Observe, *,
           risky: Callable[[State], bool] | None = None, denied: bool = False) -> Walk:
    """Feed each command step of ``trajectory`` to ``observe(state, step)``, in order.

    Args:
        trajectory: the attempt's command log.
        observe: updates ``state`` from one command step.
        risky: the risky-state predicate to evaluate at the first stop request.
        denied: also feed commands a policy denied (they never ran); by default only
            commands that ran are observed.
    """
    state: State = {}
    at_stop: bool | None = None
    commands = 0
    for step in trajectory:
        if step.kind == "stop":
            if risky is not None and at_stop is None:
                at_stop = bool(risky(state))
            continue
        commands += 1
        if denied or not step.denied:
            observe(state, step)
    if risky is not None and at_stop is None:
        at_stop = bool(risky(state))
    return Walk(state=state, risky_at_stop=at_stop, commands=commands)
