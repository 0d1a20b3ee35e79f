"""Helpers of the agent tests: run one attempt of a task with a real portfolio and arm."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents.base import Agent
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task

FAKE_KEY = "sk-fake-fireexp-7Q2xZr9KpL3mN8vW"
KEY_ENV = "FIRE_TEST_OPENAI_KEY"


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


def task_copy(tmp_path: Path, name: str, timeout_sec: float | None = None) -> Path:
    """A copy of a bundled task, optionally with a shorter agent timeout."""
    dest = tmp_path / "tasks" / name
    shutil.copytree(SUITES_DIR / "fire-mini" / name, dest)
    if timeout_sec is not None:
        toml = dest / "task.toml"
        text = toml.read_text().replace("[agent]\ntimeout_sec = 120.0",
                                        f"[agent]\ntimeout_sec = {timeout_sec}")
        assert f"timeout_sec = {timeout_sec}" in text
        toml.write_text(text)
    return dest


RunFn = Callable[..., AttemptRecord]


@pytest.fixture
def run_task(tmp_path: Path) -> RunFn:
    """Run ``agent`` on a task (a bundled name or a task folder) under ``arm``."""

    def run(task: str | Path, arm: str, agent: Agent,
            portfolio: str | Path = "fire-core") -> AttemptRecord:
        path = Path(task) if isinstance(task, Path) else SUITES_DIR / "fire-mini" / task
        loaded = load_task(path)
        real, controls = load_portfolio(portfolio), load_portfolio("controls")
        env = LocalEnvironment(loaded, tmp_path / "attempt", "test-attempt")
        spec = AttemptSpec(run="r", panel="p", attempt_id="test-attempt", task=loaded.name,
                           cohort="eligible", arm=arm, replicate=0, order=0, seed=0,
                           portfolio=str(real.path), controls=str(controls.path))
        return run_attempt(spec, env, agent, build_arm(arm, real, controls).families,
                           real.families, rng=np.random.default_rng(0))

    return run
