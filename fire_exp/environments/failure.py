"""The one failure of a box: it could not be prepared or it died."""

from __future__ import annotations

from fire_exp.errors import FireExpError
from fire_exp.records import Cause

__all__ = ["EnvironmentFailure"]


class EnvironmentFailure(FireExpError):
    """The box could not be prepared or died: the model had no fair attempt.

    Inside an attempt the runner records it as ``environment_failed``; outside one (the
    ``images`` and ``cleanup`` commands) the CLI prints it as one line.
    """

    cause = Cause.ENVIRONMENT_FAILED
