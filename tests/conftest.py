"""Shared test helpers: run the CLI as a user would, and find leftover processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``fire-exp ARGS`` from this checkout as a subprocess."""
    full_env = os.environ | {"PYTHONPATH": str(REPO)} | (env or {})
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=cwd or REPO,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def marked_pids(marker_prefix: str = "") -> list[int]:
    """Live processes whose environment carries a FIRE_ATTEMPT marker (with a prefix)."""
    needle = f"FIRE_ATTEMPT={marker_prefix}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] in "ZX":
            continue
        if any(item.startswith(needle) for item in environ):
            found.append(int(name))
    return found


@pytest.fixture
def cli():
    return run_cli


def pids_working_under(root: Path) -> list[int]:
    """Live processes whose ``FIRE_WORKDIR`` lies under ``root`` (one test's attempts)."""
    needle = f"FIRE_WORKDIR={root}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] not in "ZX" and any(e.startswith(needle) for e in environ):
            found.append(int(name))
    return found
