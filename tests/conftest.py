"""Shared test helpers: run the CLI as a user would, and find leftover processes; the
hooks that keep the suite race-free under pytest-xdist (``tests/parallel.py``: the
machine-wide names' groups ``GROUPS``, the machine engine's lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fire_exp.environments import session_host
from fire_exp.runner.cleanup import attempt_processes
from tests import parallel

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``fire-exp ARGS`` from this checkout as a subprocess."""
    full_env = os.environ | {"PYTHONPATH": str(REPO)} | (env or {})
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=cwd or REPO,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def marked_pids(marker: str) -> list[int]:
    """Live processes carrying ``FIRE_ATTEMPT=<marker>`` (one attempt's processes)."""
    return [p for p in session_host.marked_processes(marker) if session_host.is_alive(p)]


@pytest.fixture
def cli():
    return run_cli


def pids_working_under(root: Path) -> list[int]:
    """Live processes whose ``FIRE_WORKDIR`` lies under ``root`` (one test's attempts)."""
    return [p for p in attempt_processes(root) if session_host.is_alive(p)]


def pytest_configure(config: pytest.Config) -> None:
    parallel.start_worker(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    parallel.mark_and_order(config, items)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outside pytest-timeout: a wait for the lock is no test time
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    return (yield from parallel.around_test(item, nextitem))
