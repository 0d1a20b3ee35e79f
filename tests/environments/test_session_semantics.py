"""The agent's session ends the same way in the local and the Docker environment.

What the agent left attached to its session dies when the session ends (a plain ``&``, a
``setsid`` child still writing to the session's streams, a background job that does not
ignore SIGHUP); what it detached properly (``setsid`` or ``nohup`` with redirected
streams) survives into the verifier phase.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.environments.base import Environment
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.inbox import procs

from .helpers import started_box

COMMANDS = {
    1001: ("sleep 1001 &", False),  # plain background job: attached
    1002: ("nohup sleep 1002 > /dev/null 2>&1 &", True),  # ignores SIGHUP, streams redirected
    1003: ("setsid sleep 1003 > /dev/null 2>&1 < /dev/null &", True),  # left the session
    1004: ("setsid sleep 1004 &", False),  # left the session, still on its streams
    1005: ("sleep 1005 > /dev/null 2>&1 &", False),  # redirected, but dies of SIGHUP
}


def alive_commands(env: Environment) -> str:
    """The command lines of the attempt's processes still running."""
    if isinstance(env, DockerEnvironment):
        result = env.container.exec_run(["ps", "-eo", "stat=,args="])
        lines = result.output.decode().splitlines()
        return "\n".join(ln.split(None, 1)[1] for ln in lines if not ln.startswith("Z"))
    found = []
    for pid in procs.marked_processes(env.marker):  # type: ignore[attr-defined]
        if procs.is_alive(pid):
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                found.append(fh.read().replace(b"\0", b" ").decode())
    return "\n".join(found)


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Environment]:
    yield from started_box(request, tmp_path, "session-test")


def test_attached_work_dies_detached_work_survives(env: Environment) -> None:
    for command, _ in COMMANDS.values():
        assert env.exec(command, timeout=10).exit_code == 0
    before = alive_commands(env)
    assert all(f"sleep {n}" in before for n in COMMANDS), before
    end = env.end_agent_session()
    after = alive_commands(env)
    for n, (command, survives) in COMMANDS.items():
        assert (f"sleep {n}" in after) == survives, f"{command!r}: {after}"
    assert len(end.survivors) == sum(s for _, s in COMMANDS.values())
    assert env.end_agent_session().survivors == []  # ending twice is harmless


def test_commands_run_in_the_working_folder_with_the_task_paths(env: Environment) -> None:
    result = env.exec('pwd; echo "$FIRE_LOGS $FIRE_TESTS"; echo oops >&2; exit 3', 10)
    lines = result.stdout.splitlines()
    assert lines[0] == env.paths.workdir
    assert lines[1] == f"{env.paths.logs} {env.paths.tests}"
    assert result.stderr == "oops\n" and result.exit_code == 3
    assert env.exec("ls data", 10).stdout == "sales.csv\n"  # the task's files are there


def test_a_command_past_its_timeout_is_killed(env: Environment) -> None:
    result = env.exec("echo before; sleep 30; echo after", timeout=1.0)
    assert result.timed_out and result.exit_code == 124
    assert result.stdout == "before\n"
    assert "sleep 30" not in alive_commands(env)
    assert env.exec("echo still here", 10).stdout == "still here\n"


def test_state_persists_between_commands(env: Environment) -> None:
    env.exec("echo 42 > state.txt", 10)
    assert env.exec("cat state.txt", 10).stdout == "42\n"
