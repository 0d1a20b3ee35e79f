"""Ctrl-C mid-panel: in-flight attempts are abandoned cleanly and rerun on resume.

Docker: when ``environment=docker`` is merged, the same test should also list containers
labelled with the run's attempts and find none (not written yet: no Docker environment on
this branch).
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fire_exp.records import read_records
from tests.conftest import run_cli
from tests.runner.runner_helpers import ROOT, SMALL, cli_env, leftovers
from tests.signals import popen_interruptible


def _wait_for(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the run never reached the point to interrupt"
        time.sleep(0.05)


@pytest.mark.slow
def test_sigint_leaves_no_process_and_resumes(tmp_path: Path) -> None:
    """Slow: a panel of slowly thinking attempts interrupted mid-way, then resumed."""
    attempts = tmp_path / "rt" / "int" / "attempts.jsonl"
    # Slow thinking keeps attempts in flight (with their processes) when the signal comes.
    proc = popen_interruptible(
        [sys.executable, "-m", "fire_exp", "run", *SMALL, f"results_dir={tmp_path}",
         "run=int", "agent.think_s=0.4"], cwd=ROOT, env=cli_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _wait_for(lambda: attempts.exists() and
                  len(read_records(attempts).finished) >= 1 and len(leftovers(tmp_path)) >= 1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "resume=int" in err
    assert not leftovers(tmp_path)
    read = read_records(attempts)
    finished = {r.attempt_id for r in read.finished}
    in_flight = {s.attempt_id for s in read.started} - finished
    assert in_flight  # abandoned, not recorded as finished
    assert 1 <= len(finished) < 10 and not read.torn_tail
    assert all(r.cause is None or r.cause.value != "cancelled" for r in read.finished)

    # the printed command resumes (same overrides: the preregistration is verified again)
    command = shlex.split(err.split("Resume with")[1].strip().splitlines()[0])
    assert command[:2] == ["fire-exp", "run"] and command[-1] == "resume=int"
    resumed = run_cli(*command[1:])  # in this process: the command is what is tested
    assert resumed.returncode == 0, resumed.stderr
    ids = [r.attempt_id for r in read_records(attempts).finished]
    assert len(ids) == 10 and len(set(ids)) == 10
    assert in_flight <= set(ids)
