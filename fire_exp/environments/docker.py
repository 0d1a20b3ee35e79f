"""The Docker environment: one container per attempt, built from the task's Dockerfile.

Per attempt it

1. builds the task's image from ``environment/Dockerfile`` (build argument ``BASE_IMAGE``),
   cached as ``fire-exp/task-NAME:DIGEST12`` by the task's content digest, or uses
   ``[environment].docker_image``;
2. starts one container (``init=True``, so orphans are reaped) with the task's CPU and
   memory limits, working folder, network mode (``no-network`` and ``allowlist``: no
   network at all) and the box runtime mounted read-only (``docker_runtime.py``:
   fire-exp's own python3 and bash, made once per engine and base image; its ``bin``,
   holding ``bash`` alone, last on the box's ``PATH``). With a coding-agent CLI
   (``install_agent``): the image derived with the CLI in it (``docker_install.py``)
   and, for a task without network, the internal egress network, the container's own
   packet filter letting it reach nothing but loopback and the egress proxy
   (``egress.py``, ``egress_firewall.py``);
3. starts the agent's session host (``inbox/session_host.py`` with ``procs.py`` beside
   it, run by the box runtime's python3: the image needs no Python and no bash, only
   ``sh`` and ``mkdir`` for housekeeping) as the process of one ``docker exec`` with its
   stdin attached; each agent command is one request on that socket
   (``session_client.py``), a ``bash -c`` child of the session leader (the runtime's
   bash, as is the one of every ``run``, the verifier's). The host stays root; where
   the agent runs unprivileged (``run_agent_as``, a coding-agent CLI's default) every
   command runs as that user, who gets the working folder, ``/logs/agent`` and a home in
   the agent's folder. When the harness dies, the host's input ends and it kills every
   process of the attempt (its watchdog);
4. at the end of the agent phase hangs the session up: what is attached to it dies, a
   ``setsid`` server with redirected streams survives, exactly as in the local environment;
5. runs the verifier (``Environment.run_verifier``); ``collect_logs`` copies ``/logs`` to ``ATTEMPT/logs``;
6. removes the container (also on errors and Ctrl-C; ``stop()`` never raises).

Every container carries the label ``fire-exp=1`` and the attempt's, run's and owning
process's labels, so ``fire-exp cleanup`` finds what a killed run left behind.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fire_exp.attempt_paths import AGENT_LOGS, TERMINAL_LOG, VERIFIER_LOGS, in_box
from fire_exp.environments import inbox
from fire_exp.environments.agent_install import AgentInstall
from fire_exp.environments.base import (
    BoxPaths,
    Capability,
    CapturedExec,
    EnvironmentFailure,
    ExecResult,
    SessionEnd,
    Stream,
)
from fire_exp.environments.docker_channel import ExecChannel, ExecStream
from fire_exp.environments.docker_engine import (
    DOCKER,
    DockerEngine,
    DockerSettings,
    docker_client,
    task_image,
)
from fire_exp.environments.docker_install import mounts, prepare_cli_image
from fire_exp.environments.docker_run import archive_stream, run_streamed
from fire_exp.environments.docker_runtime import (
    BASH,
    PYTHON,
    RUNTIME,
    box_path,
    ensure_runtime,
    forget_runtime,
    runtime_mount,
)
from fire_exp.environments.docker_session import (
    AGENT_DIR,
    AGENT_HOME,
    CAPTURE_DIR,
    blame,
    capture_damage,
    grant_script,
    oom_kills,
    sabotage,
)
from fire_exp.environments.egress import EgressProxy, ensure_egress_network, gateway_of
from fire_exp.environments.egress_firewall import confine_to_proxy
from fire_exp.environments.fetch import extract_stream, read_single
from fire_exp.environments.images import LABEL, ensure_base_image, owner_labels, slug
from fire_exp.environments.session_client import SessionClient, result
from fire_exp.tasks.model import Task

HOST_DIR = "/opt/fire-exp"  # root's: the session host and procs.py (inbox.FILES)
HOST_PATH = f"{HOST_DIR}/session_host.py"
LOGS, TESTS, SOLUTION, PORT = "/logs", "/tests", "/solution", 8000


class DockerEnvironment(DockerEngine):
    """One container per attempt (see the module docstring).

    Args:
        task, attempt_dir, attempt_id: as for every environment.
        base_image: passed to the Dockerfile as build argument ``BASE_IMAGE``.
        bootstrap_base: build ``fire-exp/base:bookworm`` on first use when it is missing.
        public_network: the Docker network of tasks whose network mode is ``public``.
        pids_limit: the most processes the container may hold (a fork bomb stops there).
        fetch_cap_mb: the most MB of the box's files one attempt brings home (the CLI's
            output and ``/logs``; the verifier's folder, fetched first, has a cap of its own
            the same size); past it the rest is dropped and named (``fetch.py``).
        keep_container: leave the container for inspection (debugging only).
    """

    name = "docker"
    settings_model = DockerSettings
    capabilities = frozenset({Capability.SERVICES, Capability.NETWORK_POLICY,
                              Capability.EGRESS_ALLOWLIST, Capability.HOOK_RELAY,
                              Capability.INSTALL_AGENT, Capability.AGENT_USER,
                              Capability.IMAGES})

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str, *,
                 base_image: str = DOCKER.base_image,
                 bootstrap_base: bool = DOCKER.bootstrap_base,
                 public_network: str = DOCKER.public_network,
                 pids_limit: int = DOCKER.pids_limit, fetch_cap_mb: int = DOCKER.fetch_cap_mb,
                 keep_container: bool = DOCKER.keep_container) -> None:
        super().__init__(task, attempt_dir, attempt_id)
        self.base_image = base_image
        self.bootstrap_base = bootstrap_base
        self.public_network = public_network
        self.pids_limit = pids_limit
        self.fetch_cap = fetch_cap_mb << 20
        self._fetched = 0  # bytes of the box's files brought home so far
        self.keep_container = keep_container
        self.marker = f"{slug(attempt_id, 80)}.{secrets.token_hex(4)}"
        self.image: str | None = None
        self.runtime: str | None = None  # the box runtime's volume (docker_runtime.py)
        self._path: str | None = None  # the box's PATH: the image's, then the runtime's bin
        self.container: Any = None
        self._client: Any = None
        self.session: SessionClient | None = None  # the agent's session, once started
        self._logs_copied = False
        # A coding-agent CLI that runs inside the box (install_agent); None: the task's
        # image and network as they are.
        self.agent_install: AgentInstall | None = None
        self.network: str | None = None
        self._asked_user: str | None = None  # run_agent_as; the task's [agent].user wins
        self._granted = False  # the agent's user has its folders
        self._host_pid: int | None = None  # the session host's pid in the container
        self._oom_base: int | None = None  # the cgroup's OOM kills when the session began
        self._session_lost = False

    @property
    def paths(self) -> BoxPaths:
        return BoxPaths(workdir=self.task.environment.workdir, logs=LOGS, tests=TESTS,
                        solution=SOLUTION, agent=AGENT_DIR)

    def labels(self) -> dict[str, str]:
        """The labels of this attempt's container."""
        parts = self.attempt_dir.parts
        in_run = len(parts) >= 5 and parts[-4] == "attempts"
        labels = owner_labels() | {f"{LABEL}.kind": "attempt",
                                   f"{LABEL}.run": parts[-5] if in_run else "",
                                   f"{LABEL}.attempt": self.attempt_id,
                                   f"{LABEL}.task": self.task.name}
        if in_run:  # its lock tells a later run start whether this run is alive
            labels[f"{LABEL}.run-dir"] = str(self.attempt_dir.resolve().parents[3])
        if self.keep_container:
            labels[f"{LABEL}.keep"] = "1"
        return labels

    @property
    def agent_user(self) -> str | None:
        """The box user the agent's session runs as (None: root, the box's default)."""
        user = self.task.agent.user or self._asked_user
        return None if user in (None, "root") else user

    def box_env(self) -> dict[str, str]:
        """The environment variables every process in the container sees."""
        p = self.paths
        env = {"FIRE_WORKDIR": p.workdir, "FIRE_LOGS": p.logs, "FIRE_TESTS": p.tests,
               "FIRE_SOLUTION": p.solution, "FIRE_PORT": str(PORT), "TERM": "dumb",
               "PYTHONDONTWRITEBYTECODE": "1"}
        return env | ({"PATH": self._path} if self._path else {})

    # lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._client = docker_client()
        self.image = self._resolve_image()
        if self.agent_install is not None:
            self.image = prepare_cli_image(self._client, self.agent_install.agent, self.image,
                                           self.agent_install.spec)
        ensure_base_image(self._client, self.base_image, self.bootstrap_base)
        self.runtime = ensure_runtime(self._client, self.base_image)
        self._check_cancelled()
        self.container = self._create_container()
        self._prepare_box()
        self._start_session()

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise EnvironmentFailure("cancelled before the container started")

    def _resolve_image(self) -> str:
        return task_image(self._client, self.task, self.base_image, self.bootstrap_base)

    def _create_container(self) -> Any:
        import docker.errors

        env = self.task.environment
        network = self.public_network if env.network_mode == "public" else "none"
        volumes: dict[str, dict[str, str]] = {}
        if self.agent_install is not None:
            # The CLI must reach its model: a task without network gets the egress network.
            if env.network_mode != "public":
                network = ensure_egress_network(self._client)
            volumes = mounts(self.agent_install.spec)
        self.network = network
        self._path = box_path(env.env.get("PATH") or self._image_path())
        name = f"fire-exp-{slug(self.attempt_id, 40)}-{secrets.token_hex(3)}"
        try:
            container = self._client.containers.run(
                self.image, entrypoint=["sleep", "infinity"], command=[], detach=True,
                init=True, name=name, labels=self.labels(),
                environment=env.env | self.box_env(),
                working_dir=env.workdir, network_mode=network, hostname="fire-box",
                nano_cpus=int(env.cpus * 1e9), mem_limit=f"{env.memory_mb}m",
                memswap_limit=f"{env.memory_mb}m", pids_limit=self.pids_limit,
                volumes=volumes or None, mounts=[runtime_mount(str(self.runtime))])
        except docker.errors.DockerException as exc:
            self._remove_named(name)
            raise EnvironmentFailure(f"task {self.task.name}: the container did not start: "
                                     f"{exc}") from exc
        if self._on_egress_network():
            try:  # loopback only, before anything runs in it; open_egress adds the proxy
                confine_to_proxy(container)
            except EnvironmentFailure:
                self._remove_named(name)
                raise
        return container

    def _image_path(self) -> str | None:
        """The ``PATH`` the image sets (None: it sets none)."""
        for item in self._client.images.get(self.image).attrs["Config"].get("Env") or []:
            if item.startswith("PATH="):
                return str(item[5:])
        return None

    def _on_egress_network(self) -> bool:
        return self.network not in (None, "none", self.public_network)

    def _remove_named(self, name: str) -> None:
        try:
            self._client.containers.get(name).remove(force=True)
        except Exception:  # noqa: BLE001, S110 - it was never created
            pass

    def _sh(self, command: str, timeout: float = 60.0, user: str = "") -> tuple[int, str]:
        """Run a housekeeping command with ``sh -c`` (not in the agent's session)."""
        result = self.container.exec_run(["sh", "-c", command], workdir="/", user=user,
                                         environment=self.box_env())
        return int(result.exit_code), result.output.decode(errors="replace")

    def _prepare_box(self) -> None:
        """The logs folders, and the box runtime in place; the image needs only ``sh`` and
        ``mkdir`` for this (busybox's will do), no python3 and no bash."""
        logs = " ".join(in_box(LOGS, name) for name in (AGENT_LOGS, VERIFIER_LOGS))
        code, out = self._sh(f"mkdir -p {logs} && test -x {PYTHON[0]}")
        if code != 0:
            assert self.runtime is not None
            forget_runtime(self._client, self.runtime)  # the next attempt checks it again
            raise EnvironmentFailure(f"task {self.task.name}: the box could not be prepared "
                                     f"(it needs sh and mkdir; the box runtime is "
                                     f"{self.runtime} at {RUNTIME}): exit {code}: "
                                     f"{out.strip()[-400:]}")
        for name, source in inbox.sources().items():
            self.write_file(f"{HOST_DIR}/{name}", source)

    def _start_session(self) -> None:
        api = self._client.api
        exec_id = api.exec_create(
            self.container.id, [*PYTHON, HOST_PATH, self.marker, in_box(LOGS, TERMINAL_LOG),
                                "--shell", json.dumps(BASH)],
            stdin=True, stdout=True, stderr=True, tty=False, workdir=self.paths.workdir,
            # root, to switch to the agent's user and stay out of its reach
            user="root" if self.agent_user else "", environment=self.box_env())["Id"]
        self.session = SessionClient(ExecChannel(api.exec_start(exec_id, socket=True),
                                                 self.cancelled))
        # The exec starts asynchronously: wait until the host answers.
        self._host_pid = self.session.ping()
        self._oom_base = self._oom_kills()

    def _running(self) -> Any:
        if self.container is None:
            raise EnvironmentFailure("the container is not running")
        return self.container

    def put_archive(self, dest: str, data: bytes) -> None:
        if not self._running().put_archive(dest, data):
            raise EnvironmentFailure(f"could not copy files to {dest} in the container")

    def get_archive(self, src: str) -> bytes:
        import docker.errors

        try:
            bits, _ = self._running().get_archive(src)
        except docker.errors.NotFound as exc:
            raise EnvironmentFailure(f"{src} does not exist in the container") from exc
        return b"".join(bits)

    def exec(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None
             ) -> ExecResult:
        return result(self._session_exec(command, timeout, env))

    def exec_captured(self, command: str, timeout: float, *,
                      env: Mapping[str, str] | None = None) -> CapturedExec:
        """The session host records the command's output in root's ``CAPTURE_DIR`` until
        the command exits; what the agent's processes did to it is in ``sabotage``."""
        # The CLI out of its own commands' reach (session_host: ``shield``).
        reply = self._session_exec(f"exec {command} < /dev/null", timeout, env,
                                   capture=CAPTURE_DIR, shield=True)
        files = {"stdout": b"", "stderr": b""}  # none: the host could not start the command
        for name, made in (reply.get("capture") or {}).items():
            try:
                files[name] = self.read_file(made["path"])
            except EnvironmentFailure:
                files[name] = b""
        self.remove(CAPTURE_DIR)
        damage = capture_damage(reply, files)
        return CapturedExec(result(reply), files["stdout"], files["stderr"],
                            sabotage=sabotage(self._running(), reply, damage),
                            intact=not damage)

    def _session_exec(self, command: str, timeout: float, env: Mapping[str, str] | None,
                      **options: Any) -> dict[str, Any]:
        """The session host's reply to one command; a lost session is blamed (``_blame``)."""
        session = self.session
        if session is None:
            raise EnvironmentFailure("the agent's session has ended")
        if self.agent_user is not None:
            self._grant_agent_user(self.agent_user)
            options |= {"user": self.agent_user, "home": AGENT_HOME}
        try:
            return session.exec_reply(command, timeout, cwd=self.paths.workdir,
                                      env_extra=dict(env or {}), **options)
        except EnvironmentFailure as exc:
            if self.cancelled.is_set():
                raise
            self._session_lost = True
            raise self._blame(exc) from exc

    def _grant_agent_user(self, user: str) -> None:
        """Once, before the agent's first command: ``user`` gets what it writes
        (:func:`docker_session.grant_script`)."""
        if self._granted:
            return
        code, out = self._sh(grant_script(self.task, user, PYTHON), user="root")
        if code != 0:
            raise EnvironmentFailure(f"task {self.task.name}: could not prepare the agent's "
                                     f"user {user} (exit {code}: {out.strip()[-400:]})")
        self._granted = True

    def _blame(self, exc: EnvironmentFailure) -> EnvironmentFailure:
        """Whose failure a lost session is (:func:`docker_session.blame`)."""
        try:
            return blame(self._running(), self._sh, self._host_pid, self._oom_base, exc)
        except Exception:  # noqa: BLE001 - no evidence: it stays the box's failure
            return exc

    def _oom_kills(self) -> int | None:
        return oom_kills(self._sh)

    def end_command_session(self) -> SessionEnd:
        session, self.session = self.session, None
        if session is None:
            return SessionEnd()
        if self._session_lost:  # its host is gone: nothing to hang up (stop() kills the rest)
            session.close()
            return SessionEnd()
        return session.hangup()

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None, user: str | None = None,
            stream: Stream | None = None) -> ExecResult:
        return run_streamed(self._client.api, self._running(), command, timeout=timeout,
                            workdir=cwd or self.paths.workdir, user=user or "",
                            environment=self.box_env() | dict(env or {}), stream=stream,
                            cancelled=self.cancelled, name=f"run-{self.attempt_id}",
                            shell=BASH)

    def read_file(self, src: str) -> bytes:
        """The box file ``src`` as a stream, at most what is left of the fetch cap (the
        rest dropped and named in :attr:`withheld`)."""
        import docker.errors

        try:
            with archive_stream(self._client.api, self._running(), src) as chunks:
                got = read_single(chunks, max(0, self.fetch_cap - self._fetched))
        except docker.errors.NotFound as exc:
            raise EnvironmentFailure(f"{src} does not exist in the container") from exc
        if got is None:
            raise EnvironmentFailure(f"{src} is not a file in the box")
        data, size = got
        self._fetched += len(data)
        if size > len(data):
            self.withheld.append(f"{src}: {size - len(data)} of its {size} bytes, past the "
                                 f"fetch cap of {self.fetch_cap} bytes")
        return data

    def collect_logs(self) -> None:
        """Copy the container's ``/logs`` into ``ATTEMPT/logs`` as streams (``fetch.py``):
        the verifier's folder first, so nothing the agent left crowds out the reward, then
        the rest within what is left of the fetch cap."""
        import docker.errors

        api, container = self._client.api, self._running()
        try:
            with archive_stream(api, container, in_box(LOGS, VERIFIER_LOGS)) as chunks:
                verifier = extract_stream(chunks, self.files.logs, cap=self.fetch_cap)
            self.withheld += verifier.withheld
        except docker.errors.NotFound:
            pass  # no verifier ran
        with archive_stream(api, container, LOGS) as chunks:
            fetched = extract_stream(chunks, self.attempt_dir, skip=VERIFIER_LOGS,
                                     cap=max(0, self.fetch_cap - self._fetched))
        self._fetched += fetched.kept
        self.withheld += fetched.withheld
        self._logs_copied = True
        self.redactor.tree(self.files.logs)

    # capabilities ---------------------------------------------------------------------

    def open_stream(self, argv: Sequence[str]) -> ExecStream:
        container = self._running()
        api = self._client.api
        # As root whatever the image's USER: the stream is the harness's (the hook relay).
        exec_id = api.exec_create(container.id, list(argv), stdin=True, stdout=True,
                                  stderr=True, tty=False, workdir="/", user="0:0")["Id"]
        return ExecStream(api.exec_start(exec_id, socket=True))

    def open_egress(self, allowed: Sequence[str], log_path: Path) -> EgressProxy | None:
        if self.network is None or not self._on_egress_network():
            return None  # the task's own network: public, or none at all (fails closed)
        gateway = gateway_of(self._client, self.network)
        proxy = EgressProxy(gateway, list(allowed), log_path)
        try:  # from now on the container reaches the proxy, and nothing else but loopback
            confine_to_proxy(self._running(), gateway, proxy.ports)
        except BaseException:
            proxy.close()
            raise
        return proxy

    def install_agent(self, install: AgentInstall) -> None:
        self.agent_install = install

    def run_agent_as(self, user: str) -> None:
        self._asked_user = user

    def agent_binary(self, install: AgentInstall) -> str:
        return install.spec.binary_in_box(install.binary)

    def stop(self) -> None:
        try:
            session, self.session = self.session, None
            if session is not None:
                session.close()
            container, self.container = self.container, None
            if container is None:
                return
            if not self._logs_copied:
                try:
                    self.container = container
                    self.collect_logs()
                except Exception:  # noqa: BLE001, S110 - logs are best effort here
                    pass
                finally:
                    self.container = None
            if not self.keep_container:
                self._remove(container)
        except Exception:  # noqa: BLE001, S110 - stop() must never raise
            pass
        finally:
            client, self._client = self._client, None
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001, S110
                    pass

    @staticmethod
    def _remove(container: Any) -> None:
        """Remove the container, retrying while the engine is busy with it."""
        import docker.errors

        for attempt in range(3):
            try:
                container.remove(force=True)
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError:
                if attempt == 2:
                    raise
                time.sleep(0.5)

