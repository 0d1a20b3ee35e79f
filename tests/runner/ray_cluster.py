"""A real Ray cluster on loopback for tests: a head and worker nodes (one by default).

Ray 2.60 binds its servers to the machine's own address whatever ``--node-ip-address``
says (it rewrites ``127.0.0.1`` to the host's address), so a test cluster would be open to
the network for the length of the test. Every cluster here requires Ray's token
authentication instead (:func:`token_env`: ``RAY_AUTH_MODE=token`` with a random
``RAY_AUTH_TOKEN``, given to the nodes and to the driver that joins them), which
``tests/runner/test_ray_auth.py`` checks on the listening sockets.

Each is a ``ray start ... --block`` subprocess in its own process group, so teardown stops
exactly the processes this test started (by process group id), not every Ray on the
machine as ``ray stop`` would; a test loses a node by killing its group
(:meth:`Cluster.kill_node`) and joins a fresh one (:meth:`Cluster.add_node`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.signals import gone


def token_env() -> dict[str, str]:
    """Ray's token authentication with a fresh random token: for the cluster's nodes and
    every driver of it (``fire-exp run executor=ray``), never for anyone else."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _node_ports(manager: int | None = None) -> list[str]:
    return ["--node-manager-port", str(manager or free_port()), "--object-manager-port",
            str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
            "--dashboard-agent-grpc-port", str(free_port()), "--runtime-env-agent-port",
            str(free_port()), "--metrics-export-port", str(free_port())]


@dataclass
class Cluster:
    """``ray start --block`` process groups (the head first); ``address`` for ``ray.init``."""

    address: str
    temp_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def kill_node(self, proc: subprocess.Popen[bytes]) -> None:
        """Lose a node at once: SIGKILL its process group (its raylet and Ray workers)."""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def add_node(self, spec: NodeSpec) -> subprocess.Popen[bytes]:
        """Join a fresh worker node; returns once the cluster counts it alive."""
        port = free_port()  # the node's manager port tells it from a lost node of its name
        proc = _launch(self, ["ray", "start", "--address", self.address, *_node_ports(port),
                              *_spec_args(spec), *COMMON], spec)
        _wait_node(self, port)
        return proc

    def stop(self) -> None:
        _stop_groups(self.procs)
        for pid in self.leftovers():  # anything of ours that left its process group
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes whose command line names this cluster's temp folder."""
        found = []
        for name in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if str(self.temp_dir).encode() in fh.read():
                        found.append(int(name))
            except OSError:
                continue
        return found

    def descends(self, pid: int) -> bool:
        """Whether ``pid`` is a process of this cluster (a descendant of its nodes)."""
        ours = {p.pid for p in self.procs}
        while pid > 1:
            if pid in ours:
                return True
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    pid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return False
        return False


def _stop_groups(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every node's process group (Ray drains), then SIGKILL what remains."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
        for proc in procs:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        for proc in procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
        if all(gone(p.pid, group=True) for p in procs):
            return
        time.sleep(0.5)



@dataclass(frozen=True)
class NodeSpec:
    """One ``ray start`` node: its CPUs, extra environment (e.g. ``DOCKER_HOST``) and
    custom resources (e.g. ``{"fire-exp-node:a": 1}``, which names it)."""

    cpus: int = 1
    env: dict[str, str] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    memory: int | None = None  # bytes Ray may hand out


def _spec_args(spec: NodeSpec) -> list[str]:
    args = ["--num-cpus", str(spec.cpus)]
    if spec.resources:
        args += ["--resources", json.dumps(spec.resources)]
    if spec.memory is not None:
        args += ["--memory", str(spec.memory)]
    return args


COMMON = ["--object-store-memory", str(100 * 1024**2), "--disable-usage-stats",
          "--node-ip-address", "127.0.0.1", "--block"]


def _launch(cluster: Cluster, command: list[str], spec: NodeSpec) -> subprocess.Popen[bytes]:
    with open(cluster.temp_dir / "cluster.log", "ab") as log:
        proc = subprocess.Popen(command, env=cluster.env | spec.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    cluster.procs.append(proc)
    return proc


def start_cluster(env: dict[str, str], head: NodeSpec | None = None,
                  workers: tuple[NodeSpec, ...] = (NodeSpec(),)) -> Cluster:
    """Start a head (1 CPU unless ``head`` says otherwise) and worker nodes on 127.0.0.1."""
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: socket paths
    port = free_port()
    cluster = Cluster(address=f"127.0.0.1:{port}", temp_dir=temp, env=env)
    head = head or NodeSpec()
    try:
        _launch(cluster, ["ray", "start", "--head", "--port", str(port), "--temp-dir",
                          str(temp), "--include-dashboard", "false",
                          "--ray-client-server-port", str(free_port()), *_node_ports(),
                          *_spec_args(head), *COMMON], head)
        _wait_port(port, cluster)
        for spec in workers:  # one node at a time: on a loaded machine two at once time out
            cluster.add_node(spec)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _exited(cluster: Cluster) -> str:
    """Why a ``ray start`` exited, from the end of its log: the log goes with the cluster's
    temp folder when the failed start stops it."""
    try:
        lines = (cluster.temp_dir / "cluster.log").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    return "ray start exited; its log ends:\n" + "\n".join(lines[-25:])


def _wait_port(port: int, cluster: Cluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in cluster.procs):
            raise RuntimeError(_exited(cluster))
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError("the Ray head did not come up")


PROBE = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
         "print(*(x['NodeManagerPort'] for x in ray.nodes() if x['Alive']))")


def _alive_ports(cluster: Cluster) -> set[int]:
    """The node manager ports of the nodes the cluster counts alive."""
    out = subprocess.run(["python", "-c", PROBE, cluster.address], env=cluster.env,
                         capture_output=True, text=True, timeout=60)
    return {int(p) for p in out.stdout.split() if p.isdigit()}


def _wait_node(cluster: Cluster, port: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port in _alive_ports(cluster):
            return
        if cluster.procs[-1].poll() is not None:
            raise RuntimeError(_exited(cluster))
        time.sleep(1)
    raise RuntimeError("the Ray worker node did not join")
