"""On a Ray node an attempt's owner is the node's long-lived Ray worker, so the cleanup also
takes a container whose attempt's scratch folder is gone as ended (``scratch=``); a live
attempt's container, and one kept for inspection, stay."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from fire_exp.environments.docker_cleanup import why_kept
from fire_exp.environments.images import LABEL


def _labels(run_dir: Path, *, keep: bool = False) -> dict[str, str]:
    labels = {f"{LABEL}.owner-host": socket.gethostname(),
              f"{LABEL}.owner-pid": str(os.getppid()),  # alive: the worker lives on
              f"{LABEL}.run-dir": str(run_dir)}
    return labels | ({f"{LABEL}.keep": "1"} if keep else {})


def test_a_container_whose_scratch_folder_is_gone_has_ended(tmp_path: Path) -> None:
    scratch = tmp_path / "fire-exp-ray"
    live = scratch / "attempt-12-live" / "run"
    live.mkdir(parents=True)
    ended = scratch / "attempt-12-ended" / "run"  # the attempt removed its folder
    assert why_kept(_labels(ended), scratch=scratch) is None
    assert why_kept(_labels(live), scratch=scratch) == f"its run is alive (pid {os.getppid()})"
    assert why_kept(_labels(ended, keep=True), scratch=scratch) is not None
    # Without a scratch root (a run start on the driver), a live owner keeps it.
    assert why_kept(_labels(ended)) is not None
    # A run folder outside the scratch root is no node attempt's: the owner decides.
    assert why_kept(_labels(tmp_path / "elsewhere" / "run"), scratch=scratch) is not None
    other_host = _labels(ended) | {f"{LABEL}.owner-host": "another-machine"}
    assert why_kept(other_host, scratch=scratch) is not None


def test_a_living_pid_that_started_after_the_owner_is_another_process() -> None:
    """The pids wrap (32768 on this project's machines, passed in minutes by the suite): a
    dead run's pid may name a living process by then. The owner's start time tells them
    apart; a container made before owners carried it is judged by the pid alone."""
    from fire_exp.environments.images import owner_labels
    from fire_exp.environments.inbox.procs import start_time

    own = owner_labels()
    assert own[f"{LABEL}.owner-start"] == start_time(os.getpid())
    parent = {f"{LABEL}.owner-host": socket.gethostname(),
              f"{LABEL}.owner-pid": str(os.getppid())}
    started = start_time(os.getppid())
    assert started is not None
    assert why_kept(parent | {f"{LABEL}.owner-start": started}) is not None
    assert why_kept(parent | {f"{LABEL}.owner-start": str(int(started) - 1)}) is None
    assert why_kept(parent) is not None  # no start time: the pid alone, alive
