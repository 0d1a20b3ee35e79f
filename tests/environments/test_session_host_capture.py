"""The session host's output capture and watchdog, on this machine (no Docker needed).

The host runs as a plain process here, as in the local environment; the container tests
(tests/agents/test_wall_sabotage_docker.py) run it as root with the agent unprivileged.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments import inbox
from fire_exp.environments.inbox import procs


class Host:
    """One session host process and its request channel."""

    def __init__(self, tmp_path: Path) -> None:
        self.marker = f"h27b-capture-{os.getpid()}-{id(self):x}"
        self.proc = subprocess.Popen(
            [sys.executable, str(inbox.PROGRAM), self.marker, str(tmp_path / "term.log")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path,
            start_new_session=True)

    def request(self, **req: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return reply

    def alive(self) -> list[int]:
        return [p for p in procs.marked_processes(self.marker)
                if procs.is_alive(p)]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    made = Host(tmp_path)
    yield made
    if made.proc.poll() is None:
        made.proc.kill()
        made.proc.wait()
    for pid in made.alive():
        os.kill(pid, 9)


def _when(predicate: Any, what: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_the_capture_is_the_hosts_own_file_with_its_size_and_digest(host: Host,
                                                                    tmp_path: Path) -> None:
    folder = tmp_path / "capture"
    reply = host.request(op="exec", command="echo out; echo err >&2; exit 3", timeout=30,
                         capture=str(folder))
    assert reply["exit_code"] == 3 and reply["holders"] == [] and reply["signal"] is None
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name, text in (("stdout", b"out\n"), ("stderr", b"err\n")):
        made = reply["capture"][name]
        assert (folder / name).read_bytes() == text
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
        assert made == {"path": str(folder / name), "bytes": len(text),
                        "sha256": hashlib.sha256(text).hexdigest()}
    assert reply["stdout"] == reply["stderr"] == ""  # not in the terminal's reply


def test_a_process_holding_the_output_past_the_commands_end_is_named_and_killed(
        host: Host, tmp_path: Path) -> None:
    folder = tmp_path / "capture"
    # A background job keeps the command's stdout and writes after the command ended.
    reply = host.request(op="exec", timeout=30, capture=str(folder), command=(
        f"(sleep 2; echo forged; touch {tmp_path}/wrote) & echo real"))
    assert reply["holders"]  # named in the reply ...
    time.sleep(3)
    assert not (tmp_path / "wrote").exists()  # ... and killed before it wrote
    assert (folder / "stdout").read_bytes() == b"real\n"
    assert reply["capture"]["stdout"]["bytes"] == 5


def test_a_command_killed_by_a_signal_says_which(host: Host, tmp_path: Path) -> None:
    reply = host.request(op="exec", command="exec sleep 30 & kill -TERM $$; wait",
                         timeout=30, capture=str(tmp_path / "capture"))
    assert reply["signal"] == 15 and not reply["timed_out"]
    timed = host.request(op="exec", command="sleep 30", timeout=0.5)
    assert timed["timed_out"] and timed["signal"] is None  # the host's kill, not the agent's


def test_when_the_harness_is_gone_the_watchdog_kills_every_process_of_the_attempt(
        host: Host) -> None:
    reply = host.request(op="exec", timeout=30, command=(
        "sleep 301 & setsid nohup sleep 302 > /dev/null 2>&1 < /dev/null & echo started"))
    assert reply["stdout"] == "started\n"
    _when(lambda: len(host.alive()) >= 2, "the commands never started")
    assert host.proc.stdin is not None
    host.proc.stdin.close()  # the harness died: its end of the host's input closed
    _when(lambda: not host.alive(), "a process of the attempt outlived its harness")
    assert host.proc.wait(timeout=30) == 0


def test_after_a_hangup_the_end_of_input_kills_nothing(host: Host) -> None:
    host.request(op="exec", timeout=30,
                 command="setsid nohup sleep 303 > /dev/null 2>&1 < /dev/null &")
    _when(lambda: bool(host.alive()), "the service never started")
    ended = host.request(op="hangup", grace=0.1)
    assert ended["survivors"]
    assert host.proc.stdin is not None
    host.proc.stdin.close()
    host.proc.wait(timeout=30)
    time.sleep(0.5)
    assert host.alive() == ended["survivors"]  # the detached service lives on
