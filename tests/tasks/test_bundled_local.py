"""Every bundled fire-mini task: the oracle passes and the nop agent fails, locally."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents.base import NopAgent, OracleAgent
from fire_exp.agents.simulated import load_script
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies.arms import build_arm, load_controls
from fire_exp.policies.loader import load_portfolio
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task

SUITE = SUITES_DIR / "fire-mini"
TASKS = sorted(p.name for p in SUITE.iterdir() if (p / "task.toml").is_file())


def run_local(task_name: str, agent, tmp_path: Path):  # type: ignore[no-untyped-def]
    """One baseline attempt of ``agent`` on a bundled task in the local environment."""
    task = load_task(SUITE / task_name)
    baseline = build_arm("baseline", load_portfolio("fire-core"), load_controls())
    env = LocalEnvironment(task, tmp_path / "attempt", f"t-{task_name}")
    spec = AttemptSpec(run="test", panel="test", attempt_id=f"t-{task_name}", task=task_name,
                       cohort="eligible", arm="baseline", replicate=0, order=0, seed=0)
    return run_attempt(spec, env, agent, baseline.families, [], rng=np.random.default_rng(0))


def test_suite_has_the_tasks_the_panel_needs() -> None:
    assert len(TASKS) >= 16


@pytest.mark.parametrize("task_name", TASKS)
def test_oracle_passes(task_name: str, tmp_path: Path) -> None:
    record = run_local(task_name, OracleAgent(), tmp_path)
    assert record.cause is None, record.error
    assert record.passed, f"oracle failed on {task_name}: reward {record.reward}"


@pytest.mark.parametrize("task_name", TASKS)
def test_nop_fails(task_name: str, tmp_path: Path) -> None:
    record = run_local(task_name, NopAgent(), tmp_path)
    assert record.reward == 0.0, f"nop agent was not failed on {task_name}"


@pytest.mark.parametrize("task_name", TASKS)
def test_task_has_a_valid_simulation_script(task_name: str) -> None:
    script = load_script(SUITE / task_name / "simulated.yaml")
    assert script.steps
