"""What the conformance kit (test_conformance.py) leaves to each backend: the task's files
prepared, a user honoured or refused, a missing capability refused by name."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.base import Capability, Environment, EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment

from .helpers import started_box


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Environment]:
    yield from started_box(request, tmp_path, "contract-test")


def test_the_tasks_files_are_in_the_working_folder(env: Environment) -> None:
    assert env.exec("ls data", 10.0).stdout == "sales.csv\n"


def test_a_user_is_honoured_or_refused_loudly(env: Environment) -> None:
    if isinstance(env, DockerEnvironment):
        assert env.run("id -un", 10.0, user="nobody").stdout == "nobody\n"
    else:
        assert env.run("id -un", 10.0, user=getpass.getuser()).exit_code == 0
        with pytest.raises(EnvironmentFailure, match="runs every command as"):
            env.run("true", 10.0, user="someone-else")


def test_a_missing_capability_is_refused_by_name(env: Environment) -> None:
    if Capability.INSTALL_AGENT not in env.capabilities:
        with pytest.raises(EnvironmentFailure, match="install_agent capability"):
            env.install_agent(None)  # type: ignore[arg-type]
    if Capability.HOOK_RELAY not in env.capabilities:
        with pytest.raises(EnvironmentFailure, match="hook_relay capability"):
            env.open_stream(["true"])
