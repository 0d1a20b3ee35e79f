"""A run whose first attempts all failed before any model answer stops, and says so.

Preflight checks the model endpoint before the first attempt, but an endpoint can still
be unreachable from where the attempts run (the box's egress, a server that went down),
and each such attempt is a provider failure (``provider_failed``, no output tokens):
replaced under the panel's rule, never a valid failure. A run whose first
:data:`FIRST_ATTEMPTS` finished attempts all ended so has measured nothing and would
spend its whole schedule (and replacement budget) the same way: it stops with
:class:`~fire_exp.errors.NothingMeasuredError`, naming the first error. What finished is
in the store; running again resumes the run.
"""

from __future__ import annotations

from fire_exp.errors import NothingMeasuredError
from fire_exp.records import AttemptRecord, Cause

__all__ = ["FIRST_ATTEMPTS", "NothingMeasured", "never_answered"]

FIRST_ATTEMPTS = 3


def never_answered(record: AttemptRecord) -> bool:
    """Whether ``record`` ended before any model answer: a provider failure with no output
    token."""
    return record.cause is Cause.PROVIDER_FAILED and record.usage.output_tokens == 0


class NothingMeasured:
    """Watches the first records a run writes (at most ``first``; fewer when the run owes
    fewer attempts) and raises once they all ended before any model answer."""

    def __init__(self, owed: int, first: int = FIRST_ATTEMPTS) -> None:
        self.first = max(min(first, owed), 1)
        self.seen: list[AttemptRecord] = []

    def finished(self, record: AttemptRecord) -> None:
        """Take the run's next finished record.

        Raises:
            NothingMeasuredError: the first ``first`` records all never got a model answer.
        """
        if len(self.seen) >= self.first:
            return
        self.seen.append(record)
        if len(self.seen) == self.first and all(never_answered(r) for r in self.seen):
            first = self.seen[0]
            raise NothingMeasuredError(
                f"the first {self.first} attempt(s) of the run all failed before any model "
                f"answer (provider_failed, no output tokens), so nothing was measured and "
                f"the run stops; {first.attempt_id}: {(first.error or '').strip()[:400]} "
                f"(check that the model endpoint answers from where the attempts run: "
                f"ATTEMPT/logs/agent/egress.jsonl shows what the box's proxy saw; then run "
                f"again to resume)")
