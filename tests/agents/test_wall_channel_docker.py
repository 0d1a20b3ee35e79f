"""The hook channel under attack from inside the box (Docker engine needed).

Each test tries one trick of issue 27 on the channel as an agent in its container would,
one command at a time, as root and (where the trick is a matter of permissions) as an
unprivileged user (uid 65534 through ``setpriv``): rewrite the shim, forge an answer,
write lines into the relay's descriptors through ``/proc``, kill or stop the relay, flood
it. Each ends with the policy still holding or with the named reason in
``ATTEMPT/hooks/channel.json``. The last two run whole attempts with the fake CLI
(tests/fixtures/cli_container/fake_cli.py), whose script is what the agent types.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.environments.docker_channel import SESSION_LINE_MAX
from fire_exp.environments.hook_transport import (
    SHIM,
    SPOOL,
    HookEndpoint,
    RelayHooks,
)
from tests.agents.test_cli_container_docker import (
    DENIED,
    KEY,
    KEY_ENV,
    agent_logs,
    attempt,
    mounted,
)
from tests.environments.helpers import bundled_task

pytestmark = pytest.mark.docker
NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups"
DENY = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                          "permissionDecision": "deny",
                                          "permissionDecisionReason": "not on the evidence"}})


class Wall:
    """A started box with the hook relay open, answering PreToolUse with a deny."""

    def __init__(self, box: DockerEnvironment) -> None:
        self.box = box
        self.asked: list[tuple[str, bytes]] = []
        self.hooks = box.hook_transport(HookEndpoint(host_command=str, answer=lambda: self.answer))
        assert isinstance(self.hooks, RelayHooks)
        self.relay = self.hooks.server.relay_pid

    def answer(self, event: str, payload: bytes) -> str:
        self.asked.append((event, payload))
        return DENY if event == "PreToolUse" else ""

    def sh(self, command: str, user: str = "") -> Any:
        """Run ``command`` in the box as root, or through ``user`` (a setpriv prefix)."""
        if user:
            command = f"{user} bash -c {json.dumps(command)}"
        return self.box.run(command, timeout=300)

    def hook(self, payload: str = '{"tool_name": "Bash"}', user: str = "") -> Any:
        return self.sh(f"printf '%s' '{payload}' | {SHIM} PreToolUse", user)

    def close(self) -> dict[str, Any]:
        self.hooks.close()
        report: dict[str, Any] = json.loads(self.box.files.hook_channel.read_text())
        return report


@pytest.fixture
def typed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sets what the fake CLI's agent types (its script), one command a step."""
    monkeypatch.setenv(KEY_ENV, KEY)

    def set_script(commands: list[str]) -> None:
        monkeypatch.setenv("FAKE_CLI_SCRIPT", json.dumps({"commands": commands}))

    return set_script


@pytest.fixture
def wall(docker_client: Any, tmp_path: Path) -> Iterator[Wall]:
    box = DockerEnvironment(bundled_task("csv-column-stats"), tmp_path / "a", "h27a-wall")
    with box:
        opened = Wall(box)
        try:
            yield opened
        finally:
            opened.hooks.close()


@pytest.mark.parametrize("user", ["", NOBODY], ids=["root", "nobody"])
def test_the_spool_is_roots_and_a_shim_of_any_user_gets_its_answer(wall: Wall,
                                                                   user: str) -> None:
    modes = wall.sh(f"stat -c '%n %U %a' /opt/fire-exp /opt/fire-exp/bin {SHIM} {SPOOL} "
                    f"{SPOOL}/inbox {SPOOL}/answers {SPOOL}/work {SPOOL}/requests")
    assert modes.stdout.split("\n")[:-1] == [
        "/opt/fire-exp root 755", "/opt/fire-exp/bin root 755", f"{SHIM} root 755",
        f"{SPOOL} root 755", f"{SPOOL}/inbox root 1733", f"{SPOOL}/answers root 711",
        f"{SPOOL}/work root 700", f"{SPOOL}/requests root 622"]
    answered = wall.hook(user=user)
    assert answered.exit_code == 0 and json.loads(answered.stdout) == json.loads(DENY)
    assert wall.sh(f"ls -A {SPOOL}/answers {SPOOL}/work").stdout.split() == \
        [f"{SPOOL}/answers:", f"{SPOOL}/work:"]  # answered, then cleaned up by the relay
    report = wall.close()
    assert (report["requests"], report["answered"], report["tamper"]) == (1, 1, [])


