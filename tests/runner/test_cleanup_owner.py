"""A resumed run (and a Ray node) kills the processes of attempts whose driver died
(``runner.cleanup.reap(orphans_only=True)``). The driver is named in the marker by its pid
and its start time: once the pids wrap (32,768 on this project's machines) a dead driver's
pid may name a living process, which the pid alone took for the owner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fire_exp.environments.inbox.procs import start_time
from fire_exp.runner.cleanup import reap


def _attempt_process(root: Path, marker: str) -> subprocess.Popen[bytes]:
    work = root / "attempt" / "box" / "work"
    work.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            env=os.environ | {"FIRE_ATTEMPT": marker,
                                              "FIRE_WORKDIR": str(work)})


def test_an_orphan_whose_owners_pid_now_names_another_process_is_killed(
        tmp_path: Path) -> None:
    me, started = os.getpid(), start_time(os.getpid())
    owned = _attempt_process(tmp_path / "live", f"a.{me}-{started}.1")
    reused = _attempt_process(tmp_path / "dead", f"a.{me}-{int(str(started)) - 1}.1")
    by_pid = _attempt_process(tmp_path / "old", f"a.{me}.1")  # a marker of before: the pid
    try:
        assert reap(tmp_path / "live", orphans_only=True) == []
        assert reap(tmp_path / "old", orphans_only=True) == []
        assert reap(tmp_path / "dead", orphans_only=True) == [reused.pid]
        assert reused.wait(timeout=30) == -9  # bounds the wait; SIGKILL ends it at once
        assert owned.poll() is None and by_pid.poll() is None
    finally:
        for proc in (owned, reused, by_pid):
            proc.kill()
            proc.wait()
