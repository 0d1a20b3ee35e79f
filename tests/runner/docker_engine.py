"""A second Docker engine on this machine, for tests of a cluster whose nodes each have
their own engine.

The test's ``dockerd`` has its own data root, exec root, pid file and unix socket under a
temporary folder, its own bridge (``fxbr0``, created here; never ``--bridge=none``, which
deletes the machine engine's ``docker0`` at start-up) and leaves the firewall alone
(``--iptables=false``: the test's containers need no outbound network). Its config file
is its own, carrying only the storage driver of the machine's engine, so the machine's
``/etc/docker/daemon.json`` (which names the machine's data root) does not apply. The base
image comes from the machine's engine by ``docker save | docker load``.

:meth:`SecondEngine.stop` stops the daemon, removes the bridge and the folder;
:meth:`SecondEngine.restart` brings a stopped daemon back on the same data (an engine that
comes back, with what it held). :func:`machine_state` lets the test assert that the
machine's engine is as it was.

An engine outlives a run that dies without its teardown (a controller killed by SIGTERM:
the daemon runs in its own session), and its bridge would fail every later run ("fxbr0
exists already"). So each engine's folder names its owner (the test process's pid and
start time, in ``owner``), and :func:`missing`, which every module calls before starting
one, first removes the engines whose owner is dead (:func:`reap_dead_engines`): their
containers, daemon, networks' bridges, mounts and folder, and the bridge once no living
engine is left. An engine whose owner lives (another run's, running now) is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fire_exp.environments.inbox.procs import start_time

BRIDGE, BRIDGE_ADDRESS = "fxbr0", "10.213.0.1/24"
# Where the engines' folders are made (short: the socket path) and their names' prefix.
ENGINES_ROOT, PREFIX = Path("/tmp"), "fxd"


def machine_state() -> dict[str, set[str]]:
    """The machine engine's networks, containers and images (each tag with its id), and
    the host's bridges."""
    def lines(*cmd: str) -> set[str]:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
        return set(out.stdout.split())

    bridges = subprocess.run(["ip", "-o", "link", "show", "type", "bridge"],
                             capture_output=True, text=True, check=True).stdout
    return {"networks": set(subprocess.run(
                ["docker", "network", "ls", "--no-trunc", "--format", "{{.ID}} {{.Name}}"],
                capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()),
            "containers": lines("docker", "ps", "-aq", "--no-trunc"),
            "images": lines("docker", "images", "-a", "--no-trunc", "--format",
                            "{{.Repository}}:{{.Tag}}@{{.ID}}"),
            "bridges": {line.split(":")[1].strip().split("@")[0]
                        for line in bridges.splitlines()}}


def _storage_driver() -> str:
    out = subprocess.run(["docker", "info", "--format", "{{.Driver}}"], capture_output=True,
                         text=True, timeout=60, check=True)
    return out.stdout.strip()


@dataclass
class SecondEngine:
    """A ``dockerd`` this test started; ``host`` is its ``DOCKER_HOST``."""

    folder: Path
    proc: subprocess.Popen[bytes]

    @property
    def host(self) -> str:
        return f"unix://{self.folder}/docker.sock"

    def restart(self) -> None:
        """Start the stopped daemon again on the same data root (its containers, images and
        engine id as it left them)."""
        assert self.proc.poll() is not None, "the engine is still running"
        self.proc = _launch(self.folder)
        _wait_up(self)

    def processes(self) -> list[int]:
        """Processes whose command line names this engine's folder (the daemon, its
        containerd and shims)."""
        return _processes_naming(self.folder)

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``docker ARGS`` against this engine."""
        return subprocess.run(["docker", "--host", self.host, *args], capture_output=True,
                              text=True, timeout=timeout)

    def stop(self) -> None:
        """Stop the daemon (its containers with it), remove its networks' bridges, its own
        bridge and its folder. A daemon that stops keeps its networks' bridges on the host
        (they would outlive its data root and use up Docker's address pools), so its
        networks go first, and any bridge of theirs still there after."""
        networks: list[str] = []
        if self.proc.poll() is None:
            networks = _empty(self.host)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        _remove_bridges([BRIDGE] + [f"br-{network[:12]}" for network in networks])
        _remove_folder(self.folder)


def missing() -> str | None:
    """Why a second engine cannot start here, or None. An engine a dead run left is
    removed first (:func:`reap_dead_engines`), so only a living one's bridge is in the way."""
    if os.geteuid() != 0:
        return "a second dockerd needs root"
    for tool in ("dockerd", "docker", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    reap_dead_engines()
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode:
        return "the machine's Docker engine is not reachable"
    if subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode == 0:
        return f"bridge {BRIDGE} exists already (another test's engine?)"
    return None


def start_engine(images: tuple[str, ...]) -> SecondEngine:
    """Start the second engine and load ``images`` into it from the machine's engine."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=ENGINES_ROOT))
    write_owner(folder)  # before the bridge: a bridge with no living owner is a leftover
    (folder / "daemon.json").write_text(json.dumps({"storage-driver": _storage_driver()}))
    for cmd in (["ip", "link", "add", BRIDGE, "type", "bridge"],
                ["ip", "addr", "add", BRIDGE_ADDRESS, "dev", BRIDGE],
                ["ip", "link", "set", BRIDGE, "up"]):
        subprocess.run(cmd, check=True, capture_output=True)
    engine = SecondEngine(folder=folder, proc=_launch(folder))
    try:
        _wait_up(engine)
        for image in images:
            save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
            load = subprocess.run(["docker", "--host", engine.host, "load"],
                                  stdin=save.stdout, capture_output=True, timeout=300)
            if save.wait(timeout=60) or load.returncode:
                raise RuntimeError(f"docker save {image} | docker load failed: "
                                   f"{load.stderr.decode(errors='replace')}")
    except BaseException:
        engine.stop()
        raise
    return engine


def _launch(folder: Path) -> subprocess.Popen[bytes]:
    with open(folder / "dockerd.log", "ab") as log:
        return subprocess.Popen(
            ["dockerd", "--config-file", str(folder / "daemon.json"),
             "--data-root", str(folder / "data"), "--exec-root", str(folder / "exec"),
             "--pidfile", str(folder / "docker.pid"), "--host",
             f"unix://{folder}/docker.sock", "--bridge", BRIDGE, "--iptables=false",
             "--ip6tables=false"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_up(engine: SecondEngine, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if engine.proc.poll() is not None:
            raise RuntimeError("dockerd exited: "
                               + (engine.folder / "dockerd.log").read_text()[-800:])
        if engine.docker("version", timeout=10).returncode == 0:
            return
        time.sleep(0.3)
    raise RuntimeError("the second dockerd did not come up")


# --- an engine whose run died -----------------------------------------------------------

def write_owner(folder: Path, pid: int | None = None) -> None:
    """Name the engine's owner in its folder: this process (or ``pid``), by its pid and
    start time (a pid used again by another process is not the owner)."""
    pid = os.getpid() if pid is None else pid
    (folder / "owner.tmp").write_text(f"{pid} {start_time(pid)}\n")
    os.replace(folder / "owner.tmp", folder / "owner")  # whole or absent, never half


def owner_alive(folder: Path) -> bool:
    """Whether the engine in ``folder`` belongs to a living process. A folder that names
    no owner (being made this instant, or made before owners were written) or names it
    unreadably is not provably dead, so it counts as alive."""
    try:
        pid, start = (folder / "owner").read_text().split()
        return start_time(int(pid)) == start
    except (OSError, ValueError):
        return True


def reap_dead_engines(root: Path = ENGINES_ROOT, bridge: str = BRIDGE) -> list[Path]:
    """Remove every engine under ``root`` whose owner is dead (its containers and networks
    through its daemon if that still answers, its processes, its networks' bridges, its
    mounts and its folder), then ``bridge`` if no engine with a living owner is left.
    Returns the folders removed."""
    reaped, living = [], False
    for folder in sorted(root.glob(f"{PREFIX}*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        if owner_alive(folder):
            living = True
            continue
        networks = _empty(f"unix://{folder}/docker.sock") if _processes_naming(folder) else []
        _end_processes(folder)
        _remove_bridges([f"br-{network[:12]}" for network in networks])
        _remove_folder(folder)
        reaped.append(folder)
    if not living:
        _remove_bridges([bridge])
    return reaped


def _processes_naming(folder: Path) -> list[int]:
    """Processes whose command line names a path in ``folder`` (an engine's daemon, its
    containerd and shims): ``/tmp/fxdab/`` is not ``/tmp/fxdabc/``."""
    wanted, found = f"{folder}/".encode(), []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if wanted in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def _empty(host: str) -> list[str]:
    """Remove the containers and own networks of the engine at ``host``; returns the
    networks' ids (their bridges outlive the daemon). A daemon that does not answer
    gives nothing."""
    def docker(*args: str) -> list[str]:
        try:
            return subprocess.run(["docker", "--host", host, *args], capture_output=True,
                                  text=True, timeout=120).stdout.split()
        except subprocess.TimeoutExpired:
            return []

    if ids := docker("ps", "-aq"):
        docker("rm", "-f", *ids)
    networks = docker("network", "ls", "-q", "--no-trunc", "--filter", "type=custom")
    if networks:
        docker("network", "rm", *networks)
    return networks


# What the last _end_processes saw, for a test's failure message: (seconds since its
# start, what it did, the pids naming the folder then).
LAST_ENDING: list[tuple[float, str, list[int]]] = []


def _end_processes(folder: Path, wait_s: float = 30) -> None:
    """SIGTERM the processes naming ``folder`` (a daemon stops its containers), SIGKILL
    those left after ``wait_s``."""
    start = time.monotonic()
    LAST_ENDING.clear()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        found = _processes_naming(folder)
        LAST_ENDING.append((round(time.monotonic() - start, 2), f"signal {sig.name}", found))
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s  # bounds the wait; not a test of speed
        while (left := _processes_naming(folder)) and time.monotonic() < deadline:
            time.sleep(0.1)
        LAST_ENDING.append((round(time.monotonic() - start, 2), "left", left))


def _remove_bridges(bridges: list[str]) -> None:
    for bridge in bridges:
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


def _remove_folder(folder: Path) -> None:
    """Unmount what the engine left mounted under ``folder`` (overlays), then remove it."""
    for line in Path("/proc/mounts").read_text().splitlines():
        mount = line.split()[1]
        if mount.startswith(f"{folder}/"):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
    shutil.rmtree(folder, ignore_errors=True)
