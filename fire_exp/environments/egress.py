"""Egress control (``EGRESS_ALLOWLIST``): a CLI in a container reaches its model endpoint,
and otherwise what the task allows.

- A task with ``network_mode = "public"`` keeps its network: the CLI and the agent's
  commands reach everything (no allow-list is applied there).
- A task with ``no-network`` or ``allowlist`` joins ``fire-exp-egress``, an *internal*
  Docker network (no route off the host; containers on it cannot talk to each other), and
  the CLI's process gets ``HTTPS_PROXY`` pointing at :class:`EgressProxy`, which the
  harness runs on the network's gateway address. The proxy tunnels (HTTP ``CONNECT``)
  only to the ``host:port`` pairs of the agent's ``egress`` list (the model endpoint) and
  refuses everything else; each decision is logged.

What is enforced: nothing in the container reaches an address off this machine except
through the proxy, and the proxy reaches only the listed endpoints. What is not: other
services of this machine that listen on the gateway address (or on all addresses) are
reachable from the container, and a process in the container can use the proxy too
(so the agent's commands reach the model endpoint as the CLI does).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from pathlib import Path
from typing import Any

from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.environments.images import LABEL

EGRESS_NETWORK = "fire-exp-egress"
_NETWORK_LOCK = threading.Lock()


def ensure_egress_network(client: Any, name: str = EGRESS_NETWORK) -> str:
    """Create (or reuse) the internal network that only reaches the egress proxy."""
    import docker.errors

    with _NETWORK_LOCK:
        if client.networks.list(names=[name]):
            return name
        try:
            client.networks.create(name, driver="bridge", internal=True,
                                   labels={LABEL: "1", f"{LABEL}.kind": "egress"},
                                   options={"com.docker.network.bridge.enable_icc": "false"})
        except docker.errors.APIError as exc:
            if not client.networks.list(names=[name]):  # not a concurrent creation
                raise EnvironmentFailure(f"cannot create network {name}: {exc}") from exc
    return name


def gateway_of(client: Any, network: str) -> str:
    """The host's address on ``network`` (where the egress proxy listens)."""
    found = client.networks.list(names=[network])
    configs = (found[0].attrs.get("IPAM") or {}).get("Config") or [] if found else []
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
    raise EnvironmentFailure(f"network {network} has no gateway address")


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` (or ``https://host[:port]/...``) as a pair."""
    rest = text.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    default = 80 if text.startswith("http://") else 443
    return host.strip("[]").lower(), int(port) if port.isdigit() else default


class EgressProxy:
    """An HTTP CONNECT proxy that tunnels only to allowed ``host:port`` pairs.

    Args:
        bind: the address to listen on (the egress network's gateway).
        allowed: ``host:port`` strings (or URLs) the CLI may reach.
        log_path: one JSON line per connection attempt (target, allowed or refused).
    """

    def __init__(self, bind: str, allowed: list[str], log_path: Path) -> None:
        self.allowed = {parse_endpoint(a) for a in allowed}
        self.log_path = log_path
        self._server = socket.create_server((bind, 0))
        self.address = f"http://{bind}:{self._server.getsockname()[1]}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="egress-proxy").start()

    def _accept(self) -> None:
        self._server.settimeout(0.5)
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 16384:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(words) < 2 or words[0].upper() != "CONNECT":
                self._log(" ".join(words[:2]), False, "only CONNECT (https) is proxied")
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
                return
            target = parse_endpoint(words[1])
            if target not in self.allowed:
                self._log(words[1], False, "not in the agent's egress list")
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n")
                return
            try:
                upstream = socket.create_connection(target, timeout=10)
            except OSError as exc:
                self._log(words[1], True, f"upstream unreachable: {exc}")
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
                return
            self._log(words[1], True, "")
            conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            with upstream:
                self._pipe(conn, upstream)

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        a.settimeout(None)
        b.settimeout(None)
        while not self._stop.is_set():
            ready, _, _ = select.select([a, b], [], [], 0.5)
            for src in ready:
                data = src.recv(65536)
                if not data:
                    return
                (b if src is a else a).sendall(data)

    def _log(self, target: str, allowed: bool, note: str) -> None:
        line = {"time": time.time(), "target": target, "allowed": allowed, "note": note}
        with self._lock, open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    @property
    def variables(self) -> dict[str, str]:
        """The variables that route a process's HTTPS through this proxy."""
        local = "localhost,127.0.0.1"
        return {"HTTPS_PROXY": self.address, "https_proxy": self.address,
                "NO_PROXY": local, "no_proxy": local}

    def close(self) -> None:
        """Stop accepting and end open tunnels."""
        self._stop.set()
        self._server.close()


Egress = EgressProxy  # what Environment.open_egress hands out
