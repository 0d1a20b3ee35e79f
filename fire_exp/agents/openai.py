"""The OpenAI-compatible agent: a chat-completions model with one ``bash`` tool.

The loop, all through the attempt's :class:`AgentSession` (so every command meets the
policy runtime):

1. the task instruction is the first user message (plus any text a policy adds at start);
2. each tool call runs with ``session.bash``; a denial comes back as the tool's result, and
   text a policy adds after the command is appended to it;
3. an answer without a tool call is the model asking to stop: ``session.stop()`` either
   lets it (the run ends) or returns an instruction, which becomes the next user message;
4. ``max_steps`` model calls end the run with ``agent_step_limit``; the task's agent timeout
   with ``agent_timeout``; a conversation that no longer fits the model's context window,
   even after ``context_strategy`` dropped old tool outputs, with ``agent_context_exceeded``.

What goes back to the server is rebuilt in the standard Chat Completions shapes
(:mod:`fire_exp.agents.tool_calls`); a malformed tool call is answered as a tool error and
counted in the record's ``usage.malformed_tool_calls``. A request the server refuses (HTTP
400/401/403/404/422, or a 5xx that is a request-validation error) is not retried: it is a
fault of the harness or its configuration, so :class:`~fire_exp.errors.ProtocolError` stops
the run, quoting the server.

Usage (tokens, cost from the price table, the provider's model and route) is returned on
every ending, and the conversation is written to ``logs/agent/transcript.jsonl``. The API
key is read from the environment variable *named* by ``api_key_env`` and never written.
"""

from __future__ import annotations

import os
from collections.abc import Set
from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator, Field

from fire_exp.agents.base import AgentOutcome
from fire_exp.agents.chat_client import (
    ChatClient,
    ChatError,
    ChatResponse,
    ContextExceeded,
    RequestRejected,
)
from fire_exp.agents.session import AgentSession, AgentTimeout
from fire_exp.agents.tool_calls import ToolCall, assistant_message, tool_message
from fire_exp.agents.transcript import Transcript, UsageMeter
from fire_exp.environments.base import Capability
from fire_exp.environments.redaction import redact_text
from fire_exp.errors import PreflightError, ProtocolError
from fire_exp.records import Cause
from fire_exp.settings import Seconds, Settings, ceiling, one_of, setting_error

SYSTEM_PROMPT = (
    "You are an autonomous engineer working in a Linux shell. Use the `bash` tool to run "
    "commands; its result is the command's output. Work until the task is done, then answer "
    "with a short summary and no tool call: that ends your session."
)
TOKEN_PARAMS = ("auto", "max_tokens", "max_completion_tokens")
CONTEXT_STRATEGIES = ("drop_oldest_tool_outputs", "none")
DROPPED = "[output dropped to fit the model's context window]"
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one bash command in the task's working folder and return its "
                       "output (stdout and stderr) and exit code.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command to run"},
                "timeout": {"type": "number", "description": "seconds before it is killed"},
            },
            "required": ["command"],
        },
    },
}


def _variable_name(value: str) -> str:
    if value.startswith(("sk-", "Bearer")):
        raise setting_error("looks like a key, not a variable name",
                            "put the key in an environment variable and name it here")
    return value


