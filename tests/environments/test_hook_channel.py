"""The hook channel's wall, without a container: the token, the heartbeat, the inbox, the
line cap and channel.json. The relay runs with the host's bash; the Docker tests
(tests/agents/test_wall_channel_docker.py) try the same tricks from inside a box."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments.docker_channel import ExecChannel
from fire_exp.environments.hook_transport import (
    HEARTBEAT_GAP_S,
    MAX_PAYLOAD,
    HookServer,
    RelayHooks,
    script,
)

TOKEN = "00112233445566778899aabbccddeeff"
MARK = "FIRE_TEST_HOOK_CHANNEL"  # in the shims' environment: which channel started them


class PipeStream:
    """hook_relay.sh run by the host's bash, as the LineStream a box's open_stream gives."""

    def __init__(self, spool: Path, max_payload: int = MAX_PAYLOAD) -> None:
        self.proc = subprocess.Popen(
            ["bash", str(script("hook_relay.sh")), str(spool), str(max_payload)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self.oversize = 0
        self.max_line = 1 << 24  # nominal: readline drops nothing, so oversize stays 0

    def read_line(self) -> bytes:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().rstrip(b"\n")

    def send_line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        finally:  # a relay stuck in a failing test goes too, with its children
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


class Channel:
    """A relay on the host, served by RelayHooks, recording what reached the policies."""

    def __init__(self, tmp_path: Path, max_payload: int = MAX_PAYLOAD) -> None:
        self.spool = tmp_path / "spool"
        self.report_path = tmp_path / "hooks" / "channel.json"
        self.asked: list[tuple[str, bytes]] = []
        self.mark = secrets.token_hex(8)
        self.stream = PipeStream(self.spool, max_payload)
        self.stream.send_line(f"{TOKEN}\n".encode())
        self.hooks = RelayHooks(self.stream, self.answer, TOKEN, self.report_path)
        self.hooks.server.start(10)

    def answer(self, event: str, payload: bytes) -> str:
        self.asked.append((event, payload))
        return '{"decision": "block"}'

    def shim(self, event: str, payload: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["sh", str(script("hook_shim.sh")), event], input=payload,
                              capture_output=True, timeout=30,
                              env={"PATH": os.environ["PATH"], MARK: self.mark,
                                   "FIRE_HOOK_SPOOL": str(self.spool), "FIRE_HOOK_WAIT_S": "5"})

    def shim_command_lines(self) -> list[str]:
        """The command lines of this channel's shims and their children (the environment
        mark they inherit), never another test's: other workers run shims meanwhile."""
        wanted, lines = f"{MARK}={self.mark}".encode(), []
        for name in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if wanted in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                    cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
                    lines.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
        return lines

    def submit(self, line: str) -> None:
        """Write a line into the relay's FIFO, as a shim (or an agent) does."""
        with open(self.spool / "requests", "w") as fifo:
            fifo.write(line + "\n")

    def close(self) -> dict[str, Any]:
        self.hooks.close()
        report: dict[str, Any] = json.loads(self.report_path.read_text())
        return report


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[Channel]:
    opened = Channel(tmp_path)
    yield opened
    if opened.stream.proc.poll() is None:
        opened.hooks.close()


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 20  # bounds the wait; not an assertion about speed
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_clean_channel_answers_and_reports_no_tamper(channel: Channel) -> None:
    done = channel.shim("PreToolUse", b'{"n": 1}')
    assert done.returncode == 0 and done.stdout == b'{"decision": "block"}'
    report = channel.close()
    assert channel.asked == [("PreToolUse", b'{"n": 1}')]
    assert (report["requests"], report["answered"], report["tamper"]) == (1, 1, [])
    assert report["refused"] == {"bad_token": 0, "malformed": 0, "oversize": 0, "odd_file": 0,
                                 "fifo_garbage": 0, "stray_done": 0}
    assert report["relay_lost"] is False
    assert not list((channel.spool / "answers").iterdir())  # the relay removed the answer


