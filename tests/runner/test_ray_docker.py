"""Docker panels across a Ray cluster whose two nodes each have their own Docker engine:
the machine's engine, and a second ``dockerd`` this module starts (docker_engine.py).

Every attempt runs on the engine of the node that runs it, each engine got the task images
from its own base image before its first attempt, and the run folder is the one a
one-machine run writes. At the end the machine's engine is as the module found it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fire_exp.environments.images import BASE_IMAGE, LABEL
from fire_exp.records import INFRASTRUCTURE_CAUSES, read_records
from tests.ci import missing as ci_missing
from tests.runner.docker_engine import BRIDGE, SecondEngine, machine_state, missing, start_engine
from tests.runner.ray_cluster import Cluster, NodeSpec, start_cluster
from tests.runner.runner_helpers import ROOT, SMALL, cli, cli_env

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
RAY_ENV = {"RAY_AUTH_MODE": "disabled"}
GIB = 1024**3
DOCKER = ["environment=docker"]


@dataclass
class TwoEngines:
    cluster: Cluster
    second: SecondEngine
    since: str  # engine time when the module started, for ``docker events``


@pytest.fixture(scope="module")
def two_engines() -> Iterator[TwoEngines]:
    why = missing()
    if why is not None:
        ci_missing(f"the two-engine tests need {why}")
    before = machine_state()
    since = str(int(subprocess.run(["date", "+%s"], capture_output=True, text=True,
                                   check=True).stdout) - 1)
    second = start_engine((BASE_IMAGE,))
    try:
        machine = NodeSpec(cpus=1, memory=GIB, resources={"fire-exp-node:machine": 1})
        other = NodeSpec(cpus=1, memory=GIB, env={"DOCKER_HOST": second.host},
                         resources={"fire-exp-node:second": 1})
        cluster = start_cluster(cli_env(RAY_ENV), head=NodeSpec(cpus=0),
                                workers=(machine, other))
        try:
            yield TwoEngines(cluster=cluster, second=second, since=since)
        finally:
            cluster.stop()
            assert not cluster.leftovers()
    finally:
        second.stop()
    # The machine is shared: others may add networks meanwhile; nothing it had is gone
    # (``--bridge=none`` would have deleted docker0) and nothing of ours is left.
    after = machine_state()
    assert set(before["networks"]) <= set(after["networks"])
    assert set(before["links"]) <= set(after["links"]) and BRIDGE not in after["links"]
    ours = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.run=two"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert not ours, "containers of the test's runs left on the machine's engine"


def _created(host: str | None, since: str, run: str) -> list[str]:
    """Attempt ids of the containers ``run`` created on an engine since ``since``."""
    out = subprocess.run(
        ["docker", *(["--host", host] if host else []), "events", "--since", since,
         "--until", str(int(subprocess.run(["date", "+%s"], capture_output=True, text=True,
                                           check=True).stdout) + 1),
         "--filter", "type=container", "--filter", "event=create",
         "--filter", f"label={LABEL}.run={run}", "--format", "{{json .Actor.Attributes}}"],
        capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line)[f"{LABEL}.attempt"] for line in out.stdout.splitlines()]


def test_each_attempt_runs_on_its_nodes_engine_and_logs_come_home(
        tmp_path: Path, two_engines: TwoEngines) -> None:
    cluster, second = two_engines.cluster, two_engines.second
    proc = cli("run=two", "executor=ray", f"executor.address={cluster.address}",
               "executor.per_node=1", *DOCKER, results=tmp_path, env=RAY_ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr
    records = read_records(tmp_path / "rt" / "two" / "attempts.jsonl").finished
    assert len(records) == 10 and all(r.cause is None for r in records), \
        [(r.attempt_id, r.cause, r.error) for r in records if r.cause]
    on_machine = _created(None, two_engines.since, "two")
    on_second = _created(second.host, two_engines.since, "two")
    assert on_machine and on_second  # both nodes ran attempts, each on its own engine
    assert sorted(on_machine + on_second) == sorted(r.attempt_id for r in records)
    # Each engine built the task images from its own base image before its attempts.
    for node in ("machine", "second"):
        assert f"node {node}: image [2/2]" in proc.stderr
    tags = second.docker("images", "--format", "{{.Repository}}").stdout.split()
    assert {"fire-exp/task-serve-status-page", "fire-exp/task-csv-column-stats"} <= set(tags)

    # The same panel on this machine alone writes the same run folder.
    one = cli("run=one", *DOCKER, results=tmp_path, timeout=600)
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
               *DOCKER, "environment.base_image=fire-exp/base:absent",
               "environment.bootstrap_base=false", results=tmp_path, env=RAY_ENV,
               timeout=300)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "node machine:" in line or "node second:" in line, proc.stderr
    assert "fire-exp/base:absent" in line
    assert not (tmp_path / "rt" / "nobase" / "attempts.jsonl").exists()


def _files(folder: Path) -> set[str]:
    return {str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file()}


def test_losing_a_nodes_engine_loses_nothing(tmp_path: Path, two_engines: TwoEngines) -> None:
    """Last in the module: it stops the second engine for good."""
    cluster, second = two_engines.cluster, two_engines.second
    rule = "+panel.replacement={max_replacements:1,causes:[environment_failed,harness_failed]}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fire_exp", "run", *SMALL, f"results_dir={tmp_path}",
         "run=loss", "executor=ray", f"executor.address={cluster.address}",
         "executor.per_node=1", *DOCKER, rule, "agent.think_s=0.5"], cwd=ROOT,
        env=cli_env(RAY_ENV), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not second.docker("ps", "-q", "--filter", f"label={LABEL}.run=loss").stdout.strip():
            assert time.monotonic() < deadline and proc.poll() is None, "no attempt on second"
            time.sleep(0.2)
        second.proc.send_signal(signal.SIGTERM)  # the node's engine stops mid-attempt
        second.proc.wait(timeout=60)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    records = read_records(tmp_path / "rt" / "loss" / "attempts.jsonl").finished
    ids = [r.attempt_id for r in records]
    assert len(ids) == len(set(ids))  # nothing duplicated
    lost = [r for r in records if r.cause in INFRASTRUCTURE_CAUSES]
    assert lost, "the stopped engine cost no attempt"
    by_id = {r.attempt_id: r for r in records}
    for record in lost:  # each loss replaced, and its replacement ran on the machine's node
        successor = by_id[str(record.lineage.replaced_by)]
        assert successor.cause is None
    scheduled = {i for i in ids if "#" not in i}
    assert len(scheduled) == 10  # nothing lost: every scheduled attempt has its record
    assert "node second: left out" in err
    assert "replacements per arm: none" not in out
