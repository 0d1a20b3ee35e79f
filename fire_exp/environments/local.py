"""The local environment: a working folder on this machine. The embedded default.

NOT A SANDBOX. Commands run as the current user, on this machine, with its network and its
files. Use it for the simulated agent, for tests and for tasks you trust; use
``environment=docker`` for real models: only Docker isolates a hostile model.

Secrets: commands get only a short list of the user's variables (no API keys); the harness
makes itself non-dumpable, so another process of the user cannot read the key from
``/proc/<harness>/environ`` (root still can); command output and every file of the
attempt's logs are redacted (``redaction.py``), as the transcript is.

Per attempt it makes ``ATTEMPT/work`` (the agent's working folder, ``$FIRE_WORKDIR``),
``ATTEMPT/logs`` (``$FIRE_LOGS``), and prepares the folder with the task's
``environment/setup.sh``. Agent commands run in the agent's own session (the session host,
``inbox/session_host.py``, a child process spoken to through ``session_client.py``); when
the agent ends, what it left attached to that session dies with it. After the verifier, every process the attempt started is killed by process id.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fire_exp.environments import inbox
from fire_exp.environments.archives import extract_into, tar_path
from fire_exp.environments.base import (
    BoxPaths,
    Capability,
    Environment,
    EnvironmentFailure,
    ExecResult,
    SessionEnd,
    Stream,
)
from fire_exp.environments.capabilities import network_not_enforced
from fire_exp.environments.inbox import procs
from fire_exp.environments.session_client import PipeChannel, SessionClient
from fire_exp.settings import Settings
from fire_exp.tasks.model import Task

# Variables of the user's environment that commands may see; everything else (API keys
# among it) stays out of the agent's box.
_PASSED_VARS = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER")
_SETUP_TIMEOUT = 120.0
_POLL_S = 0.02
_PR_SET_DUMPABLE = 4


def _hide_environ() -> None:
    """Make this process non-dumpable: its /proc files (environ, mem) become root's.

    Commands of the attempt run as the same user and could otherwise read the harness's
    API key from ``/proc/<harness pid>/environ``. Children reset the flag when they exec.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing to hide this way
        pass


