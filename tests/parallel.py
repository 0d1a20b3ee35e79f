"""The suite under pytest-xdist (``scripts/test``: ``-n N --dist loadgroup``), race-free.

Two mechanisms, both named here so a new test joins by adding a line (docs/testing.md):

**Groups** (``GROUPS``): tests that use one machine-wide name (a bridge, a fixed folder, a
port, a network name, a fixed image tag) get ``xdist_group(NAME)``, so one worker runs
them one after the other. A module listed here gets its group; a test may also say
``@pytest.mark.xdist_group("NAME")`` itself.

**The machine's engine** (``JUDGES_THE_ENGINE``): a test that compares the machine's whole
Docker engine before and after (its containers, images, networks and the host's bridges:
the two-engine modules) cannot share the engine with any other test. Under xdist every
test that uses the engine (marked ``docker``, or asking for ``docker_client``) holds a
shared ``flock`` while it runs; a group that judges the engine holds it exclusively from
its first test to its last, its module fixtures' set-up and teardown included. Those groups
are sent to a worker first, so they start at once and the other workers run the tests that
need no engine meanwhile; the Docker tests come last.

Outside xdist (one process) nothing changes: no lock, no reordering.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

# group -> the modules (paths from the checkout) whose tests run in it, and why.
GROUPS: dict[str, tuple[str, ...]] = {
    # The second dockerd and its bridge fxbr0; the machine's engine compared before/after.
    "machine-engine": ("tests/runner/test_ray_docker.py",
                       "tests/runner/test_ray_cli_two_engines.py"),
    # Local Ray clusters and the nodes' scratch root /tmp/fire-exp-ray, which test_ray
    # scans whole (attempt_processes(scratch_root())).
    "ray": ("tests/runner/test_ray.py",),
    # Real model servers (llama.cpp's, one thread each at niceness -10, before the other
    # tests' work): one test at a time, so their servers never outnumber the machine's two
    # cores (the served panels' two take both; CI saw a served-model turn take 538 s beside
    # the SmolLM2 panel, 88 s alone).
    "model-server": ("tests/agents/test_llama_server.py", "tests/serve/test_served_model.py",
                     "tests/serve/test_served_panel.py"),
}

# Groups whose tests need the machine's Docker engine to themselves: nothing else uses it
# meanwhile. ``machine-engine``: the modules above, and the tests that leave a killed run's
# container for their own cleanup to find (marked so: another test's panel start would
# reap it first, as a run start reaps every provably dead container).
JUDGES_THE_ENGINE = frozenset({"machine-engine"})

# Fixtures that reach the machine's Docker engine (a test asking for one is a Docker test).
ENGINE_FIXTURES = frozenset({"docker_client", "engine"})
# Fixtures that add a bridge to the host: the engine judges compare the host's bridges
# before and after too, so such a test shares the engine (never runs while one judges).
# A planted bridge beside a judge failed its comparison in CI.
HOST_BRIDGE_FIXTURES = frozenset({"planted_bridge"})

_GROUP_OF = {module: group for group, modules in GROUPS.items() for module in modules}


def group_of(item: pytest.Item) -> str | None:
    """The item's xdist group: its own mark, else its module's line in ``GROUPS``."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name"))
    return _GROUP_OF.get(item.nodeid.split("::")[0])


def engine_use(item: pytest.Item | None) -> str | None:
    """``"exclusive"``, ``"shared"`` or None: how the item uses the machine's engine."""
    if item is None:
        return None
    if group_of(item) in JUDGES_THE_ENGINE:
        return "exclusive"
    if item.get_closest_marker("docker") or (ENGINE_FIXTURES | HOST_BRIDGE_FIXTURES) & set(
            getattr(item, "fixturenames", ())):
        return "shared"
    return None


