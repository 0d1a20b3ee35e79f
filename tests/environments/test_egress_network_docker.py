"""The egress network is checked to be fire-exp's internal one, and cleanup never removes a
network a container uses (a real Docker engine; networks made here carry this test's names)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from fire_exp.environments.docker_cleanup import CleanupReport, remove_idle_networks
from fire_exp.environments.egress import ensure_egress_network, gateway_of
from fire_exp.environments.images import BASE_IMAGE, LABEL
from fire_exp.errors import ProtocolError
from tests.ci import missing

pytestmark = pytest.mark.docker


@pytest.fixture
def made(docker_client: Any) -> Iterator[list[Any]]:
    """What a test makes on the engine (containers before networks), removed at its end."""
    things: list[Any] = []
    yield things
    containers = [t for t in things if hasattr(t, "exec_run")]
    for thing in containers + [t for t in things if t not in containers]:
        try:
            if thing in containers:
                thing.remove(force=True)
            else:
                thing.remove()
        except docker.errors.NotFound:
            pass


def _name(what: str) -> str:
    return f"fire-exp-test-h27d-{what}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _exists(client: Any, name: str) -> bool:
    return any(n.name == name for n in client.networks.list(names=[name]))


def test_a_network_of_the_egress_name_that_is_not_internal_stops_the_run(
        docker_client: Any, made: list[Any]) -> None:
    name = _name("egress")
    made.append(docker_client.networks.create(name, driver="bridge",
                                              labels={"h27d-test": "1"}))
    with pytest.raises(ProtocolError) as caught:
        ensure_egress_network(docker_client, name)
    message = str(caught.value)
    assert name in message and "it is not internal" in message
    assert f"docker network rm {name}" in message
    assert "lack" in message  # not fire-exp's labels either


def test_the_egress_network_is_made_internal_and_reused(docker_client: Any,
                                                        made: list[Any]) -> None:
    name = _name("egress")
    # The engine's name filter matches any part of a name: a network whose name holds the
    # egress network's is neither checked nor taken for it.
    made.append(docker_client.networks.create(f"old-{name}-2", driver="bridge"))
    assert ensure_egress_network(docker_client, name) == name
    network = docker_client.networks.get(name)
    made.append(network)
    assert network.attrs["Internal"] is True and network.attrs["Driver"] == "bridge"
    assert ensure_egress_network(docker_client, name) == name  # checked, then reused
    assert gateway_of(docker_client, name) == network.attrs["IPAM"]["Config"][0]["Gateway"]


def test_cleanup_keeps_a_network_a_container_uses_and_removes_it_once_idle(
        docker_client: Any, made: list[Any]) -> None:
    tag = uuid.uuid4().hex
    name = _name("net")
    network = docker_client.networks.create(name, driver="bridge", internal=True,
                                            labels={LABEL: "1", f"{LABEL}.test": tag})
    made.append(network)
    user = docker_client.containers.run(BASE_IMAGE, ["sleep", "300"], detach=True,
                                        network=name, name=_name("user"))
    made.append(user)
    report = CleanupReport()
    remove_idle_networks(docker_client, report, labels=(f"{LABEL}.test={tag}",))
    assert report.networks == [] and report.errors == []
    assert report.kept_networks == [(name, f"in use by {user.name}")]
    assert _exists(docker_client, name)
    user.remove(force=True)
    report = CleanupReport()
    remove_idle_networks(docker_client, report, labels=(f"{LABEL}.test={tag}",))
    assert report.networks == [name] and report.kept_networks == []
    assert not _exists(docker_client, name)


_UNPRIVILEGED = """
import os, sys
from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.errors import PreflightError
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import load_task
agent = ClaudeCodeAgent(install={"host_binary": "/bin/true"})
task = load_task(SUITES_DIR / "fire-mini" / sys.argv[1])
os.seteuid(65534)  # nobody from here on: no root to enter a container's namespace
try:
    DockerEnvironment.prepare_agent(agent.install, [task])
except PreflightError as exc:
    print(exc)
"""


def test_a_harness_that_cannot_install_the_egress_filter_stops_before_the_first_attempt(
        ) -> None:
    if os.geteuid() != 0:
        missing("root (the test drops it to play an unprivileged harness)")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _UNPRIVILEGED, "csv-column-stats"],
                          capture_output=True, text=True, timeout=120, cwd="/",
                          env=os.environ | {"PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert "missing: root" in done.stdout and 'network_mode = "public"' in done.stdout, \
        done.stdout
