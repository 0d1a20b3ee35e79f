"""Starting a process under test so that Ctrl-C reaches it as it would from a terminal.

A test suite started from a background job (``pytest &``, a CI runner, ``nohup``) runs
with SIGINT ignored, and every child inherits that: Python then installs no
KeyboardInterrupt handler, and a SIGINT the test sends does nothing. The process under
test gets SIGINT's default disposition back before it starts.
"""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["default_sigint", "popen_interruptible"]


def default_sigint() -> None:
    """In the child, before exec: SIGINT at its default (Python then handles it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_interruptible(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """``subprocess.Popen(args, **kwargs)`` with SIGINT at its default in the child."""
    return subprocess.Popen(args, preexec_fn=default_sigint, **kwargs)  # noqa: PLW1509
