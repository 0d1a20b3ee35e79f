"""Codex as a dialect: ``codex exec --json``, hooks in a private ``CODEX_HOME``.

Output (``--json``, codex-cli 0.163): ``item.completed`` events whose item is a
``command_execution`` (``command`` shown as ``/bin/bash -lc '…'``, unwrapped here to the bare
command the hook payloads carry; ``aggregated_output``, ``exit_code``) or a ``file_change``
(``changes: [{path, kind}]``, absolute paths). A command still running when ``exec_command``
yields (a server, a long build; Codex answers "Process running with session ID N") has only
its ``item.started`` (``exit_code`` null, ``status "in_progress"``) until it exits, when its
``item.completed`` comes with the same item id (a ``write_stdin`` poll saw it end); one still
running when the turn ends (Codex kills it) or the CLI is killed never completes. Such a
call is in the transcript all the same, where it started, with no exit status: its hooks
ran (PreToolUse, and PostToolUse only when it exits). ``turn.completed`` carries ``usage``
(``input_tokens``, cached included, ``cached_input_tokens``, ``output_tokens``); no event names
the model. A top-level ``error`` event is a warning ("Reconnecting... 1/5" of a retry Codex
recovers from): the run is judged by how its turn ended, ``turn.completed`` or
``turn.failed``. A call a hook denied is absent; the rollout file has it
(``codex_rollout``), and :class:`CodexAgent` brings that file home.

PreToolUse ``additionalContext``: Codex 0.163 takes it alone (a developer message before the
tool's output) but drops it silently next to ``permissionDecision "allow"``; fire-exp keeps
delivering a policy's context at PostToolUse, as for Claude Code, so one arm reaches both
CLIs the same way (``policies/hooks.render``).
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fire_exp.agents.coding_agents.agent import CodingCliAgent
from fire_exp.agents.coding_agents.codex_catalog import catalog_for
from fire_exp.agents.coding_agents.codex_rollout import (
    merge_rollout,
    rollout_calls,
    rollout_faults,
    rollout_usage,
)
from fire_exp.agents.coding_agents.dialect import (
    CliCommand,
    CliEndpoint,
    CliTranscript,
    as_dict,
    json_objects,
    unwrap_shell,
)
from fire_exp.agents.coding_agents.settings import CodexSettings
from fire_exp.agents.session import AgentSession
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.base import CapturedExec, Environment
from fire_exp.environments.failure import EnvironmentFailure
from fire_exp.policies.hook_settings import CODEX_HOOKS_FEATURE, MATCHERS

HOME = "codex-home"
ROLLOUT_MAX = 8 << 20
# Hooks on, by the canonical feature key (policies/hook_settings.CODEX_HOOKS_FEATURE).
CONFIG_TOML = f"[features]\n{CODEX_HOOKS_FEATURE} = true\n"
PROVIDER = "fire"  # the custom model provider an ``agent.base_url`` becomes
CATALOG = "fire-models.json"
INSTRUCTIONS = "instructions.md"  # agent.instructions, for Codex's model_instructions_file
GIVEN = ("config.toml", "hooks.json", CATALOG, INSTRUCTIONS)  # what fire-exp writes there


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
        instructions: the model's base instructions in place of Codex's own for the model
            (None: Codex's), written to ``CODEX_HOME/instructions.md`` and named by Codex's
            own ``model_instructions_file`` setting.
    """

    target = "codex"
    hook_protocol = "codex"
    tool_matcher = MATCHERS["codex"]
    checked_version = "0.163"
    default_binary = "codex"
    install_hint = "pip install 'fire-exp[codex]'"
    reports_cost = False
    reports_denied_calls = False
    default_key_env = "OPENAI_API_KEY"

    def __init__(self, host_binary: str | None = None, instructions: str | None = None) -> None:
        self.host_binary = host_binary
        self.instructions = instructions

    def files(self, agent_dir: str, settings: Mapping[str, Any] | None) -> dict[str, bytes]:
        files = {f"{agent_dir}/{HOME}/config.toml": CONFIG_TOML.encode()}
        if settings is not None:
            files[f"{agent_dir}/{HOME}/hooks.json"] = json.dumps(settings, indent=1).encode()
        if self.instructions is not None:
            files[f"{agent_dir}/{HOME}/{INSTRUCTIONS}"] = self.instructions.encode()
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

    def env(self, agent_dir: str, *, root: bool = False) -> dict[str, str]:
        return {"CODEX_HOME": f"{agent_dir}/{HOME}"}

    def argv(self, binary: str, instruction: str, *, workdir: str, agent_dir: str,
             model: str | None, args: Sequence[str], hooked: bool) -> list[str]:
        model = model or self.default_model()
        path = _toml_string(f"{agent_dir}/{HOME}/{INSTRUCTIONS}")
        own = ["-c", f"model_instructions_file={path}"] if self.instructions is not None else []
        return [binary, "exec", "--json", "--skip-git-repo-check", "--cd", workdir,
                *(["--model", model] if model else []), *own, *args, instruction]

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
    settings_model = CodexSettings

    def __init__(self, *args: Any, instructions: str | None = None, **kwargs: Any) -> None:
        """As :class:`CodingCliAgent`, and ``instructions``: the model's base instructions
        in place of Codex's own (``agent.instructions``; None: Codex's; :class:`Codex`)."""
        self.instructions = instructions
        super().__init__(*args, **kwargs)

    def _make_dialect(self) -> Codex:
        return Codex(host_binary=self.host_binary, instructions=self.instructions)

    def _fetch_output(self, env: Environment, run: CapturedExec) -> None:
        """The captured output, and the rollout file of the run (redacted, at most
        :data:`ROLLOUT_MAX` bytes) as ``ATTEMPT/logs/agent/codex-rollout.jsonl``."""
        super()._fetch_output(env, run)
        try:
            self._fetch_rollout(env)
        finally:
            self._drop_state(env)

    def _fetch_rollout(self, env: Environment) -> None:
        sessions = f"{env.paths.agent}/{HOME}/sessions"
        found = env.run(f"find {shlex.quote(sessions)} -type f -name 'rollout-*.jsonl' "
                        "2>/dev/null | sort | tail -n 1", timeout=30.0)
        path = found.stdout.strip()
        if found.exit_code != 0 or not path:
            return
        try:
            data = env.read_file(path)[:ROLLOUT_MAX]
        except EnvironmentFailure:
            return
        rollout_path(env.files).write_text(env.redactor.text(data.decode("utf-8", "replace")))

    def _drop_state(self, env: Environment) -> None:
        """Remove what Codex wrote into ``CODEX_HOME`` besides the files it was given
        (sessions, sqlite files, ~1 MB of ``skills/``): with ``environment=local`` that
        folder is in the attempt's record, and the rollout is home already."""
        home = shlex.quote(f"{env.paths.agent}/{HOME}")
        kept = " ".join(f"! -name {shlex.quote(name)}" for name in GIVEN)
        env.run(f"[ -d {home} ] && find {home} -mindepth 1 -maxdepth 1 {kept} "
                "-exec rm -rf {} + ; true", timeout=60.0)

    def _transcript(self, session: AgentSession) -> CliTranscript:
        """The ``--json`` output with the rollout's denied calls and call ids merged in, and,
        for a turn that never completed (the agent's timeout stopped it), the rollout's
        token counts, which ``--json`` gives only at ``turn.completed``."""
        transcript = super()._transcript(session)
        path = rollout_path(session.env.files)
        if not path.is_file():
            return transcript
        lines = path.read_text(errors="replace").splitlines()
        merged = merge_rollout(transcript, rollout_calls(lines))
        merged.faults = rollout_faults(lines)
        usage = None if transcript.finished else rollout_usage(lines)
        if usage is not None:
            merged = replace(merged, input_tokens=usage.input_tokens,
                             cached_input_tokens=usage.cached_input_tokens,
                             output_tokens=usage.output_tokens)
        return merged


