"""The Ray executor on a real two-node cluster (head + worker node on loopback).

The same panel gives the same attempts (ids and rewards) as the local executor; a worker
killed mid-attempt becomes a ``harness_failed`` record, replaced under the frozen rule.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_exp.records import Cause, read_records
from fire_exp.runner.cleanup import attempt_processes, marker_owner
from fire_exp.runner.ray_executor import scratch_root
from tests.runner.ray_cluster import Cluster, start_cluster, token_env
from tests.runner.runner_helpers import ROOT, SMALL, cli, cli_env
from tests.signals import popen_interruptible

pytestmark = [pytest.mark.ray, pytest.mark.slow]
RAY_ENV = token_env()  # the cluster and its drivers only (ray_cluster.py)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = start_cluster(cli_env(RAY_ENV))
    try:
        yield cluster
    finally:
        cluster.stop()
        assert not cluster.leftovers()


def _rewards(path: Path) -> dict[str, float | None]:
    return {r.attempt_id: r.reward for r in read_records(path).finished}


def test_ray_cluster_gives_the_local_attempts(tmp_path: Path, cluster: Cluster) -> None:
    local = cli("run=local", results=tmp_path)
    assert local.returncode == 0, local.stderr
    remote = cli("run=ray", "executor=ray", f"executor.address={cluster.address}",
                 results=tmp_path, env=RAY_ENV, timeout=300, subprocess_=True)  # a Ray driver
    assert remote.returncode == 0, remote.stderr
    expected = _rewards(tmp_path / "rt" / "local" / "attempts.jsonl")
    got = read_records(tmp_path / "rt" / "ray" / "attempts.jsonl").finished
    assert len(got) == 10 and {r.attempt_id: r.reward for r in got} == expected
    assert {r.attempt_id: r.seed for r in got} == {
        r.attempt_id: r.seed for r in read_records(tmp_path / "rt" / "local" /
                                                   "attempts.jsonl").finished}
    for record in got:  # the logs came back from the workers before the line was written
        logs = tmp_path / "rt" / "ray" / record.log_dir / "logs"
        assert (logs / "verifier" / "result.json").is_file()
        assert (logs / "agent" / "commands.jsonl").is_file()


def test_worker_death_is_replaced(tmp_path: Path, cluster: Cluster) -> None:
    rule = "+panel.replacement={max_replacements:1,causes:[harness_failed]}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fire_exp", "run", *SMALL, f"results_dir={tmp_path}",
         "run=kill", "executor=ray", f"executor.address={cluster.address}", rule,
         "agent.think_s=0.3"], cwd=ROOT, env=cli_env(RAY_ENV), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        victim = _attempt_owner(cluster, deadline=time.monotonic() + 120)
        os.kill(victim[0], signal.SIGKILL)  # the Ray worker running that attempt
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    records = read_records(tmp_path / "rt" / "kill" / "attempts.jsonl").finished
    by_id = {r.attempt_id: r for r in records}
    lost = by_id[victim[1]]
    assert lost.cause is Cause.HARNESS_FAILED and "lost" in (lost.error or "")
    assert lost.lineage.replaced_by == victim[1] + "#1"
    assert by_id[victim[1] + "#1"].lineage.replaces == victim[1]
    assert len(records) == 11 and len(by_id) == 11
    assert "replacements per arm: " + victim[1].split("/")[1] + " 1" in out
    assert not [pid for pid, marker in attempt_processes(scratch_root()).items()
                if cluster.descends(pid) or marker.startswith(victim[2])]
    assert not list(scratch_root().glob(f"attempt-{victim[0]}-*"))  # swept


def _attempt_owner(cluster: Cluster, deadline: float) -> tuple[int, str, str]:
    """(worker pid, attempt id, marker prefix) of an attempt running on the cluster."""
    while time.monotonic() < deadline:
        for marker in attempt_processes(scratch_root()).values():
            owner = marker_owner(marker)
            if owner is not None and cluster.descends(owner[1]):
                task, arm, rep = owner[0].split(".")
                return owner[1], f"{task}/{arm}/{rep}", marker.rsplit(".", 1)[0] + "."
        time.sleep(0.05)
    raise AssertionError("no attempt ever ran on the cluster")


def test_sigint_cancels_ray_attempts(tmp_path: Path, cluster: Cluster) -> None:
    proc = popen_interruptible(
        [sys.executable, "-m", "fire_exp", "run", *SMALL, f"results_dir={tmp_path}",
         "run=int", "executor=ray", f"executor.address={cluster.address}",
         "agent.think_s=2"], cwd=ROOT, env=cli_env(RAY_ENV), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _attempt_owner(cluster, deadline=time.monotonic() + 120)
        seen = attempt_processes(scratch_root())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "resume=int" in err
    now = attempt_processes(scratch_root())
    assert not set(seen) & set(now)
    assert not [pid for pid in now if cluster.descends(pid)]
    read = read_records(tmp_path / "rt" / "int" / "attempts.jsonl")
    assert {s.attempt_id for s in read.started} - {r.attempt_id for r in read.finished}
    assert all(r.cause is not Cause.CANCELLED for r in read.finished)
