"""Helpers of the environment tests: the bundled tasks and small tasks written on the fly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.base import Environment
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task

SUITE = SUITES_DIR / "fire-mini"
BUNDLED = sorted(p.name for p in SUITE.iterdir() if (p / "task.toml").is_file())


def bundled_task(name: str) -> Task:
    return load_task(SUITE / name)


DOCKERFILE = """ARG BASE_IMAGE=fire-exp/base:bookworm
FROM ${BASE_IMAGE}
WORKDIR /app
"""
PASS_IF_DONE = """#!/bin/bash
mkdir -p /logs/verifier
if [ -f /app/done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


def make_task(root: Path, name: str, *, solve: str = "touch /app/done\n",
              test: str = PASS_IF_DONE, agent_timeout: float = 60.0,
              verifier_timeout: float = 30.0, environment: str = "",
              dockerfile: str | None = DOCKERFILE) -> Task:
    """Write a small Harbor task for the Docker tests and load it.

    Its content (and so its image tag) depends only on the arguments, so image builds are
    cached across test runs.
    """
    path = root / name
    (path / "tests").mkdir(parents=True)
    (path / "solution").mkdir()
    (path / "task.toml").write_text(
        f'schema_version = "1.1"\n[agent]\ntimeout_sec = {agent_timeout}\n'
        f"[verifier]\ntimeout_sec = {verifier_timeout}\n[environment]\n{environment}\n")
    (path / "instruction.md").write_text(f"Do the {name} task.\n")
    (path / "tests" / "test.sh").write_text(test)
    (path / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve)
    if dockerfile is not None:
        (path / "environment").mkdir()
        (path / "environment" / "Dockerfile").write_text(dockerfile)
    return load_task(path)


def started_box(request: pytest.FixtureRequest, tmp_path: Path, run: str) -> Iterator[Environment]:
    """A started box of the fixture's kind (``local`` or ``docker``) on csv-column-stats."""
    task = bundled_task("csv-column-stats")
    if request.param == "docker":
        request.getfixturevalue("docker_client")
        box: Environment = DockerEnvironment(task, tmp_path / "a", run)
    else:
        box = LocalEnvironment(task, tmp_path / "a", run)
    with box:
        yield box
