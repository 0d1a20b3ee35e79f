"""The Docker environment: one container per attempt, built from the task's Dockerfile.

Per attempt it

1. builds the task's image from ``environment/Dockerfile`` (build argument ``BASE_IMAGE``),
   cached as ``fire-exp/task-NAME:DIGEST12`` by the task's content digest, or uses
   ``[environment].docker_image``;
2. starts one container (``init=True``, so orphans are reaped) with the task's CPU and
   memory limits, working folder and network mode (``no-network`` and ``allowlist``:
   no network at all; fire-exp has no allowlist proxy, so it fails closed);
3. starts the agent's session host (``session_host.py``, run by the container's
   ``python3``) as the process of one ``docker exec`` with its stdin attached; each agent
   command is one request on that socket, a ``bash -c`` child of the session leader;
4. at the end of the agent phase hangs the session up: what is attached to it dies, a
   ``setsid`` server with redirected streams survives, exactly as in the local environment;
5. uploads ``tests/`` to ``/tests`` only then, runs ``/tests/test.sh`` under the
   verifier's timeout, copies ``/logs`` to ``ATTEMPT/logs`` and reads the reward there;
6. removes the container (also on errors and Ctrl-C; ``stop()`` never raises).

Every container carries the label ``fire-exp=1`` and the attempt's, run's and owning
process's labels, so ``fire-exp cleanup`` finds what a killed run left behind.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from fire_exp.environments import session_host
from fire_exp.environments.base import (
    BoxPaths,
    Environment,
    EnvironmentFailure,
    ExecResult,
    SessionEnd,
    VerifierResult,
)
from fire_exp.environments.docker_session import (
    SessionChannel,
    extract_archive,
    tar_directory,
    tar_file,
)
from fire_exp.environments.images import BASE_IMAGE, LABEL, ensure_task_image, slug
from fire_exp.environments.redaction import redact_tree
from fire_exp.environments.reward import read_reward_dir
from fire_exp.errors import PreflightError
from fire_exp.records import Cause
from fire_exp.tasks.model import Task

HOST_PATH = "/opt/fire-exp/session_host.py"
LOGS, TESTS, SOLUTION, PORT = "/logs", "/tests", "/solution", 8000
_REPLY_MARGIN = 30.0  # seconds past a command's own timeout before the host gives up on it
_VERIFIER_PID = "/tmp/.fire-exp-verifier.pid"


class BoxPlacement(Protocol):
    """What an agent that runs inside the container adds to it (see cli_container.py)."""

    def image(self, client: Any, task_image: str) -> str:
        """The image to run instead of ``task_image`` (e.g. with the agent's CLI in it)."""

    def network(self, client: Any, network_mode: str, default: str) -> str:
        """The Docker network for a task of ``network_mode`` (``default``: the task's own)."""

    def volumes(self) -> dict[str, dict[str, str]]:
        """Bind mounts, as docker-py's ``volumes`` (e.g. a CLI binary, read-only)."""


def docker_client() -> Any:
    """``docker.from_env()``, or EnvironmentFailure saying the engine cannot be reached."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - any failure here means no engine
        raise EnvironmentFailure(f"cannot reach the Docker engine: {exc}") from exc


def owner_labels() -> dict[str, str]:
    """Labels naming the process that owns a container (``fire-exp cleanup`` checks it)."""
    return {LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(),
            f"{LABEL}.owner-pid": str(os.getpid())}


def task_image(client: Any, task: Task, base_image: str, bootstrap_base: bool) -> str:
    """The image ``task`` runs in: built from its Dockerfile (cached by content digest), or
    its ``docker_image``, pulled if this engine lacks it. Raises EnvironmentFailure."""
    image = task.environment.docker_image
    if image is None:
        return ensure_task_image(client, task, base_image, bootstrap_base=bootstrap_base)
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        try:
            client.images.pull(image)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(f"task {task.name}: image {image} is not on "
                                     f"this engine and cannot be pulled: {exc}") from exc
    return image


class DockerEnvironment(Environment):
    """One container per attempt (see the module docstring).

    Args:
        task, attempt_dir, attempt_id: as for every environment.
        base_image: passed to the Dockerfile as build argument ``BASE_IMAGE``.
        bootstrap_base: build ``fire-exp/base:bookworm`` on first use when it is missing.
        public_network: the Docker network of tasks whose network mode is ``public``.
        pids_limit: the most processes the container may hold (a fork bomb stops there).
        keep_container: leave the container for inspection (debugging only).
    """

    name = "docker"

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str, *,
                 base_image: str = BASE_IMAGE, bootstrap_base: bool = True,
                 public_network: str = "bridge", pids_limit: int = 4096,
                 keep_container: bool = False) -> None:
        super().__init__(task, attempt_dir, attempt_id)
        self.base_image = base_image
        self.bootstrap_base = bootstrap_base
        self.public_network = public_network
        self.pids_limit = pids_limit
        self.keep_container = keep_container
        self.marker = f"{slug(attempt_id, 80)}.{secrets.token_hex(4)}"
        self.image: str | None = None
        self.container: Any = None
        self._client: Any = None
        self._channel: SessionChannel | None = None
        self._lock = threading.Lock()
        self._logs_copied = False
        # Set by an agent that runs inside the box (a coding CLI): its image, network and
        # mounts. None: the task's image and network as they are.
        self.placement: BoxPlacement | None = None
        # Values (a CLI's key) to blank out of every file copied from the container's /logs.
        self.redactions: list[str] = []

    @property
    def paths(self) -> BoxPaths:
        return BoxPaths(workdir=self.task.environment.workdir, logs=LOGS, tests=TESTS,
                        solution=SOLUTION)

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

    def box_env(self) -> dict[str, str]:
        """The environment variables every process in the container sees."""
        p = self.paths
        return {"FIRE_WORKDIR": p.workdir, "FIRE_LOGS": p.logs, "FIRE_TESTS": p.tests,
                "FIRE_SOLUTION": p.solution, "FIRE_PORT": str(PORT), "TERM": "dumb",
                "PYTHONDONTWRITEBYTECODE": "1"}

    # lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._client = docker_client()
        self.image = self._resolve_image()
        if self.placement is not None:
            self.image = self.placement.image(self._client, self.image)
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
        if self.placement is not None:
            network = self.placement.network(self._client, env.network_mode, network)
            volumes = self.placement.volumes()
        name = f"fire-exp-{slug(self.attempt_id, 40)}-{secrets.token_hex(3)}"
        try:
            return self._client.containers.run(
                self.image, entrypoint=["sleep", "infinity"], command=[], detach=True,
                init=True, name=name, labels=self.labels(),
                environment=env.env | self.box_env(),
                working_dir=env.workdir, network_mode=network, hostname="fire-box",
                nano_cpus=int(env.cpus * 1e9), mem_limit=f"{env.memory_mb}m",
                memswap_limit=f"{env.memory_mb}m", pids_limit=self.pids_limit,
                volumes=volumes or None)
        except docker.errors.DockerException as exc:
            self._remove_named(name)
            raise EnvironmentFailure(f"task {self.task.name}: the container did not start: "
                                     f"{exc}") from exc

    def _remove_named(self, name: str) -> None:
        try:
            self._client.containers.get(name).remove(force=True)
        except Exception:  # noqa: BLE001, S110 - it was never created
            pass

    def _sh(self, command: str, timeout: float = 60.0) -> tuple[int, str]:
        """Run a housekeeping command with ``sh -c`` (not in the agent's session)."""
        result = self.container.exec_run(["sh", "-c", command], workdir="/",
                                         environment=self.box_env())
        return int(result.exit_code), result.output.decode(errors="replace")

    def _prepare_box(self) -> None:
        code, out = self._sh(f"mkdir -p {LOGS}/agent {LOGS}/verifier && "
                             f"command -v python3 >/dev/null && command -v bash >/dev/null")
        if code != 0:
            raise EnvironmentFailure(f"task {self.task.name}: the image needs bash and python3 "
                                     f"for the agent's session (exit {code}: {out.strip()})")
        source = Path(session_host.__file__).read_bytes()
        self.container.put_archive("/", tar_file(source, HOST_PATH))

    def _start_session(self) -> None:
        api = self._client.api
        exec_id = api.exec_create(
            self.container.id, ["python3", HOST_PATH, self.marker, f"{LOGS}/agent/terminal.log"],
            stdin=True, stdout=True, stderr=True, tty=False, workdir=self.paths.workdir,
            environment=self.box_env())["Id"]
        self._channel = SessionChannel(api.exec_start(exec_id, socket=True), self.cancelled)
        # The exec starts asynchronously: wait until the host answers, and check that it
        # leads its own session (what the end-of-session semantics rest on).
        reply = self._channel.request({"op": "ping"}, _REPLY_MARGIN)
        if reply.get("pid") != reply.get("sid"):
            raise EnvironmentFailure(f"the agent's session host is not a session leader: "
                                     f"{reply}")

    def upload(self, src: Path, dest: str) -> None:
        if self.container is None:
            raise EnvironmentFailure("the container is not running")
        if not self.container.put_archive("/", tar_directory(src, dest)):
            raise EnvironmentFailure(f"could not upload {src} to {dest}")

    def exec(self, command: str, timeout: float,
             extra_env: Mapping[str, str] | None = None) -> ExecResult:
        """Run ``command`` in the agent's session; ``extra_env`` reaches only this command
        (a CLI's key travels in the request, never in the container's configuration)."""
        channel = self._channel
        if channel is None:
            raise EnvironmentFailure("the agent's session has ended")
        req: dict[str, Any] = {"op": "exec", "command": command, "timeout": timeout,
                               "cwd": self.paths.workdir}
        if extra_env:
            req["env_extra"] = dict(extra_env)
        with self._lock:
            reply = channel.request(req, timeout + _REPLY_MARGIN)
        return ExecResult(exit_code=reply["exit_code"], stdout=reply["stdout"],
                          stderr=reply["stderr"], timed_out=reply["timed_out"],
                          duration_s=reply["duration_s"])

    def end_agent_session(self) -> SessionEnd:
        channel, self._channel = self._channel, None
        if channel is None:
            return SessionEnd()
        try:
            with self._lock:
                reply = channel.request({"op": "hangup", "grace": 0.3}, _REPLY_MARGIN)
        finally:
            channel.close()
        return SessionEnd(hung_up=reply["hung_up"], killed=reply["killed"],
                          survivors=reply["survivors"])

    def run_verifier(self) -> VerifierResult:
        start = time.monotonic()
        self._sh(f"rm -f {LOGS}/verifier/reward.txt {LOGS}/verifier/reward.json; "
                 f"mkdir -p {LOGS}/verifier")
        self.upload(self.task.tests_dir, TESTS)
        finished = self._run_test_script()
        self.copy_logs()
        verifier_dir = self.attempt_dir / "logs" / "verifier"
        out_path = verifier_dir / "test-stdout.txt"
        stdout = out_path.read_text(errors="replace")[-4000:] if out_path.is_file() else ""
        if not finished:
            return VerifierResult(reward=None, cause=Cause.VERIFIER_TIMEOUT,
                                  message="the verifier timed out",
                                  duration_s=time.monotonic() - start, stdout=stdout)
        reward, rewards, cause, message = read_reward_dir(verifier_dir)
        return VerifierResult(reward=reward, rewards=rewards, cause=cause, message=message,
                              duration_s=time.monotonic() - start, stdout=stdout)

    def _run_test_script(self) -> bool:
        """Run ``/tests/test.sh`` (exit code ignored); False if it hit its timeout."""
        script = (f"echo $$ > {_VERIFIER_PID}; exec bash {TESTS}/test.sh "
                  f"> {LOGS}/verifier/test-stdout.txt 2>&1 < /dev/null")
        env = self.box_env() | self.task.verifier.env
        api = self._client.api
        exec_id = api.exec_create(self.container.id, ["bash", "-c", script],
                                  workdir=self.paths.workdir, environment=env)["Id"]
        errors: list[BaseException] = []

        def run() -> None:
            try:
                api.exec_start(exec_id)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        worker = threading.Thread(target=run, daemon=True, name=f"verifier-{self.attempt_id}")
        worker.start()
        deadline = time.monotonic() + self.task.verifier.timeout_sec
        while worker.is_alive() and time.monotonic() < deadline and not self.cancelled.is_set():
            worker.join(min(0.25, max(deadline - time.monotonic(), 0.0)))
        if worker.is_alive():
            # The exec'd bash leads its own session and process group: kill the group.
            self.container.exec_run(["bash", "-c", f"kill -9 -- -$(cat {_VERIFIER_PID})"])
            worker.join(5)
            return False
        if errors:
            raise EnvironmentFailure(f"the verifier could not run: {errors[0]}")
        return True

    def copy_logs(self) -> None:
        """Copy the container's ``/logs`` into ``ATTEMPT/logs``."""
        bits, _ = self.container.get_archive(LOGS)
        extract_archive(bits, self.attempt_dir)
        self._logs_copied = True
        # The keys handed to a CLI in the box (the harness's own are redacted by the runner).
        redact_tree(self.attempt_dir / "logs", [v for v in self.redactions if len(v) >= 8])

    @classmethod
    def preflight(cls, **params: Any) -> None:
        """The Docker engine must be reachable."""
        try:
            docker_client().close()
        except EnvironmentFailure as exc:
            raise PreflightError(f"environment=docker: {exc}",
                                 "start the Docker engine, or run with environment=local") \
                from exc

    @classmethod
    def prepare(cls, tasks: Sequence[Task], *, report: Callable[[str], None],
                base_image: str = BASE_IMAGE, bootstrap_base: bool = True,
                **params: Any) -> None:
        """Build (or find cached) every task's image before the first attempt."""
        client = docker_client()
        try:
            for i, task in enumerate(tasks, start=1):
                t0 = time.monotonic()
                image = task_image(client, task, base_image, bootstrap_base)
                report(f"image [{i}/{len(tasks)}] {task.name}: {image} "
                       f"({time.monotonic() - t0:.1f}s)")
        finally:
            client.close()

    @classmethod
    def reap_orphans(cls, run_dir: Path | None = None) -> int:
        """Remove the containers of runs provably dead on this host (see docker_cleanup)."""
        from fire_exp.environments.docker_cleanup import cleanup

        return len(cleanup(docker_client(), own_run=run_dir).containers)

    def stop(self) -> None:
        try:
            channel, self._channel = self._channel, None
            if channel is not None:
                channel.close()
            container, self.container = self.container, None
            if container is None:
                return
            if not self._logs_copied:
                try:
                    self.container = container
                    self.copy_logs()
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
