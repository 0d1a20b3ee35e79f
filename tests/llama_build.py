"""The llama.cpp build that ``scripts/test`` runs beside the tests.

On a machine without the cached ``llama-server``, ``.ci/llama-server`` builds it from source
(about 6 minutes on two cores). ``scripts/test`` starts it after installing the package and
runs the tests meanwhile, with ``FIRE_LLAMA_BUILD`` naming a folder where the build writes
its ``log`` and, once it has ended, its exit ``status``. A test that starts a real model
server (marked ``llm``) waits for that status before its own time starts
(``tests/conftest.py``), and fails with the log's end if the build failed. Without
``FIRE_LLAMA_BUILD`` (pytest run directly) nothing waits: the test finds the binary or not.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

__all__ = ["problem", "wait"]

WAIT_S = 3600.0  # a build that has not ended by then has hung


def _folder() -> Path | None:
    value = os.environ.get("FIRE_LLAMA_BUILD")
    return Path(value) if value else None


def wait(item: pytest.Item, poll_s: float = 1.0) -> None:
    """Until the build beside the tests has ended, if ``item`` needs it (marked ``llm``)."""
    folder = _folder()
    if folder is None or item.get_closest_marker("llm") is None:
        return
    deadline = time.monotonic() + WAIT_S
    while not (folder / "status").exists() and time.monotonic() < deadline:
        time.sleep(poll_s)


def problem() -> str | None:
    """Why a model test cannot run for the build beside it (None: it ended well, or none
    runs)."""
    folder = _folder()
    if folder is None:
        return None
    status = folder / "status"
    if not status.exists():
        return f"the llama-server build beside the tests has not ended within {WAIT_S:.0f} s"
    code = status.read_text().strip()
    if code == "0":
        return None
    log = folder / "log"
    tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log.exists() else []
    return f"the llama-server build (.ci/llama-server) failed with status {code}: " + \
        " | ".join(tail)
