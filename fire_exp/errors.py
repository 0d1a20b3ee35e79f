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
    """What a panel needs (an agent CLI, a model endpoint, an image) is missing: nothing ran."""


class ProtocolError(FireExpError):
    """The other side refused a request fire-exp built: no attempt can succeed, so the run
    stops (the message quotes the server)."""
