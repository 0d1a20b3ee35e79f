"""Secrets never land in an attempt's files; a verifier reward outside [0, 1] is no score."""

from __future__ import annotations

import ctypes
import uuid
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.base import OracleAgent
from fire_exp.environments import LocalEnvironment, parse_reward
from fire_exp.records import Cause
from fire_exp.tasks import load_task

KEY = "sk-test-" + uuid.uuid4().hex  # a fresh value: any hit on disk is a leak


def _task(root: Path, solve: str, test_sh: str = "echo 1 > $FIRE_LOGS/verifier/reward.txt"
          ) -> Path:
    task = root / "task"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text('schema_version = "1.1"\n[verifier]\ntimeout_sec = 10\n')
    (task / "instruction.md").write_text("Do the thing.\n")
    (task / "environment" / "Dockerfile").write_text("FROM fire-exp/base:bookworm\n")
    (task / "environment" / "setup.sh").write_text("mkdir -p $FIRE_WORKDIR\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh + "\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve)
    return task


def test_no_file_of_an_attempt_holds_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             attempt: Any) -> None:
    monkeypatch.setenv("FIRE_TEST_API_KEY", KEY)
    solve = (f'echo "stdout {KEY}"; echo "stderr {KEY}" >&2\n'
             f'echo "{KEY}" > "$FIRE_LOGS/agent/note.txt"\n'
             f'(sleep 0.2; echo "late {KEY}") &\n'  # background output: the terminal log
             'sleep 0.5\n'
             'echo "key vars: $(env | grep -c FIRE_TEST_API_KEY)"\n')
    task = load_task(_task(tmp_path, solve))
    record = attempt(task, lambda t, d, i: LocalEnvironment(t, d, i), OracleAgent())
    assert record.cause is None and record.reward == 1.0
    attempt_dir = next(p for p in tmp_path.iterdir() if p.name.startswith("task-oracle"))
    files = [p for p in attempt_dir.rglob("*") if p.is_file()]
    assert files, "the attempt wrote no files"
    leaks = [p for p in files if KEY.encode() in p.read_bytes()]
    assert not leaks, f"the key was written to {leaks}"
    commands = (attempt_dir / "logs" / "agent" / "commands.jsonl").read_text()
    assert "stdout ***" in commands and "stderr ***" in commands
    assert "key vars: 0" in commands  # the command's environment had no key variable
    assert "late ***" in (attempt_dir / "logs" / "agent" / "terminal.log").read_text()
    assert (attempt_dir / "logs" / "agent" / "note.txt").read_text().strip() == "***"


def test_the_local_environment_makes_the_harness_non_dumpable(tmp_path: Path) -> None:
    task = load_task(_task(tmp_path, "true\n"))
    with LocalEnvironment(task, tmp_path / "a", f"t-{uuid.uuid4().hex[:8]}"):
        libc = ctypes.CDLL(None)
        assert libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE: /proc/<us>/environ hidden


@pytest.mark.parametrize(("txt", "js", "raw"), [
    ("5", None, 5.0), ("-0.3", None, -0.3), ("1.5", None, 1.5),
    (None, '{"reward": 7}', 7.0), (None, '{"reward": 1.0000001}', 1.0000001),
])
def test_a_reward_outside_the_unit_interval_is_a_verifier_failure(
        txt: str | None, js: str | None, raw: float) -> None:
    reward, rewards, cause, message = parse_reward(js, txt)
    assert reward is None and cause is Cause.VERIFIER_FAILED
    assert rewards["reward"] == raw and "outside [0, 1]" in message


@pytest.mark.parametrize("edge", ["0", "1", "0.25"])
def test_rewards_on_the_unit_interval_are_kept(edge: str) -> None:
    assert parse_reward(None, edge)[0] == float(edge)


def test_a_verifier_writing_5_records_a_failure_with_the_raw_value(
        tmp_path: Path, attempt: Any) -> None:
    task = load_task(_task(tmp_path, "true\n", "echo 5 > $FIRE_LOGS/verifier/reward.txt"))
    record = attempt(task, lambda t, d, i: LocalEnvironment(t, d, i), OracleAgent())
    assert record.cause is Cause.VERIFIER_FAILED and record.reward is None
    assert not record.passed and "reward 5 lies outside" in (record.error or "")
