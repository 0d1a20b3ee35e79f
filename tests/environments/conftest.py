"""Fixtures of the environment tests: a Docker engine (marked tests), attempt helpers.

Docker tests are marked ``docker``. Without a reachable engine they skip on a developer's
machine and FAIL in CI (``tests/ci.py``: the one rule for reading ``CI``), where Docker must
be there. The base image is
bootstrapped once if it is missing (CI does it before pytest).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.base import Agent
from fire_exp.environments.base import Environment
from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.images import BASE_IMAGE, LABEL, bootstrap_base_image
from fire_exp.policies.arms import build_arm
from fire_exp.policies.loader import load_portfolio
from fire_exp.records import AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.model import Task
from tests.ci import missing


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A reachable Docker engine with the base image; no container of ours left at the end."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:  # noqa: BLE001
        missing(f"no Docker engine is reachable: {exc}")
    with host_lock(f"image {BASE_IMAGE}"):  # one xdist worker bootstraps, the rest wait
        bootstrap_base_image(BASE_IMAGE, client=client)
    yield client
    ours = [c.name for c in client.containers.list(
        all=True, ignore_removed=True, filters={"label": [f"{LABEL}=1", f"{LABEL}.owner-pid={os.getpid()}"]})]
    assert not ours, f"containers left behind by the tests: {ours}"


@pytest.fixture(scope="session")
def families() -> tuple[list[Any], list[Any]]:
    """The baseline arm's families (none) and the coding portfolio."""
    portfolio, controls = load_portfolio("fire-core"), load_portfolio("controls")
    return list(build_arm("baseline", portfolio, controls).families), list(portfolio.families)


EnvFactory = Callable[[Task, Path, str], Environment]


@pytest.fixture
def attempt(tmp_path: Path, families: tuple[list[Any], list[Any]]
            ) -> Callable[[Task, EnvFactory, Agent], AttemptRecord]:
    """Run one baseline attempt of ``task`` with ``agent`` in the environment made by factory."""
    count = iter(range(1000))

    def run(task: Task, factory: EnvFactory, agent: Agent) -> AttemptRecord:
        attempt_id = f"{task.name}-{agent.name}-{next(count)}"
        spec = AttemptSpec(run="test", panel="test", attempt_id=attempt_id, task=task.name,
                           cohort="silent", arm="baseline", replicate=0, order=0, seed=0)
        env = factory(task, tmp_path / attempt_id, attempt_id)
        arm, coding = families
        return run_attempt(spec, env, agent, arm, coding, rng=np.random.default_rng(0))

    return run

