"""``run_cli`` calls ``fire-exp run`` in the test's process (``tests/conftest.py``): a run
must put back everything of the process it changed, or one test's run would reach the next
test through its worker."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hydra.core.global_hydra import GlobalHydra

from fire_exp.runner.cleanup import attempt_processes
from tests.conftest import IN_PROCESS, run_cli

SMALL = ["panel=demo", "panel.attempts=1", "panel.eligible=[serve-status-page]",
         "panel.silent=[csv-column-stats]", "panel.arms=[real,baseline]", "analyze=false",
         "run=r"]


def process_state() -> dict[str, Any]:
    """What a command could leave changed in this process."""
    root = logging.getLogger()
    handled = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    return {"signals": {s: signal.getsignal(s) for s in handled}, "cwd": os.getcwd(),
            "env": dict(os.environ), "argv": list(sys.argv), "path": list(sys.path),
            "logging": (root.level, list(root.handlers), logging.root.manager.disable),
            "hydra": GlobalHydra.instance().is_initialized(),
            "threads": sorted(t.ident or 0 for t in threading.enumerate()),
            "streams": (sys.stdout, sys.stderr, sys.stdin)}


def children() -> list[str]:
    """This process's live children (``ps`` itself aside)."""
    stat = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return [pid for pid in stat.read_text().split()
            if Path(f"/proc/{pid}").exists()
            and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]]


def test_run_is_called_in_process() -> None:
    assert "run" in IN_PROCESS


@pytest.mark.slow
def test_a_run_in_process_puts_back_what_it_changed(tmp_path: Path) -> None:
    """A real panel (four attempts, the local environment, their processes and the
    executor's threads) and a refused one: afterwards the signal handlers, the working
    folder, the environment, ``sys.argv``, logging, Hydra's global state, the threads
    and the child processes are as before. Slow (3-10 s): the attempts are real, as the
    runs it stands for."""
    run_cli("freeze", "--help")  # imports once, so what an import creates is not counted
    before = process_state()
    # Children this worker already had (another test's module fixture: a server) are not
    # the run's: only those that appear during it are judged.
    earlier = set(children())
    proc = run_cli("run", *SMALL, f"results_dir={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[4/4]" in proc.stderr  # the progress lines are the command's stderr
    refused = run_cli("run", "panel=demo", "seed=-1", f"results_dir={tmp_path / 'no'}")
    assert refused.returncode == 2 and "seed: -1 is negative" in refused.stderr
    after = process_state()
    assert {k: v for k, v in after.items() if before[k] != v} == {}
    assert sorted(set(children()) - earlier) == [] and attempt_processes(tmp_path) == {}
