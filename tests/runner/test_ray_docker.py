"""Docker panels across a Ray cluster whose two nodes each have their own Docker engine:
the machine's engine, and a second ``dockerd`` this module starts (docker_engine.py).

Every attempt runs on the engine of the node that runs it, each engine got the task images
from its own base image before its first attempt, and the run folder is the one a
one-machine run writes. Losing a node's Ray worker, its engine, or every node loses
nothing finished and duplicates nothing; a node that comes back takes work again; what the
lost attempts left on an engine is removed, another live run's containers are not. At the
end the machine's engine is as the module found it.

The module's runs use their own tag of the base image (``TEST_BASE``), so the task images
they build (tagged by base image) are theirs alone and go at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from fire_exp.environments.images import BASE_IMAGE, LABEL, task_image_tag
from fire_exp.records import INFRASTRUCTURE_CAUSES, AttemptRecord, Cause, read_records
from fire_exp.runner.ray_nodes import scratch_root
from fire_exp.tasks.loader import load_task
from tests.ci import in_ci
from tests.ci import missing as ci_missing
from tests.runner.docker_engine import BRIDGE, SecondEngine, machine_state, missing, start_engine
from tests.runner.ray_cluster import Cluster, NodeSpec, start_cluster, token_env
from tests.runner.runner_helpers import ROOT, SMALL, cli, cli_env

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
RAY_ENV = token_env()  # the cluster and its drivers only (ray_cluster.py)
GIB = 1024**3
TEST_BASE = "fire-exp/base:two-engine-test"
DOCKER = ["environment=docker", f"environment.base_image={TEST_BASE}",
          "environment.bootstrap_base=false"]
RUNS = ("two", "one", "nobase", "worker", "loss", "lostall")
TASKS = ("serve-status-page", "csv-column-stats")  # SMALL's
MACHINE = NodeSpec(cpus=1, memory=GIB, resources={"fire-exp-node:machine": 1})
# Half of the panel's arms: enough attempts for a loss mid-panel, and quicker.
TWO_ARMS = "panel.arms=[real,baseline]"
RULE = "+panel.replacement={max_replacements:2,causes:[environment_failed,harness_failed]}"


@dataclass
class TwoEngines:
    cluster: Cluster
    second: SecondEngine
    nodes: dict[str, subprocess.Popen[bytes]]  # the worker nodes by name

    def spec(self, name: str) -> NodeSpec:
        if name == "machine":
            return MACHINE
        return NodeSpec(cpus=1, memory=GIB, env={"DOCKER_HOST": self.second.host},
                        resources={"fire-exp-node:second": 1})


def _now() -> int:
    return int(subprocess.run(["date", "+%s"], capture_output=True, text=True,
                              check=True).stdout)


@pytest.fixture(scope="module")
def two_engines() -> Iterator[TwoEngines]:
    why = missing()
    if why is not None:
        ci_missing(f"the two-engine tests need {why}")
    _remove_our_images()  # what a killed earlier run of this module left is not "as found"
    before = machine_state()
    subprocess.run(["docker", "tag", BASE_IMAGE, TEST_BASE], check=True, capture_output=True)
    try:
        second = start_engine((TEST_BASE,))
        try:
            engines = TwoEngines(cluster=None, second=second, nodes={})  # type: ignore[arg-type]
            cluster = start_cluster(cli_env(RAY_ENV), head=NodeSpec(cpus=0),
                                    workers=(MACHINE, engines.spec("second")))
            engines.cluster = cluster
            engines.nodes = {"machine": cluster.procs[1], "second": cluster.procs[2]}
            try:
                yield engines
            finally:
                cluster.stop()
                assert not cluster.leftovers()
        finally:
            second.stop()
            assert not second.processes(), "the second engine's processes are left"
    finally:
        _remove_our_images()
    _assert_as_found(before, machine_state())


def _remove_our_images() -> None:
    """The task images the module's runs built on the machine's engine, and its base tag."""
    tags = [task_image_tag(load_task(ROOT / "fire_exp" / "suites" / "fire-mini" / t), TEST_BASE)
            for t in TASKS]
    subprocess.run(["docker", "rmi", *tags, TEST_BASE], capture_output=True, check=False)


def _assert_as_found(before: dict[str, set[str]], after: dict[str, set[str]]) -> None:
    """The machine's engine as the module found it.

    The engine's own networks and bridge are there (``--bridge=none`` would have deleted
    docker0), nothing of the module's is left: no bridge fxbr0, no container of its runs,
    no image of its base tag. On a machine of its own (CI) the engine is exactly as found:
    same networks, bridges, containers and images, nothing new; on a shared machine
    others' panels come and go meanwhile, so only what is the module's is judged there.
    """
    builtin = {n for n in before["networks"] if n.split()[1] in ("bridge", "host", "none")}
    assert len(builtin) == 3 and builtin <= after["networks"]
    assert "docker0" in after["bridges"] and BRIDGE not in after["bridges"]
    for run in RUNS:
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.run={run}"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert not left, f"containers of run {run} left on the machine's engine"
    tag = TEST_BASE.split(":")[1]
    assert not [i for i in after["images"] if f":{tag}@" in i or TEST_BASE in i]
    built = {task_image_tag(load_task(ROOT / "fire_exp" / "suites" / "fire-mini" / t),
                            TEST_BASE) for t in TASKS}
    assert not [i for i in after["images"] if i.split("@")[0] in built]
    if in_ci():
        assert after == before


@contextmanager
def _created(host: str | None, run: str, folder: Path) -> Iterator[list[str]]:
    """Attempt ids of the containers ``run`` creates on an engine during the block (the list
    is filled when it ends). A stream from the block's start: an engine keeps only its last
    256 events, and the machine's engine is shared."""
    path = folder / f"events-{run}-{'second' if host else 'machine'}.jsonl"
    with path.open("w") as out:
        watch = subprocess.Popen(
            ["docker", *(["--host", host] if host else []), "events", "--since",
             str(_now() - 1), "--filter", "type=container", "--filter", "event=create",
             "--filter", f"label={LABEL}.run={run}", "--format",
             "{{json .Actor.Attributes}}"], stdout=out, stderr=subprocess.DEVNULL)
    found: list[str] = []
    try:
        yield found
        time.sleep(1)  # the last events reach the stream
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    found += [json.loads(line)[f"{LABEL}.attempt"] for line in path.read_text().splitlines()]


