"""The recipe "add an environment" (docs/architecture.md), followed to the letter.

:class:`FolderBox` is a third backend written against the contract alone: a temporary
folder and plain subprocesses (no session host, no sandbox). It is defined here and no
other file knows it, yet the runner runs whole attempts in it, the verifier written once
scores them, and a coding-agent CLI asks it for its capabilities.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from fire_exp.agents.base import NopAgent, OracleAgent
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
from fire_exp.paths import SUITES_DIR
from fire_exp.records import Cause
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task


class FolderBox(Environment):
    """A box that is a temporary folder; commands are subprocesses of this one."""

    name = "folder"
    capabilities = frozenset({Capability.HOST_HOOKS})

    def __init__(self, task, attempt_dir: Path, attempt_id: str) -> None:  # noqa: ANN001
        super().__init__(task, attempt_dir, attempt_id)
        self.root = Path(tempfile.mkdtemp(prefix="fire-exp-folder-box-"))

    @property
    def paths(self) -> BoxPaths:
        return BoxPaths(workdir=str(self.root / "work"), logs=str(self.files.logs),
                        tests=str(self.root / "tests"), solution=str(self.root / "solution"),
                        agent=str(self.root / "agent"))

    def start(self) -> None:
        for folder in (self.paths.workdir, self.files.agent_logs, self.files.verifier_logs):
            Path(folder).mkdir(parents=True, exist_ok=True)
        if self.task.setup_script is not None:
            setup = self.run(f"bash {self.task.setup_script}", 120.0,
                             cwd=str(self.task.setup_script.parent))
            if setup.exit_code != 0:
                raise EnvironmentFailure(f"setup.sh exited {setup.exit_code}")

    def _env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        p = self.paths
        return {"PATH": os.environ["PATH"], "HOME": str(self.root), "FIRE_WORKDIR": p.workdir,
                "FIRE_LOGS": p.logs, "FIRE_TESTS": p.tests, "FIRE_SOLUTION": p.solution,
                "FIRE_PORT": "0"} | dict(extra or {})

    def exec(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None
             ) -> ExecResult:
        return self.run(command, timeout, env=env)

    def end_command_session(self) -> SessionEnd:
        return SessionEnd()

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None, user: str | None = None,
            stream: Stream | None = None) -> ExecResult:
        if user is not None:
            raise EnvironmentFailure("a folder box has one user")
        try:
            proc = subprocess.run(["bash", "-c", command], cwd=cwd or self.paths.workdir,
                                  env=self._env(env), capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return ExecResult(exit_code=124, stdout="", stderr="", timed_out=True)
        if stream is not None:
            stream(proc.stdout + proc.stderr)
        return ExecResult(exit_code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)

    def put_archive(self, dest: str, data: bytes) -> None:
        extract_into(data, Path(dest))

    def get_archive(self, src: str) -> bytes:
        return tar_path(Path(src))

    def stop(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def attempt(tmp_path: Path, agent: object, task: str = "csv-column-stats"):  # noqa: ANN201
    loaded = load_task(SUITES_DIR / "fire-mini" / task)
    env = FolderBox(loaded, tmp_path / "attempt", f"{task}/baseline/r0")
    spec = AttemptSpec(run="r", panel="p", attempt_id=f"{task}/baseline/r0", task=task,
                       cohort="eligible", arm="baseline", replicate=0, order=0, seed=0)
    return run_attempt(spec, env, agent, [], [], rng=np.random.default_rng(0)), env  # type: ignore[arg-type]


def test_a_backend_from_the_recipe_runs_attempts_and_the_shared_verifier_scores_them(
        tmp_path: Path) -> None:
    passed, env = attempt(tmp_path / "oracle", OracleAgent())
    failed, _ = attempt(tmp_path / "nop", NopAgent())
    assert passed.passed and passed.reward == 1.0 and passed.environment == "folder"
    assert failed.reward == 0.0 and not failed.passed and failed.cause is None
    assert env.files.test_stdout.is_file() and env.files.commands.is_file()
    assert not env.root.exists()  # stop() ran


def test_the_verifier_timeout_holds_in_a_new_backend(tmp_path: Path) -> None:
    task = tmp_path / "slow-task"
    shutil.copytree(SUITES_DIR / "fire-mini" / "csv-column-stats", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\ntimeout_sec = 30.0",
                                             "[verifier]\ntimeout_sec = 1.0"))
    (task / "tests" / "test.sh").write_text("sleep 30\n")
    env = FolderBox(load_task(task), tmp_path / "attempt", "slow/baseline/r0")
    with env:
        result = env.run_verifier()
    assert result.cause is Cause.VERIFIER_TIMEOUT and result.reward is None


def test_files_cross_both_ways_through_the_archive_methods(tmp_path: Path) -> None:
    env = FolderBox(load_task(SUITES_DIR / "fire-mini" / "csv-column-stats"),
                    tmp_path / "attempt", "files/baseline/r0")
    with env:
        env.write_file(f"{env.paths.agent}/config/a.toml", b"x = 1\n")
        assert env.read_file(f"{env.paths.agent}/config/a.toml") == b"x = 1\n"
        env.download(f"{env.paths.agent}/config", tmp_path / "home")
        assert (tmp_path / "home" / "config" / "a.toml").read_bytes() == b"x = 1\n"
        with pytest.raises(EnvironmentFailure, match="no install_agent capability"):
            env.install_agent(None)  # type: ignore[arg-type]
