"""What a model's own bad answers were, named for the record (issue 35, point 4).

A weak model behind a CLI answers badly in four ways: a tool call the CLI refuses before
running it (arguments that are not JSON, a missing required argument, a tool it was not
offered), prose where a call belongs (a small model writing its call's JSON as text), an
empty answer, and an edit that does not apply (a patch whose context is not in the file).
The CLI answers each itself — an error result the model reads in its next request, or the
end of the turn — and fire-exp replaces nothing: the attempt is the model's, a fair one,
and the verifier scores it. What this module adds is the name: :func:`answer_cause` is the
record's ``error`` for such an attempt, and :func:`malformed_calls` its
``usage.malformed_tool_calls``.

The dialects put what they read into :class:`ModelFault` (``CliTranscript.faults``), from
the CLI's own words to the model: Codex 0.163's rollout (``failed to parse function
arguments``, ``unsupported call``, an ``apply_patch`` that did not run), Claude Code 2.1's
``<tool_use_error>`` results (``InputValidationError``, ``No such tool available``, an
``Edit`` whose string is not in the file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["EMPTY", "MALFORMED", "PROSE", "UNAPPLIED", "ModelFault", "answer_cause",
           "malformed_calls"]

MALFORMED = "malformed tool call"
UNAPPLIED = "edit that did not apply"
PROSE = "answered in prose, no tool call"
EMPTY = "empty answer"
_SHOWN = 160


@dataclass(frozen=True)
class ModelFault:
    """One tool call of the model's that the CLI refused or could not apply.

    Attributes:
        kind: ``malformed`` (refused before it ran) or ``unapplied`` (an edit that failed).
        tool: the tool the model named.
        said: the CLI's answer to the model (its first line).
    """

    kind: Literal["malformed", "unapplied"]
    tool: str
    said: str


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN else line[:_SHOWN] + "…"


def malformed_calls(faults: Sequence[ModelFault]) -> int:
    """The tool calls the CLI refused as malformed."""
    return sum(f.kind == "malformed" for f in faults)


def answer_cause(faults: Sequence[ModelFault], commands: int, final_text: str | None) -> str | None:
    """The record's name for what the model did wrong, or None.

    Args:
        faults: its refused and unapplied calls, in order.
        commands: the tool calls that ran (commands and edits).
        final_text: its last text answer (None or empty: none).

    >>> answer_cause([], 0, '{"name": "exec_command"}')
    'the model answered in prose, no tool call: {"name": "exec_command"}'
    >>> answer_cause([], 0, "")
    'the model gave an empty answer: no tool call, no text'
    >>> answer_cause([ModelFault("malformed", "run_shell", "unsupported call: run_shell")], 0, "")
    'the model made 1 malformed tool call (run_shell: unsupported call: run_shell)'
    """
    parts = []
    for kind, name in (("malformed", MALFORMED), ("unapplied", UNAPPLIED)):
        found = [f for f in faults if f.kind == kind]
        if found:
            first = found[0]
            plural = "s" if len(found) > 1 else ""
            parts.append(f"{len(found)} {name}{plural} ({first.tool}: {_short(first.said)})")
    if parts:
        return "the model made " + "; ".join(parts)
    if commands:
        return None
    if final_text and final_text.strip():
        return f"the model {PROSE}: {_short(final_text)}"
    return f"the model gave an {EMPTY}: no tool call, no text"