def test_each_attempt_runs_on_its_nodes_engine_and_logs_come_home(
        tmp_path: Path, two_engines: TwoEngines) -> None:
    cluster, second = two_engines.cluster, two_engines.second
    with _created(None, "two", tmp_path) as on_machine, \
            _created(second.host, "two", tmp_path) as on_second:
        proc = cli("run=two", "executor=ray", f"executor.address={cluster.address}",
                   "executor.per_node=1", *DOCKER, results=tmp_path, env=RAY_ENV,
                   timeout=600, subprocess_=True)  # a Ray driver
    assert proc.returncode == 0, proc.stderr
    records = read_records(tmp_path / "rt" / "two" / "attempts.jsonl").finished
    assert len(records) == 10 and all(r.cause is None for r in records), \
        [(r.attempt_id, r.cause, r.error) for r in records if r.cause]
    assert on_machine and on_second  # both nodes ran attempts, each on its own engine
    # Each attempt's container was made on the engine of the node its record names.
    assert sorted(on_machine) == sorted(r.attempt_id for r in records if r.node == "machine")
    assert sorted(on_second) == sorted(r.attempt_id for r in records if r.node == "second")
    # Each engine built the task images from its own base image before its attempts.
    for node in ("machine", "second"):
        assert f"node {node}: image [2/2]" in proc.stderr
    tags = second.docker("images", "--format", "{{.Repository}}").stdout.split()
    assert {"fire-exp/task-serve-status-page", "fire-exp/task-csv-column-stats"} <= set(tags)

    # The same panel on this machine alone writes the same run folder.
    one = cli("run=one", *DOCKER, results=tmp_path, timeout=600,
              subprocess_=True)  # as the Ray run: the two compared
    assert one.returncode == 0, one.stderr
    runs = tmp_path / "rt"
    expected = read_records(runs / "one" / "attempts.jsonl").finished
    assert {r.attempt_id: (r.reward, r.seed, r.log_dir) for r in records} == \
        {r.attempt_id: (r.reward, r.seed, r.log_dir) for r in expected}
    assert _layout(runs / "two") == _layout(runs / "one")
    said = {}
    for run in ("two", "one"):
        for command in ("analyze", "view"):
            out = subprocess.run(
                [sys.executable, "-m", "fire_exp", command, str(runs / run), "--out",
                 str(tmp_path / command / run)], cwd=ROOT, env=cli_env(),
                capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr
            said[command, run] = out.stdout.replace(str(tmp_path / command / run), "OUT") \
                .replace(str(runs / run), "RUN")
    assert said["analyze", "two"] == said["analyze", "one"]
    assert _files(tmp_path / "view" / "two") == _files(tmp_path / "view" / "one")


def _layout(run_dir: Path) -> dict[str, set[str]]:
    """Per attempt, the files of its log folder (relative paths)."""
    return {str(d.relative_to(run_dir / "attempts")): {
        str(f.relative_to(d)) for f in d.rglob("*") if f.is_file()}
        for d in (run_dir / "attempts").glob("*/*/r*")}


def test_missing_base_image_names_the_node(tmp_path: Path, two_engines: TwoEngines) -> None:
    proc = cli("run=nobase", "executor=ray", f"executor.address={two_engines.cluster.address}",
               *DOCKER, "environment.base_image=fire-exp/base:absent", results=tmp_path,
               env=RAY_ENV, timeout=300, subprocess_=True)  # a Ray driver
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "node machine:" in line or "node second:" in line, proc.stderr
    assert "fire-exp/base:absent" in line
    assert not (tmp_path / "rt" / "nobase" / "attempts.jsonl").exists()


def _files(folder: Path) -> set[str]:
    return {str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file()}


def _start(tmp_path: Path, run: str, cluster: Cluster, *args: str
           ) -> tuple[subprocess.Popen[str], Path]:
    """``fire-exp run`` in the background; its stderr goes to a file the test reads."""
    err = tmp_path / f"{run}.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fire_exp", "run", *SMALL, f"results_dir={tmp_path}",
             f"run={run}", "executor=ray", f"executor.address={cluster.address}",
             "executor.per_node=1", *DOCKER, RULE, *args], cwd=ROOT, env=cli_env(RAY_ENV),
            text=True, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
    return proc, err