def test_an_unprivileged_agent_can_neither_rewrite_the_shim_nor_forge_answers(wall: Wall) -> None:
    tries = {
        "rewrite the shim": f"printf 'exit 0\\n' > {SHIM}",
        "replace the shim": f"mv /tmp/x {SHIM}; touch /opt/fire-exp/bin/x",
        "forge an answer": f"printf '' > {SPOOL}/answers/1-1.out",
        "list the inbox": f"ls {SPOOL}/inbox",
        "list the answers": f"ls {SPOOL}/answers",
        "stop the relay": f"kill -STOP {wall.relay}",
        "write the relay's stdout": f"echo REQ > /proc/{wall.relay}/fd/1",
        "write the relay's stdin": f"echo ANS > /proc/{wall.relay}/fd/0",
    }
    for what, command in tries.items():
        tried = wall.sh(f"touch /tmp/x; {command}", NOBODY)
        assert tried.exit_code != 0, what
        assert "denied" in tried.stderr or "not permitted" in tried.stderr, (what, tried.stderr)
    answered = wall.hook(user=NOBODY)  # the policy still answers, and still denies
    assert json.loads(answered.stdout) == json.loads(DENY)
    report = wall.close()
    assert report["tamper"] == [] and report["requests"] == 1


def test_a_symlink_dropped_in_the_inbox_is_refused(wall: Wall) -> None:
    planted = wall.sh(f"ln -s /etc/shadow {SPOOL}/inbox/7-7.in && "
                      f"echo '7-7 PreToolUse' > {SPOOL}/requests && sleep 2", NOBODY)
    assert planted.exit_code == 0, planted.stderr
    assert wall.hook(user=NOBODY).exit_code == 0  # served after it
    report = wall.close()
    assert len(wall.asked) == 1 and b"root:" not in wall.asked[0][1]
    assert report["refused"]["odd_file"] == 1
    assert "1 symlink(s) or special file(s) in the hook inbox" in report["tamper"]


def test_garbage_and_stray_done_lines_on_the_fifo_are_tamper_and_lose_no_request(
        wall: Wall) -> None:
    tried = wall.sh(f"printf 'not a request\\n' > {SPOOL}/requests; "
                    f"printf 'done 1-1\\n' > {SPOOL}/requests; printf xx > {SPOOL}/requests",
                    NOBODY)
    assert tried.exit_code == 0, tried.stderr
    assert json.loads(wall.hook(user=NOBODY).stdout) == json.loads(DENY)  # served
    report = wall.close()
    assert report["refused"]["fifo_garbage"] == 2 and report["refused"]["stray_done"] == 1
    assert any("FIFO it could not parse" in r for r in report["tamper"])
    assert any("for answers it did not deliver" in r for r in report["tamper"])


# As the agent with no process left to fork (python3 forks sleepers until the box's pids
# limit refuses, then becomes the shim): the shim's shell fails, and must say 1, never 2.
_STARVE = """
import os, sys, time
fd = os.open("/tmp/payload", os.O_RDONLY); os.dup2(fd, 0)
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(4); os._exit(0)
os.execv(sys.argv[1], [sys.argv[1], "Stop"])
"""


def test_a_shim_starved_of_pids_fails_open_never_blocking(docker_client: Any,
                                                          tmp_path: Path) -> None:
    box = DockerEnvironment(bundled_task("csv-column-stats"), tmp_path / "a", "h36-pids",
                            pids_limit=48)
    with box:
        opened = Wall(box)
        try:
            box.write_file("/tmp/payload", b"{}", 0o644)
            box.write_file("/tmp/starve.py", _STARVE.encode(), 0o644)
            starved = opened.sh(f"{NOBODY} python3 /tmp/starve.py {SHIM}; echo rc=$?; "
                                "sleep 5")
        finally:
            opened.hooks.close()
    assert "rc=1" in starved.stdout, (starved.stdout, starved.stderr)


def test_root_can_rewrite_the_shim_and_the_channel_reports_what_it_saw(wall: Wall) -> None:
    assert json.loads(wall.hook().stdout) == json.loads(DENY)
    wall.sh(f"printf '#!/bin/sh\\nexit 0\\n' > {SHIM}")
    unhooked = wall.hook()
    assert unhooked.exit_code == 0 and unhooked.stdout == ""  # the policy is switched off
    report = wall.close()
    # Nothing came up after the rewrite: requests stop at one while the agent works on;
    # reconciling the transcript with the host's events (runner/validity) catches that.
    assert report["requests"] == 1 and report["tamper"] == []


