"""Plain-HTTP forwarding for the egress proxy: one request per connection, streamed.

The proxy forwards an ``http://`` request in two shapes (``egress.py``):

- **absolute-form** (``POST http://host:port/v1/responses HTTP/1.1``), what a client sends
  to the proxy named by ``HTTP_PROXY``: forwarded to ``host:port`` when it is allowed;
- **origin-form** (``POST /v1/responses``) on a *forward listener*, the port at which an
  ``http://`` model endpoint appears to the box: forwarded to that endpoint, its ``Host``
  header set to the endpoint's own.

The response's body is read as it passes for one thing only: the events of a model's
output in it (:class:`OutputEvents`), the host's evidence that the model was answering
when a CLI that counts an answer only once it completes was stopped mid-answer.

Either way the request head is rewritten to origin-form with ``Connection: close``, so
exactly one request travels on the upstream connection (a second request on the client's
connection could otherwise name another host and ride the first one's tunnel); the
response head gets ``Connection: close`` too, so the client opens a new connection (and
the proxy checks the next target) for its next request. Bodies are never buffered: each
chunk the upstream sends is passed on as it arrives (a model's server-sent events).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["HEAD_END", "HttpRequest", "OutputEvents", "ResponseHead", "parse_request",
           "request_head", "split_authority"]

HEAD_END = b"\r\n\r\n"
# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never passed on.
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                  "proxy-authenticate", "te", "trailer", "upgrade"})


@dataclass(frozen=True)
class HttpRequest:
    """A request head as the proxy read it.

    ``host``/``port`` are the absolute-form target (None for origin-form); ``path`` is the
    origin-form target (``/`` at least); ``headers`` keep their order and spelling.
    """

    method: str
    path: str
    version: str
    headers: tuple[tuple[str, str], ...]
    host: str | None = None
    port: int | None = None
    scheme: str | None = None


def parse_request(head: bytes) -> HttpRequest | None:
    """The request of ``head`` (everything before the blank line), None if it is no HTTP.

    >>> r = parse_request(b"GET http://Model:8080/v1/x?y=1 HTTP/1.1\\r\\nHost: model:8080")
    >>> (r.method, r.host, r.port, r.path, r.scheme)
    ('GET', 'model', 8080, '/v1/x?y=1', 'http')
    >>> parse_request(b"POST /v1/messages HTTP/1.1\\r\\n").host is None
    True
    """
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        return None
    headers = tuple((name.strip(), value.strip()) for name, sep, value in
                    (line.partition(":") for line in lines[1:] if line) if sep)
    method, target, version = words
    if "://" not in target:
        return HttpRequest(method, target or "/", version, headers)
    scheme, rest = target.split("://", 1)
    authority, slash, path = rest.partition("/")
    host, port = split_authority(authority, 443 if scheme.lower() == "https" else 80)
    return HttpRequest(method, slash + path or "/", version, headers, host=host, port=port,
                       scheme=scheme.lower())


def split_authority(authority: str, default_port: int) -> tuple[str, int]:
    """``host[:port]`` (``[v6]:port`` too; a ``user@`` part dropped) as a lower-case host
    and a port.

    >>> split_authority("[::1]:8080", 80), split_authority("Example.org", 443)
    (('::1', 8080), ('example.org', 443))
    """
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = authority.partition(":")
    return host.lower(), int(port) if port.isdigit() else default_port


def request_head(request: HttpRequest, host_header: str | None = None) -> bytes:
    """The head sent upstream: origin-form, hop-by-hop headers dropped, ``Connection:
    close``; ``host_header`` replaces the client's ``Host`` (a forward listener's)."""
    kept = [(k, v) for k, v in request.headers if k.lower() not in _HOP]
    if host_header is not None:
        kept = [(k, v) for k, v in kept if k.lower() != "host"]
        kept.insert(0, ("Host", host_header))
    lines = [f"{request.method} {request.path} {request.version}"]
    lines += [f"{k}: {v}" for k, v in kept] + ["Connection: close"]
    return ("\r\n".join(lines)).encode("latin-1") + HEAD_END


# A server-sent event carrying tokens a model wrote, in the three streams the CLIs read:
# OpenAI Responses (``response.output_text.delta``, ``response.function_call_arguments.delta``,
# ``response.custom_tool_call_input.delta``, reasoning deltas), Anthropic Messages
# (``content_block_delta``), Chat Completions (a ``delta`` with text or a tool call; its
# first, ``{"role": "assistant", "content": ""}``, has none). Not ``response.created``,
# ``message_start`` or a keep-alive: a server that sends those and hangs wrote nothing.
_OUTPUT = re.compile(
    rb'"type"\s*:\s*"(?:response\.[a-z_.]*\.delta|content_block_delta)"'
    rb'|"delta"\s*:\s*\{[^{}]*"(?:content|reasoning_content)"\s*:\s*"[^"]'
    rb'|"delta"\s*:\s*\{[^{}]*"tool_calls"\s*:\s*\[')
_EVENT_END = re.compile(rb"\r?\n\r?\n")
_CARRY = 1 << 16  # an event longer than this is scanned in parts (a match is short)


class OutputEvents:
    """Counts the server-sent events of a response body that carry a model's output
    (:data:`_OUTPUT`), fed as the body passes, in pieces cut anywhere. The body is read as
    it comes, chunked framing and all: two events whose blank line a chunk's framing split
    count as one, so the count is a lower bound (what it is for is whether it is 0).

    >>> events = OutputEvents()
    >>> events.feed(b'event: response.created\\ndata: {"type":"response.created"}\\n\\nda')
    0
    >>> events.feed(b'ta: {"type":"response.output_text.delta","delta":"Hi"}\\n\\n')
    1
    """

    def __init__(self) -> None:
        self.count = 0
        self._pending = b""

    def feed(self, data: bytes) -> int:
        """Take the next piece of the body; returns the count so far."""
        self._pending += data
        *complete, self._pending = _EVENT_END.split(self._pending)
        self.count += sum(1 for event in complete if _OUTPUT.search(event))
        if len(self._pending) > _CARRY:  # no event end for long: scan what is here
            self.count += 1 if _OUTPUT.search(self._pending) else 0
            self._pending = b""
        return self.count


class ResponseHead:
    """Passes an upstream's response through, rewriting its head(s) to ``Connection:
    close``; what follows the final head passes unchanged, chunk by chunk.

    ``status`` is the final status code once its head was seen (None before: the upstream
    never answered). Interim ``1xx`` heads pass through as they come. ``output`` counts the
    body's events of a model's output (:class:`OutputEvents`); ``on_output`` is called once,
    at the first.
    """

    def __init__(self, on_output: Callable[[], None] | None = None) -> None:
        self.status: int | None = None
        self.output = OutputEvents()
        self._on_output = on_output
        self._buffer = b""

    def feed(self, data: bytes) -> bytes:
        """What to send the client for ``data`` from the upstream."""
        if self.status is not None:
            self._body(data)
            return data
        self._buffer += data
        out = b""
        while self.status is None and HEAD_END in self._buffer:
            head, _, self._buffer = self._buffer.partition(HEAD_END)
            code = _status(head)
            out += _rewrite_response(head)
            if code is None or code >= 200:
                self.status = code if code is not None else 0
        if self.status is not None:
            self._body(self._buffer)
            out, self._buffer = out + self._buffer, b""
        return out

    def _body(self, data: bytes) -> None:
        before = self.output.count
        if self.output.feed(data) and not before and self._on_output is not None:
            self._on_output()

    def rest(self) -> bytes:
        """What the upstream sent without finishing a head (passed on as it is)."""
        data, self._buffer = self._buffer, b""
        return data


def _status(head: bytes) -> int | None:
    words = head.split(b"\r\n", 1)[0].split()
    return int(words[1]) if len(words) >= 2 and words[1].isdigit() else None


def _rewrite_response(head: bytes) -> bytes:
    lines = head.decode("latin-1").split("\r\n")
    kept = [line for line in lines[1:]
            if line.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
    code = _status(head)
    tail = [] if code is not None and code < 200 else ["Connection: close"]
    return "\r\n".join([lines[0], *kept, *tail]).encode("latin-1") + HEAD_END
