"""What a coding-agent CLI dialect is, and what reading its output back gives.

A dialect (:class:`CliDialect`) is everything fire-exp must know of one coding-agent CLI:
its command line, the files its settings and hook configuration live in, its output
parser and how it reports cost, each value checked against the CLI version it names
(``checked_version``). :class:`~fire_exp.agents.coding_agents.agent.CodingCliAgent` runs any
dialect through the environment contract; a new CLI is one new dialect (docs/architecture.md,
"Add a coding-agent CLI").
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from fire_exp.agents.coding_agents.answers import ModelFault

__all__ = ["CliCommand", "CliDialect", "CliEndpoint", "CliTranscript", "anthropic_base", "as_dict",
           "content_text", "endpoint_hostport", "json_objects", "unwrap_shell"]

_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SHELL_FLAGS = frozenset({"-c", "-lc", "-cl", "-ic"})


@dataclass(frozen=True)
class CliCommand:
    """One shell command the CLI ran (or tried to run), or a file edit (``paths`` set;
    ``command`` is then the tool's name).

    ``tool_use_id`` is the CLI's id of the call where its output and its hook payloads share
    one (Claude Code's ``tool_use`` id; None otherwise). ``ran`` is what the output says of
    whether the tool ran: True where it shows a result only a run gives (a successful
    Claude Code ``tool_result``, a Codex exit status), None where it cannot tell (an error
    result, which a denied call also gives, or no result at all).
    """

    command: str
    output: str = ""
    exit_code: int | None = None
    is_error: bool = False
    paths: tuple[str, ...] = ()
    tool_use_id: str | None = None
    ran: bool | None = None


@dataclass
class CliTranscript:
    """What a CLI run did, as far as its output tells."""

    commands: list[CliCommand] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, served from the provider's cache
    cost_usd: float | None = None  # None: the CLI does not report cost
    model: str | None = None
    errors: list[str] = field(default_factory=list)
    finished: bool = False  # a final result/turn event was seen
    session_id: str | None = None  # the session its hook payloads carry (None: not said)
    final_text: str | None = None  # the model's last text answer (None: it gave none)
    faults: list[ModelFault] = field(default_factory=list)  # calls refused or not applied
    step_limit: bool = False  # the CLI's own turn bound ended the run (Claude Code's --max-turns)


@dataclass(frozen=True)
class CliEndpoint:
    """How a CLI is pointed at a model endpoint (:meth:`CliDialect.endpoint`).

    ``files``: box path -> content, merged over the dialect's :meth:`CliDialect.files` (a
    provider section in Codex's ``config.toml``); never a key's value, only its variable's
    name. ``env``: variables for the CLI (``ANTHROPIC_BASE_URL``), never a key. ``args``:
    extra command-line arguments. ``key_as``: the variable the CLI reads its key from when
    that is not ``api_key_env`` itself (Claude Code reads ``ANTHROPIC_API_KEY`` only): the
    agent gives it ``api_key_env``'s value.
    """

    files: dict[str, bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    key_as: str | None = None


def endpoint_hostport(base_url: str) -> str:
    """The ``host:port`` of ``base_url`` (the scheme's port when none is given), for the
    egress allow-list.

    >>> endpoint_hostport("http://127.0.0.1:8799/v1")
    '127.0.0.1:8799'
    >>> endpoint_hostport("https://api.example.com")
    'api.example.com:443'
    """
    parsed = urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{base_url!r} is not an http:// or https:// URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return f"{host}:{port}"


def anthropic_base(base_url: str) -> str:
    """``base_url`` as Claude Code's ``ANTHROPIC_BASE_URL`` wants it: without a trailing
    ``/v1`` (the CLI appends ``/v1/messages``; a user may well write an OpenAI-style URL).

    >>> anthropic_base("http://127.0.0.1:8799/v1/")
    'http://127.0.0.1:8799'
    >>> anthropic_base("https://llm.example.org/anthropic")
    'https://llm.example.org/anthropic'
    """
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class CliDialect(Protocol):
    """One coding-agent CLI's conventions (see the module docstring).

    Attributes:
        target: its name (the usage's ``route``).
        hook_protocol: the hook answers it understands: ``claude-code`` or ``codex``
            (``policies/hooks.render``); a new CLI that speaks Claude Code's names it.
        tool_matcher: the matcher (a regular expression over tool names) of its tool
            events: its shell tool and its file-edit tools.
        checked_version: the CLI version every value of the dialect was checked against.
        default_binary: the executable's usual name.
        install_hint: how a user installs it (shown when it is missing).
        reports_cost: whether its output says what a run cost (Claude Code's
            ``total_cost_usd``); one that does not is priced from the agent's ``prices``.
        reports_denied_calls: whether its output shows a tool call a PreToolUse hook denied
            (Claude Code's does, as an error result; Codex's need not).
        default_key_env: the variable its endpoint key is read from unless
            ``agent.api_key_env`` names another (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``).
    """

    target: str
    hook_protocol: str
    tool_matcher: str
    checked_version: str
    default_binary: str
    install_hint: str
    reports_cost: bool
    reports_denied_calls: bool
    default_key_env: str

    def files(self, agent_dir: str, settings: Mapping[str, Any] | None) -> dict[str, bytes]:
        """The files the CLI reads (box path -> content) under the box's ``agent_dir``:
        its hook settings (``settings``; None: no hooks at all), its configuration."""
        ...

    def settings_file(self) -> str:
        """The hook settings' path relative to ``agent_dir`` (recorded in ``ATTEMPT/hooks``)."""
        ...

    def env(self, agent_dir: str, *, root: bool = False) -> dict[str, str]:
        """Variables the CLI needs to find its files (e.g. ``CODEX_HOME``), and to run as
        root where it does (``root``: Claude Code's ``IS_SANDBOX``)."""
        ...

    def endpoint(self, agent_dir: str, base_url: str | None, model: str | None,
                 api_key_env: str) -> CliEndpoint:
        """The files, variables and arguments that point the CLI at ``base_url`` with
        ``model``, its key in the variable ``api_key_env`` (``base_url`` None: the CLI's
        own default endpoint; only the key variable may still matter)."""
        ...

    def argv(self, binary: str, instruction: str, *, workdir: str, agent_dir: str,
             model: str | None, args: Sequence[str], hooked: bool) -> list[str]:
        """The headless command line that works on ``instruction``."""
        ...

    def parse(self, lines: Iterable[str]) -> CliTranscript:
        """Read the CLI's machine-readable output back."""
        ...

    def default_model(self) -> str | None:
        """The model the CLI uses when none is given (None: unknown)."""
        ...


def json_objects(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    """The JSON objects among ``lines`` (a banner or a warning line is skipped)."""
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def content_text(content: Any) -> str:
    """A message content (a string, or a list of text blocks) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def unwrap_shell(command: str) -> str:
    """``X`` of ``/bin/bash -lc X`` (Codex shows a shell command so; its hook payloads
    carry the bare ``X``), else the command.

    >>> unwrap_shell("/bin/bash -lc 'echo hi; ls'")
    'echo hi; ls'
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in _SHELL_FLAGS:
        return argv[2]
    return command