def rollout_path(files: AttemptPaths) -> Path:
    """Where an attempt's Codex rollout file is brought home."""
    return files.agent_logs / "codex-rollout.jsonl"


def parse_codex_json(lines: Iterable[str]) -> CliTranscript:
    """Parse ``codex exec --json`` output (see the module docstring)."""
    out = CliTranscript()
    warnings: list[str] = []
    running: dict[str, int] = {}  # a started command's item id -> its place in the commands
    for obj in json_objects(lines):
        kind = obj.get("type")
        item = as_dict(obj.get("item"))
        out.model = _codex_model(obj) or out.model
        if kind == "item.started" and item.get("type") == "command_execution":
            # Running (Codex started it after its hooks allowed it): the call is here even
            # if it never completes; its item.completed takes this place.
            running[str(item.get("id"))] = len(out.commands)
            out.commands.append(CliCommand(unwrap_shell(str(item.get("command", ""))),
                                           ran=True))
        elif kind == "item.completed" and item.get("type") == "command_execution":
            code = item.get("exit_code")
            code = code if isinstance(code, int) else None
            command = CliCommand(
                unwrap_shell(str(item.get("command", ""))),
                str(item.get("aggregated_output") or ""),
                code, item.get("status") not in (None, "completed"),
                ran=True if code is not None else None)  # an exit status: it ran
            place = running.pop(str(item.get("id")), None)
            if place is None:
                out.commands.append(command)
            else:
                out.commands[place] = command
        elif kind == "item.completed" and item.get("type") == "file_change":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            paths = tuple(str(c["path"]) for c in changes if c.get("path"))
            failed = item.get("status") not in (None, "completed")
            out.commands.append(CliCommand("apply_patch", "", 1 if failed else 0, failed, paths))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            out.final_text = str(item.get("text") or "")
        elif kind == "turn.completed":
            out.finished = True
            usage = as_dict(obj.get("usage"))
            out.input_tokens += int(usage.get("input_tokens") or 0)
            out.cached_input_tokens += int(usage.get("cached_input_tokens") or 0)
            out.output_tokens += int(usage.get("output_tokens") or 0)
        elif kind == "turn.failed":
            error = as_dict(obj.get("error")) or obj
            out.errors.append(str(error.get("message") or kind))
        elif kind == "error":
            warnings.append(str(obj.get("message") or kind))
    if not out.finished and not out.errors:  # no turn ended: the last warning says why
        out.errors += warnings[-1:]
    return out


def _codex_model(obj: dict[str, Any]) -> str | None:
    """The model a Codex event names (``model`` at the top, or in its ``session``/``turn``)."""
    for holder in (obj, as_dict(obj.get("session")), as_dict(obj.get("turn")),
                   as_dict(obj.get("thread"))):
        model = holder.get("model")
        if isinstance(model, str) and model:
            return model
    return None
