"""A run killed mid-attempt leaves its container; ``fire-exp cleanup`` removes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments.images import LABEL

from .helpers import make_task

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})


def _owned_by(client: Any, pid: int) -> list[Any]:
    return client.containers.list(all=True, filters={
        "label": [f"{LABEL}=1", f"{LABEL}.owner-pid={pid}"]})


def _start_long_run(tmp_path: Path, panel_name: str) -> subprocess.Popen[str]:
    """A docker panel whose only attempt runs for two minutes."""
    suite = tmp_path / "suite"
    make_task(suite, "long-attempt", agent_timeout=300.0, solve="sleep 120\n")
    return subprocess.Popen(
        [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=oracle",
         "environment=docker", f"panel.suite={suite}", f"panel.name={panel_name}",
         "panel.eligible=[long-attempt]", "panel.silent=[]", "panel.arms=[baseline]",
         "panel.attempts=1", f"results_dir={tmp_path / 'results'}", "analyze=false"],
        cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_container(client: Any, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not _owned_by(client, proc.pid):
        assert proc.poll() is None, f"the run ended early: {proc.stderr.read()}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "no container appeared"
        time.sleep(0.2)


@pytest.mark.docker
@pytest.mark.slow
def test_killed_run_leaves_a_container_that_cleanup_removes(docker_client: Any,
                                                            tmp_path: Path) -> None:
    proc = _start_long_run(tmp_path, "killtest")
    try:
        _wait_for_container(docker_client, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = _owned_by(docker_client, proc.pid)
    assert len(left) == 1 and left[0].labels[f"{LABEL}.task"] == "long-attempt"
    assert left[0].labels[f"{LABEL}.run"]  # the run folder's name
    result = _cli("cleanup")
    assert result.returncode == 0, result.stderr
    assert f"removed container {left[0].name}" in result.stdout
    assert not _owned_by(docker_client, proc.pid)


@pytest.mark.docker
def test_cleanup_keeps_containers_of_live_runs(docker_client: Any, tmp_path: Path) -> None:
    from fire_exp.environments.docker import DockerEnvironment

    task = make_task(tmp_path, "live-run")
    with DockerEnvironment(task, tmp_path / "a", "live-run") as env:
        result = _cli("cleanup")
        assert result.returncode == 0, result.stderr
        assert f"kept container {env.container.name}" in result.stdout
        env.container.reload()
        assert env.container.status == "running"


@pytest.mark.docker
@pytest.mark.slow
def test_ctrl_c_removes_the_running_attempts_container(docker_client: Any,
                                                       tmp_path: Path) -> None:
    proc = _start_long_run(tmp_path, "ctrlctest")
    try:
        _wait_for_container(docker_client, proc)
        time.sleep(1.0)  # let the agent's command start
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert not _owned_by(docker_client, proc.pid)


@pytest.mark.docker
def test_a_resumed_run_removes_containers_of_dead_runs(docker_client: Any) -> None:
    import socket

    from fire_exp.environments.docker import DockerEnvironment
    from fire_exp.environments.images import BASE_IMAGE

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs: the owner of an orphaned container
    orphan = docker_client.containers.run(
        BASE_IMAGE, ["sleep", "600"], detach=True, init=True,
        labels={LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(),
                f"{LABEL}.owner-pid": str(dead.pid)})
    try:
        assert DockerEnvironment.reap_orphans() >= 1  # what run_panel calls on (re)start
        assert not _owned_by(docker_client, dead.pid)
    finally:
        if _owned_by(docker_client, dead.pid):
            orphan.remove(force=True)
