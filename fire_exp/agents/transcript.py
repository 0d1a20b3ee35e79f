"""What a model agent keeps of its run: a JSONL transcript and a usage meter."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

from fire_exp.environments.redaction import redact_text
from fire_exp.records import Usage


class _Reply(Protocol):
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def model(self) -> str | None: ...
    @property
    def route(self) -> str | None: ...
    @property
    def cached_input_tokens(self) -> int: ...


class Transcript:
    """Appends one JSON object per message to ``path``, with a timestamp.

    Every line passes through ``redact_text`` with ``secret``, so a key a model or a
    command echoes back is not written.
    """

    def __init__(self, path: Path, secret: str | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.secret = secret
        self._fh: IO[str] | None = open(path, "a", encoding="utf-8")

    def write(self, entry: dict[str, Any]) -> None:
        if self._fh is None:
            return
        line = json.dumps({"ts": datetime.now(UTC).isoformat(timespec="milliseconds")} | entry,
                          default=str)
        self._fh.write(redact_text(line, [self.secret] if self.secret else []) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def price_tokens(price: dict[str, float], input_tokens: int, output_tokens: int,
                 cached_input_tokens: int = 0) -> float:
    """USD for a call: ``price`` is per 1M tokens (``input``, ``output``, optional
    ``cached_input``, the rate of input tokens served from the provider's cache)."""
    cached = min(cached_input_tokens, input_tokens)
    cached_rate = float(price.get("cached_input", price.get("input", 0.0)))
    return ((input_tokens - cached) * float(price.get("input", 0.0)) + cached * cached_rate
            + output_tokens * float(price.get("output", 0.0))) / 1e6


class UsageMeter:
    """Sums tokens over calls and prices them.

    Args:
        model: the configured model name (the price table's fallback key).
        prices: USD per 1M tokens: ``{model: {"input": x, "output": y, "cached_input": z}}``.
            The model the provider reports is looked up first, then the configured one; an
            unpriced model costs 0.

    Attributes:
        malformed: malformed tool calls the agent answered as tool errors.
    """

    def __init__(self, model: str, prices: dict[str, dict[str, float]]) -> None:
        self.model = model
        self.prices = prices
        self.input_tokens = self.output_tokens = self.cached_input_tokens = 0
        self.calls = self.malformed = 0
        self.cost = 0.0
        self.models: list[str] = []
        self.routes: list[str] = []

    def add(self, reply: _Reply) -> None:
        self.calls += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cached_input_tokens += reply.cached_input_tokens
        price = self.prices.get(reply.model or "") or self.prices.get(self.model) or {}
        self.cost += price_tokens(price, reply.input_tokens, reply.output_tokens,
                                  reply.cached_input_tokens)
        if reply.model and reply.model not in self.models:
            self.models.append(reply.model)
        if reply.route and reply.route not in self.routes:
            self.routes.append(reply.route)

    def usage(self) -> Usage:
        """The totals so far; several models or routes are joined with commas."""
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                     cost_usd=round(self.cost, 8),
                     model=",".join(self.models) or self.model,
                     route=",".join(self.routes) or None,
                     cached_input_tokens=self.cached_input_tokens, model_calls=self.calls,
                     malformed_tool_calls=self.malformed)
