"""A third backend in one file: a box that offers only one-shot exec and file transfer.

This is the shape of Harbor's and Modal's sandboxes: the provider runs a command in the
box and returns its output when it ends (:meth:`OneShotBox.exec_once`), and copies files in
and out as archives; no process keeps a stream to the harness. The "provider" here is this
machine (a temporary folder, commands as subprocesses that hold no pipe), so the tests need
no Docker, but nothing above the two primitives knows it: the agent's session is the one
session host, shipped into the box as files and started detached
(``session_files.FileChannel``), spoken to by the one client (``session_client.py``).

Registered as ``environment=oneshot`` when this module is imported (the registration the
recipe of docs/architecture.md asks for; a package would use the ``fire_exp`` entry-point
group instead).
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from fire_exp.attempt_paths import AGENT_LOGS, TERMINAL_LOG, VERIFIER_LOGS, in_box
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
from fire_exp.environments.inbox import procs
from fire_exp.environments.session_client import SessionClient
from fire_exp.environments.session_files import LEASE_S, FileChannel
from fire_exp.registry import REGISTRY
from fire_exp.settings import Seconds, Settings
from fire_exp.tasks.model import Task

_SETUP_S = 120.0
# Every process of the box carries it: how the provider's "terminate" finds them (a
# container's removal does this for Docker). The agent's commands get FIRE_ATTEMPT from
# the session host alone, so the transport's own execs are never counted as the agent's.
_BOX_VAR = "FIRE_TEST_ONESHOT_BOX"


class OneShotSettings(Settings):
    """The one-shot box's settings: how long a lease of the session host lasts."""

    lease_s: Seconds = LEASE_S


