"""Claude Code and Codex as agents: the real CLI, headless, with the arm's policies as hooks.

A CLI runs its own tools, so its commands do not pass through ``session.bash``: the arm's
policies reach it through the hook bridge instead (``fire-exp hook``, reference/hooks.md).
Per attempt the agent

1. takes the portfolio folder and arm from the session's context and writes the CLI's
   hook settings (none for a non-policy arm: a baseline attempt has no hook
   configuration at all);
2. runs ``claude -p --settings FILE --output-format stream-json`` or ``codex exec --json``
   (with ``CODEX_HOME`` holding the hooks) in the attempt's working folder, under the
   task's agent timeout;
3. reads the CLI's output back (commands, tokens, cost, model) into the session's command
   log, and the bridge's activity log into the session's policy runtime, so the record's
   ``events`` counts the hook events that really ran. A policy attempt with no
   ``PreToolUse`` hook event, or a policy load error, is reported in the outcome's ``error``
   for the validity guard.

Runs with ``environment=local`` (the CLI and fire-exp run on this machine). ``preflight()``
checks, before a panel starts, that the CLI is on PATH and answers ``--version``; a missing
CLI refuses the run with a one-line error that says how to install it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import fire_exp
from fire_exp.agents.base import AgentOutcome, ProviderError
from fire_exp.agents.cli_container import CliPlacement, preflight, run_in_container
from fire_exp.agents.cli_install import InstallSpec, prepare_cli_images
from fire_exp.agents.cli_transcripts import CliTranscript, parse_claude_stream, parse_codex_json
from fire_exp.agents.session import AgentSession, AttemptContext
from fire_exp.agents.transcript import price_tokens
from fire_exp.environments.base import Environment, EnvironmentFailure
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.local import LocalEnvironment
from fire_exp.environments.redaction import redact_text
from fire_exp.errors import PreflightError
from fire_exp.policies.hook_settings import hook_settings
from fire_exp.policies.hook_store import ActivitySummary, read_activity
from fire_exp.policies.model import Step
from fire_exp.records import Cause, Usage
from fire_exp.tasks.model import Task

_PACKAGE_PARENT = str(Path(fire_exp.__file__).resolve().parent.parent)
_KEPT = 4000


@dataclass(frozen=True)
class BridgeTarget:
    """What the hook bridge loads: a portfolio folder, an arm, the control folder."""

    portfolio: str
    arm: str
    controls: str | None = None


def bridge_target(context: AttemptContext) -> BridgeTarget | None:
    """The portfolio and arm the bridge rebuilds (None: a non-policy arm runs no hooks)."""
    if not context.policy_arm:
        return None
    if context.portfolio is None:
        raise EnvironmentFailure(f"attempt {context.attempt_id}: the arm's portfolio folder "
                                 "is unknown, so its hooks cannot be installed")
    return BridgeTarget(portfolio=context.portfolio, arm=context.policies or context.arm,
                        controls=context.controls)


class _HookedCli:
    """A coding CLI driven headless, with the arm's policies wired in as hooks."""

    name = "cli"
    target = "claude-code"
    default_binary = "claude"
    install_hint = ""

    def __init__(self, binary: str | None = None, model: str | None = None,
                 args: Sequence[str] = (), env_passthrough: Sequence[str] = (),
                 prices: dict[str, dict[str, float]] | None = None, hook_timeout_s: int = 60,
                 tier: str | None = None, install: dict[str, Any] | None = None,
                 egress: Sequence[str] = ()) -> None:
        self.binary = binary or self.default_binary
        self.model, self.args = model, list(args)
        self.env_passthrough = list(env_passthrough)
        self.prices = dict(prices or {})
        self.hook_timeout_s = hook_timeout_s
        self.tier = tier
        self.version = ""  # the CLI's --version, once preflight() ran
        # In-container placement (environment=docker): fire_exp/agents/cli_container.py.
        self.install = InstallSpec.from_config(install, f"configs/agent/{self.name}.yaml")
        self.egress = list(egress)

    def place(self, env: Environment) -> None:
        """Before the box starts: with ``environment=docker`` the CLI runs inside it."""
        if isinstance(env, DockerEnvironment):
            env.placement = CliPlacement(self.name, self.install)

    def prepare_images(self, client: Any, task_images: list[str]) -> dict[str, str]:
        """Preflight for ``environment=docker``: install the CLI into every task image."""
        return prepare_cli_images(client, self.name, self.install, task_images)

    def preflight(self, environment: str = "local") -> None:
        """Before the panel: with ``environment=local`` the CLI must be on this machine's
        PATH and answer ``--version`` (with ``environment=docker`` it is installed into the
        task images and tried there instead: :meth:`prepare_boxes`).

        Raises:
            PreflightError: the executable is missing or broken; the message says how to
                install it, point ``agent.binary`` at it, or run it in the container.
        """
        if environment != "local":
            return
        install = (f"install it ({self.install_hint}), point agent.binary at it (e.g. "
                   f"`fire-exp run agent={self.name} agent.binary=/path/to/"
                   f"{self.default_binary}`), or run it in the task's container with "
                   "environment=docker")
        found = shutil.which(self.binary)
        if found is None:
            raise PreflightError(f"agent={self.name}: the `{self.binary}` executable was not "
                                 "found on PATH", install)
        try:
            proc = subprocess.run([found, "--version"], capture_output=True, text=True,
                                  timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PreflightError(f"agent={self.name}: `{found} --version` failed: {exc}",
                                 install) from None
        if proc.returncode != 0:
            detail = ((proc.stderr or proc.stdout).strip().splitlines() or [""])[-1][:200]
            raise PreflightError(f"agent={self.name}: `{found} --version` exited "
                                 f"{proc.returncode}: {detail}", install)
        self.version = (proc.stdout.strip().splitlines() or [""])[0]

    def prepare_boxes(self, environment: str, tasks: Sequence[Task],
                      env_params: Mapping[str, Any]) -> None:
        """Before the panel: with ``environment=docker``, the CLI in every task's image."""
        if environment == "docker":
            preflight(self, list(tasks), dict(env_params))

    def _executable(self) -> str:
        found = shutil.which(self.binary)
        if found is None:
            raise EnvironmentFailure(
                f"agent={self.name}: the `{self.binary}` executable was not found on PATH. "
                f"Install it ({self.install_hint}) or point agent.binary at it, e.g. "
                f"`fire-exp run agent={self.name} agent.binary=/path/to/{self.default_binary}`")
        return found

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        """Run the CLI on the task; read back its commands, usage and hook events."""
        env = session.env
        if isinstance(env, DockerEnvironment):
            return run_in_container(self, session, bridge_target(session.context),
                                    self.install, self.egress)
        if not isinstance(env, LocalEnvironment):
            raise EnvironmentFailure(f"agent={self.name} runs with environment=local or docker")
        executable = self._executable()
        hooks_dir = env.attempt_dir / "hooks"
        hooks_dir.mkdir(parents=True, exist_ok=True)
        target = bridge_target(session.context)
        settings = None
        if target is not None:
            settings = hook_settings(
                self.target, session.runtime.families, portfolio=target.portfolio,
                arm=target.arm, state_dir=str(hooks_dir / "state"), controls=target.controls,
                prefix=f"{shlex.quote(sys.executable)} -m fire_exp",
                timeout_s=self.hook_timeout_s)
        argv, extra_env = self._command(executable, session, settings, hooks_dir)
        process_env = env.env() | self._passed() | extra_env
        process_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")) if p)
        code, timed_out, stderr = self._execute(argv, process_env, session, env.attempt_dir)
        transcript = self._parse(env.attempt_dir)
        summary = read_activity(hooks_dir / "state")
        self._read_back(session, transcript, summary, policy_arm=target is not None)
        usage = self._usage(transcript)
        if timed_out:
            return AgentOutcome(usage=usage, cause=Cause.AGENT_TIMEOUT,
                                error=f"{self.binary} ran past the agent timeout")
        if code != 0 or transcript.errors:
            detail = self._redact("; ".join(transcript.errors) or stderr[-600:])
            message = f"{self.binary} exited {code}: {detail}"
            if not transcript.commands:
                raise ProviderError(message, before_action=True)
            return AgentOutcome(usage=usage, cause=Cause.AGENT_ERROR, error=message)
        return AgentOutcome(usage=usage, error=_hook_warning(summary, target))

    def _passed(self) -> dict[str, str]:
        return {k: os.environ[k] for k in self.env_passthrough if k in os.environ}

    def _redact(self, text: str) -> str:
        return redact_text(text, [v for v in self._passed().values() if len(v) >= 8])

    def _execute(self, argv: list[str], env: dict[str, str], session: AgentSession,
                 attempt_dir: Path) -> tuple[int, bool, str]:
        logs = attempt_dir / "logs" / "agent"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "cli-stdout.jsonl", "wb") as out, \
                open(logs / "cli-stderr.txt", "wb") as err:
            proc = subprocess.Popen(argv, cwd=session.env.paths.workdir, env=env, stdout=out,
                                    stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                code, timed_out = proc.wait(timeout=max(session.time_left(), 1.0)), False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code, timed_out = proc.wait(), True
        stderr = (logs / "cli-stderr.txt").read_text(errors="replace")
        for name in ("cli-stdout.jsonl", "cli-stderr.txt"):  # a CLI may echo its key
            path = logs / name
            path.write_text(self._redact(path.read_text(errors="replace")))
        return code, timed_out, stderr

    def _parse(self, attempt_dir: Path) -> CliTranscript:
        lines = (attempt_dir / "logs" / "agent" / "cli-stdout.jsonl").read_text(
            errors="replace").splitlines()
        return parse_claude_stream(lines) if self.target == "claude-code" \
            else parse_codex_json(lines)

    def _read_back(self, session: AgentSession, transcript: CliTranscript,
                   summary: ActivitySummary, policy_arm: bool) -> None:
        denied = Counter(summary.denied_commands)
        for cmd in transcript.commands:
            if cmd.paths:  # a file edit: a write event for the extractors
                session.trajectory.append(Step(len(session.trajectory), "edit", cmd.command,
                                               cmd.exit_code, self._redact(cmd.output)[-_KEPT:],
                                               paths=cmd.paths))
                continue
            was_denied = denied[cmd.command[:500]] > 0
            denied[cmd.command[:500]] -= int(was_denied)
            session.trajectory.append(Step(len(session.trajectory), "command", cmd.command,
                                           None if was_denied else cmd.exit_code,
                                           self._redact(cmd.output)[-_KEPT:],
                                           denied=was_denied))
        session.trajectory.append(Step(len(session.trajectory), "stop"))
        session.runtime.ingest(events=summary.hook_events, counts=summary.by_event,
                               log=summary.decisions)
        report = {"policy_arm": policy_arm, "hook_events": summary.hook_events,
                  "by_event": summary.by_event, "load_errors": summary.load_errors,
                  "errors": list(summary.errors)}
        (session.env.attempt_dir / "logs" / "agent" / "hook-summary.json").write_text(
            json.dumps(report, indent=1))

    def _configured_model(self) -> str | None:
        """The model the CLI uses when none is given (for Codex: its config.toml)."""
        return None

    def _usage(self, transcript: CliTranscript) -> Usage:
        model = transcript.model or self.model or self._configured_model()
        cost = transcript.cost_usd
        if cost is None:
            price = self.prices.get(model or "", {})
            cost = price_tokens(price, transcript.input_tokens, transcript.output_tokens,
                                transcript.cached_input_tokens)
        return Usage(input_tokens=transcript.input_tokens, output_tokens=transcript.output_tokens,
                     cached_input_tokens=transcript.cached_input_tokens,
                     cost_usd=round(cost, 8), model=model, route=self.target)

    def _command(self, executable: str, session: AgentSession,
                 settings: dict[str, Any] | None, hooks_dir: Path
                 ) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError


def _hook_warning(summary: ActivitySummary, target: BridgeTarget | None) -> str | None:
    """What the validity guard needs to know about the hooks of this attempt."""
    if target is None:
        return None
    if summary.load_errors:
        return f"hooks: {summary.load_errors} policy load error(s): {summary.errors[0]}"
    if not summary.by_event.get("PreToolUse"):
        return "hooks never ran: no PreToolUse hook event in a policy arm"
    return None


class ClaudeCodeAgent(_HookedCli):
    """Claude Code, headless (``claude -p``), with the arm's policies as hooks.

    Args:
        binary: the ``claude`` executable (a name on PATH or a path).
        model: ``--model`` (None: the CLI's default).
        args: further arguments, e.g. ``["--permission-mode", "bypassPermissions"]``.
        env_passthrough: names of variables passed to the CLI (e.g. ``ANTHROPIC_API_KEY``);
            every other variable of this process stays out.
        prices: USD per 1M tokens per model, used only when the CLI reports no cost.
        hook_timeout_s: the timeout of each hook.
    """

    name = "claude-code"
    target = "claude-code"
    default_binary = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code"

    def _command(self, executable: str, session: AgentSession,
                 settings: dict[str, Any] | None, hooks_dir: Path
                 ) -> tuple[list[str], dict[str, str]]:
        argv = [executable, "-p", session.instruction, "--output-format", "stream-json",
                "--verbose"]
        if settings is not None:
            path = hooks_dir / "claude-settings.json"
            path.write_text(json.dumps(settings, indent=1))
            argv += ["--settings", str(path)]
        if self.model:
            argv += ["--model", self.model]
        return argv + self.args, {}


class CodexAgent(_HookedCli):
    """Codex CLI, headless (``codex exec --json``), with the arm's policies as hooks.

    The hooks go to a private ``CODEX_HOME`` (``hooks.json`` plus a ``config.toml`` that
    enables them); authenticate with a variable in ``env_passthrough`` (``CODEX_API_KEY``).
    Codex skips untrusted hooks silently, so ``args`` should trust them
    (``--dangerously-bypass-hook-trust``); the activity log shows whether they ran.
    """

    name = "codex"
    target = "codex"
    default_binary = "codex"
    install_hint = "npm install -g @openai/codex"

    def _command(self, executable: str, session: AgentSession,
                 settings: dict[str, Any] | None, hooks_dir: Path
                 ) -> tuple[list[str], dict[str, str]]:
        home = hooks_dir / "codex-home"
        home.mkdir(parents=True, exist_ok=True)
        # `hooks` is the current feature key; `codex_hooks` is its deprecated alias.
        (home / "config.toml").write_text(self._private_config())
        if settings is not None:
            (home / "hooks.json").write_text(json.dumps(settings, indent=1))
        argv = [executable, "exec", "--json", "--skip-git-repo-check", "--cd",
                session.env.paths.workdir]
        model = self.model or self._configured_model()
        if model:
            argv += ["--model", model]
        return argv + self.args + [session.instruction], {"CODEX_HOME": str(home)}

    def _private_config(self) -> str:
        return "[features]\nhooks = true\n"

    def _configured_model(self) -> str | None:
        """``model`` of the user's Codex config (``$CODEX_HOME`` or ``~/.codex``)."""
        home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        try:
            config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            return None
        model = config.get("model")
        return model if isinstance(model, str) and model else None
