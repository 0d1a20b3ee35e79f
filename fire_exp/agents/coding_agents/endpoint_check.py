"""Before the first attempt: the CLI's model endpoint answers one cheap request in the
CLI's own protocol, or the panel is refused in one line naming the URL and the error.

- Codex 0.163 speaks the Responses API: ``POST {base_url}/responses`` with
  ``Authorization: Bearer KEY`` (its provider's ``env_key``), ``stream: true``, 16 output
  tokens (the API's least).
- Claude Code 2.1 speaks Anthropic Messages: ``POST {base_url}/v1/messages`` (a
  ``base_url`` ending in ``/v1`` loses it, as ``ANTHROPIC_BASE_URL`` does) with
  ``x-api-key: KEY`` and ``anthropic-version``, ``stream: true``, one output token.

The request goes from this machine straight to the endpoint (no proxy of this process's
environment: the CLI gets none either, and in Docker the egress proxy connects from this
machine), with the agent's CA bundle for ``https://``. It passes when the endpoint answers
2xx and its stream does not open with an error event; every other answer refuses the
panel (a 4xx is a configuration error no attempt can get past: the key, the model, the
URL). A model the agent does not name (the CLI's default) is not judged: a 400/404/422
then passes, the endpoint having answered.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.agents.coding_agents.dialect import anthropic_base
from fire_exp.environments.redaction import redact_text
from fire_exp.errors import PreflightError

__all__ = ["EndpointError", "Probe", "check_endpoint", "probe_for", "send_probe"]

TIMEOUT_S = 60.0
_READ_LIMIT = 65536
_BODY_KEPT = 300
_MODEL_STATUSES = frozenset({400, 404, 422})


@dataclass(frozen=True)
class Probe:
    """One request in a CLI's protocol (the key only in ``headers``)."""

    url: str
    body: dict[str, Any]
    headers: dict[str, str] = field(repr=False, default_factory=dict)


class EndpointError(Exception):
    """The endpoint did not answer the probe as it must. ``status``: the HTTP status
    (None: no answer at all)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def probe_for(target: str, base_url: str, model: str | None, api_key: str | None
              ) -> Probe | None:
    """The probe of the CLI ``target`` (a dialect's name; None: fire-exp knows no probe
    of its protocol).

    >>> p = probe_for("codex", "http://127.0.0.1:8799/v1/", "gpt-5.5", "k")
    >>> p.url, p.body["max_output_tokens"], p.headers["Authorization"]
    ('http://127.0.0.1:8799/v1/responses', 16, 'Bearer k')
    >>> probe_for("claude-code", "http://127.0.0.1:8800", None, "k").url
    'http://127.0.0.1:8800/v1/messages'
    >>> probe_for("claude-code", "http://127.0.0.1:8800/v1", None, "k").url  # as the CLI
    'http://127.0.0.1:8800/v1/messages'
    """
    base = base_url.rstrip("/")
    named = {"model": model} if model else {}
    if target == "codex":
        return Probe(f"{base}/responses", named | {"input": "Say OK.", "max_output_tokens": 16,
                                                   "stream": True},
                     {"Authorization": f"Bearer {api_key}"} if api_key else {})
    if target == "claude-code":
        headers = {"anthropic-version": "2023-06-01"} | ({"x-api-key": api_key} if api_key
                                                          else {})
        return Probe(f"{anthropic_base(base)}/v1/messages", named | {
            "max_tokens": 1, "stream": True,
            "messages": [{"role": "user", "content": "Say OK."}]}, headers)
    return None


def send_probe(probe: Probe, *, timeout_s: float = TIMEOUT_S, ca_bundle: Path | None = None
               ) -> int:
    """Post ``probe``; its HTTP status once the answer's first event (or body) is read.

    Raises:
        EndpointError: no answer, an HTTP error, or a stream that opens with an error.
    """
    data = json.dumps(probe.body).encode()
    request = urllib.request.Request(probe.url, data=data, method="POST", headers={
        "Content-Type": "application/json", "Accept": "text/event-stream, application/json",
        **probe.headers})
    context = ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(request, timeout=timeout_s) as reply:
            first = _first_event(reply)
            status = int(reply.status)
    except urllib.error.HTTPError as exc:
        raise EndpointError(f"HTTP {exc.code}: {_detail(exc)}", exc.code) from None
    except TimeoutError:
        raise EndpointError(f"no answer within {timeout_s:.0f} s") from None
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise EndpointError(f"{type(exc).__name__}: {reason}") from None
    if _is_error_event(first):
        raise EndpointError(f"HTTP {status} whose stream opens with an error: "
                            f"{' '.join(first.split())[:_BODY_KEPT]}", status)
    return status


def _first_event(reply: Any) -> str:
    """The answer up to the end of its first server-sent event (or its whole JSON body)."""
    read = b""
    while len(read) < _READ_LIMIT:
        line = reply.readline(_READ_LIMIT)
        if not line:
            break
        read += line
        if line in (b"\n", b"\r\n") and read.strip():
            break
    return read.decode("utf-8", errors="replace")


def _is_error_event(text: str) -> bool:
    for line in text.splitlines():
        if line.startswith("event:") and line.split(":", 1)[1].strip() in (
                "error", "response.failed"):
            return True
        payload = line.removeprefix("data:").strip()
        if payload.startswith("{"):
            try:
                kind = json.loads(payload).get("type")
            except (json.JSONDecodeError, AttributeError):
                continue
            if kind in ("error", "response.failed"):
                return True
    return False


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        body = ""
    return " ".join(body.split())[:_BODY_KEPT] or str(exc.reason)


def check_endpoint(agent: str, target: str, base_url: str, model: str | None,
                   key_env: str, api_key: str | None, *, ca_bundle: Path | None = None,
                   timeout_s: float = TIMEOUT_S) -> None:
    """Refuse the panel unless ``base_url`` answers the CLI's probe (see the module).

    Raises:
        PreflightError: one line naming ``agent``, the URL and the error, and what to fix.
    """
    probe = probe_for(target, base_url, model, api_key)
    if probe is None:
        return
    try:
        send_probe(probe, timeout_s=timeout_s, ca_bundle=ca_bundle)
    except EndpointError as exc:
        if model is None and exc.status in _MODEL_STATUSES:
            return  # the endpoint answered; the CLI names its own model
        message = redact_text(f"agent={agent}: the model endpoint does not answer "
                              f"POST {probe.url}: {exc}", [api_key] if api_key else [])
        raise PreflightError(message, _fix(exc.status, key_env, model, base_url)) from None


def _fix(status: int | None, key_env: str, model: str | None, base_url: str) -> str:
    if status in (401, 403):
        return f"check the key in {key_env} (agent.api_key_env)"
    if status in _MODEL_STATUSES:
        return (f"check agent.model={model} (the endpoint does not serve it) and that "
                f"agent.base_url={base_url} speaks the CLI's API")
    if status is not None and status < 300:
        return f"check agent.model={model} and the endpoint's log"
    if status is not None:
        return "the endpoint's server failed: check its log, then run again"
    return (f"start the model server at {base_url} or set agent.base_url (and "
            "agent.ca_bundle for an https:// endpoint with a private CA)")
