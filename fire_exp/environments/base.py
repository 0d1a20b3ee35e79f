"""The environment contract every box implements (local folder, Docker container, yours).

An environment is one attempt's box. Its lifecycle, in order::

    start()                 build/prepare the box; raises EnvironmentFailure
    exec(command, timeout)  run one agent command in the command session
    end_command_session()   the agent is done: what it left attached to that session dies
    run_verifier()          the verifier, written once on this contract
    stop()                  remove everything the attempt started; idempotent, never raises

The command session is the POSIX process session the agent's commands run in (the
session host's, ``inbox/session_host.py``), ended as a closing terminal ends its own; it
is not the ``AgentSession`` an agent acts through (``agents/session.py``). Besides the
command session a box runs processes of its own (``run``: the verifier, a
coding-agent CLI's checks, housekeeping), and moves files both ways as archives
(``put_archive``/``get_archive``; ``upload``, ``download``, ``write_file`` and ``read_file``
are built on them). What a backend can do beyond that it declares in ``capabilities``
(:class:`Capability`), and code above ``environments/`` asks the set, never the type.

Tasks see the same paths in every backend through environment variables
(``FIRE_WORKDIR``, ``FIRE_LOGS``, ``FIRE_TESTS``, ``FIRE_SOLUTION``, ``FIRE_PORT``), with the
container paths (``/app``, ``/logs``, ``/tests``, ``/solution``, port 8000) as defaults, so
a task written for fire-exp runs under Harbor unchanged. docs/architecture.md has the
recipe for adding a backend.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fire_exp.attempt_paths import (
    REWARD_JSON,
    REWARD_TXT,
    TEST_STDOUT,
    VERIFIER_LOGS,
    AttemptPaths,
    in_box,
)
from fire_exp.environments.archives import single_file, tar_directory, tar_file
from fire_exp.environments.capabilities import Capability as Capability
from fire_exp.environments.capabilities import check_task, network_not_enforced
from fire_exp.environments.failure import AgentCausedFailure as AgentCausedFailure
from fire_exp.environments.failure import EnvironmentFailure as EnvironmentFailure
from fire_exp.environments.fetch import extract_stream
from fire_exp.environments.redaction import Redactor
from fire_exp.environments.reward import read_reward_dir
from fire_exp.environments.upkeep import BootstrapResult, CleanupReport, ImageEntry
from fire_exp.records import Cause
from fire_exp.tasks.model import Task

if TYPE_CHECKING:
    from fire_exp.environments.agent_install import AgentInstall
    from fire_exp.environments.egress import Egress
    from fire_exp.environments.hook_transport import HookEndpoint, HookTransport, LineStream

Stream = Callable[[str], None]
STDOUT_KEPT = 4000  # characters of test.sh's output kept in the verifier's result
_HOUSEKEEPING_S = 60.0


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def output(self) -> str:
        """stdout and stderr together, as a terminal would show them."""
        if self.stderr and self.stdout:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


@dataclass(frozen=True)
class CapturedExec:
    """A command of the agent's session whose stdout and stderr the box recorded
    (:meth:`Environment.exec_captured`)."""

    result: ExecResult
    stdout: bytes
    stderr: bytes
    # What the agent's own processes did to the command or its capture (None: nothing
    # seen); the attempt is then the agent's failure.
    sabotage: str | None = None
    intact: bool = True  # False: the capture was altered; its content is not evidence


@dataclass(frozen=True)
class SessionEnd:
    """What ending the agent's session did to the processes the agent started."""

    hung_up: list[int] = field(default_factory=list)  # sent SIGHUP (in the agent's session)
    killed: list[int] = field(default_factory=list)  # still attached to the session's streams
    survivors: list[int] = field(default_factory=list)  # detached: still running


@dataclass(frozen=True)
class VerifierResult:
    """The verifier's verdict by the Harbor contract (reference/harbor-tasks.md)."""

    reward: float | None  # None: no valid reward (cause says why)
    rewards: dict[str, float] = field(default_factory=dict)
    cause: Cause | None = None
    message: str = ""
    duration_s: float = 0.0
    stdout: str = ""


@dataclass(frozen=True)
class BoxPaths:
    """The paths a task sees inside the box, and the agent's own folder there."""

    workdir: str
    logs: str
    tests: str
    solution: str
    agent: str  # a coding-agent CLI's settings and output; no task reads it
    # fire-exp's own folder (the hook spool of a box with no stream); not the agent's
    harness: str = "/opt/fire-exp"


DEFAULT_FETCH_CAP_MB = 256