class OpenAISettings(Settings):
    """``configs/agent/openai.yaml`` (see :class:`OpenAIAgent`)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: Annotated[str, AfterValidator(_variable_name)] = "OPENAI_API_KEY"
    temperature: Annotated[float, Field(ge=0), ceiling(10)] = 0.0
    max_tokens: Annotated[int, Field(ge=1), ceiling(10_000_000)] = 2048
    max_tokens_param: Annotated[str, one_of(*TOKEN_PARAMS)] = "auto"
    max_steps: Annotated[int, Field(ge=1), ceiling(100_000)] = 40
    retries: Annotated[int, Field(ge=0), ceiling(100)] = 4
    backoff_s: Seconds = 1.0
    request_timeout_s: Seconds = 120.0
    context_strategy: Annotated[str, one_of(*CONTEXT_STRATEGIES)] = "drop_oldest_tool_outputs"
    keep_last_messages: int = 4
    prices: dict[str, dict[str, float]] | None = None
    tier: str | None = None
    system_prompt: str | None = None


_DEFAULT = OpenAISettings()


class OpenAIAgent:
    """A tool-calling agent for any OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the endpoint's base, e.g. ``https://api.openai.com/v1``.
        model: the model name sent with each request.
        api_key_env: the NAME of the environment variable holding the key ("" for none).
        temperature: sampling temperature.
        max_tokens: the longest answer per call.
        max_tokens_param: the request field that carries ``max_tokens``: ``max_tokens``,
            ``max_completion_tokens`` (newer OpenAI models), or ``auto`` (``max_tokens``,
            switching once when the server names the other).
        max_steps: model calls per attempt before ``agent_step_limit``.
        retries: further tries of a failed call (429, 5xx, timeout, cut-off or malformed
            answer).
        backoff_s: the first wait between tries; doubles each time.
        request_timeout_s: the longest one call may take.
        context_strategy: when the context window is exceeded: ``drop_oldest_tool_outputs``
            (the system prompt, the instruction and the last ``keep_last_messages`` messages
            stay) or ``none``.
        keep_last_messages: messages at the end the strategy never touches.
        prices: USD per 1M tokens per model: ``{model: {input: x, output: y}}``.
        tier: a label for the record (e.g. the model's size class).
        system_prompt: replaces the default system prompt.
    """

    name = "openai"
    settings_model = OpenAISettings

    def __init__(self, base_url: str = _DEFAULT.base_url, model: str = _DEFAULT.model,
                 api_key_env: str = _DEFAULT.api_key_env,
                 temperature: float = _DEFAULT.temperature,
                 max_tokens: int = _DEFAULT.max_tokens,
                 max_tokens_param: str = _DEFAULT.max_tokens_param,
                 max_steps: int = _DEFAULT.max_steps, retries: int = _DEFAULT.retries,
                 backoff_s: float = _DEFAULT.backoff_s,
                 request_timeout_s: float = _DEFAULT.request_timeout_s,
                 context_strategy: str = _DEFAULT.context_strategy,
                 keep_last_messages: int = _DEFAULT.keep_last_messages,
                 prices: dict[str, dict[str, float]] | None = _DEFAULT.prices,
                 tier: str | None = _DEFAULT.tier,
                 system_prompt: str | None = _DEFAULT.system_prompt) -> None:
        self.base_url, self.model, self.api_key_env = base_url, model, api_key_env
        self.temperature, self.max_tokens, self.max_steps = temperature, max_tokens, max_steps
        self.max_tokens_param = max_tokens_param
        self.retries, self.backoff_s, self.request_timeout_s = retries, backoff_s, request_timeout_s
        self.context_strategy, self.keep_last_messages = context_strategy, keep_last_messages
        self.prices = dict(prices or {})
        self.tier = tier
        self.system_prompt = system_prompt or SYSTEM_PROMPT

    def _client(self) -> ChatClient:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not key:
            raise ChatError(f"the environment variable {self.api_key_env} (agent.api_key_env) "
                            "is not set; export the API key in it")
        return ChatClient(base_url=self.base_url, api_key=key, retries=self.retries,
                          backoff_s=self.backoff_s, request_timeout_s=self.request_timeout_s)

    def preflight(self, capabilities: Set[Capability] = frozenset()) -> None:
        """Check the endpoint answers ``GET {base_url}/models`` before a panel starts (the
        agent talks to it from this machine, whatever the environment).

        Raises:
            PreflightError: the key variable is unset, the endpoint is unreachable, or it
                refuses the key; the message names the endpoint and how to start a server.
        """
        try:
            client = self._client()
        except ChatError as exc:
            raise PreflightError(f"agent=openai: {exc}",
                                 "export the key, or set agent.api_key_env='' for an endpoint "
                                 "without one") from None
        try:
            client.models()
        except ChatError as exc:
            if exc.status in (404, 405):
                return  # a server without a models list; the first call will tell
            hint = ("check the key in agent.api_key_env" if exc.status in (401, 403) else
                    "start an OpenAI-compatible server there (e.g. `fire-exp serve-model "
                    "--model smollm2-135m`) or set agent.base_url")
            raise PreflightError(f"agent=openai: the endpoint {self.base_url} does not "
                                 f"answer: {exc}", hint) from None

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        """Work on the task until the model stops and the policies let it.

        Ends of the run are returned as the outcome's cause (with the usage so far), not
        raised: a provider failure before any command ran is ``provider_failed``, after one
        ``agent_error``.

        Raises:
            ProtocolError: the server refused a request (see the module docstring).
        """
        self._param = "max_tokens" if self.max_tokens_param == "auto" else self.max_tokens_param
        meter = UsageMeter(self.model, self.prices)
        secret = os.environ.get(self.api_key_env) if self.api_key_env else None
        transcript = Transcript(session.env.files.transcript,
                                secret)
        try:
            return self._loop(session, self._client(), meter, transcript)
        except AgentTimeout as exc:
            transcript.write({"role": "harness", "event": "timeout", "content": str(exc)})
            return AgentOutcome(usage=meter.usage(), cause=Cause.AGENT_TIMEOUT, error=str(exc))
        except ContextExceeded as exc:
            message = redact_text(str(exc), [secret] if secret else [])
            transcript.write({"role": "harness", "event": "context_exceeded", "content": message})
            return AgentOutcome(usage=meter.usage(), cause=Cause.AGENT_CONTEXT_EXCEEDED,
                                error=f"context window exceeded: {message}")
        except RequestRejected as exc:
            message = redact_text(str(exc), [secret] if secret else [])
            transcript.write({"role": "harness", "event": "rejected", "content": message,
                              "status": exc.status})
            raise ProtocolError(f"agent=openai: the server refused a request fire-exp built, "
                                f"so no attempt can succeed; the run stops. {message}") from None
        except ChatError as exc:
            message = redact_text(str(exc), [secret] if secret else [])
            before = session.n_commands == 0
            transcript.write({"role": "harness", "event": "provider_error", "content": message,
                              "status": exc.status, "before_action": before})
            cause = Cause.PROVIDER_FAILED if before else Cause.AGENT_ERROR
            return AgentOutcome(usage=meter.usage(), cause=cause,
                                error=f"provider error: {message}")
        finally:
            transcript.close()

    def _loop(self, session: AgentSession, client: ChatClient, meter: UsageMeter,
              transcript: Transcript) -> AgentOutcome:
        first = session.instruction
        context = session.begin()
        if context:
            first = f"{first}\n\n{context}"
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt},
                                          {"role": "user", "content": first}]
        for message in messages:
            transcript.write(message)
        for _ in range(self.max_steps):
            reply = self._call(client, messages, session, meter, transcript)
            assistant, calls = assistant_message(reply.message)
            meter.malformed += sum(c.problem is not None for c in calls)
            transcript.write(reply.message | {"usage": {"input": reply.input_tokens,
                                                        "output": reply.output_tokens},
                                              "model": reply.model, "route": reply.route})
            messages.append(assistant)
            if calls:
                for call in calls:
                    result = tool_message(call, self._tool(session, call))
                    messages.append(result)
                    transcript.write(result)
                continue
            instruction = session.stop()
            if instruction is None:
                transcript.write({"role": "harness", "event": "stopped"})
                return AgentOutcome(usage=meter.usage())
            nudge = {"role": "user", "content": instruction}
            messages.append(nudge)
            transcript.write(nudge | {"source": "policy"})
        transcript.write({"role": "harness", "event": "step_limit", "steps": self.max_steps})
        return AgentOutcome(usage=meter.usage(), cause=Cause.AGENT_STEP_LIMIT,
                            error=f"the agent made {self.max_steps} model calls (max_steps)")

    def _call(self, client: ChatClient, messages: list[dict[str, Any]], session: AgentSession,
              meter: UsageMeter, transcript: Transcript) -> ChatResponse:
        """One model call; switches the token field or drops old tool outputs when told."""
        switched = False
        while True:
            left = session.time_left()
            if left <= 0:
                raise AgentTimeout("the agent's time budget ran out")
            payload = {"model": self.model, "messages": messages, "tools": [BASH_TOOL],
                       "tool_choice": "auto", "temperature": self.temperature,
                       self._param: self.max_tokens}
            try:
                reply = client.complete(payload, deadline=session.deadline)
            except ContextExceeded:
                if not self._shrink(messages):
                    raise
                transcript.write({"role": "harness", "event": "context_shrunk"})
                continue
            except RequestRejected as exc:
                other = _other_param(self._param, str(exc))
                if self.max_tokens_param != "auto" or switched or other is None:
                    raise
                self._param, switched = other, True
                transcript.write({"role": "harness", "event": "token_param", "content": other})
                continue
            except ChatError:
                if session.time_left() <= 0:
                    raise AgentTimeout("the agent's time budget ran out waiting for the model") \
                        from None
                raise
            meter.add(reply)
            return reply

    def _shrink(self, messages: list[dict[str, Any]]) -> bool:
        """Drop the oldest half of the tool outputs that may go; False if none may."""
        if self.context_strategy == "none":
            return False
        tail = max(len(messages) - self.keep_last_messages, 2)
        droppable = [m for m in messages[2:tail] if m["role"] == "tool"
                     and m["content"] != DROPPED]
        for message in droppable[:max(1, (len(droppable) + 1) // 2)]:
            message["content"] = DROPPED
        return bool(droppable)

    def _tool(self, session: AgentSession, call: ToolCall) -> str:
        if call.command is None:
            return call.error_text()
        return session.bash(call.command, timeout=call.timeout).as_text()


def _other_param(current: str, detail: str) -> str | None:
    """The token field a rejection names instead of ``current`` (None: it names none)."""
    other = "max_completion_tokens" if current == "max_tokens" else "max_tokens"
    text = detail.replace(other, "")
    if other in detail and current in text:
        return other
    return None
