"""A coding-agent CLI as an agent: any dialect, run through the environment contract.

A CLI runs its own tools, so its commands do not pass through ``session.bash``: the arm's
policies reach it through its hooks instead (reference/hooks.md). Per attempt the agent

1. checks that the CLI is in the box (``command -v``), and asks the box for a hook
   transport (``Environment.hook_transport``: fire-exp's own command on this machine, or a
   shim in the box whose calls a relay or one-shot execs bring to this process) unless the
   arm runs no policies — a baseline attempt has no hook configuration at all;
2. writes the dialect's files (hook settings whose commands are the transport's, its
   configuration) into the box's agent folder, and a copy of the settings to
   ``ATTEMPT/hooks``;
3. runs the dialect's command line as one command of the command session
   (``Environment.exec_captured``), as an unprivileged user where the box can switch
   (``AGENT_USER``), under the task's agent timeout, with the passed-through keys for that
   command only and, where the box gates egress, the proxy's variables; the box records
   its output (in Docker, root's session host, out of the agent's reach) and says when
   the agent's own processes killed the CLI or tampered with the record — then the
   attempt is the agent's error, never a replaceable failure;
4. brings the output home redacted and reads it back (``readback.ReadBack``: commands,
   tokens, cost, model) into the session's command log, and the hook activity log into
   the session's policy runtime, so the record's ``events`` counts the hook events that really ran. A policy attempt
   with no ``PreToolUse`` hook event, or a policy load error, is reported in the
   outcome's ``error``; every inconsistency between the transcript and the host's hook
   calls (``evidence.reconcile``) in its ``tamper``, which makes the attempt invalid.

Which box: any environment. Installing the CLI (``INSTALL_AGENT``) and egress control
(``EGRESS_ALLOWLIST``) are the box's capabilities; where the box has neither (the local
environment) the CLI must be on this machine's PATH.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any, cast, get_args

import numpy as np

import fire_exp
from fire_exp.agents.base import AgentOutcome, ProviderError
from fire_exp.agents.coding_agents.dialect import CliDialect, endpoint_hostport
from fire_exp.agents.coding_agents.endpoint_check import check_endpoint
from fire_exp.agents.coding_agents.packaged import BinaryIdentity, binary_identity, host_binary
from fire_exp.agents.coding_agents.reach import (
    box_url,
    box_variables,
    ca_bundle_path,
    ca_placement,
)
from fire_exp.agents.coding_agents.readback import BridgeTarget, ReadBack
from fire_exp.agents.coding_agents.settings import CodingCliSettings
from fire_exp.agents.session import AgentSession, AttemptContext
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.agent_install import AgentInstall, InstallSpec
from fire_exp.environments.base import Capability, CapturedExec, Environment, EnvironmentFailure
from fire_exp.environments.hook_transport import HookEndpoint, HookTransport
from fire_exp.errors import InputError, PreflightError
from fire_exp.policies.hook_answerer import HookAnswerer
from fire_exp.policies.hook_settings import hook_command, settings_document
from fire_exp.policies.hooks import Cli
from fire_exp.records import Cause, Usage
from fire_exp.tasks.model import Task

_PACKAGE_PARENT = str(Path(fire_exp.__file__).resolve().parent.parent)
_NO_KEY = "fire-exp-no-key"
_KEPT = 4000
_CHECK_S = 30.0
_CLI = CodingCliSettings()  # the defaults


def bridge_target(context: AttemptContext) -> BridgeTarget | None:
    """The portfolio and arm the bridge rebuilds (None: a non-policy arm runs no hooks)."""
    if not context.policy_arm:
        return None
    if context.portfolio is None:
        raise EnvironmentFailure(f"attempt {context.attempt_id}: the arm's portfolio folder "
                                 "is unknown, so its hooks cannot be installed")
    return BridgeTarget(portfolio=context.portfolio, arm=context.policies or context.arm,
                        controls=context.controls)


def _protocol(name: str) -> Cli:
    if name not in get_args(Cli):
        raise EnvironmentFailure(f"hook protocol {name!r} is not one fire-exp answers: use "
                                 f"one of {', '.join(get_args(Cli))}")
    return cast(Cli, name)


def _base_url(value: str | None, where: str) -> str | None:
    """``agent.base_url``: None, or an http(s) URL with a host (refused where it enters)."""
    if value in (None, ""):
        return None
    try:
        endpoint_hostport(str(value))
    except ValueError as exc:
        raise InputError(where, "base_url", str(exc),
                         "set agent.base_url=http://HOST:PORT/v1 (or https://...)") from None
    return str(value).rstrip("/")


class CodingCliAgent(ReadBack):
    """A coding-agent CLI driven headless, with the arm's policies wired in as hooks.

    A subclass names the agent and its :attr:`dialect` (``ClaudeCodeAgent``, ``CodexAgent``).

    Args:
        binary: the executable (a name on PATH or a path; None: the binary of the
            installed wheel, ``fire-exp[codex]`` / ``fire-exp[claude-code]``, else the
            dialect's usual name on PATH).
        model: the model to ask for (None: the CLI's default).
        base_url: the model endpoint (None: the CLI's own); the dialect points the CLI
            at it (:meth:`CliDialect.endpoint`) and its ``host:port`` joins the egress
            allow-list.
        api_key_env: the variable of this process holding the endpoint's key (None: the
            dialect's, ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``); passed to the CLI,
            never written to a file. Unset with a ``base_url``: the CLI gets a placeholder
            (a local server takes any key).
        ca_bundle: a PEM file of CAs the CLI must trust for ``base_url`` (None: the box's).
        args: further command-line arguments.
        env_passthrough: names of this process's variables the CLI gets (its key); every
            other variable stays out.
        prices: USD per 1M tokens per model, used only when the CLI reports no cost.
        hook_timeout_s: the timeout of each hook.
        tier: the agent's tier label in the record.
        install: how the CLI gets into a box that installs agents (docs/agents.md).
        egress: ``host:port`` endpoints the CLI may reach where the box gates egress.
        user: the box user the CLI (and every command it runs) runs as where the box can
            switch users (``AGENT_USER``: Docker); the task's ``[agent].user`` wins
            (``root`` for a task that needs root). Unprivileged by default: the CLI runs
            commands the harness never sees, so the hook channel, the CLI's output capture
            and the session host must be out of their reach (Claude Code also refuses
            ``bypassPermissions`` as root).
    """

    name = "coding-cli"
    dialect: CliDialect
    settings_model: type[CodingCliSettings] = CodingCliSettings

    def __init__(self, binary: str | None = _CLI.binary, model: str | None = _CLI.model,
                 args: Sequence[str] = _CLI.args,
                 env_passthrough: Sequence[str] = _CLI.env_passthrough,
                 prices: dict[str, dict[str, float]] | None = _CLI.prices,
                 hook_timeout_s: int = _CLI.hook_timeout_s, tier: str | None = _CLI.tier,
                 install: dict[str, Any] | None = None, egress: Sequence[str] = _CLI.egress,
                 user: str | None = _CLI.user, base_url: str | None = _CLI.base_url,
                 api_key_env: str | None = _CLI.api_key_env,
                 ca_bundle: str | None = _CLI.ca_bundle) -> None:
        where = f"configs/agent/{self.name}.yaml"
        self.host_binary = host_binary(self.name, binary)  # None: not on this machine
        self.binary = binary or self.host_binary or self.dialect.default_binary
        self.dialect = self._make_dialect()
        self.model, self.args = model, list(args)
        self.base_url = _base_url(base_url, where)
        self.api_key_env = api_key_env or self.dialect.default_key_env
        self.ca_bundle = ca_bundle_path(ca_bundle, where)
        self.env_passthrough = list(env_passthrough)
        self.prices = dict(prices or {})
        self.hook_timeout_s = hook_timeout_s
        self.tier = tier
        self.version = ""  # the CLI's --version, once preflight() ran
        spec = self._install_spec(InstallSpec.from_config(install, where),
                                  explicit=binary is not None)
        # An install step (script, image) puts the CLI on the image's PATH by its usual
        # name: this machine's wheel path means nothing there unless agent.binary says so.
        in_image = spec.method in ("script", "image") and binary is None
        self.install = AgentInstall(self.name, self.dialect.default_binary if in_image
                                    else self.binary, spec)
        self.egress = list(egress)
        self.user = user

    def _make_dialect(self) -> CliDialect:
        """The dialect this agent runs (a subclass may build one that knows its binary)."""
        return self.dialect

    def _install_spec(self, spec: InstallSpec, explicit: bool) -> InstallSpec:
        """No install method and no ``binary:`` setting: the wheel's binary goes into the
        box by read-only mount (a box without a registry still gets the CLI)."""
        if spec.method != "none" or explicit or self.host_binary is None:
            return spec
        return dataclasses.replace(spec, host_binary=self.host_binary)

    def binary_identity(self, capabilities: Set[Capability]) -> BinaryIdentity | None:
        """The CLI binary the attempts run, for the preregistration: the one this machine
        runs (a box with ``HOST_PROGRAMS``) or mounts into the box (``install.host_binary``,
        the wheel's by default). None: the binary is the image's or an install step's,
        which the image and the install spec's digest name."""
        spec = self.install.spec
        if spec.host_binary:
            return binary_identity(spec.host_binary)
        if Capability.HOST_PROGRAMS not in capabilities:
            return None
        path = host_binary(self.name, self.binary)
        return binary_identity(path) if path else None

    # before the panel, before the box ------------------------------------------------

    def preflight(self, capabilities: Set[Capability]) -> None:
        """Before the panel: where the CLI runs on this machine (a box with
        ``HOST_PROGRAMS``) it must be on PATH and answer ``--version``; a box that
        installs agents tries it in every task's image instead (:meth:`prepare_boxes`). Wherever it runs, an
        ``agent.base_url`` must answer one cheap request in the CLI's own protocol
        (:mod:`~fire_exp.agents.coding_agents.endpoint_check`).

        Raises:
            PreflightError: the executable is missing or broken (the message says how to
                install it, point ``agent.binary`` at it, or run it in the container), or
                the model endpoint does not answer (the message names the URL and the
                error), or a CLI that reports no cost talks to its vendor with a model
                that has no price.
        """
        self._check_dialect_endpoint()  # a configuration error first, with no request
        self.check_endpoint()
        if Capability.HOST_PROGRAMS in capabilities:
            self._check_local_binary()
        self._check_priced()

    def _check_local_binary(self) -> None:
        """The CLI on this machine's PATH answers ``--version`` (PreflightError if not)."""
        install = (f"install it ({self.dialect.install_hint}), point agent.binary at it "
                   f"(e.g. `fire-exp run agent={self.name} agent.binary=/path/to/"
                   f"{self.dialect.default_binary}`), or run it in the task's container "
                   "with environment=docker")
        found = shutil.which(self.binary)
        if found is None:
            raise PreflightError(f"agent={self.name}: the `{self.binary}` executable was not "
                                 "found on PATH", install)
        try:
            proc = subprocess.run([found, "--version"], capture_output=True, text=True,
                                  timeout=_CHECK_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PreflightError(f"agent={self.name}: `{found} --version` failed: {exc}",
                                 install) from None
        if proc.returncode != 0:
            detail = ((proc.stderr or proc.stdout).strip().splitlines() or [""])[-1][:200]
            raise PreflightError(f"agent={self.name}: `{found} --version` exited "
                                 f"{proc.returncode}: {detail}", install)
        self.version = (proc.stdout.strip().splitlines() or [""])[0]

    def _check_priced(self) -> None:
        """A CLI that reports no cost, on its vendor's endpoint, needs the price of its model:
        without one every attempt would record a cost of 0 for tokens that were billed.
        (Against ``base_url`` an unpriced model is a local one, and costs 0.)"""
        if self.dialect.reports_cost or not self._vendor_endpoint():
            return
        model = self.model or self.dialect.default_model()
        if model is not None and model in self.prices:
            return
        name = model or "MODEL"
        raise PreflightError(
            f"agent={self.name}: model {model or '(the CLI default)'} on the vendor's endpoint "
            "has no price in agent.prices, so every attempt's cost would read 0",
            f"name it and price it, e.g. agent.model={name} "
            f"'+agent.prices.{name}={{input:1.25,cached_input:0.125,output:10.0}}' (USD per 1M "
            "tokens), or point agent.base_url at the model you serve")

    def check_endpoint(self) -> None:
        """``agent.base_url`` answers the CLI's probe, with the key the CLI gets (nothing
        to check for the CLI's own endpoint). Raises PreflightError."""
        if self.base_url is None:
            return
        check_endpoint(self.name, self.dialect.target, self.base_url,
                       self.model or self.dialect.default_model(), self.api_key_env,
                       self._passed().get(self.api_key_env), ca_bundle=self.ca_bundle)

    def _check_dialect_endpoint(self) -> None:
        """What the dialect makes of ``base_url`` and ``model`` (Codex: the model's
        metadata from the binary), once before the panel rather than in every attempt."""
        try:
            self.dialect.endpoint("/preflight", self.base_url, self.model, self.api_key_env)
        except EnvironmentFailure as exc:
            raise PreflightError(f"agent={self.name}: {exc}",
                                 "point agent.binary or agent.install.host_binary at the "
                                 "CLI, or fix agent.base_url / agent.model") from None

    def prepare_boxes(self, backend: type[Environment] | None, tasks: Sequence[Task],
                      env_params: Mapping[str, Any]) -> None:
        """Before the panel: a box that installs agents gets the CLI for every task."""
        if backend is not None and Capability.INSTALL_AGENT in backend.capabilities:
            backend.prepare_agent(self.install, list(tasks), **dict(env_params))

    def place(self, env: Environment) -> None:
        """Before the box starts: a box that installs agents puts the CLI in; a box that
        switches users runs the agent's session as :attr:`user`."""
        if Capability.INSTALL_AGENT in env.capabilities:
            env.install_agent(self.install)
        if self.user is not None and Capability.AGENT_USER in env.capabilities:
            env.run_agent_as(self.user)

    # the attempt ------------------------------------------------------------------------

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        """Run the CLI on the task; read back its commands, usage and hook events."""
        env, files = session.env, session.env.files
        files.agent_logs.mkdir(parents=True, exist_ok=True)  # the egress log lands there
        binary = env.agent_binary(self.install)
        self._check_binary(env, binary)
        target = bridge_target(session.context)
        passed = self._passed()
        env.redactor.add(passed.values())  # out of every log of the attempt
        agent_dir = env.paths.agent
        transport: HookTransport | None = None
        egress = None
        try:
            settings = None
            if target is not None:
                transport = env.hook_transport(self._endpoint(target, files))
                settings = settings_document(session.runtime.families, transport.command,
                                             self.dialect.tool_matcher, self.hook_timeout_s,
                                             cli=self.dialect.hook_protocol)
                record = files.hooks / self.dialect.settings_file()
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps(settings, indent=1))  # what the CLI was given
            # Opened first: the CLI is given the endpoint's URL as the box reaches it.
            egress = env.open_egress(self.allowed_endpoints(passed), files.egress_log)
            endpoint = self.dialect.endpoint(agent_dir, box_url(egress, self.base_url),
                                             self.model, self.api_key_env)
            for path, data in (self.dialect.files(agent_dir, settings) | endpoint.files).items():
                env.write_file(path, data)
            ca_files, ca_env = ca_placement(self.ca_bundle, agent_dir, self.dialect.target)
            for path, data in ca_files.items():
                env.write_file(path, data, mode=0o444)
            # After the files: the session's first command gives the agent's user the
            # agent folder's subfolders as they are then (Docker's grant_script).
            root = self._runs_as_root(env)
            extra = passed | box_variables(egress, passed) | \
                dict(transport.env if transport else {}) | \
                self.dialect.env(agent_dir, root=root) | endpoint.env | ca_env
            if endpoint.key_as and self.api_key_env in passed:
                extra[endpoint.key_as] = passed[self.api_key_env]
            if egress is not None:
                extra |= egress.variables
            argv = self.dialect.argv(binary, session.instruction, workdir=env.paths.workdir,
                                     agent_dir=agent_dir, model=self.model,
                                     args=[*self.args, *endpoint.args],
                                     hooked=settings is not None)
            run = env.exec_captured(shlex.join(argv), timeout=max(session.time_left(), 1.0),
                                    env=extra)
        finally:
            if transport is not None:
                transport.close()
            if egress is not None:
                egress.close()
        self._fetch_output(env, run)
        if run.sabotage is not None:  # the agent's own doing: its cause, never a reroll
            return self._sabotaged(session, target, run)
        return self._outcome(session, target, run.result.exit_code, run.result.timed_out)

    def _sabotaged(self, session: AgentSession, target: BridgeTarget | None,
                   run: CapturedExec) -> AgentOutcome:
        """The agent's processes killed the CLI or tampered with its capture: the agent's
        error. An intact capture is still read back (commands, hook events, cost); one
        that was altered or held is tampering with the record, so the attempt is invalid
        too."""
        usage = Usage()
        tamper: tuple[str, ...] = () if run.intact else (run.sabotage or "",)
        if run.intact:
            try:
                read = self._outcome(session, target, run.result.exit_code,
                                     run.result.timed_out)
                usage, tamper = read.usage, read.tamper
            except ProviderError as exc:
                tamper = exc.tamper
        return AgentOutcome(usage=usage, cause=Cause.AGENT_ERROR, error=run.sabotage,
                            tamper=tamper)

    def _endpoint(self, target: BridgeTarget, files: AttemptPaths) -> HookEndpoint:
        """Both ways to the arm's policies: fire-exp's command on this machine, or the
        answerer in this process behind a relay."""
        prefix = f"{shlex.quote(sys.executable)} -m fire_exp"
        pythonpath = os.pathsep.join(
            p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")) if p)
        return HookEndpoint(
            host_command=lambda event: hook_command(
                prefix, event, portfolio=target.portfolio, arm=target.arm,
                state_dir=str(files.hook_state), cli=self.dialect.hook_protocol,
                controls=target.controls),
            answer=lambda: HookAnswerer(target.portfolio, target.arm, files.hook_state,
                                        _protocol(self.dialect.hook_protocol),
                                        target.controls).answer,
            host_env={"PYTHONPATH": pythonpath})

    def _check_binary(self, env: Environment, binary: str) -> None:
        found = env.run(f"command -v {shlex.quote(binary)}", timeout=_CHECK_S)
        if found.exit_code == 0:
            return
        if Capability.INSTALL_AGENT in env.capabilities:
            raise EnvironmentFailure(
                f"agent={self.name}: `{binary}` is not in the container of task "
                f"{env.task.name} (environment={env.name}). Give the agent an install step (agent.install.script, "
                "agent.install.image or agent.install.host_binary; docs/agents.md) or use "
                "an image that has it")
        raise EnvironmentFailure(
            f"agent={self.name}: the `{binary}` executable was not found on PATH. "
            f"Install it ({self.dialect.install_hint}) or point agent.binary at it, e.g. "
            f"`fire-exp run agent={self.name} agent.binary=/path/to/"
            f"{self.dialect.default_binary}`")

    @staticmethod
    def _runs_as_root(env: Environment) -> bool:
        """Whether the agent's session, where the CLI runs, is root's (a task whose
        ``[agent].user`` is root, a box that cannot switch users, this machine as root)."""
        found = env.exec("id -u", timeout=_CHECK_S)
        return found.exit_code == 0 and found.stdout.strip() == "0"

    def _passed(self) -> dict[str, str]:
        """The variables the CLI gets from this process: ``env_passthrough`` and the key
        variable (a placeholder for an endpoint of ours that needs none)."""
        names = [*self.env_passthrough, self.api_key_env]
        passed = {k: os.environ[k] for k in names if k in os.environ}
        if self.base_url is not None and self.api_key_env not in passed:
            passed[self.api_key_env] = _NO_KEY
        return passed

    def allowed_endpoints(self, passed: Mapping[str, str]) -> list[str]:
        """The endpoints the CLI may reach: the agent's list, ``base_url``'s host:port, and
        any ``*_BASE_URL`` variable it passes."""
        allowed = list(self.egress)
        urls = [v for k, v in passed.items() if k.endswith("_BASE_URL")]
        if self.base_url is not None:  # the URL: an http:// one gets a forward listener
            allowed.append(self.base_url)
        return allowed + urls

    def _vendor_endpoint(self) -> bool:
        """Whether the CLI talks to its own default endpoint (no ``base_url``, no
        ``*_BASE_URL`` passed through)."""
        return self.base_url is None and not any(k.endswith("_BASE_URL") for k in self._passed())

    def _fetch_output(self, env: Environment, run: CapturedExec) -> None:
        """Bring the CLI's recorded output home, redacted."""
        files = env.files
        for data, dest in ((run.stdout, files.cli_stdout), (run.stderr, files.cli_stderr)):
            dest.write_text(env.redactor.text(data.decode("utf-8", "replace")))