class Environment(ABC):
    """One attempt's box. Use as a context manager: ``with env: ...`` starts and stops it.

    Args:
        task: the task to prepare.
        attempt_dir: the attempt's own log folder on the host; the box's ``/logs`` ends up
            in ``attempt_dir / "logs"``.
        attempt_id: a unique id; every process or container the attempt starts carries it.
    """

    name: str = "abstract"
    capabilities: frozenset[Capability] = frozenset()
    # The setting that lets a task whose network_mode this backend cannot enforce run with
    # the box's network all the same (None: no such setting; such a task is refused).
    network_waiver: str | None = None

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str) -> None:
        self.task = task
        self.attempt_dir = attempt_dir
        self.files = AttemptPaths(attempt_dir)
        self.attempt_id = attempt_id
        # Set by the runner on Ctrl-C; long waits in a backend should watch it.
        self.cancelled = threading.Event()
        # The one redactor of the attempt's logs (a CLI adds its key to it).
        self.redactor = Redactor()
        # The most bytes of the box's files the attempt brings home (fetch.py; a backend
        # sets it from its configuration), and what fetching them left out: the record's
        # ``withheld``.
        self.fetch_cap: int = DEFAULT_FETCH_CAP_MB << 20
        self.withheld: list[str] = []

    # the core every backend implements -------------------------------------------------

    @property
    @abstractmethod
    def paths(self) -> BoxPaths:
        """The box's paths: working folder, logs, tests, solution and the agent's folder."""

    @abstractmethod
    def start(self) -> None:
        """Prepare the box. Raises EnvironmentFailure when it cannot."""

    @abstractmethod
    def exec(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None
             ) -> ExecResult:
        """Run ``command`` with bash in the agent's session, working folder as cwd.

        ``env`` reaches only this command (a CLI's key travels with the request, never in
        the box's configuration).
        """

    @abstractmethod
    def end_command_session(self) -> SessionEnd:
        """End the command session (the POSIX session the agent's commands ran in) as a
        closing terminal does: kill what is still attached to it; detached work lives."""

    @abstractmethod
    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None, user: str | None = None,
            stream: Stream | None = None) -> ExecResult:
        """Run ``command`` with bash as a process of its own, outside the agent's session.

        Args:
            command: a bash command line.
            timeout: seconds; past it the command's process group is killed and the result
                says ``timed_out``.
            env: variables added to the box's own for this command.
            cwd: the working folder in the box (None: the task's working folder).
            user: the box user to run as (None: the box's default user). A backend that
                cannot switch users refuses any other with EnvironmentFailure.
            stream: called with each piece of output as it arrives.
        """

    @abstractmethod
    def put_archive(self, dest: str, data: bytes) -> None:
        """Extract the tar ``data`` at the box folder ``dest`` (``/``: members are absolute)."""

    @abstractmethod
    def get_archive(self, src: str) -> bytes:
        """A tar of the box file or folder ``src``, members named from its own name."""

    @abstractmethod
    def stop(self) -> None:
        """Remove every process, container or file the attempt started. Never raises."""

    # built on the core ------------------------------------------------------------------

    def upload(self, src: Path, dest: str) -> None:
        """Copy the host folder ``src`` to ``dest`` in the box (``*.sh`` made executable)."""
        self.put_archive("/", tar_directory(src, dest))

    def write_file(self, dest: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to the box file ``dest`` (its folders are made)."""
        self.put_archive("/", tar_file(data, dest, mode))

    def read_file(self, src: str) -> bytes:
        """The content of the box file ``src``. Raises EnvironmentFailure if it is absent."""
        try:
            return single_file(self.get_archive(src))
        except FileNotFoundError as exc:
            raise EnvironmentFailure(f"{src} is not a file in the box") from exc

    def download(self, src: str, dest: Path) -> None:
        """Copy the box file or folder ``src`` into the host folder ``dest`` (its safe
        members, at most :attr:`fetch_cap` bytes; what was left out joins :attr:`withheld`)."""
        fetched = extract_stream([self.get_archive(src)], dest, cap=self.fetch_cap)
        self.withheld += fetched.withheld

    def remove(self, path: str) -> None:
        """Remove a box file or folder (what fire-exp put there and must not leave)."""
        self.run(f"rm -rf {shlex.quote(path)}", timeout=60.0, cwd="/")

    def collect_logs(self) -> None:
        """Bring the box's logs folder home to ``ATTEMPT/logs``, through :attr:`redactor`.
        A backend whose logs folder is on the host has nothing to do."""
        return None

    def run_verifier(self) -> VerifierResult:
        """The verifier, written once on this contract for every backend: after the agent's
        session has ended, stale reward files go, ``tests/`` is uploaded (only now: the agent
        never saw it), ``tests/test.sh`` runs under the task's verifier timeout as a process
        of its own (exit code ignored, output to ``logs/verifier/test-stdout.txt``), the
        box's logs come home, and the reward is read there by the one parser
        (:func:`fire_exp.environments.reward.read_reward_dir`, the Harbor contract)."""
        return _verify(self)

    # capabilities ---------------------------------------------------------------------

    def _lacks(self, capability: Capability) -> EnvironmentFailure:
        return EnvironmentFailure(f"environment={self.name} has no {capability.value} "
                                  "capability")

    def hook_transport(self, endpoint: HookEndpoint) -> HookTransport:
        """How a coding-agent CLI in this box reaches the arm's hooks (``HOST_HOOKS``: the
        CLI runs fire-exp's hook command on this machine; ``HOOK_RELAY``: a shim in the box
        and a relay over :meth:`open_stream`; neither: the same shim, its requests and
        answers moved by one-shot :meth:`run` calls in :attr:`BoxPaths.harness`). The
        last two are answered in this process."""
        from fire_exp.environments.hook_transport import FileHooks, HostHooks, RelayHooks

        if Capability.HOST_HOOKS in self.capabilities:
            return HostHooks(endpoint)
        if Capability.HOOK_RELAY in self.capabilities:
            return RelayHooks.open(self, endpoint)
        return FileHooks.open_spool(self, endpoint, self.paths.harness)

    def open_stream(self, argv: Sequence[str]) -> LineStream:
        """``HOOK_RELAY``: start ``argv`` in the box with its stdin and stdout as a line
        stream to this process (closing the stream ends its input)."""
        raise self._lacks(Capability.HOOK_RELAY)

    def exec_captured(self, command: str, timeout: float, *,
                      env: Mapping[str, str] | None = None) -> CapturedExec:
        """Run ``command`` like :meth:`exec`, its stdout and stderr recorded by the box.

        A backend whose session host records them itself (Docker) keeps the record out of
        the agent's reach and says when the agent's processes tampered with it; this
        default redirects into the agent's folder, where the agent could change them.
        """
        out = shlex.quote(f"{self.paths.agent}/out")
        result = self.exec(f"mkdir -p {out} && exec {command} > {out}/stdout "
                           f"2> {out}/stderr < /dev/null", timeout, env=env)
        texts = []
        for name in ("stdout", "stderr"):
            try:
                texts.append(self.read_file(f"{self.paths.agent}/out/{name}"))
            except EnvironmentFailure:
                texts.append(b"")
        self.remove(f"{self.paths.agent}/out")
        return CapturedExec(result, texts[0], texts[1])

    def run_agent_as(self, user: str) -> None:
        """``AGENT_USER``: before :meth:`start`, run the agent's session as the box user
        ``user`` (made if the box lacks it) unless the task's ``[agent].user`` names
        another (``root``: the task needs root). The verifier still runs as the box's
        default user."""
        raise self._lacks(Capability.AGENT_USER)

    def open_egress(self, allowed: Sequence[str], log_path: Path) -> Egress | None:
        """``EGRESS_ALLOWLIST``: let a process reach only ``allowed`` (``host:port``);
        returns the variables that route it there, or None when the task's network needs
        no gate (or this backend applies none)."""
        return None

    def install_agent(self, install: AgentInstall) -> None:
        """``INSTALL_AGENT``: before :meth:`start`, put a coding-agent CLI into this box."""
        raise self._lacks(Capability.INSTALL_AGENT)

    def agent_binary(self, install: AgentInstall) -> str:
        """Where the installed CLI's executable is in the box (a path, or a name on PATH)."""
        return install.binary

    @classmethod
    def prepare_agent(cls, install: AgentInstall, tasks: Sequence[Task],
                      **params: Any) -> None:
        """``INSTALL_AGENT``: before a panel, install the CLI for every task and try it.
        Raises EnvironmentFailure naming the task or the install step."""
        raise EnvironmentFailure(f"environment={cls.name} has no "
                                 f"{Capability.INSTALL_AGENT.value} capability")

    # the panel around the attempts --------------------------------------------------------

    @classmethod
    def preflight(cls, **params: Any) -> None:
        """Check, before a panel's first attempt, that this backend can run at all.

        ``params`` are the environment config's parameters. Raises PreflightError.
        """
        return None  # a backend that needs nothing outside this process

    @classmethod
    def prepare(cls, tasks: Sequence[Task], *, report: Callable[[str], None],
                **params: Any) -> None:
        """Build or check what every attempt of ``tasks`` needs (images), before the first.

        ``report`` receives one line of progress per task. Raises EnvironmentFailure
        naming the task, so a broken task stops the run before anything is recorded.
        """
        report(f"environment {cls.name}: nothing to prepare for {len(tasks)} tasks")

    @classmethod
    def check_tasks(cls, tasks: Sequence[Task], **params: Any) -> None:
        """Refuse, before the panel's first attempt, a task that needs what this backend
        cannot give (:func:`~fire_exp.environments.capabilities.check_task`): a service
        without ``SERVICES``, a ``network_mode`` it cannot enforce unless the setting
        :attr:`network_waiver` is true. Raises PreflightError naming task, field and fix."""
        waived = cls.network_waiver is not None and params.get(cls.network_waiver) is True
        for task in tasks:
            check_task(task, backend=cls.name, capabilities=cls.capabilities,
                       waiver=cls.network_waiver, waived=waived)

    @property
    def network_not_enforced(self) -> str | None:
        """The task's ``network_mode`` when this box does not enforce it (the record's
        ``network_not_enforced``); None: public, or enforced."""
        return network_not_enforced(self.task, self.capabilities)

    @classmethod
    def engine_identity(cls, **params: Any) -> str:
        """What runs this process's boxes, as an identity: processes (Ray nodes) that
        report one share what :meth:`prepare` made, so it is prepared once; a new one
        prepares again. Raises PreflightError when the engine cannot run the panel."""
        return f"{cls.name}@{os.uname().nodename}"

    @classmethod
    def reap_orphans(cls, run_dir: Path | None = None, *, scratch: Path | None = None,
                     **params: Any) -> int:
        """Remove what attempts of runs that died (SIGKILL) left behind; returns how many.

        Called when a run starts or resumes, holding ``run_dir``'s lock, and on a Ray node
        with its ``scratch`` root (attempts whose scratch folder is gone have ended), with
        the environment config's ``params`` (where the backend's resources are). Only
        what runs provably dead on this host left may go (never another host's or a live
        run's).
        Processes are reaped by the runner through their marker; a backend with resources
        of its own (containers) overrides this.
        """
        return 0

    @classmethod
    def cleanup(cls, *, everything: bool = False, images: bool = False, base: bool = False,
                run: str | None = None, **params: Any) -> CleanupReport:
        """``fire-exp cleanup``: remove what dead runs left (``everything``: all of it,
        live or not; ``run``: only that run's, kept ones too), and with ``images``/``base``
        the images this backend built. A backend without resources of its own has none."""
        return CleanupReport()

    @classmethod
    def list_images(cls, **params: Any) -> list[ImageEntry]:
        """``IMAGES``: the images this backend made (``fire-exp images list``)."""
        return []

    @classmethod
    def build_base_image(cls, tag: str | None = None, *, force: bool = False,
                         **params: Any) -> BootstrapResult:
        """``IMAGES``: build the base image the task images build from, without a
        registry (``fire-exp images bootstrap``); ``force``: rebuild one that exists."""
        raise EnvironmentFailure(f"environment={cls.name} has no "
                                 f"{Capability.IMAGES.value} capability")

    def __enter__(self) -> Environment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _verify(env: Environment) -> VerifierResult:
    """The verifier of every backend (see ``Environment.run_verifier``)."""
    start = time.monotonic()
    box = env.paths
    logs = box.logs
    stale = " ".join(shlex.quote(in_box(logs, name)) for name in (REWARD_TXT, REWARD_JSON))
    env.run(f"rm -f {stale}; mkdir -p {shlex.quote(in_box(logs, VERIFIER_LOGS))}",
            timeout=_HOUSEKEEPING_S, cwd="/")
    env.upload(env.task.tests_dir, box.tests)
    script = shlex.quote(f"{box.tests}/test.sh")
    result = env.run(f"exec bash {script} > {shlex.quote(in_box(logs, TEST_STDOUT))} 2>&1 "
                     "< /dev/null", timeout=env.task.verifier.timeout_sec,
                     env=env.task.verifier.env, cwd=box.workdir)
    env.collect_logs()
    out = env.files.test_stdout
    stdout = out.read_text(errors="replace")[-STDOUT_KEPT:] if out.is_file() else ""
    if result.timed_out:
        return VerifierResult(reward=None, cause=Cause.VERIFIER_TIMEOUT,
                              message="the verifier timed out",
                              duration_s=time.monotonic() - start, stdout=stdout)
    reward, rewards, cause, message = read_reward_dir(env.files.verifier_logs)
    return VerifierResult(reward=reward, rewards=rewards, cause=cause, message=message,
                          duration_s=time.monotonic() - start, stdout=stdout)