def free_port() -> int:
    """A TCP port free on loopback right now (each attempt gets its own ``$FIRE_PORT``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check_preparable(task: Task) -> None:
    """A task this backend cannot prepare: it needs an image and has no setup.sh."""
    if task.setup_script is None and ((task.environment_dir / "Dockerfile").is_file()
                                      or task.environment.docker_image):
        raise EnvironmentFailure(
            f"task {task.name}: no environment/setup.sh, so the local environment "
            "cannot prepare it; use environment=docker")


class LocalSettings(Settings):
    """``configs/environment/local.yaml`` (see :class:`LocalEnvironment`)."""

    keep_workdir: bool = False
    allow_network: bool = False


_DEFAULT = LocalSettings()


class LocalEnvironment(Environment):
    """A working folder and process sessions on this machine (not a sandbox).

    Args:
        task, attempt_dir, attempt_id: as for every environment.
        keep_workdir: leave the attempt's working folder behind (debugging only).
        allow_network: run tasks whose ``network_mode`` is not ``public`` with this
            machine's network, which this backend cannot take away (False: such a task is
            refused before the panel); each of their records names ``network_not_enforced``.
    """

    name = "local"
    capabilities = frozenset({Capability.SERVICES, Capability.HOST_HOOKS,
                              Capability.HOST_PROGRAMS})
    network_waiver = "allow_network"
    settings_model = LocalSettings

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str,
                 keep_workdir: bool = _DEFAULT.keep_workdir,
                 allow_network: bool = _DEFAULT.allow_network) -> None:
        super().__init__(task, attempt_dir, attempt_id)
        self.keep_workdir = keep_workdir
        self.allow_network = allow_network
        # ATTEMPT.PID-START.OBJECT: the owner by its pid and start time (pids are used
        # again; runner/cleanup.owner_alive reads it).
        self.marker = (f"{attempt_id.replace('/', '.')}.{os.getpid()}-"
                       f"{procs.start_time(os.getpid())}.{id(self):x}")
        self.box = self.files.box
        self.port = 0
        self._host: subprocess.Popen[str] | None = None
        self.session: SessionClient | None = None  # the agent's session, once started

    @property
    def paths(self) -> BoxPaths:
        return BoxPaths(workdir=str(self.box / "work"), logs=str(self.files.logs),
                        tests=str(self.box / "tests"), solution=str(self.box / "solution"),
                        agent=str(self.files.hooks), harness=str(self.box / "fire-exp"))

    def env(self) -> dict[str, str]:
        """The environment every command of the attempt gets."""
        env = {k: os.environ[k] for k in _PASSED_VARS if k in os.environ}
        p = self.paths
        env.update(FIRE_WORKDIR=p.workdir, FIRE_LOGS=p.logs, FIRE_TESTS=p.tests,
                   FIRE_SOLUTION=p.solution, FIRE_PORT=str(self.port), FIRE_ATTEMPT=self.marker,
                   TERM="dumb", PYTHONDONTWRITEBYTECODE="1")
        return env

    def start(self) -> None:
        _hide_environ()
        p = self.paths
        for folder in (Path(p.workdir), self.files.agent_logs, self.files.verifier_logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._run_setup()
        self._host = subprocess.Popen(
            [sys.executable, str(inbox.PROGRAM), self.marker, str(self.files.terminal_log)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=p.workdir,
            env=self.env(), start_new_session=True)
        self.session = SessionClient(PipeChannel(self._host))

    @classmethod
    def prepare(cls, tasks: Sequence[Task], *, report: Callable[[str], None],
                **params: Any) -> None:
        """Check every task can be prepared here (no image to build on this backend); say
        which tasks run with this machine's network though their network_mode says not."""
        for task in tasks:
            _check_preparable(task)
        report(f"environment local: {len(tasks)} tasks can be prepared on this machine")
        unenforced = [t.name for t in tasks if network_not_enforced(t, cls.capabilities)]
        if unenforced:
            report(f"environment local: {len(unenforced)} tasks run with this machine's "
                   "network, which their network_mode does not allow (allow_network=true; "
                   "their records name network_not_enforced)")

    def _run_setup(self) -> None:
        _check_preparable(self.task)
        setup = self.task.setup_script
        if setup is None:
            return
        log = self.files.setup_log
        try:
            with open(log, "wb") as fh:
                proc = subprocess.run(["bash", str(setup)], cwd=setup.parent, env=self.env(),
                                      stdout=fh, stderr=subprocess.STDOUT,
                                      timeout=_SETUP_TIMEOUT, start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentFailure(f"task {self.task.name}: setup.sh timed out") from exc
        if proc.returncode != 0:
            tail = log.read_text(errors="replace")[-400:]
            raise EnvironmentFailure(
                f"task {self.task.name}: setup.sh exited {proc.returncode}: {tail}")

    def exec(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None
             ) -> ExecResult:
        result = self._session().exec(command, timeout, cwd=self.paths.workdir,
                                      env=self.env(), env_extra=dict(env or {}))
        return ExecResult(exit_code=result.exit_code,
                          stdout=self.redactor.text(result.stdout),
                          stderr=self.redactor.text(result.stderr),
                          timed_out=result.timed_out, duration_s=result.duration_s)

    def _session(self) -> SessionClient:
        if self.session is None or self._host is None or self._host.poll() is not None:
            raise EnvironmentFailure("the agent's session has ended")
        return self.session

    def end_command_session(self) -> SessionEnd:
        session, self.session = self.session, None
        if session is None or self._host is None or self._host.poll() is not None:
            return SessionEnd()
        end = session.hangup()  # the host exits: closing waits for it
        self._host = None
        self.redactor.tree(self.files.logs)
        return end

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None, user: str | None = None,
            stream: Stream | None = None) -> ExecResult:
        if user is not None and user != getpass.getuser():
            raise EnvironmentFailure(f"environment=local runs every command as "
                                     f"{getpass.getuser()}, not {user}")
        start = time.monotonic()
        # Files, not pipes: a command that leaves a server behind cannot hold the reply.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(["bash", "-c", command], cwd=cwd or self.paths.workdir,
                                    env=self.env() | dict(env or {}), stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            timed_out = _wait(proc, start + timeout, out, stream, self.redactor.text)
            texts = [self.redactor.text(_read_all(fh)) for fh in (out, err)]
        return ExecResult(exit_code=124 if timed_out else int(proc.returncode),
                          stdout=texts[0], stderr=texts[1], timed_out=timed_out,
                          duration_s=time.monotonic() - start)

    def upload(self, src: Path, dest: str) -> None:
        shutil.copytree(src, dest, dirs_exist_ok=True)
        for path in Path(dest).rglob("*.sh"):
            path.chmod(path.stat().st_mode | 0o111)

    def put_archive(self, dest: str, data: bytes) -> None:
        extract_into(data, Path(dest))

    def get_archive(self, src: str) -> bytes:
        if not Path(src).exists():
            raise EnvironmentFailure(f"{src} does not exist in the box")
        return tar_path(Path(src))

    def stop(self) -> None:
        try:
            if self._host is not None and self._host.poll() is None:
                self._host.kill()
                self._host.wait(timeout=10)
            self._host = None
            if self.session is not None:
                self.session.close()
                self.session = None
            procs.kill_marked(self.marker)
            self.redactor.tree(self.files.logs)
            if not self.keep_workdir:
                shutil.rmtree(self.box, ignore_errors=True)
        except Exception:  # noqa: BLE001 - stop() must never raise
            pass


def _read_all(fh: Any) -> str:
    fh.seek(0)
    return bytes(fh.read()).decode("utf-8", "replace")


def _wait(proc: subprocess.Popen[bytes], deadline: float, out: Any,
          stream: Stream | None, redact: Callable[[str], str]) -> bool:
    """Wait for ``proc`` until ``deadline``, feeding ``stream`` what ``out`` gains; past the
    deadline kill its process group. Returns whether it timed out."""
    sent = 0

    def feed() -> None:
        nonlocal sent
        if stream is not None:
            chunk = os.pread(out.fileno(), 1 << 20, sent)
            if chunk:
                sent += len(chunk)
                stream(redact(chunk.decode("utf-8", "replace")))

    while True:
        try:
            proc.wait(timeout=min(_POLL_S, max(deadline - time.monotonic(), 0.0))
                      if stream is not None else max(deadline - time.monotonic(), 0.0))
            feed()
            return False
        except subprocess.TimeoutExpired:
            feed()
            if time.monotonic() < deadline:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        feed()
        return True
