"""What the agent leaves in its folders cannot fail the harness (issue 36, points 3-5).

One attempt, the fake CLI (tests/fixtures/cli_container/fake_cli.py) playing an agent that
plants what used to make fetching the logs raise (a symbolic link to ``/etc/hostname``, a
FIFO, a hard link to a file of the harness's), a sparse file far past the fetch cap, and
the key as a file name and as a link's target, then solves the task. The policy holds:
the verifier runs and its reward counts, the attempt is valid and not replaceable, every
member left out or renamed is named in the record, and the key is nowhere in the results.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.paths import SUITES_DIR
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.records import REPLACEABLE_CAUSES, AttemptRecord
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.tasks.loader import load_task
from tests.agents.test_cli_container_docker import (
    KEY,
    agent_logs,
    engine,
    mounted,
    script,
    solve_wal,
)

__all__ = ["engine", "script"]  # the fixtures, imported for pytest
pytestmark = pytest.mark.docker


def _attempt(tmp_path: Path, fetch_cap_mb: int) -> AttemptRecord:
    task = load_task(SUITES_DIR / "fire-mini" / "recover-wal-orders")
    real, controls = load_portfolio("fire-core"), load_portfolio("controls")
    env = DockerEnvironment(task, tmp_path / "attempt", "h36-fetch",
                            fetch_cap_mb=fetch_cap_mb)
    spec = AttemptSpec(run="r", panel="p", attempt_id="h36-fetch", task=task.name,
                       cohort="eligible", arm="real", replicate=0, order=0, seed=0,
                       portfolio=str(real.path), controls=str(controls.path))
    return run_attempt(spec, env, mounted(ClaudeCodeAgent),
                       build_arm("real", real, controls).families, real.families,
                       rng=np.random.default_rng(0))


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*")]


def test_links_fifos_a_huge_file_and_the_key_as_a_name_leave_a_valid_scored_attempt(
        engine: Any, script: Any, tmp_path: Path) -> None:
    script([solve_wal(),
            "echo kept > /logs/agent/kept.txt",
            "ln -s /etc/hostname /logs/agent/x && mkfifo /logs/agent/f",
            "ln -s ../../../etc/passwd /logs/agent/up",
            "ln -s kept.txt /logs/agent/inside",
            f"echo named > /logs/agent/{KEY}.txt && ln -s {KEY}.txt /logs/agent/to-key",
            "mkdir /logs/agent/zz && truncate -s 3G /logs/agent/zz/sparse"])
    record = _attempt(tmp_path, fetch_cap_mb=2)
    assert record.cause is None and record.valid, (record.cause, record.error)
    assert record.cause not in REPLACEABLE_CAUSES
    assert record.passed and record.reward == 1.0  # the verifier ran and its reward counts
    withheld = "\n".join(record.withheld)
    assert "logs/agent/x: a symbolic link out of the folder (-> /etc/hostname)" in withheld
    assert "logs/agent/f: a FIFO" in withheld
    assert "logs/agent/up: a symbolic link out of the folder" in withheld
    assert "logs/agent/zz/sparse (3221225472 bytes) and every member after it: past what " \
        "the fetch cap left" in withheld
    logs = agent_logs(tmp_path)
    assert (logs / "inside").is_symlink() and (logs / "inside").read_text() == "kept\n"
    assert not (logs / "x").exists() and not (logs / "f").exists()
    assert sum(p.stat().st_size for p in _files(tmp_path) if p.is_file()) < 64 << 20
    # The key as a name and as a link's target: renamed and said so, nowhere in the results.
    assert (logs / "***.txt").read_text() == "named\n"
    assert os.readlink(logs / "to-key") == "***.txt"
    assert "logs/agent/***.txt: renamed: its name held a secret" in withheld
    assert "logs/agent/to-key: link target redacted: it held a secret" in withheld
    for path in _files(tmp_path):
        assert KEY not in str(path)
        if path.is_symlink():
            assert KEY not in os.readlink(path)
        elif path.is_file():
            assert KEY.encode() not in path.read_bytes()
    assert KEY not in record.model_dump_json()
