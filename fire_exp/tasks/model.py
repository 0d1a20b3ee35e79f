"""The task model: a Harbor-format task directory, read as Harbor reads it.

See ``docs/tasks.md`` and the Harbor reference for the layout. A task is immutable once
loaded; its ``digest`` is the SHA-256 over every file's relative path and bytes, so any
change to any file of the task changes it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Files that never belong to a task's content (caches written by tools).
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".DS_Store"}


@dataclass(frozen=True)
class AgentConfig:
    """``[agent]`` of task.toml."""

    timeout_sec: float = 900.0
    # The box user the agent runs as, where the box can switch (a fire-exp key Harbor
    # ignores): "root" for a task that needs root; None: the agent's own choice.
    user: str | None = None


@dataclass(frozen=True)
class VerifierConfig:
    """``[verifier]`` of task.toml."""

    timeout_sec: float = 600.0
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentConfig:
    """``[environment]`` of task.toml."""

    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 10240
    network_mode: str = "public"  # "public" | "no-network" | "allowlist"
    workdir: str = "/app"
    gpus: int = 0
    env: dict[str, str] = field(default_factory=dict)  # ``[environment.env]``: the box's
    # The verifier checks a service the agent left running after its session ended (a
    # fire-exp key Harbor ignores): only a box with the SERVICES capability can run it.
    services: bool = False


@dataclass(frozen=True)
class Task:
    """A loaded Harbor task.

    Attributes:
        name: short name (the directory name unless ``[task].name`` says otherwise).
        path: the task directory.
        instruction: ``instruction.md`` with leading canary lines stripped.
        digest: SHA-256 of the task's content (every file, path and bytes).
    """

    name: str
    path: Path
    instruction: str
    digest: str
    schema_version: str = "1.0"
    metadata: dict[str, Any] = field(default_factory=dict)
    agent: AgentConfig = field(default_factory=AgentConfig)
    verifier: VerifierConfig = field(default_factory=VerifierConfig)
    environment: EnvironmentConfig = field(default_factory=EnvironmentConfig)

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def setup_script(self) -> Path | None:
        """``environment/setup.sh``: how the local environment prepares the working folder."""
        script = self.environment_dir / "setup.sh"
        return script if script.is_file() else None

    @property
    def simulation_script(self) -> Path | None:
        """``simulated.yaml``: the simulated agent's script for this task, if bundled."""
        script = self.path / "simulated.yaml"
        return script if script.is_file() else None


def task_files(path: Path) -> list[Path]:
    """Every content file of a task directory, sorted by relative path."""
    files = [
        p for p in path.rglob("*")
        if p.is_file() and not (_IGNORED_PARTS & set(p.relative_to(path).parts))
    ]
    return sorted(files, key=lambda p: p.relative_to(path).as_posix())


def task_links(path: Path) -> list[Path]:
    """Every symbolic link of a task directory (to a file, a folder or nothing), sorted."""
    links = [p for p in path.rglob("*")
             if p.is_symlink() and not (_IGNORED_PARTS & set(p.relative_to(path).parts))]
    return sorted(links, key=lambda p: p.relative_to(path).as_posix())


def task_digest(path: Path) -> str:
    """SHA-256 over each file's relative path, length and bytes, in sorted order, then each
    symbolic link's relative path and target (a link to a folder or to nothing has no
    bytes to hash, yet the image copies it: one added after freezing must be noticed).
    A task without links hashes as it did before links were hashed."""
    h = hashlib.sha256()
    for file in task_files(path):
        data = file.read_bytes()
        rel = file.relative_to(path).as_posix().encode()
        h.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big"))
        h.update(data)
    for link in task_links(path):
        rel = link.relative_to(path).as_posix().encode()
        target = os.readlink(link).encode()
        h.update(b"\0link" + len(rel).to_bytes(4, "big") + rel
                 + len(target).to_bytes(4, "big") + target)
    return h.hexdigest()
