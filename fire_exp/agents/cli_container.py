"""A coding CLI inside the attempt's container, its hooks answered on the host.

With ``environment=docker`` an agent ``claude-code`` or ``codex`` runs as Harbor's
installed agents do: the CLI is a process of the agent's session in the task's container
(a ``bash -c`` child of the session host, in the task's working folder), so its commands
change the container the verifier then checks, and what it leaves running ends with the
session as any agent's commands do. Per attempt:

1. *Placement* (before the container starts, :class:`CliPlacement`): the task's image with
   the CLI installed (``cli_install.prepare_cli_image``, cached), a read-only mount of a
   host binary if that is the install method, and the network (``cli_network``).
2. The hook shim (``/opt/fire-exp/bin/fire-exp-hook``, POSIX sh) and the hook relay are
   copied in, the hook settings point at the shim, and the relay is started as one
   ``docker exec`` whose stream ends at a :class:`HookServer` on the host. The baseline
   arm gets neither settings nor relay.
3. The CLI runs with its key in the request to the session host only (never in the
   container's configuration or an image), its output going to files that are fetched,
   redacted and read back as in the local placement.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fire_exp.agents.base import AgentOutcome, ProviderError
from fire_exp.agents.cli_install import InstallSpec, prepare_cli_image
from fire_exp.agents.cli_network import (
    EgressProxy,
    ensure_egress_network,
    gateway_of,
)
from fire_exp.agents.session import AgentSession
from fire_exp.environments.base import EnvironmentFailure
from fire_exp.environments.docker_session import SessionChannel, extract_archive, tar_file
from fire_exp.policies.hook_server import HookAnswerer, HookServer
from fire_exp.policies.hook_settings import TOOL_EVENTS, needed_events
from fire_exp.policies.hook_store import read_activity
from fire_exp.policies.model import Family
from fire_exp.records import Cause

if TYPE_CHECKING:
    from fire_exp.agents.cli_agents import BridgeTarget, _HookedCli
    from fire_exp.environments.docker import DockerEnvironment
    from fire_exp.tasks.model import Task

BOX = "/opt/fire-exp"
SHIM = f"{BOX}/bin/fire-exp-hook"
RELAY = f"{BOX}/hook_relay.sh"
SPOOL = f"{BOX}/hooks"
AGENT_DIR = f"{BOX}/agent"
OUT_DIR = f"{AGENT_DIR}/out"
_SCRIPTS = Path(__file__).resolve().parent.parent / "environments"
_STREAM_S = 7 * 24 * 3600.0  # the relay's stream lives as long as the attempt


class CliPlacement:
    """What a CLI agent adds to the attempt's container (``DockerEnvironment.placement``).

    Args:
        agent: the agent's name (part of the derived image's tag).
        install: how the CLI gets into the image.
    """

    def __init__(self, agent: str, install: InstallSpec) -> None:
        self.agent, self.install = agent, install
        self.network_name: str | None = None

    def image(self, client: Any, task_image: str) -> str:
        return prepare_cli_image(client, self.agent, task_image, self.install)

    def network(self, client: Any, network_mode: str, default: str) -> str:
        self.network_name = default if network_mode == "public" else \
            ensure_egress_network(client)
        return self.network_name

    def volumes(self) -> dict[str, dict[str, str]]:
        return self.install.volumes()


def shim_settings(families: list[Family], timeout_s: int) -> dict[str, Any]:
    """Hook settings (both CLIs' shape) whose every command is the shim."""
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in needed_events(families):
        group: dict[str, Any] = {"hooks": [{"type": "command", "timeout": timeout_s,
                                            "command": f"{SHIM} {event}"}]}
        hooks[event] = [{"matcher": "Bash"} | group if event in TOOL_EVENTS else group]
    return {"hooks": hooks}


class _HookLink:
    """The relay's exec stream and the server behind it, for one attempt."""

    def __init__(self, env: DockerEnvironment, answerer: HookAnswerer) -> None:
        api = env._client.api  # noqa: SLF001 - the environment's own engine connection
        exec_id = api.exec_create(env.container.id, ["bash", RELAY, SPOOL], stdin=True,
                                  stdout=True, stderr=True, tty=False, workdir="/")["Id"]
        self._stop = threading.Event()
        self.channel = SessionChannel(api.exec_start(exec_id, socket=True), self._stop)
        self.server = HookServer(lambda: self.channel.read_line(_STREAM_S),
                                 self.channel.send_line, answerer.answer)
        try:
            self.server.start()
        except TimeoutError as exc:
            self.close()
            raise EnvironmentFailure("the hook relay did not start in the container "
                                     f"(it needs bash, mkfifo and base64): {exc}") from exc

    def close(self) -> None:
        self.server.close()
        self._stop.set()
        self.channel.close()  # the relay reads end of input and exits


def _box_files(agent: _HookedCli, settings: dict[str, Any] | None) -> dict[str, bytes]:
    files = {SHIM: (_SCRIPTS / "hook_shim.sh").read_bytes(),
             RELAY: (_SCRIPTS / "hook_relay.sh").read_bytes()}
    if agent.target == "codex":
        files[f"{AGENT_DIR}/codex-home/config.toml"] = b"[features]\ncodex_hooks = true\n"
    if settings is not None:
        name = "claude-settings.json" if agent.target == "claude-code" \
            else "codex-home/hooks.json"
        files[f"{AGENT_DIR}/{name}"] = json.dumps(settings, indent=1).encode()
    return files


def _argv(agent: _HookedCli, binary: str, session: AgentSession, hooked: bool) -> list[str]:
    model = ["--model", agent.model] if agent.model else []
    if agent.target == "claude-code":
        argv = [binary, "-p", session.instruction, "--output-format", "stream-json",
                "--verbose"]
        if hooked:
            argv += ["--settings", f"{AGENT_DIR}/claude-settings.json"]
        return argv + model + agent.args
    return [binary, "exec", "--json", "--skip-git-repo-check", "--cd",
            session.env.paths.workdir, *model, *agent.args, session.instruction]


def _fetch_output(env: DockerEnvironment, agent: _HookedCli, logs: Path) -> None:
    """Copy the CLI's output out of the container, redacted, and remove it there."""
    bits, _ = env.container.get_archive(OUT_DIR)
    with tempfile.TemporaryDirectory(prefix="fire-exp-cli-") as scratch:
        extract_archive(bits, Path(scratch))
        for name in ("cli-stdout.jsonl", "cli-stderr.txt"):
            source = Path(scratch) / "out" / name
            text = source.read_text(errors="replace") if source.is_file() else ""
            (logs / name).write_text(agent._redact(text))  # noqa: SLF001
    env.container.exec_run(["rm", "-rf", OUT_DIR])


def _check_binary(env: DockerEnvironment, agent: _HookedCli, binary: str) -> None:
    code, out = env.container.exec_run(["sh", "-c", f"command -v {shlex.quote(binary)}"])
    if code != 0:
        raise EnvironmentFailure(
            f"agent={agent.name}: `{binary}` is not in the container of task "
            f"{env.task.name} (image {env.image}). Give the agent an install step "
            f"(agent.install.script, agent.install.image or agent.install.host_binary; "
            f"docs/agents.md) or use an image that has it")


def run_in_container(agent: _HookedCli, session: AgentSession, target: BridgeTarget | None,
                     install: InstallSpec, egress: list[str]) -> AgentOutcome:
    """Run ``agent``'s CLI inside the attempt's container; see the module docstring."""
    env: DockerEnvironment = session.env  # type: ignore[assignment]
    hooks_dir = env.attempt_dir / "hooks"
    logs = env.attempt_dir / "logs" / "agent"
    logs.mkdir(parents=True, exist_ok=True)
    binary = install.binary_in_box(agent.binary)
    _check_binary(env, agent, binary)
    families = list(session.runtime.families)
    settings = shim_settings(families, agent.hook_timeout_s) if target is not None else None
    for path, data in _box_files(agent, settings).items():
        mode = 0o755 if path in (SHIM, RELAY) else 0o644
        env.container.put_archive("/", tar_file(data, path, mode))
    if settings is not None:  # the record of what the CLI was given
        hooks_dir.mkdir(parents=True, exist_ok=True)
        (hooks_dir / "shim-settings.json").write_text(json.dumps(settings, indent=1))
    link: _HookLink | None = None
    proxy: EgressProxy | None = None
    try:
        if target is not None:
            answerer = HookAnswerer(target.portfolio, target.arm, hooks_dir / "state",
                                    agent.target, target.controls)  # type: ignore[arg-type]
            link = _HookLink(env, answerer)
        extra = agent._passed()  # noqa: SLF001 - the keys, for this process only
        env.redactions = list(extra.values())  # and out of everything copied from /logs
        if agent.target == "codex":
            extra["CODEX_HOME"] = f"{AGENT_DIR}/codex-home"
        placement = env.placement
        if isinstance(placement, CliPlacement) and placement.network_name and \
                placement.network_name != env.public_network:
            # The model endpoint: the agent's list, and any *_BASE_URL variable it passes.
            allowed = egress + [v for k, v in extra.items() if k.endswith("_BASE_URL")]
            proxy = EgressProxy(gateway_of(env._client, placement.network_name),  # noqa: SLF001
                                allowed, logs / "egress.jsonl")
            extra |= {"HTTPS_PROXY": proxy.address, "https_proxy": proxy.address,
                      "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1"}
        argv = _argv(agent, binary, session, settings is not None)
        command = (f"mkdir -p {OUT_DIR} && exec {shlex.join(argv)} > {OUT_DIR}/cli-stdout.jsonl"
                   f" 2> {OUT_DIR}/cli-stderr.txt < /dev/null")
        result = env.exec(command, timeout=max(session.time_left(), 1.0), extra_env=extra)
    finally:
        if link is not None:
            link.close()
        if proxy is not None:
            proxy.close()
    _fetch_output(env, agent, logs)
    return _outcome(agent, session, target, result.exit_code, result.timed_out)


def _outcome(agent: _HookedCli, session: AgentSession, target: BridgeTarget | None,
             code: int, timed_out: bool) -> AgentOutcome:
    """Read the CLI's output and the bridge's activity back, as the local placement does."""
    from fire_exp.agents.cli_agents import _hook_warning

    transcript = agent._parse(session.env.attempt_dir)  # noqa: SLF001
    summary = read_activity(session.env.attempt_dir / "hooks" / "state")
    agent._read_back(session, transcript, summary, policy_arm=target is not None)  # noqa: SLF001
    usage = agent._usage(transcript)  # noqa: SLF001
    if timed_out:
        return AgentOutcome(usage=usage, cause=Cause.AGENT_TIMEOUT,
                            error=f"{agent.binary} ran past the agent timeout")
    if code != 0 or transcript.errors:
        stderr = (session.env.attempt_dir / "logs" / "agent" / "cli-stderr.txt").read_text()
        detail = "; ".join(transcript.errors) or stderr[-600:]
        message = f"{agent.binary} exited {code}: {agent._redact(detail)}"  # noqa: SLF001
        if not transcript.commands:
            raise ProviderError(message, before_action=True)
        return AgentOutcome(usage=usage, cause=Cause.AGENT_ERROR, error=message)
    return AgentOutcome(usage=usage, error=_hook_warning(summary, target))


def preflight(agent: _HookedCli, tasks: list[Task], env_params: dict[str, Any]) -> dict[str, str]:
    """Before a docker panel: install the CLI into every task's image and try it there.

    Builds (or finds) each task image, makes the CLI image (cached), and runs
    ``command -v BINARY`` in a throwaway container of it, so a broken install step or a
    wrong binary stops the run before any attempt is recorded. Returns task name -> the
    image its attempts will run.

    Raises:
        EnvironmentFailure: an image, the install or the binary check failed.
    """
    from fire_exp.environments.docker import DockerEnvironment, docker_client, owner_labels

    client = docker_client()
    found: dict[str, str] = {}
    try:
        for task in tasks:
            probe = DockerEnvironment(task, Path("/nonexistent"), "preflight", **env_params)
            probe._client = client  # noqa: SLF001 - resolve the image as an attempt would
            image = prepare_cli_image(client, agent.name, probe._resolve_image(),  # noqa: SLF001
                                      agent.install)
            binary = agent.install.binary_in_box(agent.binary)
            if image not in found.values():
                _try_binary(client, image, binary, agent, owner_labels())
            found[task.name] = image
    finally:
        client.close()
    return found


def _try_binary(client: Any, image: str, binary: str, agent: _HookedCli,
                labels: dict[str, str]) -> None:
    import docker.errors

    try:
        client.containers.run(image, ["sh", "-c", f"command -v {shlex.quote(binary)}"],
                              entrypoint=[], remove=True, network_mode="none",
                              volumes=agent.install.volumes() or None,
                              labels=labels | {"fire-exp.kind": "preflight"})
    except docker.errors.ContainerError as exc:
        raise EnvironmentFailure(
            f"agent={agent.name}: `{binary}` is not in image {image} (exit {exc.exit_status}). "
            "Give the agent an install step (agent.install.script, agent.install.image or "
            "agent.install.host_binary; docs/agents.md)") from exc
