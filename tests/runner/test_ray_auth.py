"""The tests' Ray clusters are not open doors (issue 36, point 7).

Ray 2.60 rewrites ``--node-ip-address 127.0.0.1`` to the machine's own address and binds
its servers there, so the listening sockets of a test cluster are reachable from the
network. What must hold instead: every listener of the cluster's processes is on loopback,
or the cluster requires its token (``ray_cluster.token_env``) and a driver without it is
refused. Read from the started cluster's own sockets (psutil), not assumed.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Iterator

import psutil
import pytest

from tests.runner.ray_cluster import Cluster, start_cluster, token_env
from tests.runner.runner_helpers import cli_env

pytestmark = [pytest.mark.ray, pytest.mark.slow]
JOIN = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
        "print('joined', len(ray.nodes()))")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = start_cluster(cli_env(token_env()))
    try:
        yield cluster
    finally:
        cluster.stop()


def _listeners(cluster: Cluster) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket a process of the cluster listens on."""
    found = set()
    for proc in psutil.process_iter():
        try:
            if not cluster.descends(proc.pid):
                continue
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    found.add((conn.laddr.ip, conn.laddr.port))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _join(cluster: Cluster, env: dict[str, str], address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["python", "-c", JOIN, address], env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_listener_is_on_loopback_or_behind_the_token(cluster: Cluster) -> None:
    listeners = _listeners(cluster)
    port = int(cluster.address.rsplit(":", 1)[1])
    assert any(p == port for _, p in listeners), listeners  # the head's GCS, found
    exposed = {(ip, p) for ip, p in listeners if not ipaddress.ip_address(ip).is_loopback}
    assert cluster.env["RAY_AUTH_MODE"] == "token" or not exposed, exposed
    # The cluster's own driver joins; one without the token is refused, at every address
    # the GCS listens on (Ray's rewrite: the host's own address, not only 127.0.0.1).
    assert "joined" in _join(cluster, cluster.env, cluster.address).stdout
    stranger = {k: v for k, v in cluster.env.items() if not k.startswith("RAY_AUTH")}
    for ip in sorted({ip for ip, p in listeners if p == port}):
        host = "127.0.0.1" if ip in ("0.0.0.0", "::") else ip  # noqa: S104 - a listener
        refused = _join(cluster, stranger, f"{host}:{port}")
        assert refused.returncode != 0 and "joined" not in refused.stdout, refused.stdout
        assert "auth" in (refused.stderr + refused.stdout).lower(), refused.stderr[-2000:]
