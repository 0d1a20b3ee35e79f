"""Codex as a dialect: ``codex exec --json``, hooks in a private ``CODEX_HOME``.

Output (``--json``): ``item.completed`` events whose item is a ``command_execution``
(``command``, ``aggregated_output``, ``exit_code``) or a ``file_change`` (``changes: [{path,
kind}]``); ``turn.completed`` events carry ``usage`` (``input_tokens``,
``cached_input_tokens``, ``output_tokens``); ``thread.started`` / ``session.created`` /
``turn.started`` may name the model; ``turn.failed`` and ``error`` report failures.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fire_exp.agents.coding_agents.agent import CodingCliAgent
from fire_exp.agents.coding_agents.codex_catalog import catalog_for
from fire_exp.agents.coding_agents.dialect import (
    CliCommand,
    CliEndpoint,
    CliTranscript,
    as_dict,
    json_objects,
)
from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.policies.hook_settings import CODEX_HOOKS_FEATURE, MATCHERS

HOME = "codex-home"
# Hooks on, by the canonical feature key (policies/hook_settings.CODEX_HOOKS_FEATURE).
CONFIG_TOML = f"[features]\n{CODEX_HOOKS_FEATURE} = true\n"
PROVIDER = "fire"  # the custom model provider an ``agent.base_url`` becomes
CATALOG = "fire-models.json"


def _toml_string(value: str) -> str:
    """``value`` as a TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def provider_toml(base_url: str, api_key_env: str, catalog: str | None) -> str:
    """``config.toml`` with the hooks flag and a custom Responses-API provider at
    ``base_url`` (Codex 0.163 ignores ``OPENAI_BASE_URL`` and refuses ``wire_api =
    "chat"``); the key is read from ``api_key_env`` (sent as ``Authorization: Bearer``),
    never written here. ``catalog``: the ``model_catalog_json`` file, if any."""
    top = f"model_provider = {_toml_string(PROVIDER)}\n"
    if catalog is not None:
        top += f"model_catalog_json = {_toml_string(catalog)}\n"
    return (f"{top}\n{CONFIG_TOML}\n[model_providers.{PROVIDER}]\n"
            f"name = {_toml_string(PROVIDER)}\nbase_url = {_toml_string(base_url)}\n"
            f'wire_api = "responses"\nenv_key = {_toml_string(api_key_env)}\n')


