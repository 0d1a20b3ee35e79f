"""Starting a process under test so that Ctrl-C reaches it as it would from a terminal, and
telling when it (or its process group) is gone.

A test suite started from a background job (``pytest &``, a CI runner, ``nohup``) runs
with SIGINT ignored, and every child inherits that: Python then installs no
KeyboardInterrupt handler, and a SIGINT the test sends does nothing. The process under
test gets SIGINT's default disposition back before it starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

__all__ = ["default_sigint", "gone", "popen_interruptible"]


def default_sigint() -> None:
    """In the child, before exec: SIGINT at its default (Python then handles it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_interruptible(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """``subprocess.Popen(args, **kwargs)`` with SIGINT at its default in the child."""
    return subprocess.Popen(args, preexec_fn=default_sigint, **kwargs)  # noqa: PLW1509


def gone(pid: int, *, group: bool = False) -> bool:
    """Whether process ``pid`` (with ``group``: every process of group ``pid``) no longer
    exists; a zombie not yet reaped still exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return True
    return False