def test_lines_without_the_token_are_refused_both_ways(channel: Channel) -> None:
    relay = channel.stream.proc.pid
    # Forged answers down the relay's stdin: ignored (no answer file appears).
    with open(f"/proc/{relay}/fd/0", "wb") as stdin:
        stdin.write(b"ANS 1-1 e30=\nANS ffffffffffffffffffffffffffffffff 1-1 e30=\n")
    # Forged requests up the relay's stdout: refused; the third knows the token (as only a
    # reader of the relay's memory could) but not the protocol.
    with open(f"/proc/{relay}/fd/1", "wb") as stdout:
        stdout.write(b"REQ 0000 2-2 PreToolUse e30=\nREQ 2-2 PreToolUse e30=\n"
                     + f"REQ {TOKEN} 3-3 PreToolUse !!\n".encode())
    # The channel still serves; its answer came down the pipe after the forged ones.
    assert channel.shim("Stop", b"{}").returncode == 0
    assert not (channel.spool / "answers" / "1-1.out").exists()
    report = channel.close()
    assert channel.asked == [("Stop", b"{}")]
    assert report["refused"]["bad_token"] == 2 and report["refused"]["malformed"] == 1
    assert any("2 line(s) on the hook channel without the attempt's token" in r
               for r in report["tamper"])


