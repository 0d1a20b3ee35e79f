"""Where an attempt's log files lie, as the explorer reads them: one place to change.

An attempt writes into ``RUN/<log_dir>/logs/``: the session's command log and policy
events (``agent/commands.jsonl``, ``agent/policy-events.jsonl``), the conversation
(``agent/transcript.jsonl`` for ``agent=openai`` and the simulated agent,
``agent/cli-stdout.jsonl`` for the CLI agents), the verifier's output (``verifier/``) and
the environment's ``setup.log``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fire_exp.records import AttemptRecord

__all__ = ["AttemptFiles", "attempt_files"]


@dataclass(frozen=True)
class AttemptFiles:
    """The log files of one attempt (any of them may be missing)."""

    logs: Path

    @property
    def commands(self) -> Path:
        return self.logs / "agent" / "commands.jsonl"

    @property
    def policy_events(self) -> Path:
        return self.logs / "agent" / "policy-events.jsonl"

    @property
    def transcript(self) -> Path:
        """The model conversation in Chat Completions shapes (openai, simulated)."""
        return self.logs / "agent" / "transcript.jsonl"

    @property
    def cli_stdout(self) -> Path:
        """A CLI agent's machine-readable output (Claude Code stream-json, Codex --json)."""
        return self.logs / "agent" / "cli-stdout.jsonl"

    @property
    def verifier(self) -> Path:
        return self.logs / "verifier"

    @property
    def setup_log(self) -> Path:
        return self.logs / "setup.log"


def attempt_files(run_dir: Path, record: AttemptRecord) -> AttemptFiles | None:
    """The log files of ``record`` in ``run_dir``; None when the record names no folder."""
    return AttemptFiles(run_dir / record.log_dir / "logs") if record.log_dir else None