def test_lines_forged_into_the_relay_through_proc_are_refused(wall: Wall) -> None:
    forged = wall.sh(f"echo 'REQ 1-1 PreToolUse e30=' > /proc/{wall.relay}/fd/1; "
                     f"echo 'ANS 2-2 e30=' > /proc/{wall.relay}/fd/0; "
                     f"echo 'ANS 0000 2-2 e30=' > /proc/{wall.relay}/fd/0; sleep 2; "
                     f"ls {SPOOL}/answers")
    assert forged.exit_code == 0 and forged.stdout == "", forged.stderr  # no answer file
    assert json.loads(wall.hook().stdout) == json.loads(DENY)
    report = wall.close()
    assert wall.asked == [("PreToolUse", b'{"tool_name": "Bash"}')]
    assert report["refused"]["bad_token"] == 1
    assert any("without the attempt's token" in r for r in report["tamper"])


def test_a_killed_relay_is_reported_lost(wall: Wall) -> None:
    wall.sh(f"kill -9 {wall.relay}; sleep 2")
    assert wall.hook().exit_code == 1  # a non-blocking hook error: the hook fails open...
    report = wall.close()
    assert report["relay_lost"] is True  # ...and the channel names it
    assert "hook relay lost: its stream ended while the agent ran" in report["tamper"]


def test_a_stopped_relay_leaves_a_heartbeat_gap(wall: Wall) -> None:
    wall.sh(f"kill -STOP {wall.relay}; sleep 8; kill -CONT {wall.relay}; sleep 2")
    assert json.loads(wall.hook().stdout) == json.loads(DENY)  # it serves again
    report = wall.close()
    assert report["max_heartbeat_gap_s"] > 5 and report["relay_lost"] is False
    assert any(r.startswith("hook relay heartbeat gap") for r in report["tamper"])


def test_a_flood_without_newline_is_dropped_with_the_harness_buffer_capped(wall: Wall) -> None:
    flood = wall.sh(f"head -c 100000000 /dev/zero | tr '\\0' x > /proc/{wall.relay}/fd/1; "
                    "sleep 2")
    assert flood.exit_code == 0, flood.stderr
    assert json.loads(wall.hook().stdout) == json.loads(DENY)  # it serves again
    # The buffer's high-water mark is the channel's own, not part of the contract.
    channel = wall.hooks._stream._channel  # type: ignore[attr-defined]  # noqa: SLF001
    assert channel.peak_buffered <= SESSION_LINE_MAX + (1 << 16)  # never the 100 MB
    report = wall.close()
    assert report["refused"]["oversize"] >= 1
    assert any("over 16777216 bytes" in r for r in report["tamper"])


def test_a_whole_attempt_whose_agent_rewrites_the_shim(docker_client: Any, typed: Any,
                                                       tmp_path: Path) -> None:
    typed([f"printf '#!/bin/sh\\nexit 0\\n' > {SHIM}", DENIED])
    # As root (a task that needs root): as fire-agent the shim is out of reach
    # (tests/agents/test_wall_sabotage_docker.py).
    record = attempt(tmp_path, "recover-wal-orders", "real",
                     mounted(ClaudeCodeAgent, user=None))
    assert (agent_logs(tmp_path) / "denied-ran.txt").stat().st_size > 0  # switched off
    report = json.loads((tmp_path / "attempt" / "hooks" / "channel.json").read_text())
    # UserPromptSubmit and the rewriting command's PreToolUse; nothing after. The channel
    # saw nothing wrong; reconciling the transcript with those events did.
    assert record.cause is None and report["requests"] == 2 and report["tamper"] == []
    assert not record.valid
    # The rewritten shim answered the final Stop too: the host never heard it.
    assert record.invalid_reason == f"tool call with no hook event: `{DENIED}`; stop with " \
        "no hook event: the CLI finished with no Stop hook call after its last tool call"


def test_a_whole_attempt_whose_agent_kills_the_relay(docker_client: Any, typed: Any,
                                                     tmp_path: Path) -> None:
    typed(["pkill -9 -f hook_relay.sh; sleep 2", DENIED])
    record = attempt(tmp_path, "recover-wal-orders", "real",
                     mounted(ClaudeCodeAgent, user=None))  # as root: see above
    report = json.loads((tmp_path / "attempt" / "hooks" / "channel.json").read_text())
    assert report["relay_lost"] is True
    lost = "hook relay lost: its stream ended while the agent ran"
    assert lost in report["tamper"]
    summary = json.loads((agent_logs(tmp_path) / "hook-summary.json").read_text())
    assert not record.valid and f"hook channel: {lost}" in summary["tamper"]
