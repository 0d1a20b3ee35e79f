"""Egress control (``EGRESS_ALLOWLIST``): a CLI in a container reaches its model endpoint,
and otherwise what the task allows.

- A task with ``network_mode = "public"`` keeps its network: the CLI and the agent's
  commands reach everything (no allow-list is applied there).
- A task with ``no-network`` or ``allowlist`` joins ``fire-exp-egress``, an *internal*
  Docker network (no route off the host; containers on it cannot talk to each other), and
  the CLI's process gets ``HTTPS_PROXY`` and ``HTTP_PROXY`` pointing at
  :class:`EgressProxy`, which the harness runs on the network's gateway address (so an
  endpoint on the host's own loopback is reached too). The proxy tunnels (HTTP
  ``CONNECT``) and forwards plain ``http://`` requests only to the ``host:port`` pairs of
  the agent's ``egress`` list (the model endpoint), and refuses everything else; each
  decision is logged. An ``http://`` endpoint also appears to the box at a port of its
  own on the gateway (:meth:`EgressProxy.url_in_box`: the URL the CLI is given).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.environments.egress_http import (
    HEAD_END,
    HttpRequest,
    ResponseHead,
    parse_request,
    request_head,
)
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


# A CLI keeps a handful of connections to its model endpoint open at once (a stream,
# a retry, telemetry); 32 leaves it ample room while one attempt's proxy holds at most 64 of
# the harness's descriptors (a tunnel is two), so parallel attempts sharing one process stay
# well inside the usual limit of 1024. Past the cap a connection is answered 503 and logged.
MAX_CONNECTIONS = 32
_HEAD_LIMIT = 16384
_HEAD_TIMEOUT_S = 10.0
_ACCEPT_BACKOFF_S = 0.1  # after an accept error (descriptors exhausted): retry, never stop
_LOOPBACK = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class _Listener:
    """A socket the proxy accepts on: the proxy's own port (``upstream`` None), or the
    forward listener of one ``http://`` endpoint (``authority`` is its ``Host``)."""

    server: socket.socket
    upstream: tuple[str, int] | None = None
    authority: str = ""


