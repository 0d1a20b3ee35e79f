"""An arm's changes inside an attempt: its files placed in the working folder, its text
added to the instruction.

The files are read once, when the panel is built, and their bytes are what every attempt
places and what the preregistration hashes, so a file edited during a run changes nothing.
They are placed through the environment's public ``upload`` (after ``start``, before the
agent's first command), in the working folder only: never where the verifier's tests,
logs, reward files or the solution live, which stay the same in every arm.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from fire_exp.arms.spec import ArmSpec, resolve_source
from fire_exp.environments.base import Environment, EnvironmentFailure
from fire_exp.errors import InputError
from fire_exp.tasks.model import Task

__all__ = ["ArmSetup", "PlacedFile", "arm_setup", "check_fair", "compose_instruction",
           "place_files"]

_BOX_FOLDERS = ("/tests", "/logs", "/solution")  # the container paths the verifier owns


@dataclass(frozen=True)
class PlacedFile:
    """One file an arm places: where in the working folder, from where, its bytes."""

    dest: str
    source: Path
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class ArmSetup:
    """What an attempt of an arm gets besides its policies and its agent's parameters."""

    spec: ArmSpec
    files: tuple[PlacedFile, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def placed(self) -> tuple[str, ...]:
        """The placed files' paths in the working folder."""
        return tuple(f.dest for f in self.files)


def arm_setup(spec: ArmSpec) -> ArmSetup:
    """Read ``spec``'s files. Raises InputError naming a source that is missing."""
    files = tuple(PlacedFile(dest, path, path.read_bytes())
                  for dest, path in ((d, resolve_source(s)) for d, s in sorted(spec.files.items())))
    return ArmSetup(spec, files)


def _inside(path: PurePosixPath, folder: str | PurePosixPath) -> bool:
    return path == PurePosixPath(folder) or PurePosixPath(folder) in path.parents


def check_fair(setup: ArmSetup, tasks: Mapping[str, Task]) -> None:
    """Refuse an arm whose files would land where a task's verifier reads.

    A file may not reach the container's ``/tests``, ``/logs`` or ``/solution`` from the
    task's working folder, nor carry the path of a file of the task's ``tests/`` folder.

    Raises:
        InputError: naming the arm, the file and the task.
    """
    for placed in setup.files:
        for task in tasks.values():
            target = PurePosixPath(task.environment.workdir) / placed.dest
            verifier_files = {p.relative_to(task.tests_dir).as_posix()
                              for p in task.tests_dir.rglob("*") if p.is_file()}
            if any(_inside(target, f) for f in _BOX_FOLDERS) or placed.dest in verifier_files:
                raise InputError("configs/panel", f"declare.{setup.name}.files.{placed.dest}",
                                 f"task {task.name}: the file would land where the verifier "
                                 f"reads ({target})", "place it elsewhere in the working folder")


def compose_instruction(task_instruction: str, spec: ArmSpec) -> str:
    """The instruction an arm's agent receives: the task's, then the arm's text.

    >>> compose_instruction("Sort a file.", ArmSpec("x", instruction="Be brief."))
    'Sort a file.\\n\\nBe brief.'
    """
    if not spec.instruction:
        return task_instruction
    return f"{task_instruction.rstrip()}\n\n{spec.instruction.strip()}"


def place_files(env: Environment, files: tuple[PlacedFile, ...]) -> None:
    """Write ``files`` into the started environment's working folder (``env.upload``).

    Raises:
        EnvironmentFailure: a file would leave the working folder, or the upload failed.
    """
    if not files:
        return
    paths = env.paths
    workdir = PurePosixPath(paths.workdir)
    for placed in files:
        target = workdir / placed.dest
        if any(_inside(target, PurePosixPath(f)) for f in (paths.tests, paths.logs,
                                                             paths.solution)):
            raise EnvironmentFailure(f"{placed.dest}: would land in the verifier's folders")
    with tempfile.TemporaryDirectory(prefix="fire-exp-arm-") as tmp:
        for placed in files:
            path = Path(tmp) / placed.dest
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(placed.data)
        env.upload(Path(tmp), paths.workdir)