def test_symlinks_and_fifos_in_the_inbox_are_refused(channel: Channel, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root's file\n")
    (channel.spool / "inbox" / "1-1.in").symlink_to(secret)
    os.mkfifo(channel.spool / "inbox" / "2-2.in")  # would block a relay that read it
    (channel.spool / "inbox" / "3-3.in").mkdir()
    for request in ("1-1", "2-2", "3-3"):
        channel.submit(f"{request} PreToolUse")
    assert channel.shim("PreToolUse", b"{}").returncode == 0  # not blocked
    report = channel.close()
    assert channel.asked == [("PreToolUse", b"{}")]
    assert report["refused"]["odd_file"] == 3
    assert "3 symlink(s) or special file(s) in the hook inbox" in report["tamper"]
    assert secret.read_text() == "root's file\n"


def test_garbage_on_the_fifo_is_tamper_and_loses_no_request(channel: Channel) -> None:
    fifo = os.open(channel.spool / "requests", os.O_WRONLY)
    try:
        os.write(fifo, b"not a request\n")
        os.write(fifo, b"xx")  # no newline: the shim's line merges with it
        done = channel.shim("PreToolUse", b'{"n": 2}')  # served all the same
    finally:
        os.close(fifo)
    assert done.returncode == 0 and done.stdout == b'{"decision": "block"}'
    report = channel.close()
    assert channel.asked == [("PreToolUse", b'{"n": 2}')]
    assert report["refused"]["fifo_garbage"] >= 2
    assert any("line(s) on the hook relay's FIFO it could not parse" in r
               for r in report["tamper"])


def test_answers_are_keyed_a_done_for_another_answer_is_tamper(channel: Channel) -> None:
    # The old trick: "done ID" for every request id, to remove answers before their shim
    # reads them. The relay wants the shim's key, which only the shim knows.
    stop = threading.Event()

    def starve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                for line in channel.shim_command_lines():
                    if "printf" not in line:
                        continue
                    for word in line.split():
                        if "-" in word and word.replace("-", "").isdigit():
                            channel.submit(f"done {word}")
                channel.submit("done 1-1 " + "0" * 32)
            time.sleep(0.01)

    thief = threading.Thread(target=starve, daemon=True)
    thief.start()
    try:
        results = [channel.shim("Stop", b"{}") for _ in range(3)]
    finally:
        stop.set()
        thief.join(10)
    assert [(r.returncode, r.stdout) for r in results] == [(0, b'{"decision": "block"}')] * 3
    # Each shim's done removed its own answer: the relay reads the last one after its shim
    # has exited (a FIFO write does not wait for the reader), so wait for it, bounded.
    wait_for(lambda: not list((channel.spool / "answers").iterdir()), "an answer was left")
    report = channel.close()
    assert report["refused"]["stray_done"] >= 1
    assert any("'done' line(s) on the hook relay's FIFO for answers it did not deliver" in r
               for r in report["tamper"])


def test_a_payload_over_the_limit_goes_up_as_its_size_and_is_answered_empty(
        tmp_path: Path) -> None:
    channel = Channel(tmp_path, max_payload=100)
    try:
        big = channel.shim("PostToolUse", b"x" * 101)
        small = channel.shim("PostToolUse", b"x" * 100)
    finally:
        report = channel.close()
    assert big.returncode == 0 and big.stdout == b""
    assert small.stdout == b'{"decision": "block"}'
    assert [len(p) for _, p in channel.asked] == [100]
    assert report["too_large"] == 1 and report["requests"] == 2 and report["tamper"] == []


@pytest.mark.parametrize("half", ["requests", "answers"])
def test_a_killed_relay_is_reported_lost(channel: Channel, half: str) -> None:
    if half == "requests":
        channel.stream.proc.kill()
        channel.stream.proc.wait(10)
    else:  # its child that writes the answers: the other half notices and exits
        child = subprocess.run(["pgrep", "-P", str(channel.stream.proc.pid)],
                               capture_output=True, text=True).stdout.split()
        subprocess.run(["kill", "-9", *child], check=True)
    wait_for(channel.hooks.server.closed.is_set, "the server never saw the stream end")
    report = channel.close()
    assert report["relay_lost"] is True
    assert "hook relay lost: its stream ended while the agent ran" in report["tamper"]


def test_the_largest_heartbeat_gap_is_kept_and_named() -> None:
    times = iter([0.0, 1.0, 2.0, 2.0 + HEARTBEAT_GAP_S + 2.5, 3.0 + HEARTBEAT_GAP_S + 2.5])
    lines = iter([f"READY {TOKEN} 7", f"HB {TOKEN}", f"HB {TOKEN}", f"HB {TOKEN}"])
    clock = iter(times)
    server = HookServer(lambda: next(lines, "").encode(), lambda b: None, lambda e, p: "",
                        TOKEN, clock=lambda: next(clock))
    server.start(5)
    server.closed.wait(5)
    counts = server.counts()
    assert counts.heartbeats == 3 and counts.relay_lost  # the stream ended by itself
    assert counts.max_heartbeat_gap_s == HEARTBEAT_GAP_S + 2.5


def test_a_steady_heartbeat_reaches_the_host(channel: Channel) -> None:
    wait_for(lambda: channel.hooks.server.counts().heartbeats >= 2, "no heartbeat came")
    report = channel.close()
    assert report["tamper"] == [] and report["heartbeats"] >= 2


def _frame(data: bytes) -> bytes:
    return bytes([1, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


def test_an_over_long_line_is_dropped_to_its_newline_with_the_buffer_capped() -> None:
    ours, engine = socket.socketpair()
    cap = 4096

    def flood() -> None:
        # One frame of 10 MB (read in chunks, whatever its header says), then 10 MB more of
        # the same line in frames of 50 kB.
        engine.sendall(_frame(b"first\n" + b"x" * 10_000_000))
        for _ in range(200):
            engine.sendall(_frame(b"y" * 50_000))
        engine.sendall(_frame(b"z" * 10 + b"\n" + b"a" * cap + b"\n" + b"b" * (cap + 1)
                              + b"\nlast\n"))

    sender = threading.Thread(target=flood)
    sender.start()
    try:
        channel = ExecChannel(ours, max_line=cap)
        lines = [channel.read_line(30) for _ in range(3)]
    finally:
        sender.join()
        ours.close()
        engine.close()
    assert lines == [b"first", b"a" * cap, b"last"]
    assert channel.oversize == 2  # the flood and the line one byte over
    assert channel.peak_buffered <= cap + (64 << 10)  # the cap plus one read, never the flood


def test_stderr_keeps_only_its_tail() -> None:
    ours, engine = socket.socketpair()
    sender = threading.Thread(target=lambda: engine.sendall(
        bytes([2, 0, 0, 0]) + (200_000).to_bytes(4, "big") + b"e" * 199_999 + b"!"
        + _frame(b"ok\n")))
    sender.start()
    try:
        channel = ExecChannel(ours)
        assert channel.read_line(10) == b"ok"
    finally:
        sender.join()
        ours.close()
        engine.close()
    assert len(channel.stderr) == 64 << 10 and channel.stderr.endswith(b"!")
