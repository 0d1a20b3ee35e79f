"""An in-container coding-agent CLI on a Ray node whose Docker engine is not the driver's.

The fake CLI (tests/fixtures/cli_container/fake_cli.py) is installed by a script into a
derived image on the node's own engine (a second ``dockerd``, docker_engine.py), runs in
the task's container there and calls its hooks through the shim; the policies deny a
command. The run folder is then compared with the same panel run on this machine alone:
the same files in every attempt folder (hook activity, the CLI's transcript, the verifier),
the same record fields, the same ``fire-exp analyze`` output.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments.images import BASE_IMAGE, LABEL
from fire_exp.paths import SUITES_DIR
from fire_exp.records import AttemptRecord, read_records
from tests.ci import missing as ci_missing
from tests.runner.docker_engine import BRIDGE, SecondEngine, machine_state, missing, start_engine
from tests.runner.ray_cluster import Cluster, NodeSpec, start_cluster, token_env
from tests.runner.runner_helpers import ROOT, cli, cli_env

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]
FAKE_CLI = ROOT / "tests" / "fixtures" / "cli_container" / "fake_cli.py"
KEY_ENV, KEY = "FIRE_H23_TEST_KEY", "sk-fake-fireexp-h23-Vb27QnRt4Ke"
DENIED = "sqlite3 evidence/orders.db .dump > /logs/agent/denied-ran.txt"
SOLVE = (SUITES_DIR / "fire-mini" / "recover-wal-orders" / "solution" / "solve.sh").read_text()
# The agent's variables come from the environment of the process that runs the attempt:
# on a cluster, the ``ray start`` of the node (the driver's are not shipped).
RAY_ENV = token_env()  # the cluster and its drivers only (ray_cluster.py)
AGENT_ENV = RAY_ENV | {KEY_ENV: KEY, "FAKE_CLI_SCRIPT": json.dumps(
    {"commands": [DENIED, f"echo the key is ${KEY_ENV}", SOLVE]})}
# One line, so it passes as a command-line override: the CLI written into the image.
INSTALL = ("set -e; mkdir -p /usr/local/bin; echo "
           + base64.b64encode(FAKE_CLI.read_bytes()).decode()
           + " | base64 -d > /usr/local/bin/claude; chmod 755 /usr/local/bin/claude")
PANEL = ["panel.name=rtcli", "panel.eligible=[recover-wal-orders]", "panel.silent=[]",
         "panel.arms=[real,baseline]", "agent=claude-code", f"agent.install.script='{INSTALL}'",
         "agent.install.network=none", f"agent.env_passthrough=[FAKE_CLI_SCRIPT,{KEY_ENV}]",
         "environment=docker"]
# The two arms' contrast on one task (the bundled plans need every arm and both cohorts).
PLAN = """name: rtcli
seed: 20260301
primary: {contrast: real - baseline, cohort: eligible}
secondary: []
cohorts: [eligible, all]
bootstrap: {n_resamples: 1000, confidence_level: 0.95}
permutation: {method: auto, n_resamples: 1000, max_enumeration: 20}
multiplicity: {method: holm, family: secondary}
missing_data: {infrastructure_failures: failure, sensitivity: exclude}
"""
# What differs between two runs of one panel: when they ran, the run's name, and the node
# a cluster's attempt ran on (a one-machine record names none).
UNTIMED = {"run", "timings", "started_at", "finished_at", "node"}


@dataclass
class OneRemoteNode:
    cluster: Cluster
    second: SecondEngine


@pytest.fixture(scope="module")
def remote_node() -> Iterator[OneRemoteNode]:
    """A Ray head with no CPUs and one node whose attempts run on the second engine."""
    why = missing()
    if why is not None:
        ci_missing(f"the two-engine tests need {why}")
    bridges_before = machine_state()["bridges"]
    second = start_engine((BASE_IMAGE,))
    try:
        node = NodeSpec(cpus=1, memory=1024**3, resources={"fire-exp-node:second": 1},
                        env={"DOCKER_HOST": second.host} | AGENT_ENV)
        cluster = start_cluster(cli_env(RAY_ENV), head=NodeSpec(cpus=0), workers=(node,))
        try:
            yield OneRemoteNode(cluster=cluster, second=second)
        finally:
            cluster.stop()
            assert not cluster.leftovers()
    finally:
        second.stop()
    # The machine is shared (others add and remove their own networks): its engine's
    # default bridge is still there (``--bridge=none`` would have deleted docker0), ours gone.
    after = machine_state()
    assert "docker0" in after["bridges"] and BRIDGE not in after["bridges"]
    # The second engine's networks (the task's egress network) leave no bridge behind:
    # a new bridge on the host is one of the machine engine's networks, or a leak.
    machine = {f"br-{line.split()[0][:12]}" for line in after["networks"]}
    assert not after["bridges"] - bridges_before - machine - {"docker0"}
    assert subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True,
                          timeout=60).returncode == 0


def _cli_images(docker: list[str], install: str = "") -> dict[str, str]:
    """The CLI images on an engine (``docker`` + args): id -> its install spec's digest;
    only those of spec ``install`` if given."""
    label = f"label={LABEL}.install={install}" if install else f"label={LABEL}.kind=cli"
    ids = subprocess.run([*docker, "images", "-q", "--filter", label], capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()
    if not ids:
        return {}
    out = subprocess.run([*docker, "image", "inspect", "--format",
                          f'{{{{.Id}}}} {{{{index .Config.Labels "{LABEL}.install"}}}}',
                          *sorted(set(ids))], capture_output=True, text=True, timeout=60,
                         check=True)
    return dict(line.split() for line in out.stdout.splitlines())


def test_cli_hooks_and_transcripts_come_home_from_the_nodes_engine(
        tmp_path: Path, remote_node: OneRemoteNode) -> None:
    second = remote_node.second
    since = str(int(time.time()) - 1)
    two = cli("run=two", *PANEL, "executor=ray",
              f"executor.address={remote_node.cluster.address}", "executor.per_node=1",
              results=tmp_path, env=RAY_ENV, timeout=900,  # the key is the node's only
              subprocess_=True)  # a Ray driver
    assert two.returncode == 0, two.stderr
    assert "node second: image [1/1] recover-wal-orders" in two.stderr
    # The CLI was installed into a derived image on the node's engine, and both attempts
    # ran there; the machine's engine ran none of them.
    [install] = set(_cli_images(["docker", "--host", second.host]).values())
    theirs = _cli_images(["docker"], install)  # on the machine's engine before ours
    ran = _created(["docker", "--host", second.host], since, "two")
    records = read_records(tmp_path / "rtcli" / "two" / "attempts.jsonl").finished
    assert sorted(ran) == sorted(r.attempt_id for r in records) and len(records) == 2
    assert not _created(["docker"], since, "two")
    by_arm = {r.arm: r for r in records}
    assert all(r.cause is None and r.valid for r in records), \
        [(r.attempt_id, r.cause, r.error, r.invalid_reason) for r in records]
    # The hook events reached the policies on the node, and the deny reached the CLI.
    assert by_arm["real"].decisions == 1 and by_arm["real"].events > 0
    assert by_arm["baseline"].events == 0
    attempts = tmp_path / "rtcli" / "two" / "attempts" / "recover-wal-orders"
    steps = _lines(attempts / "real" / "r0" / "logs" / "agent" / "commands.jsonl")
    assert [s["denied"] for s in steps if s["kind"] == "command"] == [True, False, False]
    assert steps[1]["output"] == "the key is ***\n"  # the node's key, redacted
    assert not (attempts / "real" / "r0" / "logs" / "agent" / "denied-ran.txt").exists()
    assert (attempts / "baseline" / "r0" / "logs" / "agent" / "denied-ran.txt").stat().st_size
    assert _lines(attempts / "real" / "r0" / "hooks" / "state" / "activity.jsonl")
    assert _lines(attempts / "real" / "r0" / "logs" / "agent" / "cli-stdout.jsonl")

    try:
        one = cli("run=one", *PANEL, results=tmp_path, env=AGENT_ENV, timeout=900,
                  subprocess_=True)  # as the Ray run: the two compared
        assert one.returncode == 0, one.stderr
    finally:  # the CLI image this run made on the machine's engine (task images stay)
        ours = sorted(set(_cli_images(["docker"], install)) - set(theirs))
        if ours:
            subprocess.run(["docker", "rmi", "-f", *ours], capture_output=True, timeout=120)
    runs = tmp_path / "rtcli"
    local = read_records(runs / "one" / "attempts.jsonl").finished
    assert _fields(records) == _fields(local)
    assert {r.node for r in records} == {"second"} and {r.node for r in local} == {None}
    assert _layout(runs / "two") == _layout(runs / "one")
    (tmp_path / "plan.yaml").write_text(PLAN)
    for command, extra in (("analyze", ["--plan", str(tmp_path / "plan.yaml")]), ("view", [])):
        # the analysis and the explorer see no difference
        said = [_read(command, runs / run, tmp_path / command / run, extra)
                for run in ("two", "one")]
        assert said[0] == said[1]
    assert _files(tmp_path / "view" / "two") == _files(tmp_path / "view" / "one")
    for path in runs.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def _created(docker: list[str], since: str, run: str) -> list[str]:
    """Attempt ids of the containers ``run`` created on an engine since ``since``."""
    out = subprocess.run(
        [*docker, "events", "--since", since, "--until", str(int(time.time()) + 1),
         "--filter", "type=container", "--filter", "event=create", "--filter",
         f"label={LABEL}.run={run}", "--format", "{{json .Actor.Attributes}}"],
        capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line)[f"{LABEL}.attempt"] for line in out.stdout.splitlines()]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _fields(records: list[AttemptRecord]) -> dict[str, dict[str, Any]]:
    return {r.attempt_id: {k: v for k, v in r.model_dump(mode="json").items()
                           if k not in UNTIMED} for r in records}


def _layout(run_dir: Path) -> dict[str, set[str]]:
    """Per attempt, the files of its folder (logs and hooks; relative paths)."""
    return {str(d.relative_to(run_dir / "attempts")): {
        str(f.relative_to(d)) for f in d.rglob("*") if f.is_file()}
        for d in (run_dir / "attempts").glob("*/*/r*")}


def _files(folder: Path) -> set[str]:
    return {str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file()}


def _read(command: str, run_dir: Path, out: Path, extra: list[str]) -> str:
    """``fire-exp analyze`` or ``view`` of a run: what it printed, paths made neutral."""
    proc = subprocess.run([sys.executable, "-m", "fire_exp", command, str(run_dir), "--out",
                           str(out), *extra], cwd=ROOT, env=cli_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.replace(str(out), "OUT").replace(str(run_dir), "RUN")
