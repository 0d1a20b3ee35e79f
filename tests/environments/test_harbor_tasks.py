"""Terminal-Bench shaped tasks run unchanged in Docker: oracle passes, nop fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.base import NopAgent, OracleAgent
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.records import AttemptRecord
from fire_exp.tasks.loader import load_task

DATA = Path(__file__).resolve().parents[1] / "tasks" / "data"


@pytest.mark.docker
@pytest.mark.parametrize("name", ["word-count", "prebuilt-greeting", "tb1/sum-numbers"])
def test_terminal_bench_task_in_docker(name: str, docker_client: Any, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       attempt: Callable[..., AttemptRecord]) -> None:
    monkeypatch.setenv("FIRE_EXP_CACHE", str(tmp_path / "cache"))
    task = load_task(DATA / name)
    oracle = attempt(task, DockerEnvironment, OracleAgent())
    assert (oracle.cause, oracle.reward) == (None, 1.0), oracle.error
    nop = attempt(task, DockerEnvironment, NopAgent())
    assert (nop.cause, nop.reward) == (None, 0.0), nop.error