class OneShotBox(Environment):
    """A box reached only by one-shot exec and file transfer (see the module docstring).

    Args:
        task, attempt_dir, attempt_id: as for every environment.
        lease_s: the session host's watchdog lease (``session_files.py``).
    """

    name = "oneshot"
    # No HOST_HOOKS, no HOOK_RELAY: a CLI's hooks go through the spool in the box, moved by
    # one-shot execs (hook_transport.FileHooks), as in a remote box.
    capabilities = frozenset({Capability.SERVICES})
    settings_model = OneShotSettings

    def __init__(self, task: Task, attempt_dir: Path, attempt_id: str, *,
                 lease_s: float = LEASE_S) -> None:
        super().__init__(task, attempt_dir, attempt_id)
        self.lease_s = lease_s
        self.root = Path(tempfile.mkdtemp(prefix="fire-exp-oneshot-"))
        self.marker = f"{attempt_id.replace('/', '.')}.{os.getpid()}.{id(self):x}"
        self.session: SessionClient | None = None
        self._logs_copied = False

    @property
    def paths(self) -> BoxPaths:
        r = self.root
        return BoxPaths(workdir=str(r / "work"), logs=str(r / "logs"), tests=str(r / "tests"),
                        solution=str(r / "solution"), agent=str(r / "agent"),
                        harness=self._host_dir)

    @property
    def _host_dir(self) -> str:
        return str(self.root / "fire-exp")

    # the provider's two primitives ------------------------------------------------------

    def exec_once(self, argv: Sequence[str], timeout: float, *,
                  env: Mapping[str, str] | None = None, cwd: str | None = None) -> ExecResult:
        """Run ``argv`` in the box to its end (past ``timeout``: its process group killed);
        its output comes back only then, through files, so what it leaves running holds
        nothing of the harness's."""
        start = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(list(argv), cwd=cwd or "/", env=self._env() | dict(env or {}),
                                    stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            texts = []
            for fh in (out, err):
                fh.seek(0)
                texts.append(fh.read().decode("utf-8", "replace"))
        return ExecResult(exit_code=124 if timed_out else proc.returncode, stdout=texts[0],
                          stderr=texts[1], timed_out=timed_out,
                          duration_s=time.monotonic() - start)

    def put_archive(self, dest: str, data: bytes) -> None:
        extract_into(data, Path(dest))

    def get_archive(self, src: str) -> bytes:
        if not Path(src).exists():
            raise EnvironmentFailure(f"{src} does not exist in the box")
        return tar_path(Path(src))

    # the contract, on those two -----------------------------------------------------------

    def _env(self) -> dict[str, str]:
        p = self.paths
        return {"PATH": os.environ["PATH"], "HOME": str(self.root / "home"), "TERM": "dumb",
                "FIRE_WORKDIR": p.workdir, "FIRE_LOGS": p.logs, "FIRE_TESTS": p.tests,
                "FIRE_SOLUTION": p.solution, "FIRE_PORT": "0", "PYTHONDONTWRITEBYTECODE": "1",
                _BOX_VAR: str(self.root)}

    def start(self) -> None:
        p = self.paths
        folders = [p.workdir, p.agent, str(self.root / "home"),
                   *(in_box(p.logs, name) for name in (AGENT_LOGS, VERIFIER_LOGS))]
        made = self.exec_once(["mkdir", "-p", *folders], 30.0)
        if made.exit_code != 0:
            raise EnvironmentFailure(f"the box's folders: {made.output}")
        self._run_setup()
        for name, source in inbox.sources().items():
            self.write_file(f"{self._host_dir}/{name}", source)
        host = ["python3", f"{self._host_dir}/session_host.py", self.marker,
                in_box(p.logs, TERMINAL_LOG)]
        channel = FileChannel.start(self.exec_once, f"{self._host_dir}/session", host,
                                    self.lease_s)
        self.session = SessionClient(channel)
        self.session.ping()

    def _run_setup(self) -> None:
        setup = self.task.setup_script
        if setup is None:
            if (self.task.environment_dir / "Dockerfile").is_file() or \
                    self.task.environment.docker_image:
                raise EnvironmentFailure(f"task {self.task.name}: no environment/setup.sh, "
                                         "and this box has no image to build")
            return
        box_env = f"{self._host_dir}/environment"
        self.upload(self.task.environment_dir, box_env)
        done = self.run(f"bash {shlex.quote(box_env)}/{setup.name}", _SETUP_S, cwd=box_env)
        if done.exit_code != 0:
            raise EnvironmentFailure(f"task {self.task.name}: setup.sh exited "
                                     f"{done.exit_code}: {done.output[-400:]}")

    def exec(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None
             ) -> ExecResult:
        if self.session is None:
            raise EnvironmentFailure("the agent's session has ended")
        return self.session.exec(command, timeout, cwd=self.paths.workdir,
                                 env_extra=dict(env or {}))

    def end_command_session(self) -> SessionEnd:
        session, self.session = self.session, None
        return SessionEnd() if session is None else session.hangup()

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None, user: str | None = None,
            stream: Stream | None = None) -> ExecResult:
        if user is not None and user != getpass.getuser():
            raise EnvironmentFailure(f"environment=oneshot runs every command as "
                                     f"{getpass.getuser()}, not {user}")
        done = self.exec_once(["bash", "-c", command], timeout, env=env,
                              cwd=cwd or self.paths.workdir)
        if stream is not None and done.stdout:
            stream(done.stdout)  # one-shot: the whole output, once it has ended
        return done

    def collect_logs(self) -> None:
        """Bring the box's logs folder home (it is not on the harness's side)."""
        self.download(self.paths.logs, self.attempt_dir)
        self._logs_copied = True
        self.redactor.tree(self.files.logs)

    def stop(self) -> None:
        try:
            session, self.session = self.session, None
            if session is not None:
                session.close()
            if not self._logs_copied and self.root.is_dir():
                self.collect_logs()
        except Exception:  # noqa: BLE001, S110 - stop() must never raise
            pass
        finally:
            self._terminate()

    def _terminate(self) -> None:
        """The provider's end of a box: every process in it, then its files."""
        box = str(self.root).encode()
        for _ in range(50):
            alive = []
            for pid in procs.pids():
                try:
                    if procs.environ(pid).get(_BOX_VAR.encode()) == box and procs.is_alive(pid):
                        alive.append(pid)
                except OSError:
                    continue
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if not alive:
                break
            time.sleep(0.02)
        shutil.rmtree(self.root, ignore_errors=True)


if "oneshot" not in REGISTRY.names("environment"):
    REGISTRY.register("environment", "oneshot", OneShotBox)
