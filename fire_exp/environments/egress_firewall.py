"""The wall around a container on the egress network: it reaches only its proxy.

An *internal* Docker network has no route off the host's bridge, but the container still
gets a default route to the host (measured on Docker 20.10: the host keeps the gateway
address on the bridge and delivers locally whatever reaches it), so a listener on any of the
host's addresses (the docker0 bridge, the gateway itself, the host's own interfaces) answers
the container. The harness therefore installs, in the container's own network namespace, a
packet filter whose only way out is the proxy: loopback, and TCP to the gateway at the
proxy's ports (its own, and one per ``http://`` endpoint it forwards); everything else (IPv4 and IPv6) is rejected at once. The rules live and die
with the container's namespace: nothing is left on the host, and no run touches another's.

The agent cannot lift them: a container's root lacks ``CAP_NET_ADMIN`` (Docker's default
capabilities), so neither the rules nor the routes can be changed from inside. Installing
them needs root on the Docker host (``nsenter`` into the namespace, the host's
``iptables``); without it the attempt fails closed with a message saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure

__all__ = ["HOW_TO_FIX", "cannot_confine", "confine_to_proxy", "filter_rules"]

_TIMEOUT_S = 30.0


def filter_rules(gateway: str | None, port: int | Sequence[int] | None) -> str:
    """The ``iptables-restore`` input of the filter table: loopback, the proxy (its port, or
    its ports: the proxy's own and its forward listeners'), nothing else.

    >>> print(filter_rules("172.18.0.1", 40123))  # doctest: +NORMALIZE_WHITESPACE
    *filter
    :INPUT ACCEPT [0:0]
    :FORWARD DROP [0:0]
    :OUTPUT DROP [0:0]
    -A OUTPUT -o lo -j ACCEPT
    -A OUTPUT -d 172.18.0.1 -p tcp --dport 40123 -j ACCEPT
    -A OUTPUT -p tcp -j REJECT --reject-with tcp-reset
    -A OUTPUT -j REJECT
    COMMIT
    """
    lines = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT DROP [0:0]",
             "-A OUTPUT -o lo -j ACCEPT"]
    ports = [] if port is None else [port] if isinstance(port, int) else list(port)
    if gateway is not None:
        lines += [f"-A OUTPUT -d {gateway} -p tcp --dport {p} -j ACCEPT" for p in ports]
    # Reject rather than drop: a refused connection fails at once, not after a timeout.
    lines += ["-A OUTPUT -p tcp -j REJECT --reject-with tcp-reset", "-A OUTPUT -j REJECT",
              "COMMIT"]
    return "\n".join(lines) + "\n"


def _namespace_of(container: Any) -> int:
    """An open descriptor of ``container``'s network namespace, checked to be its own."""
    container.reload()
    pid = int((container.attrs.get("State") or {}).get("Pid") or 0)
    if pid <= 0:
        raise EnvironmentFailure(f"container {container.name} is not running: cannot confine "
                                 f"its network")
    try:
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        # Opened first, then checked: the process behind the descriptor is the container's.
        cgroup = open(f"/proc/{pid}/cgroup", encoding="utf-8").read()  # noqa: SIM115
    except OSError as exc:
        raise EnvironmentFailure(
            f"cannot open the network namespace of container {container.name} (pid {pid}): "
            f"{exc}; the Docker engine must run on this machine and fire-exp as root to "
            f"confine a task without network to its egress proxy") from exc
    same = os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino
    if container.id not in cgroup or same:
        os.close(fd)
        raise EnvironmentFailure(
            f"process {pid} is not container {container.name} on this machine (is the Docker "
            f"engine remote?): cannot confine its network; run fire-exp on the engine's host")
    return fd


_TOOLS = ("nsenter", "iptables-restore", "ip6tables-restore")
HOW_TO_FIX = ('run fire-exp as root on the Docker engine\'s host, or give the task '
              'network_mode = "public"')


def cannot_confine() -> str | None:
    """Why this process cannot install the filter (None: it can)."""
    missing = [name for name in _TOOLS if shutil.which(name) is None]
    if os.geteuid() != 0:
        missing.insert(0, "root")
    if not missing:
        return None
    return (f"confining a container without network to its egress proxy needs root and "
            f"{', '.join(_TOOLS)} on the Docker host (missing: {', '.join(missing)})")


def confine_to_proxy(container: Any, gateway: str | None = None,
                     port: int | Sequence[int] | None = None) -> None:
    """Let ``container`` reach only loopback and ``gateway`` at ``port`` (or each of
    several ports; with None: loopback only).

    Raises EnvironmentFailure (the attempt fails closed) when the rules cannot be installed.
    """
    reason = cannot_confine()
    if reason is not None:
        raise EnvironmentFailure(f"container {container.name}: {reason}; {HOW_TO_FIX}")
    tools = {name: shutil.which(name) for name in _TOOLS}
    fd = _namespace_of(container)
    try:
        for restore, rules in ((tools["iptables-restore"], filter_rules(gateway, port)),
                               (tools["ip6tables-restore"], filter_rules(None, None))):
            done = subprocess.run([str(tools["nsenter"]), f"--net=/proc/self/fd/{fd}",
                                   str(restore), "-w"], input=rules, text=True,
                                  capture_output=True, pass_fds=(fd,), timeout=_TIMEOUT_S,
                                  check=False)
            if done.returncode != 0:
                raise EnvironmentFailure(
                    f"cannot install the egress filter of container {container.name} "
                    f"({restore}, exit {done.returncode}): {done.stderr.strip()[-400:]}")
    finally:
        os.close(fd)