def _containers(host: str | None, run: str, *, running: bool = False) -> list[dict[str, str]]:
    """The labels of ``run``'s containers on an engine (the machine's when ``host`` is None)."""
    out = subprocess.run(
        ["docker", *(["--host", host] if host else []), "ps", *([] if running else ["-a"]),
         "--filter", f"label={LABEL}.run={run}", "--format", "{{json .Labels}}"],
        capture_output=True, text=True, timeout=60, check=True)
    return [dict(kv.split("=", 1) for kv in json.loads(line).split(",") if "=" in kv)
            for line in out.stdout.splitlines()]


def _wait(what: str, until: object, proc: subprocess.Popen[str], err: Path,
          timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not until():  # type: ignore[operator]
        assert proc.poll() is None, f"the run ended before {what}: {err.read_text()}"
        assert time.monotonic() < deadline, f"no {what}: {err.read_text()}"
        time.sleep(0.2)


def _finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return out


def _standing(records: list[AttemptRecord], scheduled: int) -> list[AttemptRecord]:
    """Nothing lost, nothing duplicated: each attempt id once, and each scheduled (task,
    arm, replicate) with exactly one record that stands (no successor)."""
    ids = Counter(r.attempt_id for r in records)
    assert max(ids.values()) == 1, [i for i, n in ids.items() if n > 1]
    standing = [r for r in records if r.lineage.replaced_by is None]
    slots = Counter((r.task, r.arm, r.replicate) for r in standing)
    assert len(slots) == scheduled and max(slots.values()) == 1, slots
    by_id = {r.attempt_id: r for r in records}
    for record in records:  # every replacement a record names was run, exactly once
        if record.lineage.replaced_by is not None:
            assert by_id[record.lineage.replaced_by].lineage.replaces == record.attempt_id
    return standing


@pytest.fixture()
def live_container(two_engines: TwoEngines) -> Iterator[str]:
    """A container of another run that is alive on the second node: it is owned by this
    process, on this host, and its attempt's scratch folder on the node exists."""
    folder = scratch_root().resolve() / f"attempt-{os.getpid()}-live" / "other"
    folder.mkdir(parents=True, exist_ok=True)
    labels = {LABEL: "1", f"{LABEL}.kind": "attempt", f"{LABEL}.run": "other-live",
              f"{LABEL}.owner-host": socket.gethostname(),
              f"{LABEL}.owner-pid": str(os.getpid()), f"{LABEL}.run-dir": str(folder)}
    second = two_engines.second
    made = second.docker("run", "-d", "--name", "fx-other-live-run",
                         *[a for k, v in labels.items() for a in ("--label", f"{k}={v}")],
                         TEST_BASE, "sleep", "infinity")
    assert made.returncode == 0, made.stderr
    try:
        yield "fx-other-live-run"
    finally:
        second.docker("rm", "-f", "fx-other-live-run")
        shutil.rmtree(folder.parent, ignore_errors=True)


def _exists(engine: SecondEngine, name: str) -> bool:
    return engine.docker("inspect", name).returncode == 0


def test_losing_a_nodes_worker_mid_panel_loses_nothing(
        tmp_path: Path, two_engines: TwoEngines, live_container: str) -> None:
    """The Ray worker running an attempt on node second is killed mid-attempt."""
    cluster, second = two_engines.cluster, two_engines.second
    proc, err = _start(tmp_path, "worker", cluster, TWO_ARMS, "agent.think_s=1.0")
    _wait("attempt on second", lambda: _containers(second.host, "worker", running=True),
          proc, err)
    worker = int(_containers(second.host, "worker")[0][f"{LABEL}.owner-pid"])
    assert cluster.descends(worker)  # the attempt's owner is a Ray worker of the cluster
    os.kill(worker, signal.SIGKILL)
    out = _finish(proc)
    assert proc.returncode == 0, err.read_text()
    records = read_records(tmp_path / "rt" / "worker" / "attempts.jsonl").finished
    standing = _standing(records, scheduled=4)
    lost = [r for r in records if r.cause in INFRASTRUCTURE_CAUSES]
    assert len(lost) == 1, [(r.attempt_id, r.cause, r.error) for r in records]
    assert lost[0].cause is Cause.HARNESS_FAILED and lost[0].node == "second"
    assert "the Ray worker was lost (node second)" in str(lost[0].error)
    assert lost[0].lineage.replaced_by is not None  # the frozen rule replaced it
    assert all(r.cause is None for r in standing)
    assert {r.node for r in records} == {"machine", "second"}
    assert ("lost on node second: 1 attempt (harness_failed 1); 1 replaced under the frozen "
            "replacement rule, 0 stand as failures") in out
    # The lost worker's container was left running on the node's engine; it is gone, and
    # another live run's container there stays.
    assert not _containers(second.host, "worker")
    assert _exists(second, live_container)


def test_losing_a_nodes_engine_loses_nothing_and_it_comes_back(
        tmp_path: Path, two_engines: TwoEngines, live_container: str) -> None:
    """The second engine stops mid-attempt, then starts again on the same data."""
    cluster, second = two_engines.cluster, two_engines.second
    proc, err = _start(tmp_path, "loss", cluster, "agent.think_s=1.0")
    try:
        _wait("attempt on second", lambda: _containers(second.host, "loss", running=True),
              proc, err)
        second.proc.send_signal(signal.SIGTERM)  # the node's engine stops mid-attempt
        second.proc.wait(timeout=60)
        _wait("node second left out", lambda: "node second: left out" in err.read_text(),
              proc, err)
    finally:
        if second.proc.poll() is not None:
            second.restart()  # the engine comes back, with the lost attempt's container
    with _created(second.host, "loss", tmp_path) as after_restart:
        out = _finish(proc)
    assert proc.returncode == 0, err.read_text()
    records = read_records(tmp_path / "rt" / "loss" / "attempts.jsonl").finished
    _standing(records, scheduled=10)
    lost = [r for r in records if r.cause in INFRASTRUCTURE_CAUSES]
    assert lost, "the stopped engine cost no attempt"
    assert {r.node for r in lost} == {"second"}
    by_id = {r.attempt_id: r for r in records}
    for record in lost:  # each loss replaced, and its replacement finished
        assert by_id[str(record.lineage.replaced_by)].cause is None
    assert f"lost on node second: {len(lost)} attempt" in out
    # The node came back and took work again: attempts of the run after the restart.
    assert after_restart, err.read_text()
    assert not _containers(second.host, "loss")  # its orphans removed, not another's
    assert _exists(second, live_container)


def test_losing_every_node_then_resume_finishes_what_is_owed(
        tmp_path: Path, two_engines: TwoEngines) -> None:
    """Both worker nodes die mid-panel; the run stops; fresh nodes join and resume= ends it.

    Last in the module: the nodes it starts replace the fixture's."""
    cluster, second = two_engines.cluster, two_engines.second
    proc, err = _start(tmp_path, "lostall", cluster, TWO_ARMS, "agent.think_s=1.0")
    _wait("attempts on both engines", lambda: _containers(None, "lostall", running=True)
          and _containers(second.host, "lostall", running=True), proc, err)
    for name in ("machine", "second"):
        cluster.kill_node(two_engines.nodes[name])
    _finish(proc)
    assert proc.returncode == 2, err.read_text()
    assert "no node of the cluster can take the attempts still owed" in err.read_text()
    path = tmp_path / "rt" / "lostall" / "attempts.jsonl"
    before = read_records(path).finished
    lost = [r for r in before if r.cause in INFRASTRUCTURE_CAUSES]
    assert {r.node for r in lost} == {"machine", "second"}, [(r.node, r.error) for r in before]
    assert all("the Ray worker was lost" in str(r.error) for r in lost)

    for name in ("machine", "second"):  # fresh nodes, one per engine
        two_engines.nodes[name] = cluster.add_node(two_engines.spec(name))
    resumed = cli("resume=lostall", "executor=ray", f"executor.address={cluster.address}",
                  "executor.per_node=1", *DOCKER, RULE, TWO_ARMS, "agent.think_s=1.0",
                  results=tmp_path, env=RAY_ENV, timeout=600, subprocess_=True)  # a Ray driver
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(path).finished
    assert [r.model_dump() for r in records[:len(before)]] == [r.model_dump() for r in before]
    _standing(records, scheduled=4)
    for node in ("machine", "second"):
        n = sum(r.node == node for r in lost)
        assert f"lost on node {node}: {n} attempt" in resumed.stdout
    # The killed nodes' attempts left running containers on both engines: all gone.
    assert not _containers(None, "lostall") and not _containers(second.host, "lostall")
