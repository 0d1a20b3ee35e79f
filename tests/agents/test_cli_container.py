"""Agent CLIs inside the task's container: hooks through the shim, the relay and the host.

No real CLI is installed here: tests/fixtures/cli_container/fake_cli.py plays Claude Code
2.0 and Codex 0.101 (their hook payloads and output streams) INSIDE the container, where
it runs its commands and calls its hooks through the shim. The fast tests run the shim and
the relay with the host's own sh and bash; the Docker tests run whole attempts.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments.agent_install import InstallSpec
from fire_exp.environments.docker_install import mounts
from fire_exp.environments.egress import EgressProxy, parse_endpoint
from fire_exp.environments.hook_transport import (
    MAX_PAYLOAD,
    SHIM,
    HookServer,
    RelayHooks,
    script,
)
from fire_exp.errors import InputError
from fire_exp.policies import build_arm, load_portfolio
from fire_exp.policies.hook_answerer import HookAnswerer
from fire_exp.policies.hook_settings import MATCHERS, settings_document
from fire_exp.policies.hook_store import read_activity

ROOT = Path(__file__).resolve().parents[2]
FAKE_CLI = ROOT / "tests" / "fixtures" / "cli_container" / "fake_cli.py"
KEY = "sk-fake-fireexp-h16-Zq81LmWx0Pa"
# What the shim may use: POSIX sh and coreutils, nothing else (no python3, no socat).
SHIM_TOOLS = ("sh", "cat", "mv", "rm", "date", "sleep", "timeout", "od", "tr")


def claude_payload(event: str, command: str = "", **extra: Any) -> bytes:
    """A Claude Code 2.0 hook payload (hooks reference: common fields + the event's)."""
    payload = {"session_id": "5f0c2a9e-test", "transcript_path": "/root/.claude/t.jsonl",
               "cwd": "/app", "permission_mode": "bypassPermissions",
               "hook_event_name": event} | extra
    if command:
        payload |= {"tool_name": "Bash", "tool_use_id": "toolu_01",
                    "tool_input": {"command": command, "description": "run"}}
    return json.dumps(payload).encode()


TOKEN = "0123456789abcdef0123456789abcdef"


class Relay:
    """hook_relay.sh run by the host's bash, served by a HookServer (no container)."""

    def __init__(self, spool: Path, answer: Any, max_payload: int = MAX_PAYLOAD) -> None:
        self.spool = spool
        self.proc = subprocess.Popen(
            ["bash", str(script("hook_relay.sh")), str(spool), str(max_payload)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        out, inp = self.proc.stdout, self.proc.stdin
        assert out is not None and inp is not None

        def write(data: bytes) -> None:
            inp.write(data)
            inp.flush()

        write(f"{TOKEN}\n".encode())
        self.server = HookServer(lambda: out.readline().rstrip(b"\n"), write, answer, TOKEN)
        self.server.start(10)

    def shim(self, event: str, payload: bytes, bindir: Path | None = None
             ) -> subprocess.CompletedProcess[bytes]:
        path = str(bindir) if bindir else os.environ["PATH"]
        shell = str(bindir / "sh") if bindir else "sh"
        return subprocess.run([shell, str(script("hook_shim.sh")), event], input=payload,
                              capture_output=True, timeout=30,
                              env={"PATH": path, "FIRE_HOOK_SPOOL": str(self.spool)})

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # as the host closing the exec stream
        self.proc.wait(10)
        self.server.close()


def minimal_bin(tmp_path: Path) -> Path:
    """A PATH holding only the shim's tools (proof that it needs nothing else)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in SHIM_TOOLS:
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        (bindir / tool).symlink_to(found)
    return bindir


def test_a_real_arm_deny_crosses_the_relay_and_the_shim_needs_no_python(tmp_path: Path) -> None:
    answerer = HookAnswerer("fire-core", "real", tmp_path / "state", "claude-code")
    relay = Relay(tmp_path / "spool", answerer.answer)
    bindir = minimal_bin(tmp_path)
    try:
        prompt = (ROOT / "fire_exp/suites/fire-mini/recover-wal-orders/instruction.md").read_text()
        assert relay.shim("UserPromptSubmit", claude_payload("UserPromptSubmit", prompt=prompt),
                          bindir).returncode == 0
        denied = relay.shim("PreToolUse", claude_payload("PreToolUse", "sqlite3 evidence/o.db"),
                            bindir)
        allowed = relay.shim("PreToolUse", claude_payload("PreToolUse", "ls -la"), bindir)
    finally:
        relay.stop()
    assert denied.returncode == 0, denied.stderr
    answer = json.loads(denied.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "byte-preserving copy" in answer["permissionDecisionReason"]
    assert allowed.returncode == 0 and allowed.stdout == b""
    summary = read_activity(tmp_path / "state")
    assert summary.by_event == {"UserPromptSubmit": 1, "PreToolUse": 2}
    assert summary.denied_commands == ("sqlite3 evidence/o.db",)
    spool = tmp_path / "spool"  # no leftovers
    assert sorted(p.relative_to(spool).as_posix() for p in spool.rglob("*")) == \
        ["answers", "inbox", "requests", "work"]


def test_concurrent_and_large_hook_calls_each_get_their_own_answer(tmp_path: Path) -> None:
    def echo(event: str, payload: bytes) -> str:
        return json.dumps({"event": event, "size": len(payload)}) + "\n"

    relay = Relay(tmp_path / "spool", echo)
    try:
        sizes = [10, 70_000, 3, 400_000, 5_000, 1, 90, 120_000]
        results: dict[int, subprocess.CompletedProcess[bytes]] = {}
        workers = [threading.Thread(target=lambda i=i, n=n: results.__setitem__(
            i, relay.shim("PostToolUse", b"x" * n))) for i, n in enumerate(sizes)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        relay.stop()
    assert [json.loads(results[i].stdout)["size"] for i in range(len(sizes))] == sizes
    assert relay.server.requests == len(sizes) and relay.server.malformed == 0


def test_a_gone_relay_is_a_non_blocking_hook_error(tmp_path: Path) -> None:
    relay = Relay(tmp_path / "spool", lambda e, p: "")
    relay.stop()
    result = relay.shim("PreToolUse", b"{}")
    assert result.returncode == 1  # never 2, which would block the agent
    assert b"relay is not running" in result.stderr


def test_a_portfolio_that_fails_to_load_answers_nothing_and_is_logged(tmp_path: Path) -> None:
    answerer = HookAnswerer(str(tmp_path / "no-such-portfolio"), "real", tmp_path / "s",
                            "codex")
    assert answerer.answer("PreToolUse", claude_payload("PreToolUse", "ls")) == ""
    assert answerer.answer("PreToolUse", b"not json") == ""
    summary = read_activity(tmp_path / "s")
    assert summary.load_errors == 1 and len(summary.errors) == 2


def test_the_settings_point_every_hook_at_the_shim() -> None:
    real = build_arm("real", load_portfolio("fire-core"), load_portfolio("controls"))
    settings = settings_document(list(real.families), RelayHooks.command_for,
                                 MATCHERS["claude-code"], 30, cli="claude-code")
    commands = [h["command"] for groups in settings["hooks"].values() for g in groups
                for h in g["hooks"]]
    assert commands and all(c.startswith(f"{SHIM} ") for c in commands)
    # The same matchers as on the host: one settings builder for every transport.
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == MATCHERS["claude-code"]
    assert "--portfolio" not in json.dumps(settings)  # nothing of the policies goes in


@pytest.mark.parametrize("raw,field", [
    ({"script": "x", "image": "y", "paths": ["/a"]}, "install"),
    ({"image": "cli:1"}, "install.paths"),
    ({"image": "cli:1", "paths": ["rel/path"]}, "install.paths"),
    ({"host_binary": "/no/such/codex"}, "install.host_binary"),
    ({"scirpt": "npm i"}, "install.scirpt"),
])
def test_a_bad_install_block_is_refused_by_name(raw: dict[str, Any], field: str) -> None:
    """Refused where the agent is built: its keys by the settings model, what only the
    machine can tell (the binary) by the constructor the build calls."""
    from fire_exp.config import ComponentConfig
    from fire_exp.runner.build import agent_factory

    with pytest.raises(InputError) as err:
        agent_factory(ComponentConfig("claude-code", {"install": raw}))
    assert err.value.field == field and "configs/agent/claude-code.yaml" in str(err.value)


def test_install_spec_digest_and_mount() -> None:
    spec = InstallSpec.from_config({"host_binary": str(FAKE_CLI)}, "x")
    assert spec.method == "host_binary"
    assert spec.binary_in_box("claude") == "/opt/fire-exp/cli/fake_cli.py"
    assert mounts(spec) == {str(FAKE_CLI): {"bind": "/opt/fire-exp/cli/fake_cli.py",
                                              "mode": "ro"}}
    a = InstallSpec.from_config({"script": "npm i -g @openai/codex@0.101.0"}, "x")
    b = InstallSpec.from_config({"script": "npm i -g @openai/codex@0.102.0"}, "x")
    assert a.digest() != b.digest() and InstallSpec().method == "none"


def _tcp_echo_server() -> tuple[socket.socket, int]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b"hello from upstream\n")

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def _through(proxy: EgressProxy, request: bytes) -> bytes:
    host, port = proxy.address.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(4096):
            data += chunk
            if data.count(b"\n") >= 3:
                break
        return data


def test_the_egress_proxy_tunnels_only_to_listed_endpoints(tmp_path: Path) -> None:
    upstream, port = _tcp_echo_server()
    proxy = EgressProxy("127.0.0.1", [f"127.0.0.1:{port}"], tmp_path / "egress.jsonl")
    try:
        ok = _through(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        refused = _through(proxy, b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
        plain = _through(proxy, b"GET http://example.org/ HTTP/1.1\r\n\r\n")
        origin = _through(proxy, b"GET /v1/models HTTP/1.1\r\n\r\n")
    finally:
        proxy.close()
        upstream.close()
    assert ok.startswith(b"HTTP/1.1 200") and b"hello from upstream" in ok
    assert refused.startswith(b"HTTP/1.1 403") and plain.startswith(b"HTTP/1.1 403")
    assert origin.startswith(b"HTTP/1.1 405")  # not a proxy request: nowhere to send it
    log = [json.loads(x) for x in (tmp_path / "egress.jsonl").read_text().splitlines()]
    assert [(e["target"], e["allowed"]) for e in log] == [
        (f"127.0.0.1:{port}", True), ("example.org:443", False), ("example.org:80", False),
        ("GET /v1/models", False)]
    assert parse_endpoint("https://api.anthropic.com/v1") == ("api.anthropic.com", 443)


def test_base64_framing_survives_newlines_and_binary() -> None:
    payload = b'{"a": "line1\\nline2"}\n\x00\xff'
    line = f"REQ {TOKEN} 1-2 Stop {base64.b64encode(payload).decode()}".encode()
    got: list[tuple[str, bytes]] = []
    lines = [f"READY {TOKEN} 7".encode(), line, f"REQ {TOKEN} bad".encode(), b""]
    server = HookServer(iter(lines).__next__, lambda b: None,
                        lambda e, p: got.append((e, p)) or "", TOKEN)
    server.start(5)
    server.closed.wait(5)
    server.close()
    assert got == [("Stop", payload)] and server.malformed == 1 and server.relay_pid == 7

