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

The proxy serves at most :data:`MAX_CONNECTIONS` connections at once, logs each refusal
and each error, and keeps accepting after any error (descriptors exhausted included).

What is enforced: the container reaches nothing but loopback and the proxy (the packet
filter of ``egress_firewall.py`` in its own network namespace: not the host's bridge
addresses, not the gateway's other ports, not the other containers), and the proxy reaches
only the listed endpoints. What is not: a process in the container can use the proxy too
(so the agent's commands reach the model endpoint as the CLI does), and can hold the
proxy's connections (which starves its own CLI, nothing else). A network named
``fire-exp-egress`` that is not internal, or not fire-exp's, stops the run
(:func:`check_egress_network`).
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
from fire_exp.environments.host_lock import host_lock
from fire_exp.environments.images import LABEL
from fire_exp.errors import ProtocolError

EGRESS_NETWORK = "fire-exp-egress"
_NETWORK_LOCK = threading.Lock()


_EGRESS_LABELS = {LABEL: "1", f"{LABEL}.kind": "egress"}
_EGRESS_OPTIONS = {"com.docker.network.bridge.enable_icc": "false"}


def ensure_egress_network(client: Any, name: str = EGRESS_NETWORK) -> str:
    """Create (or reuse) the internal network that only reaches the egress proxy.

    A network of that name that is not fire-exp's egress network (internal, bridge driver,
    no traffic between its containers, fire-exp's labels) is refused: containers on it could
    reach more than the proxy.
    """
    import docker.errors

    with _NETWORK_LOCK, host_lock(f"network {name}"):  # Docker 20.10 takes one name twice
        found = _named(client, name)
        if not found:
            try:
                client.networks.create(name, driver="bridge", internal=True,
                                       labels=_EGRESS_LABELS, options=_EGRESS_OPTIONS)
            except docker.errors.APIError as exc:
                found = _named(client, name)
                if not found:  # not a concurrent creation
                    raise EnvironmentFailure(f"cannot create network {name}: {exc}") from exc
        for network in found or _named(client, name):
            check_egress_network(network.attrs)
    return name


def _named(client: Any, name: str) -> list[Any]:
    """The networks called exactly ``name`` (the engine's name filter matches any part)."""
    return [n for n in client.networks.list(names=[name]) if n.name == name]


def check_egress_network(attrs: dict[str, Any]) -> None:
    """Raise ProtocolError (the run stops) unless ``attrs`` (``docker network inspect``)
    describe fire-exp's egress network.

    >>> check_egress_network({"Name": "fire-exp-egress", "Driver": "bridge", "Internal": True,
    ...     "Labels": {"fire-exp": "1", "fire-exp.kind": "egress"},
    ...     "Options": {"com.docker.network.bridge.enable_icc": "false"}})
    >>> check_egress_network({"Name": "fire-exp-egress", "Driver": "bridge", "Internal": False,
    ...     "Labels": {}, "Options": {}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fire_exp.errors.ProtocolError: the Docker network fire-exp-egress is not ...: it is not internal; ...
    """
    name = attrs.get("Name", "?")
    labels, options = attrs.get("Labels") or {}, attrs.get("Options") or {}
    wrong = [what for what, bad in [
        (f"its driver is {attrs.get('Driver')!r}, not 'bridge'", attrs.get("Driver") != "bridge"),
        ("it is not internal", attrs.get("Internal") is not True),
        (f"its labels {labels} lack {_EGRESS_LABELS}",
         any(labels.get(k) != v for k, v in _EGRESS_LABELS.items())),
        (f"its options {options} do not disable traffic between containers",
         any(options.get(k) != v for k, v in _EGRESS_OPTIONS.items())),
    ] if bad]
    if wrong:
        raise ProtocolError(
            f"the Docker network {name} is not fire-exp's egress network: {'; '.join(wrong)}. "
            f"A task without network must reach only the egress proxy: remove that network "
            f"(docker network rm {name}, once no container uses it) and fire-exp creates "
            f"its own")


def gateway_of(client: Any, network: str) -> str:
    """The host's address on ``network`` (where the egress proxy listens)."""
    found = _named(client, network)
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


# A CLI keeps a handful of HTTPS connections to its model endpoint open at once (a stream,
# a retry, telemetry); 32 leaves it ample room while one attempt's proxy holds at most 64 of
# the harness's descriptors (a tunnel is two), so parallel attempts sharing one process stay
# well inside the usual limit of 1024. Past the cap a connection is answered 503 and logged.
MAX_CONNECTIONS = 32
_HEAD_LIMIT = 16384
_HEAD_TIMEOUT_S = 10.0
_ACCEPT_BACKOFF_S = 0.1  # after an accept error (descriptors exhausted): retry, never stop


class EgressProxy:
    """An HTTP CONNECT proxy that tunnels only to allowed ``host:port`` pairs.

    At most ``max_connections`` connections are served at once (one thread each); each
    connection past the cap, each refusal and each error is one line of the log, and the
    proxy keeps accepting after any error until :meth:`close`.

    Args:
        bind: the address to listen on (the egress network's gateway).
        allowed: ``host:port`` strings (or URLs) the CLI may reach.
        log_path: one JSON line per connection attempt (target, allowed or refused) and
            per error.
        max_connections: the cap on connections served at once.
    """

    def __init__(self, bind: str, allowed: list[str], log_path: Path, *,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.allowed = {parse_endpoint(a) for a in allowed}
        self.log_path = log_path
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        self._server = socket.create_server((bind, 0))
        self.port = int(self._server.getsockname()[1])
        self.address = f"http://{bind}:{self.port}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # Open for the proxy's life: an error from running out of descriptors is logged too.
        self._log_file = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="egress-proxy")
        self._thread.start()

    def _accept(self) -> None:
        self._server.settimeout(0.5)
        failures = 0  # accept errors in a row: the first is logged, then how many at the end
        while not self._stop.is_set():
            try:
                conn, peer = self._server.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                if failures == 0:
                    self._log("", False, f"accept failed: {exc}; retrying")
                failures += 1
                self._stop.wait(_ACCEPT_BACKOFF_S)
                continue
            if failures:
                self._log("", False, f"accepting again after {failures} failed accepts")
                failures = 0
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, peer)
                continue
            try:
                threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                 name="egress-conn").start()
            except RuntimeError as exc:  # no thread to be had: refuse, keep serving
                self._slots.release()
                self._log("", False, f"cannot serve the connection: {exc}")
                conn.close()

    def _refuse(self, conn: socket.socket, peer: Any) -> None:
        self._log("", False, f"refused {peer[0]}:{peer[1]}: {self.max_connections} "
                             f"connections already open (the cap)")
        with conn:
            try:
                conn.settimeout(1)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n")
            except OSError:
                pass  # the refusal is logged; the peer may be gone

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        except Exception as exc:  # noqa: BLE001 - one connection's error ends it, not the proxy
            self._log("", False, f"connection error: {type(exc).__name__}: {exc}")
        finally:
            conn.close()
            self._slots.release()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(_HEAD_TIMEOUT_S)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
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
        with upstream:
            self._log(words[1], True, "")
            conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            self._pipe(conn, upstream)

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        a.settimeout(None)
        b.settimeout(None)
        # poll, not select: a harness with many descriptors open has some past select's 1024.
        poller = select.poll()
        peers = {a.fileno(): (a, b), b.fileno(): (b, a)}
        for fd in peers:
            poller.register(fd, select.POLLIN)
        while not self._stop.is_set():
            for fd, _ in poller.poll(500):
                src, dst = peers[fd]
                data = src.recv(65536)
                if not data:
                    return
                dst.sendall(data)

    def _log(self, target: str, allowed: bool, note: str) -> None:
        line = {"time": time.time(), "target": target, "allowed": allowed, "note": note}
        with self._lock:
            try:
                if not self._log_file.closed:
                    self._log_file.write(json.dumps(line) + "\n")
                    self._log_file.flush()
            except OSError:
                pass  # a full disk stops the log, never the proxy

    @property
    def variables(self) -> dict[str, str]:
        """The variables that route a process's HTTPS through this proxy."""
        local = "localhost,127.0.0.1"
        return {"HTTPS_PROXY": self.address, "https_proxy": self.address,
                "NO_PROXY": local, "no_proxy": local}

    def close(self) -> None:
        """Stop accepting and end open tunnels."""
        self._stop.set()
        self._thread.join(2.0)
        self._server.close()
        with self._lock:
            self._log_file.close()


Egress = EgressProxy  # what Environment.open_egress hands out
