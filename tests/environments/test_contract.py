"""The environment contract holds the same in the local and the Docker backend.

``run`` (a process outside the agent's session: variables, working folder, user, timeout,
streamed output), files both ways through archives, per-command variables in ``exec``.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.base import Capability, Environment, EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment

from .helpers import started_box


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Environment]:
    yield from started_box(request, tmp_path, "contract-test")


def test_run_takes_variables_a_working_folder_and_streams_its_output(env: Environment) -> None:
    chunks: list[str] = []
    result = env.run('echo "$GREETING from $(pwd)"; echo oops >&2; exit 3', 30.0,
                     env={"GREETING": "hello"}, cwd="/", stream=chunks.append)
    assert result.exit_code == 3 and not result.timed_out
    assert result.stdout == "hello from /\n" and result.stderr == "oops\n"
    assert "".join(chunks).count("hello") == 1


def test_run_kills_what_passes_its_timeout(env: Environment) -> None:
    result = env.run("sleep 30; echo late", 1.0)
    assert result.timed_out and result.exit_code == 124 and "late" not in result.stdout


def test_run_does_not_join_the_agents_session(env: Environment) -> None:
    # Durations of this test process's own: `ps` on this machine also lists the processes of
    # other workers' boxes (a container's are the host's too), the same test's among them.
    mine = 1000 + 2 * (os.getpid() % 40000)
    env.exec(f"sleep {mine} > /dev/null 2>&1 &", 10.0)  # attached to the agent's session
    ran = env.run(f"sleep {mine + 1} > /dev/null 2>&1 < /dev/null & echo started", 10.0)
    assert ran.stdout == "started\n"
    env.end_agent_session()
    alive = env.run("ps -eo args=", 10.0).stdout.splitlines()
    assert f"sleep {mine}" not in alive and f"sleep {mine + 1}" in alive
    assert env.run("echo $FIRE_WORKDIR", 10.0).stdout == f"{env.paths.workdir}\n"


def test_exec_variables_reach_only_that_command(env: Environment) -> None:
    assert env.exec("echo $ONLY_HERE", 10.0, env={"ONLY_HERE": "x1"}).stdout == "x1\n"
    assert env.exec("echo ${ONLY_HERE:-gone}", 10.0).stdout == "gone\n"


def test_files_cross_both_ways(env: Environment, tmp_path: Path) -> None:
    target = f"{env.paths.agent}/conf/settings.json"
    env.write_file(target, b'{"a": 1}\n', 0o600)
    assert env.read_file(target) == b'{"a": 1}\n'
    assert env.run(f"stat -c %a {target}", 10.0).stdout.strip() == "600"
    env.download(f"{env.paths.agent}/conf", tmp_path / "home")
    assert (tmp_path / "home" / "conf" / "settings.json").read_bytes() == b'{"a": 1}\n'
    env.remove(f"{env.paths.agent}/conf")
    with pytest.raises(EnvironmentFailure):
        env.read_file(target)


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
