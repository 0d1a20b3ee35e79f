"""A small client for OpenAI-compatible ``/chat/completions`` endpoints (stdlib only).

It posts one request and retries what a retry can fix (HTTP 429 and 5xx, timeouts, refused
or reset connections, a body cut off mid-read, answers that are not the JSON of a
completion) with exponential backoff. What no retry can fix raises at once:

- :class:`ContextExceeded` — the conversation no longer fits the model's context window;
- :class:`RequestRejected` — HTTP 400/401/403/404/422, or a 5xx whose body is a
  request-validation error (llama.cpp's server answers 500 for a message it cannot parse).

Everything else that gives up raises :class:`ChatError`. The API key travels only in the
``Authorization`` header: every message this module formats passes through :func:`redact`.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fire_exp.environments.redaction import redact_text

_ROUTE_HEADERS = ("x-route", "x-model-route", "openai-model", "x-openrouter-provider")
_BODY_KEPT = 600
_NOT_RETRYABLE = frozenset({400, 401, 403, 404, 422})
# A 5xx whose body says the request did not validate (or that the server's chat template could
# not render it) is the request's fault, not the server's.
_VALIDATION = re.compile(r"validation error|validationerror|invalid_request_error|"
                         r"field required|input should be|unprocessable|'loc'|\"loc\"|"
                         r"object' has no attribute|UndefinedError", re.I)
_CONTEXT = re.compile(r"context[ _-]?(length|window)|maximum context|context_length_exceeded|"
                      r"too many tokens|exceeds? the (model'?s? )?(maximum|context)|"
                      r"prompt is too long|requested tokens \(\d+\) exceed", re.I)


class ChatError(Exception):
    """A request failed for good. ``status`` is the last HTTP status (None: no answer)."""

    def __init__(self, message: str, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class RequestRejected(ChatError):
    """The server refused the request as built: retrying the same request cannot help."""


class ContextExceeded(ChatError):
    """The request's messages do not fit the model's context window."""


def rejection(url: str, status: int, detail: str) -> ChatError:
    """The error for a non-retryable answer: context exceeded, or a rejected request."""
    if _CONTEXT.search(detail):
        return ContextExceeded(f"POST {url}: HTTP {status}: {detail}", status)
    return RequestRejected(f"POST {url}: HTTP {status}: {detail}", status)


def is_rejection(status: int, detail: str) -> bool:
    """Whether an HTTP error answer is one no retry can fix."""
    return status in _NOT_RETRYABLE or (status >= 500 and bool(_VALIDATION.search(detail))) \
        or bool(status >= 500 and _CONTEXT.search(detail))


class _Retryable(Exception):
    def __init__(self, message: str, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class ChatResponse:
    """One completion: the assistant message, token counts and who served it."""

    message: dict[str, Any]
    input_tokens: int
    output_tokens: int
    model: str | None
    route: str | None
    finish_reason: str | None
    cached_input_tokens: int = 0
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class ChatClient:
    """Posts chat-completion requests to ``base_url`` with retries.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` (``/chat/completions`` is appended).
        api_key: the key, or None for an endpoint without authentication.
        retries: further tries after the first, for retryable failures.
        backoff_s: the first wait; each retry doubles it (a ``Retry-After`` header wins
            when it asks for longer, capped at ``max_backoff_s``).
        request_timeout_s: the longest one HTTP request may take.
        sleep: how to wait (injected so tests need not wait).
    """

    base_url: str
    api_key: str | None = None
    retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    request_timeout_s: float = 120.0
    sleep: Callable[[float], None] = time.sleep

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def secrets(self) -> list[str]:
        """What never leaves in an error message: the key."""
        return [self.api_key] if self.api_key else []

    def models(self, timeout_s: float = 10.0) -> list[str]:
        """``GET {base_url}/models``: the model ids the endpoint serves (one try).

        Raises:
            ChatError: no answer, or an HTTP error (``status`` set).
        """
        url = self.base_url.rstrip("/") + "/models"
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, headers=headers, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as reply:
                data = json.loads(reply.read().decode("utf-8", errors="replace"))
        except urllib.error.HTTPError as exc:
            detail = redact_text(_read_error(exc)[:_BODY_KEPT], self.secrets)
            raise ChatError(f"GET {url}: HTTP {exc.code}: {detail}", exc.code) from None
        except (OSError, http.client.HTTPException, json.JSONDecodeError) as exc:
            raise ChatError(redact_text(f"GET {url}: {type(exc).__name__}: {exc}",
                                   self.secrets)) from None
        items = data.get("data") if isinstance(data, dict) else None
        return [str(m.get("id")) for m in items or [] if isinstance(m, dict)]

    def complete(self, payload: dict[str, Any], deadline: float | None = None) -> ChatResponse:
        """Post ``payload``; returns the first choice. Raises ChatError when it gives up.

        Args:
            payload: the request body (model, messages, tools, ...).
            deadline: a ``time.monotonic()`` instant (the agent's deadline) that no request
                or wait between tries may pass.
        """
        body = json.dumps(payload).encode()
        last: _Retryable | None = None
        tries = 0
        for attempt in range(self.retries + 1):
            if attempt:
                wait = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
                if last is not None and last.retry_after is not None:
                    wait = min(max(wait, last.retry_after), self.max_backoff_s)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    break
                self.sleep(wait)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            tries += 1
            try:
                return self._post(body, left)
            except _Retryable as exc:
                last = exc
        if last is None:
            raise ChatError(f"POST {self.url}: no time left for a request", attempts=0)
        raise ChatError(redact_text(f"POST {self.url} failed after {tries} tries: {last}",
                               self.secrets), status=last.status, attempts=tries)

    def _post(self, body: bytes, timeout_s: float | None) -> ChatResponse:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        timeout = min(timeout_s or self.request_timeout_s, self.request_timeout_s)
        try:
            with urllib.request.urlopen(request, timeout=max(timeout, 0.1)) as reply:
                text = reply.read().decode("utf-8", errors="replace")
                reply_headers = {k.lower(): v for k, v in reply.headers.items()}
        except urllib.error.HTTPError as exc:
            detail = redact_text(_read_error(exc)[:_BODY_KEPT], self.secrets)
            if is_rejection(exc.code, detail):
                raise rejection(self.url, exc.code, detail) from None
            if exc.code == 429 or exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}: {detail}", exc.code,
                                 _retry_after(exc.headers.get("Retry-After"))) from None
            raise ChatError(f"POST {self.url}: HTTP {exc.code}: {detail}", exc.code) from None
        except TimeoutError as exc:
            raise _Retryable(f"timed out after {timeout:.0f}s ({exc})") from None
        except (urllib.error.URLError, ConnectionError, OSError,
                http.client.HTTPException) as exc:
            # HTTPException covers IncompleteRead and RemoteDisconnected: a body cut off.
            raise _Retryable(redact_text(f"connection failed: {type(exc).__name__}: {exc}",
                                    self.secrets)) from None
        return self._parse(text, reply_headers)

    def _parse(self, text: str, headers: dict[str, str]) -> ChatResponse:
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
            snippet = redact_text(text[:_BODY_KEPT], self.secrets)
            raise _Retryable(f"malformed completion ({type(exc).__name__}: {exc}): "
                             f"{snippet!r}") from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        route = next((headers[h] for h in _ROUTE_HEADERS if headers.get(h)), None)
        route = route or data.get("provider") or data.get("system_fingerprint")
        return ChatResponse(message=message, input_tokens=int(usage.get("prompt_tokens") or 0),
                            output_tokens=int(usage.get("completion_tokens") or 0),
                            model=data.get("model"), route=str(route) if route else None,
                            finish_reason=choice.get("finish_reason"),
                            cached_input_tokens=int(cached or 0), raw=data)


def _read_error(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return ""


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
