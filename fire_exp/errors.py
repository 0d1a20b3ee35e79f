"""User-facing errors: each says what was wrong, where (file, line, field) and what to do."""

from __future__ import annotations

from pathlib import Path


class FireExpError(Exception):
    """An error the user can fix. The CLI prints it as one line and exits with status 2."""


class InputError(FireExpError):
    """Bad input: a malformed task, config, portfolio, plan or attempts file.

    Args:
        path: the file at fault.
        field: the field, key or line within it.
        problem: what is wrong.
        fix: what to do about it.
    """

    def __init__(self, path: Path | str, field: str, problem: str, fix: str = "") -> None:
        self.path, self.field, self.problem, self.fix = str(path), field, problem, fix
        message = f"{path}: {field}: {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)


class PreregistrationError(FireExpError):
    """Something hashed in a preregistration manifest changed after freezing."""


class PreflightError(FireExpError):
    """Something the agent or the environment needs is missing, so the panel cannot run.

    Raised before the first attempt, so nothing is recorded.

    Args:
        what: what is missing or wrong (the binary, the key, the engine).
        how_to_fix: what to do about it.
    """

    def __init__(self, what: str, how_to_fix: str) -> None:
        self.what, self.how_to_fix = what, how_to_fix
        super().__init__(f"{what} ({how_to_fix})")


class ProtocolError(FireExpError):
    """The other side refused a request fire-exp built: no attempt can succeed, so the run
    stops (the message quotes the server)."""


class NothingMeasuredError(ProtocolError):
    """The run's first attempts all failed before any model answer: the run stops rather
    than spend its schedule measuring nothing (runner/nothing_measured.py)."""
