"""The one failure of a box: it could not be prepared or it died."""

from __future__ import annotations

from fire_exp.errors import FireExpError
from fire_exp.records import Cause

__all__ = ["AgentCausedFailure", "EnvironmentFailure"]


class EnvironmentFailure(FireExpError):
    """The box could not be prepared or died: the model had no fair attempt.

    Inside an attempt the runner records it as ``environment_failed``; outside one (the
    ``images`` and ``cleanup`` commands) the CLI prints it as one line.
    """

    cause = Cause.ENVIRONMENT_FAILED


class AgentCausedFailure(EnvironmentFailure):
    """The box's session broke, and the evidence says the agent's own processes broke it.

    The engine answers, the container still runs and nothing in it was killed for want of
    memory, yet the agent's session host died or stopped: only a process inside the box
    can have done that. Raised where a backend would otherwise raise
    :class:`EnvironmentFailure`, it records the agent's cause (``agent_error``: not
    replaceable, the verifier still runs), so sabotage never earns a fresh attempt.
    """

    cause = Cause.AGENT_ERROR