def mark_and_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each item its group and the ``docker`` mark its fixtures imply; under xdist,
    tell the scheduler each item's group and order them: engine judges, other groups,
    tests without the engine, Docker tests."""
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
        if engine_use(item) == "shared" and item.get_closest_marker("docker") is None:
            item.add_marker(pytest.mark.docker)
    if not hasattr(config, "workerinput"):
        return
    if config.getvalue("loadgroup"):
        for item in items:
            if (group := group_of(item)) is not None:
                _tell_the_scheduler(item, group)

    items.sort(key=rank)  # stable: a module's tests keep their order


def rank(item: pytest.Item) -> tuple[float, int]:
    """Where the item goes in the order the scheduler hands out (lowest first).

    A group's tests run one after the other on one worker: the whole chain starts early
    (the model servers' is the suite's longest), its Docker tests at its end, by when the
    engine judges are done. Of the tests without a group or the engine, those marked
    ``slow`` go first: one handed out last keeps its worker busy after the others end (the
    fast tier's 22-second multirun, collected last, ended its run 19 s after the rest)."""
    use = engine_use(item)
    if use == "exclusive":
        return 0, 0
    if group_of(item):
        return (1.5 if use == "shared" else 1), 0
    if use == "shared":
        return 3, 0
    return 2, 0 if item.get_closest_marker("slow") else 1


def _tell_the_scheduler(item: pytest.Item, group: str) -> None:
    """Suffix the item's id with ``@GROUP``, which ``--dist loadgroup`` reads to send a
    group to one worker. xdist's own hook does so before this module's groups are marked
    (it runs first), and under pytest 9.2 not at all: it writes ``_nodeid``, which pytest
    no longer reads (pytest-xdist issue 1386) — every group was split across workers."""
    tagged = f"{item.nodeid}@{group}"
    if item.nodeid.endswith(f"@{group}"):
        return
    if hasattr(item, "_id"):  # pytest >= 9.2: the id is a structured NodeId
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(tagged)  # noqa: SLF001 (xdist reads the group from it)
    else:
        item._nodeid = tagged  # type: ignore[attr-defined]  # noqa: SLF001 (as above)


class EngineLock:
    """A worker's hold on the run's engine lock (an ``flock``; see the module docstring).

    A writer first takes the turnstile, so readers arriving meanwhile wait behind it
    rather than starving it."""

    def __init__(self, folder: Path) -> None:
        self.main, self.turnstile = folder / "engine.lock", folder / "turnstile.lock"
        self.fd: int | None = None
        self.kind: str | None = None

    def hold(self, kind: str | None) -> None:
        if kind == self.kind:
            return
        self.release()
        if kind is None:
            return
        gate = os.open(self.turnstile, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX if kind == "exclusive" else fcntl.LOCK_SH)
            self.fd = os.open(self.main, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX if kind == "exclusive" else fcntl.LOCK_SH)
        finally:
            os.close(gate)
        self.kind = kind

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.kind = None, None


_LOCK = pytest.StashKey[EngineLock]()


def start_worker(config: pytest.Config) -> None:
    """On an xdist worker, the lock the run's workers share: in the run's pytest temporary
    folder (each worker's is ``popen-gwN`` under it; pytest prunes old runs' folders)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    basetemp = getattr(config.option, "basetemp", None)
    folder = (Path(basetemp).parent if basetemp else Path(tempfile.gettempdir())
              / f"fire-exp-tests-{workerinput['testrunuid']}")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    config.stash[_LOCK] = EngineLock(folder)


def around_test(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Generator for ``pytest_runtest_protocol``: hold the lock the item needs while it
    runs; an exclusive hold lasts while the next item is exclusive too (one group's
    module fixtures live across its tests), a shared one is given back after each test
    so a waiting judge gets in between."""
    lock = item.config.stash.get(_LOCK, None)
    if lock is None:
        return (yield)
    lock.hold(engine_use(item))
    try:
        return (yield)
    finally:
        if lock.kind == "shared" or engine_use(nextitem) != "exclusive":
            lock.release()
