"""An arm's files and text in an attempt, piece by piece: the bytes read once and hashed,
the instruction composed, the fairness check naming what it refuses, and the files placed
through a real local box (only in its working folder)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from fire_exp.arms import ArmSpec
from fire_exp.arms.place import (
    ArmSetup,
    PlacedFile,
    arm_setup,
    check_fair,
    compose_instruction,
    place_files,
)
from fire_exp.environments.base import BoxPaths, EnvironmentFailure
from fire_exp.environments.local import LocalEnvironment
from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import load_task
from fire_exp.tasks.model import Task

TASK = load_task(SUITES_DIR / "fire-mini" / "csv-column-stats")  # tests/: check.py, ...


def sources(tmp: Path) -> dict[str, str]:
    (tmp / "b.md").write_text("bee\n")
    (tmp / "a.md").write_bytes(b"ay\x00\xff")
    return {"docs/b.md": str(tmp / "b.md"), "AGENTS.md": str(tmp / "a.md")}


def test_an_arms_files_are_read_once_in_destination_order_with_their_hashes(
        tmp_path: Path) -> None:
    setup = arm_setup(ArmSpec("x", files=sources(tmp_path)))
    assert (setup.name, setup.placed) == ("x", ("AGENTS.md", "docs/b.md"))
    first = setup.files[0]
    assert (first.source, first.data) == ((tmp_path / "a.md").resolve(), b"ay\x00\xff")
    assert first.sha256 == hashlib.sha256(b"ay\x00\xff").hexdigest()
    (tmp_path / "a.md").write_text("changed")  # read once: the setup keeps the first bytes
    assert setup.files[0].data == b"ay\x00\xff"
    assert arm_setup(ArmSpec("y")) == ArmSetup(ArmSpec("y"), ())


def test_a_missing_source_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        arm_setup(ArmSpec("x", files={"AGENTS.md": str(tmp_path / "gone.md")}))
    assert err.value.field == f"files: {tmp_path / 'gone.md'}"
    assert err.value.problem == "no such file"


def test_the_instruction_is_the_tasks_then_the_arms_text() -> None:
    assert compose_instruction("Sort it.\n\n", ArmSpec("x", instruction="  Be brief.\n")) == \
        "Sort it.\n\nBe brief."
    assert compose_instruction("Sort it.\n", ArmSpec("x")) == "Sort it.\n"  # unchanged


def setup_of(dest: str) -> ArmSetup:
    return ArmSetup(ArmSpec("arm1"), (PlacedFile(dest, Path("/src"), b""),))


# A task whose working folder is the box's root: the verifier's folders are right there.
AT_ROOT = replace(TASK, environment=replace(TASK.environment, workdir="/"))


@pytest.mark.parametrize(("task", "dest"), [
    (AT_ROOT, "tests/x.sh"), (AT_ROOT, "logs/verifier/reward.txt"), (AT_ROOT, "solution"),
    (AT_ROOT, "tests"), (TASK, "check.py"), (TASK, "expected.json"), (TASK, "test.sh")])
def test_a_file_that_reaches_the_verifier_is_refused_naming_arm_file_and_task(
        task: Task, dest: str) -> None:
    with pytest.raises(InputError) as err:
        check_fair(setup_of(dest), {"other": TASK, task.name: task})
    target = Path(task.environment.workdir) / dest
    assert str(err.value) == (
        f"configs/panel: declare.arm1.files.{dest}: task {task.name}: the file would land "
        f"where the verifier reads ({target.as_posix()}) (place it elsewhere in the working "
        "folder)")


@pytest.mark.parametrize("dest", ["AGENTS.md", "tests.md", "docs/check.py", "testsuite/x",
                                  "app/logs", "solutions"])
def test_a_file_beside_the_verifiers_is_fair(dest: str) -> None:
    check_fair(setup_of(dest), {TASK.name: TASK, "root": AT_ROOT})


class Box(LocalEnvironment):
    """A real local box that counts its uploads; ``inside``: its verifier folders lie in
    the working folder (a layout no bundled backend has: place_files still refuses)."""

    inside = False

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.uploads: list[tuple[Path, str]] = []

    @property
    def paths(self) -> BoxPaths:
        p = super().paths
        if not self.inside:
            return p
        return BoxPaths(workdir=p.workdir, logs=f"{p.workdir}/logs", tests=f"{p.workdir}/tests",
                        solution=f"{p.workdir}/solution", agent=p.agent)

    def upload(self, src: Path, dest: str) -> None:
        self.uploads.append((src, dest))
        super().upload(src, dest)


def test_files_are_placed_in_the_working_folder_with_their_bytes(tmp_path: Path) -> None:
    setup = arm_setup(ArmSpec("x", files=sources(tmp_path)))
    with Box(TASK, tmp_path / "attempt", "r") as box:
        place_files(box, setup.files)
        work = Path(box.paths.workdir)
        assert (work / "AGENTS.md").read_bytes() == b"ay\x00\xff"
        assert (work / "docs" / "b.md").read_text() == "bee\n"
        assert [dest for _, dest in box.uploads] == [box.paths.workdir]
        assert not (Path(box.paths.tests) / "AGENTS.md").exists()
        place_files(box, ())  # nothing to place: no upload
        assert len(box.uploads) == 1
        # a file folders deep: its folders made on the way
        place_files(box, (PlacedFile("docs/deep/er/c.md", tmp_path, b"sea"),))
        assert (work / "docs" / "deep" / "er" / "c.md").read_bytes() == b"sea"
        assert (work / "docs" / "b.md").read_text() == "bee\n"


@pytest.mark.parametrize("dest", ["tests/x.sh", "logs/reward.txt", "solution/solve.sh",
                                  "tests"])
def test_a_file_bound_for_a_verifier_folder_is_refused_before_any_upload(
        tmp_path: Path, dest: str) -> None:
    with Box(TASK, tmp_path / "attempt", "r") as box:
        box.inside = True
        files = (PlacedFile("ok.md", tmp_path, b"fine"), PlacedFile(dest, tmp_path, b"x"))
        with pytest.raises(EnvironmentFailure, match=f"^{dest}: would land in the verifier's "
                           "folders$"):
            place_files(box, files)
        assert box.uploads == [] and not (Path(box.paths.workdir) / "ok.md").exists()