class EgressProxy:
    """A proxy that reaches only allowed ``host:port`` pairs, over HTTPS and plain HTTP.

    - ``CONNECT host:port``: a tunnel (TLS end to end, the CLI's ``HTTPS_PROXY``);
    - an absolute-form ``http://`` request (``GET http://host:port/...``, any method, the
      ``HTTP_PROXY`` of a client): forwarded (``egress_http.py``);
    - each ``http://`` URL of ``allowed`` also gets a *forward listener*, a port of its own
      on ``bind`` where the endpoint appears to the box (:meth:`url_in_box`): a CLI given
      that URL reaches it whether or not it honours proxy variables, and an endpoint on
      the host's own loopback (which the box's ``127.0.0.1`` is not) is reached too.

    Everything else is refused with a logged 403 (405 for a request that is no proxy
    request). At most ``max_connections`` connections are served at once (one thread
    each); each connection past the cap, each refusal and each error is one line of the
    log, and the proxy keeps accepting after any error until :meth:`close`.

    Args:
        bind: the address to listen on (the egress network's gateway).
        allowed: ``host:port`` strings or URLs the CLI may reach.
        log_path: one JSON line per connection attempt (target, allowed or refused; an
            HTTP request's ``request`` line, answered ``status`` and ``output_events``, the
            events of a model's output its answer carried) and per error; and one line
            ``output: "streaming"`` when a plain-HTTP answer's first such event passes.
        max_connections: the cap on connections served at once.
    """

    def __init__(self, bind: str, allowed: list[str], log_path: Path, *,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.allowed = {parse_endpoint(a) for a in allowed}
        self.log_path = log_path
        self.max_connections = max_connections
        self.bind = bind
        self._slots = threading.BoundedSemaphore(max_connections)
        self._listeners = [_Listener(socket.create_server((bind, 0)))]
        for upstream, authority in _http_endpoints(allowed).items():
            self._listeners.append(_Listener(socket.create_server((bind, 0)), upstream,
                                             authority))
        self.port = self.ports[0]
        self.address = f"http://{bind}:{self.port}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # Open for the proxy's life: an error from running out of descriptors is logged too.
        self._log_file = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="egress-proxy")
        self._thread.start()

    @property
    def ports(self) -> list[int]:
        """The ports the box may connect to on ``bind``: the proxy's, then each forward
        listener's."""
        return [int(x.server.getsockname()[1]) for x in self._listeners]

    def url_in_box(self, url: str) -> str:
        """The URL a process in the box uses for ``url``: an ``http://`` endpoint of the
        allow-list at its forward listener, path kept; any other URL as it is (an
        ``https://`` one goes through ``HTTPS_PROXY``).

        The record and the manifest keep the user's URL; only the box is given this one.
        """
        if not url.lower().startswith("http://"):
            return url
        target = parse_endpoint(url)
        for listener in self._listeners:
            if listener.upstream == target:
                path = url.split("://", 1)[1].partition("/")
                return f"http://{self.bind}:{listener.server.getsockname()[1]}" + \
                    (path[1] + path[2])
        return url

    def _accept(self) -> None:
        poller = select.poll()
        by_fd = {x.server.fileno(): x for x in self._listeners}
        for listener in self._listeners:
            listener.server.setblocking(False)
            poller.register(listener.server.fileno(), select.POLLIN)
        failures = 0  # accept errors in a row: the first is logged, then how many at the end
        while not self._stop.is_set():
            for fd, _ in poller.poll(500):
                listener = by_fd[fd]
                try:
                    conn, peer = listener.server.accept()
                except BlockingIOError:
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
                conn.setblocking(True)
                self._start(conn, peer, listener)

    def _start(self, conn: socket.socket, peer: Any, listener: _Listener) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse(conn, peer)
            return
        try:
            threading.Thread(target=self._serve, args=(conn, listener), daemon=True,
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

    def _serve(self, conn: socket.socket, listener: _Listener) -> None:
        try:
            self._handle(conn, listener)
        except Exception as exc:  # noqa: BLE001 - one connection's error ends it, not the proxy
            self._log("", False, f"connection error: {type(exc).__name__}: {exc}")
        finally:
            conn.close()
            self._slots.release()

    def _handle(self, conn: socket.socket, listener: _Listener) -> None:
        conn.settimeout(_HEAD_TIMEOUT_S)
        head = b""
        while HEAD_END not in head and len(head) < _HEAD_LIMIT:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        if HEAD_END not in head:
            self._log("", False, f"a request head longer than {_HEAD_LIMIT} bytes")
            conn.sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                         b"Connection: close\r\n\r\n")
            return
        head, _, body = head.partition(HEAD_END)
        words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(words) >= 2 and words[0].upper() == "CONNECT" and listener.upstream is None:
            self._tunnel(conn, words[1], body)
            return
        request = parse_request(head)
        if request is None or (listener.upstream is None and request.scheme != "http"):
            self._log(" ".join(words[:2]), False,
                      "only CONNECT (https) and http:// requests are proxied")
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
            return
        self._forward(conn, request, body, listener)

    def _tunnel(self, conn: socket.socket, target_text: str, early: bytes) -> None:
        target = parse_endpoint(target_text)
        if target not in self.allowed:
            self._log(target_text, False, "not in the agent's egress list")
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n")
            return
        upstream = self._connect(conn, target, target_text)
        if upstream is None:
            return
        with upstream:
            self._log(target_text, True, "")
            conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            if early:
                upstream.sendall(early)
            self._pipe(conn, upstream)

    def _forward(self, conn: socket.socket, request: HttpRequest, body: bytes,
                 listener: _Listener) -> None:
        """One plain-HTTP request to an allowed endpoint, its answer streamed back."""
        target, authority = self._http_target(request, listener)
        shown = f"{target[0]}:{target[1]}"
        line = f"{request.method} {request.path}"
        if target not in self.allowed:
            self._log(shown, False, "not in the agent's egress list", request=line)
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n")
            return
        upstream = self._connect(conn, target, shown, request=line)
        if upstream is None:
            return
        # The first event of the model's output is logged as it passes (the request's own
        # line comes when it ends): a CLI stopped mid-answer shows no answer of its own.
        response = ResponseHead(on_output=lambda: self._log(
            shown, True, "", request=line, output="streaming"))
        with upstream:
            upstream.sendall(request_head(request, authority) + body)
            try:
                self._pipe(conn, upstream, response)
            finally:
                self._log(shown, True, "" if response.status else "no answer",
                          request=line, status=response.status,
                          output_events=response.output.count)

    def _http_target(self, request: HttpRequest, listener: _Listener
                     ) -> tuple[tuple[str, int], str | None]:
        """Where a request goes, and the ``Host`` it is sent with (None: the client's)."""
        if listener.upstream is not None:
            return listener.upstream, listener.authority
        target = (request.host or "", request.port or 80)
        for other in self._listeners[1:]:  # a forward listener's URL, sent via HTTP_PROXY
            if target == (self.bind, other.server.getsockname()[1]) and other.upstream:
                return other.upstream, other.authority
        return target, None

    def _connect(self, conn: socket.socket, target: tuple[str, int], shown: str,
                 **fields: Any) -> socket.socket | None:
        try:
            return socket.create_connection(target, timeout=10)
        except OSError as exc:
            self._log(shown, True, f"upstream unreachable: {exc}", **fields)
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
            return None

    def _pipe(self, client: socket.socket, upstream: socket.socket,
              response: ResponseHead | None = None) -> None:
        """Pass bytes both ways as they come until the upstream is done (its end of the
        stream; a client that stops sending only half-closes the upstream's side)."""
        client.settimeout(None)
        upstream.settimeout(None)
        # poll, not select: a harness with many descriptors open has some past select's 1024.
        poller = select.poll()
        poller.register(client.fileno(), select.POLLIN)
        poller.register(upstream.fileno(), select.POLLIN)
        while not self._stop.is_set():
            for fd, _ in poller.poll(500):
                if fd == upstream.fileno():
                    data = upstream.recv(65536)
                    if not data:
                        if response is not None:
                            client.sendall(response.rest())
                        return
                    client.sendall(response.feed(data) if response is not None else data)
                    continue
                data = client.recv(65536)
                if not data:
                    poller.unregister(client.fileno())
                    upstream.shutdown(socket.SHUT_WR)
                    continue
                upstream.sendall(data)

    def _log(self, target: str, allowed: bool, note: str, **fields: Any) -> None:
        line = {"time": time.time(), "target": target, "allowed": allowed, "note": note,
                **fields}
        with self._lock:
            try:
                if not self._log_file.closed:
                    self._log_file.write(json.dumps(line) + "\n")
                    self._log_file.flush()
            except OSError:
                pass  # a full disk stops the log, never the proxy

    @property
    def variables(self) -> dict[str, str]:
        """The variables that route a process's HTTPS and HTTP through this proxy.

        ``NO_PROXY`` keeps the box's own loopback direct (a task's local server), except a
        loopback name an ``https://`` endpoint of the allow-list uses (that endpoint is on
        the host, reached through the proxy), and names :attr:`bind` (the forward
        listeners are reached directly).
        """
        forwarded = {x.upstream for x in self._listeners if x.upstream}
        tunnelled = {host for host, port in self.allowed if (host, port) not in forwarded}
        local = ",".join([h for h in _LOOPBACK if h not in tunnelled] + [self.bind])
        return {"HTTPS_PROXY": self.address, "https_proxy": self.address,
                "HTTP_PROXY": self.address, "http_proxy": self.address,
                "NO_PROXY": local, "no_proxy": local}

    def close(self) -> None:
        """Stop accepting and end open tunnels and requests."""
        self._stop.set()
        self._thread.join(2.0)
        for listener in self._listeners:
            listener.server.close()
        with self._lock:
            self._log_file.close()


def _http_endpoints(allowed: list[str]) -> dict[tuple[str, int], str]:
    """The ``http://`` URLs of ``allowed``: their ``host:port`` and ``Host`` header."""
    found: dict[tuple[str, int], str] = {}
    for entry in allowed:
        if entry.lower().startswith("http://"):
            found.setdefault(parse_endpoint(entry), entry.split("://", 1)[1].split("/", 1)[0])
    return found


Egress = EgressProxy  # what Environment.open_egress hands out
