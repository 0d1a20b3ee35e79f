"""What a command's exit status means when the agent's CLI did not report one.

Current Codex releases send a shell command's result to hooks as the plain output, without
its exit code. A family that waits for a *successful* command (a copy, a deployment probe,
a reconciliation) must then neither wait forever nor take any command as a success.
:func:`succeeded` is the rule the families use (docs/portfolio.md, "Unknown exit status"):
a known status decides; an unknown one counts as a success unless the output reads like a
failure (the shell's and common tools' error lines).

>>> succeeded(None, "")
True
>>> succeeded(None, "cp: cannot stat 'evidence': No such file or directory")
False
>>> succeeded(2, "")
False
"""

from __future__ import annotations

import re

FAILURE = re.compile(
    r"command not found|No such file or directory|Permission denied|cannot (stat|open|create)"
    r"|Traceback \(most recent call last\)|^(fatal|error|ERROR|Error)\b|: (error|fatal):"
    r"|\bFailed to connect\b|Connection refused|\bsyntax error\b|Segmentation fault",
    re.M,
)


def succeeded(exit_code: int | None, output: str) -> bool:
    """Whether a command succeeded: its exit code when known, else its output's word."""
    if exit_code is not None:
        return exit_code == 0
    return not FAILURE.search(output)
