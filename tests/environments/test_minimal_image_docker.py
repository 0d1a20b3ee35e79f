"""A task whose image has no python3, no bash and no libc runs all the same (issue 40, point 3).

The image is busybox alone (``minimal_image.py``). The session host runs on the box
runtime fire-exp mounts (``docker_runtime.py``): its own python3, bash and loader. A
bundled-style task on that image — a status file served over HTTP that must outlive the
agent's session — passes with its oracle (a ``setsid`` server survives the hangup, a plain
``&`` one dies), fails with a wrong solution (the plain ``&`` server only), and its verifier
runs; an unprivileged agent is made and shielded there too, and the files transport of a
one-shot box starts the same session host there on the same runtime.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.base import OracleAgent
from fire_exp.environments.base import ExecResult
from fire_exp.environments.docker import HOST_PATH, DockerEnvironment
from fire_exp.environments.docker_runtime import BASH, BIN, PYTHON
from fire_exp.environments.session_client import SessionClient
from fire_exp.environments.session_files import FileChannel
from fire_exp.records import AttemptRecord
from fire_exp.tasks.model import Task

from .helpers import make_task
from .minimal_image import minimal_image

pytestmark = pytest.mark.docker
Attempt = Callable[..., AttemptRecord]

# What the agent's session sees of the box, then the servers: 8000 detached, 8001 not.
SERVE = """\
mkdir -p /logs/agent
{ command -v python3 || echo no-python3; echo "bash $BASH_VERSION"; } > /logs/agent/box.txt
echo ok > /app/status.txt
setsid httpd -f -p 8000 -h /app > /dev/null 2>&1 < /dev/null &
httpd -f -p 8001 -h /app &
"""
PLAIN = "echo ok > /app/status.txt\nhttpd -f -p 8000 -h /app &\n"
TEST = """#!/bin/sh
mkdir -p /logs/verifier
get() { wget -q -O - "http://127.0.0.1:$1/status.txt" 2>/dev/null; }  # busybox: no -T
[ "$(get 8001)" = ok ] && echo alive > /logs/verifier/plain.txt || echo dead > /logs/verifier/plain.txt
[ "$(get 8000)" = ok ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
"""


@pytest.fixture(scope="module")
def image(docker_client: Any) -> str:
    return minimal_image(docker_client)


def _task(root: Path, name: str, image: str, solve: str) -> Task:
    return make_task(root, name, solve=solve, test=TEST,
                     dockerfile=f"FROM {image}\nWORKDIR /app\n")


def test_the_image_has_no_python3_no_bash_and_no_loader(docker_client: Any, image: str
                                                       ) -> None:
    out = docker_client.containers.run(
        image, ["sh", "-c", "for p in python3 python bash; do command -v $p || echo no-$p; "
                            "done; ls /lib64 /lib /usr/lib 2>&1 | grep -c 'No such file'"],
        remove=True, network_mode="none").decode().split()
    assert out == ["no-python3", "no-python", "no-bash", "3"]


def test_the_oracle_passes_and_only_the_detached_server_survives_the_session(
        image: str, attempt: Attempt, tmp_path: Path) -> None:
    task = _task(tmp_path / "suite", "serve-status-minimal", image, SERVE)
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert (record.cause, record.reward, record.passed) == (None, 1.0, True), record.error
    logs = tmp_path / record.attempt_id / "logs"
    assert (logs / "verifier" / "plain.txt").read_text().strip() == "dead"
    # The agent's commands ran in bash (the runtime's), and the image's programs are what
    # the agent sees: no python3 (the runtime's is on no PATH).
    assert (logs / "agent" / "box.txt").read_text().splitlines() == [
        "no-python3", "bash 5.2.15(1)-release"]


def test_a_wrong_solution_fails(image: str, attempt: Attempt, tmp_path: Path) -> None:
    task = _task(tmp_path / "suite", "serve-status-minimal", image, PLAIN)
    record = attempt(task, DockerEnvironment, OracleAgent())
    assert (record.cause, record.reward, record.passed) == (None, 0.0, False), record.error


def test_an_unprivileged_agent_is_made_and_shielded_on_the_minimal_image(
        image: str, tmp_path: Path) -> None:
    task = _task(tmp_path / "suite", "agent-user-minimal", image, "true\n")
    with DockerEnvironment(task, tmp_path / "a", "agent-user-minimal") as env:
        env.run_agent_as("fire-agent")
        assert env.exec("id -un; echo $PATH", 30).stdout.split() == [
            "fire-agent", f"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:{BIN}"]
        # The shield: real and effective group apart, so the kernel sets AT_SECURE for the
        # runtime's bash; its loader still loads the runtime's libraries (there are no
        # others). The command exec'd from it carries the shield's group as its saved one
        # (busybox drops its effective group at start; a CLI keeps it).
        group = env.exec("id -g", 30).stdout.strip()
        shielded = env.exec_captured("grep Gid /proc/self/status", 30)
        assert shielded.result.exit_code == 0 and shielded.intact, shielded
        real, _, saved, _ = shielded.stdout.decode().split()[1:]
        assert (real, saved) == (group, "64999")  # session_host.CLI_GID


def test_the_files_transport_serves_the_session_on_the_runtime(image: str,
                                                               tmp_path: Path) -> None:
    task = _task(tmp_path / "suite", "files-transport-minimal", image, "true\n")
    with DockerEnvironment(task, tmp_path / "a", "files-transport-minimal") as env:
        container = env.container

        def exec_once(argv: Sequence[str], timeout: float) -> ExecResult:
            done = container.exec_run(list(argv), demux=True)
            out, err = ((b or b"").decode() for b in done.output)
            return ExecResult(exit_code=done.exit_code, stdout=out, stderr=err,
                              timed_out=False, duration_s=0.0)

        host = [*PYTHON, HOST_PATH, "files-transport", "/tmp/files.log",
                "--shell", json.dumps(BASH)]
        channel = FileChannel.start(exec_once, "/opt/fire-exp/files", host, lease_s=30.0)
        session = SessionClient(channel)
        try:
            done = session.exec("command -v python3 || echo no-python3; echo $BASH_VERSION",
                                30, cwd="/app")
            assert done.stdout.split() == ["no-python3", "5.2.15(1)-release"], done
        finally:
            session.hangup()
            channel.close()