class Codex:
    """The Codex dialect (checked against codex-cli 0.163).

    Codex skips untrusted hooks silently, so ``args`` should trust them
    (``--dangerously-bypass-hook-trust``); the activity log shows whether they ran.

    Args:
        host_binary: the Codex binary on this machine that the box runs (the wheel's, or
            the mounted one); its bundled catalogue gives a model it does not know the
            metadata of :data:`~fire_exp.agents.coding_agents.codex_catalog.TEMPLATE`.
    """

    target = "codex"
    hook_protocol = "codex"
    tool_matcher = MATCHERS["codex"]
    checked_version = "0.163"
    default_binary = "codex"
    install_hint = "pip install 'fire-exp[codex]'"
    reports_denied_calls = False
    default_key_env = "OPENAI_API_KEY"

    def __init__(self, host_binary: str | None = None) -> None:
        self.host_binary = host_binary

    def files(self, agent_dir: str, settings: Mapping[str, Any] | None) -> dict[str, bytes]:
        files = {f"{agent_dir}/{HOME}/config.toml": CONFIG_TOML.encode()}
        if settings is not None:
            files[f"{agent_dir}/{HOME}/hooks.json"] = json.dumps(settings, indent=1).encode()
        return files

    def settings_file(self) -> str:
        return f"{HOME}/hooks.json"

    def endpoint(self, agent_dir: str, base_url: str | None, model: str | None,
                 api_key_env: str) -> CliEndpoint:
        """A custom provider in ``config.toml`` (nothing for Codex's own endpoint), and,
        for a model outside the binary's catalogue, a ``model_catalog_json`` entry so it
        still gets ``apply_patch`` (``codex_catalog``)."""
        if base_url is None:
            return CliEndpoint()
        files: dict[str, bytes] = {}
        catalog_path = None
        if model:
            if self.host_binary is None:
                raise EnvironmentFailure(
                    f"agent=codex: no Codex binary on this machine to read model {model!r}'s "
                    "metadata from; install fire-exp[codex] or set agent.binary / "
                    "agent.install.host_binary")
            catalog = catalog_for(model, self.host_binary)
            if catalog is not None:
                catalog_path = f"{agent_dir}/{HOME}/{CATALOG}"
                files[catalog_path] = catalog
        toml = provider_toml(base_url, api_key_env, catalog_path)
        files[f"{agent_dir}/{HOME}/config.toml"] = toml.encode()
        return CliEndpoint(files=files)

    def env(self, agent_dir: str) -> dict[str, str]:
        return {"CODEX_HOME": f"{agent_dir}/{HOME}"}

    def argv(self, binary: str, instruction: str, *, workdir: str, agent_dir: str,
             model: str | None, args: Sequence[str], hooked: bool) -> list[str]:
        model = model or self.default_model()
        return [binary, "exec", "--json", "--skip-git-repo-check", "--cd", workdir,
                *(["--model", model] if model else []), *args, instruction]

    def parse(self, lines: Iterable[str]) -> CliTranscript:
        return parse_codex_json(lines)

    def default_model(self) -> str | None:
        """``model`` of the user's Codex config (``$CODEX_HOME`` or ``~/.codex``)."""
        home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        try:
            config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            return None
        model = config.get("model")
        return model if isinstance(model, str) and model else None


class CodexAgent(CodingCliAgent):
    """Codex CLI, headless (``codex exec --json``), with the arm's policies as hooks.

    The hooks go to a private ``CODEX_HOME`` (``hooks.json`` plus a ``config.toml`` that
    enables them); ``base_url`` becomes a custom provider there, its key read from
    ``api_key_env`` (default ``OPENAI_API_KEY``).
    """

    name = "codex"
    dialect = Codex()

    def _make_dialect(self) -> Codex:
        return Codex(host_binary=self.host_binary)


def parse_codex_json(lines: Iterable[str]) -> CliTranscript:
    """Parse ``codex exec --json`` output."""
    out = CliTranscript()
    for obj in json_objects(lines):
        kind = obj.get("type")
        item = as_dict(obj.get("item"))
        out.model = _codex_model(obj) or out.model
        if kind == "item.completed" and item.get("type") == "command_execution":
            code = item.get("exit_code")
            code = code if isinstance(code, int) else None
            out.commands.append(CliCommand(
                str(item.get("command", "")), str(item.get("aggregated_output") or ""),
                code, item.get("status") not in (None, "completed"),
                ran=True if code is not None else None))  # an exit status: it ran
        elif kind == "item.completed" and item.get("type") == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            paths = tuple(str(c["path"]) for c in changes if c.get("path"))
            failed = item.get("status") not in (None, "completed")
            out.commands.append(CliCommand("apply_patch", "", 1 if failed else 0, failed, paths))
        elif kind == "turn.completed":
            out.finished = True
            usage = as_dict(obj.get("usage"))
            out.input_tokens += int(usage.get("input_tokens") or 0)
            out.cached_input_tokens += int(usage.get("cached_input_tokens") or 0)
            out.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind in ("turn.failed", "error"):
            error = as_dict(obj.get("error")) or obj
            out.errors.append(str(error.get("message") or kind))
    return out


def _codex_model(obj: dict[str, Any]) -> str | None:
    """The model a Codex event names (``model`` at the top, or in its ``session``/``turn``)."""
    for holder in (obj, as_dict(obj.get("session")), as_dict(obj.get("turn")),
                   as_dict(obj.get("thread"))):
        model = holder.get("model")
        if isinstance(model, str) and model:
            return model
    return None
