"""Where an attempt's log files lie, as the explorer reads them: the attempt's own layout.

The layout is :class:`fire_exp.attempt_paths.AttemptPaths`, the one owner of an attempt's
files (the runner, the environments and the agents write by it): the session's command
log and policy events, the conversation (``agent/transcript.jsonl`` for ``agent=openai``
and the simulated agent, ``agent/cli-stdout.jsonl`` for the CLI agents), the verifier's
output and the environment's ``setup.log``.
"""

from __future__ import annotations

from pathlib import Path

from fire_exp.attempt_paths import AttemptPaths
from fire_exp.records import AttemptRecord

__all__ = ["AttemptFiles", "attempt_files"]

AttemptFiles = AttemptPaths  # the explorer's name for it


def attempt_files(run_dir: Path, record: AttemptRecord) -> AttemptPaths | None:
    """The files of ``record`` in ``run_dir``; None when the record names no folder."""
    return AttemptPaths(run_dir / record.log_dir) if record.log_dir else None
