"""The parallel run's two mechanisms (tests/parallel.py): every group names modules that
exist, and the engine lock keeps a judge of the engine alone and lets users share it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.parallel import GROUPS, JUDGES_THE_ENGINE, EngineLock, engine_use, rank

ROOT = Path(__file__).resolve().parents[1]

# A second process asks for the lock without waiting: prints "got" or "busy".
_TRY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
try:
    fcntl.flock(fd, (fcntl.LOCK_EX if sys.argv[2] == "ex" else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    print("got")
except BlockingIOError:
    print("busy")
"""


def _other_process(path: Path, kind: str) -> str:
    return subprocess.run([sys.executable, "-c", _TRY, str(path), kind], capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip()


def test_every_grouped_module_exists_and_judges_are_groups() -> None:
    for group, modules in GROUPS.items():
        for module in modules:
            assert (ROOT / module).is_file(), f"group {group}: {module} is not a test module"
    assert JUDGES_THE_ENGINE <= set(GROUPS)
    listed = [m for modules in GROUPS.values() for m in modules]
    assert len(listed) == len(set(listed)), "a module in two groups"


def test_a_judge_holds_the_engine_alone(tmp_path: Path) -> None:
    judge = EngineLock(tmp_path)
    judge.hold("exclusive")
    assert _other_process(judge.main, "sh") == "busy"
    judge.hold("exclusive")  # held already: no second descriptor, still alone
    assert _other_process(judge.main, "sh") == "busy"
    judge.release()
    assert _other_process(judge.main, "ex") == "got"


def test_users_share_the_engine_and_keep_a_judge_out(tmp_path: Path) -> None:
    user = EngineLock(tmp_path)
    user.hold("shared")
    assert _other_process(user.main, "sh") == "got"
    assert _other_process(user.main, "ex") == "busy"
    user.hold(None)
    assert user.fd is None and _other_process(user.main, "ex") == "got"


class _Item:
    """What ``rank`` reads of a collected test: its id, marks and fixtures."""

    def __init__(self, nodeid: str, *marks: pytest.MarkDecorator) -> None:
        self.nodeid, self.fixturenames = nodeid, ()
        self.marks = {m.mark.name: m.mark for m in marks}

    def get_closest_marker(self, name: str) -> object:
        return self.marks.get(name)


def test_slow_tests_without_a_group_or_the_engine_are_handed_out_first() -> None:
    items = [_Item("tests/a.py::quick"), _Item("tests/a.py::slow", pytest.mark.slow),
             _Item("tests/b.py::docker", pytest.mark.docker, pytest.mark.slow),
             _Item("tests/b.py::quick_too"), _Item("tests/c.py::slow_too", pytest.mark.slow),
             _Item("tests/runner/test_ray.py::grouped"),
             _Item("tests/d.py::judge", pytest.mark.xdist_group("machine-engine"))]
    ordered = sorted(items, key=rank)  # type: ignore[arg-type]  # what rank reads of an item
    assert [i.nodeid.split("::")[1] for i in ordered] == [
        "judge", "grouped", "slow", "slow_too", "quick", "quick_too", "docker"]


def test_a_test_that_plants_a_host_bridge_shares_the_engine() -> None:
    """The engine judges compare the host's bridges: a planted one must not be there then."""
    planting = _Item("tests/runner/test_docker_engine_leftovers.py::t")
    planting.fixturenames = ("tmp_path", "planted_bridge")  # type: ignore[assignment]
    assert engine_use(planting) == "shared"  # type: ignore[arg-type]  # what it reads
    assert engine_use(_Item("tests/a.py::t")) is None  # type: ignore[arg-type]


@pytest.mark.xdist_group("parallel-self-check")
def test_a_group_reaches_the_scheduler(request: pytest.FixtureRequest) -> None:
    """Under ``--dist loadgroup`` (scripts/test) the scheduler reads an item's group from
    its id's ``@GROUP`` suffix: without it the group's tests are spread over the workers
    (under pytest 9.2 xdist's own suffix is lost: pytest-xdist issue 1386)."""
    if not getattr(request.config.option, "loadgroup", False):  # set on xdist's workers
        pytest.skip("not under pytest-xdist --dist loadgroup")
    from xdist.scheduler.loadgroup import LoadGroupScheduling

    nodeid = request.node.nodeid
    scope = LoadGroupScheduling._split_scope(None, nodeid)  # noqa: SLF001 (the scheduler's own reading)
    assert scope == "parallel-self-check", nodeid
