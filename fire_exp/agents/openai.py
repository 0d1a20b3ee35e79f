"""The OpenAI-compatible agent: a chat-completions model with one ``bash`` tool.

The loop, all through the attempt's :class:`AgentSession` (so every command meets the
policy runtime):

1. the task instruction is the first user message (plus any text a policy adds at start);
2. each tool call runs with ``session.bash``; a denial comes back as the tool's result, and
   text a policy adds after the command is appended to it;
3. an answer without a tool call is the model asking to stop: ``session.stop()`` either
   lets it (the run ends) or returns an instruction, which becomes the next user message;
4. ``max_steps`` model calls end the run with ``agent_step_limit``; the task's agent timeout
   with ``agent_timeout``.

Usage (tokens, cost from the price table, the provider's model and route) is returned on
every ending, and the conversation is written to ``logs/agent/transcript.jsonl``. The API
key is read from the environment variable *named* by ``api_key_env`` and never written.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from fire_exp.agents.base import AgentOutcome
from fire_exp.agents.chat_client import ChatClient, ChatError, ChatResponse, redact
from fire_exp.agents.session import AgentSession, AgentTimeout
from fire_exp.agents.transcript import Transcript, UsageMeter
from fire_exp.errors import InputError
from fire_exp.records import Cause

SYSTEM_PROMPT = (
    "You are an autonomous engineer working in a Linux shell. Use the `bash` tool to run "
    "commands; its result is the command's output. Work until the task is done, then answer "
    "with a short summary and no tool call: that ends your session."
)
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


class OpenAIAgent:
    """A tool-calling agent for any OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: the endpoint's base, e.g. ``https://api.openai.com/v1``.
        model: the model name sent with each request.
        api_key_env: the NAME of the environment variable holding the key ("" for none).
        temperature: sampling temperature.
        max_tokens: the longest answer per call.
        max_steps: model calls per attempt before ``agent_step_limit``.
        retries: further tries of a failed call (429, 5xx, timeout, malformed answer).
        backoff_s: the first wait between tries; doubles each time.
        request_timeout_s: the longest one call may take.
        prices: USD per 1M tokens per model: ``{model: {input: x, output: y}}``.
        tier: a label for the record (e.g. the model's size class).
        system_prompt: replaces the default system prompt.
    """

    name = "openai"

    def __init__(self, base_url: str = "https://api.openai.com/v1", model: str = "gpt-4o-mini",
                 api_key_env: str = "OPENAI_API_KEY", temperature: float = 0.0,
                 max_tokens: int = 2048, max_steps: int = 40, retries: int = 4,
                 backoff_s: float = 1.0, request_timeout_s: float = 120.0,
                 prices: dict[str, dict[str, float]] | None = None, tier: str | None = None,
                 system_prompt: str | None = None) -> None:
        where = "configs/agent/openai.yaml"
        if max_steps < 1:
            raise InputError(where, "max_steps", f"{max_steps} < 1", "use at least 1")
        if retries < 0:
            raise InputError(where, "retries", f"{retries} < 0", "use 0 or more")
        if api_key_env.startswith(("sk-", "Bearer")):
            raise InputError(where, "api_key_env", "looks like a key, not a variable name",
                             "put the key in an environment variable and name it here")
        self.base_url, self.model, self.api_key_env = base_url, model, api_key_env
        self.temperature, self.max_tokens, self.max_steps = temperature, max_tokens, max_steps
        self.retries, self.backoff_s, self.request_timeout_s = retries, backoff_s, request_timeout_s
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

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        """Work on the task until the model stops and the policies let it.

        Ends of the run are returned as the outcome's cause (with the usage so far), not
        raised: a provider failure before any command ran is ``provider_failed``, after one
        ``agent_error``.
        """
        meter = UsageMeter(self.model, self.prices)
        secret = os.environ.get(self.api_key_env) if self.api_key_env else None
        transcript = Transcript(session.env.attempt_dir / "logs" / "agent" / "transcript.jsonl",
                                secret)
        try:
            return self._loop(session, self._client(), meter, transcript)
        except AgentTimeout as exc:
            transcript.write({"role": "harness", "event": "timeout", "content": str(exc)})
            return AgentOutcome(usage=meter.usage(), cause=Cause.AGENT_TIMEOUT, error=str(exc))
        except ChatError as exc:
            message = redact(str(exc), secret)
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
            reply = self._call(client, messages, session, meter)
            transcript.write(reply.message | {"usage": {"input": reply.input_tokens,
                                                        "output": reply.output_tokens},
                                              "model": reply.model, "route": reply.route})
            messages.append(_assistant(reply))
            calls = reply.message.get("tool_calls") or []
            if calls:
                for call in calls:
                    result = {"role": "tool", "tool_call_id": call.get("id", ""),
                              "content": self._tool(session, call)}
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
              meter: UsageMeter) -> ChatResponse:
        left = session.time_left()
        if left <= 0:
            raise AgentTimeout("the agent's time budget ran out")
        payload = {"model": self.model, "messages": messages, "tools": [BASH_TOOL],
                   "tool_choice": "auto", "temperature": self.temperature,
                   "max_tokens": self.max_tokens}
        try:
            reply = client.complete(payload, deadline=session.deadline)
        except ChatError:
            if session.time_left() <= 0:
                raise AgentTimeout("the agent's time budget ran out waiting for the model") \
                    from None
            raise
        meter.add(reply)
        return reply

    def _tool(self, session: AgentSession, call: dict[str, Any]) -> str:
        function = call.get("function") or {}
        if function.get("name") != "bash":
            return f"error: unknown tool {function.get('name')!r}; the only tool is bash"
        try:
            args = json.loads(function.get("arguments") or "{}")
            command = args["command"]
            if not isinstance(command, str) or not command.strip():
                raise ValueError("command must be a non-empty string")
            timeout = float(args["timeout"]) if args.get("timeout") else None
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return f"error: the bash tool needs JSON arguments {{\"command\": ...}} ({exc})"
        return session.bash(command, timeout=timeout).as_text()


def _assistant(reply: ChatResponse) -> dict[str, Any]:
    """The assistant message as it goes back to the provider (no extra fields)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.message.get("content")}
    if reply.message.get("tool_calls"):
        message["tool_calls"] = reply.message["tool_calls"]
    return message
