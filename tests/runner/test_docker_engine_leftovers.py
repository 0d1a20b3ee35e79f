"""The two-engine modules heal what a killed run left: an engine whose owner died (its
daemon, in its own session, outlives the run) is removed with its bridge before the next
engine starts; an engine whose owner lives (another run's, now) is never touched.

The engines here are planted, not started: a folder as ``start_engine`` makes it, a
process in its own session naming the folder as its daemon would, a bridge. Under their
own root and bridge name (``tmp_path``, ``fxt…``), so they run beside everything but the
engine judges, which compare the host's bridges (``tests/parallel.HOST_BRIDGE_FIXTURES``);
the last test plants the module's real names and is in the ``machine-engine`` group.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ci import missing as ci_missing
from tests.runner import docker_engine
from tests.runner.docker_engine import (
    BRIDGE,
    ENGINES_ROOT,
    PREFIX,
    owner_alive,
    reap_dead_engines,
    write_owner,
)


def _bridge_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


@pytest.fixture
def planted_bridge() -> Iterator[str]:
    """A bridge of a planted engine (removed after the test whatever happened)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        ci_missing("a planted engine's bridge needs root and ip")
    name = f"fxt{secrets.token_hex(4)}"
    subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True,
                   capture_output=True)
    yield name
    subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)


class Planted:
    """Engines planted under one root; their stand-in daemons are ended after the test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen[bytes]] = []

    def engine(self, owner: str) -> tuple[Path, subprocess.Popen[bytes]]:
        """A folder with its daemon's stand-in; ``owner``: ``"dead"`` (a process that has
        exited), ``"alive"`` (this test's process) or ``"none"`` (no owner file)."""
        folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.root))
        if owner == "dead":
            gone = subprocess.Popen(["sleep", "600"])
            write_owner(folder, gone.pid)
            gone.kill()
            gone.wait()
        elif owner == "alive":
            write_owner(folder)
        (folder / "dockerd.log").touch()
        daemon = subprocess.Popen(["tail", "-f", f"{folder}/dockerd.log"],
                                  start_new_session=True)  # as dockerd: its own session
        self.procs.append(daemon)
        _named_once_running(daemon, folder)
        return folder, daemon

    def end(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _named_once_running(proc: subprocess.Popen[bytes], folder: Path) -> None:
    """Wait until ``proc``'s command line names ``folder``. Popen returns once the child's
    exec has begun (vfork: when it lets go of the parent's memory), not when it has
    finished: until then ``/proc/PID/cmdline`` is empty, and a reaping in that moment
    finds no process naming the folder (CI, under load: the stand-in outlived its reaping,
    the reaping's first scans having found nothing and a later one the stand-in)."""
    for _ in range(3000):  # bounds the wait (30 s); not a test of speed
        if f"{folder}/".encode() in _cmdline(proc.pid):
            return
        time.sleep(0.01)
    raise AssertionError(f"the stand-in {proc.pid} never named {folder}: {_cmdline(proc.pid)!r}")


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Planted]:
    plants = Planted(tmp_path)
    yield plants
    plants.end()


def _ended(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.wait(timeout=30)  # bounds the wait; reaping already waited for it to end
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the stand-in daemon {proc.pid} is still there: "
                             f"{_state(proc.pid)}; its cmdline "
                             f"{_cmdline(proc.pid)!r}; the reaping saw "
                             f"{docker_engine.LAST_ENDING}") from None
    return True


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError as exc:
        return str(exc).encode()


def _state(pid: int) -> str:
    """What /proc says of a process (its state, signal masks), for a failure's message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as exc:
        return f"no /proc entry ({exc})"
    keep = ("State", "PPid", "SigBlk", "SigIgn", "SigPnd", "ShdPnd")
    return "; ".join(line for line in status.splitlines() if line.split(":")[0] in keep)


def test_a_dead_runs_engine_is_removed_with_its_daemon_and_bridge(
        planted: Planted, planted_bridge: str) -> None:
    folder, daemon = planted.engine("dead")
    assert not owner_alive(folder)
    assert reap_dead_engines(planted.root, planted_bridge) == [folder]
    assert _ended(daemon) and not folder.exists()
    assert not _bridge_exists(planted_bridge)


def test_a_bridge_left_without_any_engine_is_removed(tmp_path: Path,
                                                     planted_bridge: str) -> None:
    assert reap_dead_engines(tmp_path, planted_bridge) == []
    assert not _bridge_exists(planted_bridge)


@pytest.mark.parametrize("owner", ["alive", "none"])
def test_a_living_or_unproven_engine_keeps_its_daemon_folder_and_bridge(
        planted: Planted, planted_bridge: str, owner: str) -> None:
    kept, kept_daemon = planted.engine(owner)
    dead, dead_daemon = planted.engine("dead")
    assert owner_alive(kept)
    assert reap_dead_engines(planted.root, planted_bridge) == [dead]
    assert _ended(dead_daemon) and not dead.exists()
    assert kept_daemon.poll() is None and (kept / "dockerd.log").is_file()
    assert _bridge_exists(planted_bridge)  # the living engine's


def test_an_owner_whose_pid_now_names_another_process_is_dead(tmp_path: Path) -> None:
    (tmp_path / "owner").write_text(f"{os.getpid()} 1\n")  # this pid, another start time
    assert not owner_alive(tmp_path)
    write_owner(tmp_path)
    assert owner_alive(tmp_path)


def test_a_process_naming_a_longer_folder_is_not_the_engines(planted: Planted) -> None:
    folder, _ = planted.engine("dead")
    longer = Path(f"{folder}x")
    longer.mkdir()
    (longer / "dockerd.log").touch()
    other = subprocess.Popen(["tail", "-f", f"{longer}/dockerd.log"])
    planted.procs.append(other)
    _named_once_running(other, longer)
    assert other.pid not in docker_engine._processes_naming(folder)  # noqa: SLF001


@pytest.mark.docker
@pytest.mark.xdist_group("machine-engine")  # plants the real bridge fxbr0 and /tmp/fxd*
def test_the_next_run_starts_after_a_killed_runs_engine() -> None:
    """What a controller killed by SIGTERM left: its engine's daemon alive, its bridge,
    its folder; ``missing()`` (every two-engine module's first call) clears the way."""
    if os.geteuid() != 0:
        ci_missing("the two-engine modules need root")
    leftovers = [f for f in ENGINES_ROOT.glob(f"{PREFIX}*") if owner_alive(f)]
    if _bridge_exists(BRIDGE) and leftovers:
        ci_missing(f"a living run's engine holds {BRIDGE} ({leftovers[0]})")
    plants = Planted(ENGINES_ROOT)
    try:
        folder, daemon = plants.engine("dead")
        subprocess.run(["ip", "link", "add", BRIDGE, "type", "bridge"], check=True,
                       capture_output=True)
        assert docker_engine.missing() is None
        assert _ended(daemon) and not folder.exists() and not _bridge_exists(BRIDGE)
    finally:
        plants.end()
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
