"""The hook transport of a box with no stream (``hook_transport.FileHooks``), without a
backend: a "box" that is a folder of this machine reached by one-shot bash commands. The
conformance kit runs it in every backend (``check_hook_spool_...``); these tests try what
the kit cannot: a spool the harness stops reaching, and what the channel then reports."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.base import EnvironmentFailure, ExecResult
from fire_exp.environments.hook_transport import (
    HEARTBEAT_GAP_S,
    ChannelCounts,
    FileHooks,
    HookEndpoint,
    HookServer,
    tamper_reasons,
)
from fire_exp.environments.hook_transport import files as spool_files


class FolderBox:
    """The two primitives of a one-shot box, on this machine; ``broken``: every command
    fails from then on (the provider stopped answering)."""

    def __init__(self, root: Path) -> None:
        self.files = AttemptPaths(root / "attempt")
        self.harness = str(root / "box" / "fire-exp")
        self.broken = False

    def write_file(self, dest: str, data: bytes, mode: int = 0o644) -> None:
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        Path(dest).write_bytes(data)
        Path(dest).chmod(mode)

    def run(self, command: str, timeout: float, *, env: Mapping[str, str] | None = None,
            cwd: str | None = None) -> ExecResult:
        if self.broken:
            raise EnvironmentFailure("the provider does not answer")
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
        return ExecResult(done.returncode, done.stdout, done.stderr)


def hook(box: FolderBox, hooks: FileHooks, payload: str, wait_s: int = 10
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", hooks.command("PreToolUse")], input=payload,
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "FIRE_HOOK_WAIT_S": str(wait_s)})


def test_a_call_is_answered_through_the_spool_and_recorded_on_the_host(tmp_path: Path
                                                                        ) -> None:
    box = FolderBox(tmp_path)
    hooks = FileHooks.open_spool(box, HookEndpoint(str, lambda: lambda e, p: f"ok {p!r}"),
                                 box.harness)
    try:
        done = hook(box, hooks, "ls")
    finally:
        hooks.close()
    assert (done.returncode, done.stdout) == (0, "ok b'ls'")
    report = json.loads(box.files.hook_channel.read_text())
    assert (report["requests"], report["answered"], report["tamper"]) == (1, 1, [])
    assert not list(Path(box.harness, "hooks", "answers").iterdir())  # cleared on close


def test_a_spool_the_harness_stops_reaching_fails_closed_and_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_files, "COLLECT_WAIT_S", 0)
    box = FolderBox(tmp_path)
    hooks = FileHooks.open_spool(box, HookEndpoint(str, lambda: lambda e, p: "allow"),
                                 box.harness)
    box.broken = True  # every collect fails from now on
    done = hook(box, hooks, "ls", wait_s=1)
    hooks.server.closed.wait(10)  # MISSES failed collects end the channel
    hooks.close()
    assert done.returncode == 1 and done.stdout == ""  # no answer: a non-blocking error
    report = json.loads(box.files.hook_channel.read_text())
    assert report["relay_lost"] and report["answered"] == 0
    assert any("hook relay lost" in reason for reason in report["tamper"])


def test_a_heartbeat_gap_is_a_sign_on_a_stream_only() -> None:
    counts = ChannelCounts(requests=0, answered=0, bad_token=0, malformed=0, too_large=0,
                           odd_files=0, fifo_garbage=0, stray_done=0, heartbeats=3,
                           max_heartbeat_gap_s=HEARTBEAT_GAP_S + 4, relay_lost=False)
    assert "heartbeat gap" in tamper_reasons(counts, 0, 100)[0]
    assert tamper_reasons(counts, 0, 100, gap_limit=FileHooks.heartbeat_limit) == []


def test_a_request_read_after_the_server_closed_is_not_answered() -> None:
    """A collect in flight when the transport closes may bring a request up late; the
    server must not answer it (its shim then fails closed)."""
    closing = threading.Event()
    asked: list[str] = []

    def read_line() -> bytes:
        if not hasattr(read_line, "ready"):
            read_line.ready = True  # type: ignore[attr-defined]
            return b"READY tok 7"
        closing.wait(10)  # the collect that was running when the server closed
        return b"REQ tok 1-1 PreToolUse " + base64.b64encode(b"{}")

    server = HookServer(read_line, lambda line: None, lambda e, p: asked.append(e) or "x",
                        "tok")
    server.start(5)
    server.close()
    closing.set()
    time.sleep(0.2)  # the reader would dispatch now, if it still served
    assert asked == [] and server.counts().requests == 0
