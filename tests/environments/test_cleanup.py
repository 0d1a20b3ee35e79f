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

from fire_exp.environments.docker_cleanup import why_kept
from fire_exp.environments.images import LABEL
from tests.signals import popen_interruptible

from .helpers import make_task

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fire_exp", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})


def _owned_by(client: Any, pid: int) -> list[Any]:
    return client.containers.list(all=True, ignore_removed=True, filters={
        "label": [f"{LABEL}=1", f"{LABEL}.owner-pid={pid}"]})


def _start_long_run(tmp_path: Path, panel_name: str) -> subprocess.Popen[str]:
    """A docker panel whose only attempt runs for two minutes."""
    suite = tmp_path / "suite"
    make_task(suite, "long-attempt", agent_timeout=300.0, solve="sleep 120\n")
    return popen_interruptible(
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


# Leaves a killed run's container for its own cleanup: any other panel's start would reap it.
@pytest.mark.xdist_group("machine-engine")
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
    run = left[0].labels[f"{LABEL}.run"]  # the run folder's name
    assert run and left[0].labels[f"{LABEL}.run-dir"].endswith(f"killtest/{run}")
    result = _cli("cleanup", "--run", run)  # scoped: other runs on this engine are not ours
    assert result.returncode == 0, result.stderr
    assert f"removed container {left[0].name}" in result.stdout
    assert not _owned_by(docker_client, proc.pid)


@pytest.mark.docker
def test_cleanup_keeps_containers_of_live_runs(docker_client: Any, tmp_path: Path) -> None:
    from fire_exp.environments.docker import DockerEnvironment

    task = make_task(tmp_path, "live-run")
    with DockerEnvironment(task, tmp_path / "a", "live-run") as env:
        result = _cli("cleanup", "--run", "")
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
        # This container, by its id: another of the suite's containers may name the same
        # pid (a process of the same pid before the pids wrapped: 32768 here, and the
        # suite starts tens of thousands of processes), kept for its own reasons. Another
        # test's run start may be removing it at this moment (cleanup then leaves it to
        # that one: a 409), so it is gone within moments rather than at once.
        assert _gone_soon(orphan), (orphan.status, why_kept(orphan.labels))
    finally:
        if _exists(orphan):
            _remove(orphan)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _labelled(client: Any, **extra: str) -> Any:
    import socket

    from fire_exp.environments.images import BASE_IMAGE

    labels = {LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(),
              f"{LABEL}.owner-pid": str(_dead_pid())}
    labels.update({f"{LABEL}.{k.replace('_', '-')}": v for k, v in extra.items()})
    return client.containers.run(BASE_IMAGE, ["sleep", "600"], detach=True, init=True,
                                 labels=labels)


def _remove(container: Any) -> None:
    """A test's own container removed at its end, unless another panel's cleanup (another
    test's, in parallel) got there first."""
    import docker

    try:
        container.remove(force=True)
    except docker.errors.APIError as exc:
        if exc.status_code not in (404, 409):
            raise


def _gone_soon(container: Any) -> bool:
    for _ in range(300):  # bounds the wait (30 s); not a test of speed
        if not _exists(container):
            return True
        time.sleep(0.1)
    return False


def _exists(container: Any) -> bool:
    import docker

    try:
        container.reload()
        return True
    except docker.errors.NotFound:
        return False


@pytest.mark.docker
def test_a_container_removed_by_another_panel_mid_cleanup_is_simply_gone(
        docker_client: Any, tmp_path: Path) -> None:
    """Another panel removes its container between cleanup's listing and its inspection of
    that container (the race two panels on one engine run): cleanup goes on, no error."""
    import docker

    from fire_exp.environments.docker_cleanup import cleanup

    vanishing = _labelled(docker_client, run="race-gone")
    other = _labelled(docker_client, run="race-other", keep="1")
    client = docker.from_env()
    inspect = client.api.inspect_container

    def racing_inspect(container_id: str) -> Any:
        if container_id in (vanishing.id, vanishing.name):
            try:
                docker_client.api.remove_container(vanishing.id, force=True)  # the other panel
            except docker.errors.NotFound:
                pass  # a real other panel's start (another test's) reaped it first
            except docker.errors.APIError as exc:  # ... or is reaping it right now
                if exc.status_code != 409:
                    raise
        return inspect(container_id)

    client.api.inspect_container = racing_inspect  # type: ignore[method-assign]
    try:
        report = cleanup(client)
        assert not report.errors and vanishing.name not in report.containers
        assert not _exists(vanishing)
        assert (other.name, "kept for inspection (keep_container)") in report.kept
    finally:
        for c in (vanishing, other):
            if _exists(c):
                _remove(c)
        client.close()


@pytest.mark.docker
def test_a_run_start_keeps_what_is_not_provably_dead(docker_client: Any,
                                                     tmp_path: Path) -> None:
    import fcntl

    from fire_exp.environments.docker import DockerEnvironment

    locked = tmp_path / "locked-run"
    locked.mkdir()
    holder = open(locked / "attempts.lock", "a+")  # a live run elsewhere holds its lock
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    free = tmp_path / "dead-run"
    free.mkdir()
    (free / "attempts.lock").write_text("pid 1\n")
    made = {
        "other_host": _labelled(docker_client, owner_host="another-machine", run="h12-a"),
        "keep": _labelled(docker_client, keep="1", run="h12-keep"),
        "locked": _labelled(docker_client, run="h12-locked", run_dir=str(locked)),
        "dead": _labelled(docker_client, run="h12-dead", run_dir=str(free)),
    }
    try:
        DockerEnvironment.reap_orphans(tmp_path / "my-run")
        alive = {name: _exists(c) for name, c in made.items()}
        assert alive == {"other_host": True, "keep": True, "locked": True, "dead": False}
        result = _cli("cleanup", "--run", "h12-keep")  # --run also takes kept ones
        assert result.returncode == 0, result.stderr
        assert f"removed container {made['keep'].name}" in result.stdout
        assert not _exists(made["keep"])
        result = _cli("cleanup", "--run", "h12-a")
        assert f"kept container {made['other_host'].name} (made on host another-machine" \
            in result.stdout and _exists(made["other_host"])
        result = _cli("cleanup", "--run", "h12-locked")
        assert "is locked by a live run" in result.stdout and _exists(made["locked"])
    finally:
        holder.close()
        for container in made.values():
            if _exists(container):
                _remove(container)


def _panel_cmd(tmp_path: Path, suite: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "fire_exp", "run", "panel=demo", "agent=oracle",
            "environment=docker", f"panel.suite={suite}", f"panel.name={name}",
            "panel.eligible=[slow-a]", "panel.silent=[slow-b]", "panel.arms=[real,sham]",
            "panel.attempts=2", "executor.workers=2", f"results_dir={tmp_path / 'results'}",
            "run=r", "analyze=false"]


@pytest.mark.docker
@pytest.mark.slow
def test_two_panels_share_one_engine_and_both_finish(docker_client: Any,
                                                     tmp_path: Path) -> None:
    import json

    suite = tmp_path / "suite"
    for task in ("slow-a", "slow-b"):
        make_task(suite, task, solve="sleep 2; touch /app/done\n")
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(_panel_cmd(tmp_path, suite, "share-one"), cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_container(docker_client, first)  # the second starts while the first runs
    second = subprocess.Popen(_panel_cmd(tmp_path, suite, "share-two"), cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outs = [p.communicate(timeout=600) for p in (first, second)]
    for proc, (_, err) in zip((first, second), outs, strict=True):
        assert proc.returncode == 0, err
    for name in ("share-one", "share-two"):
        lines = (tmp_path / "results" / name / "r" / "attempts.jsonl").read_text().splitlines()
        finished = [json.loads(x) for x in lines if '"kind":"finished"' in x]
        assert len(finished) == 8, name  # 2 tasks x 2 arms x 2 attempts, none replaced
        assert all(r["cause"] is None and r["reward"] == 1.0 for r in finished), name
