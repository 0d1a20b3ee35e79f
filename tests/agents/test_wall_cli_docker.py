"""The agent cannot reach the CLI (issue 36, point 6; Docker engine needed).

The fake CLI (tests/fixtures/cli_container/fake_cli.py) runs as the default unprivileged
``fire-agent``, shielded by the session host (``session_host``: real group the user's,
effective group ``CLI_GID``, so the exec leaves it non-dumpable). One of its commands, the
agent's, tries what a consistent forgery needs: ``ptrace``-attach to the CLI, open its
memory for writing and read its ``environ`` through ``/proc``. Each is refused, while the
same tries on a process of the agent's own succeed (the probe can tell). The attempt is
valid and scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from tests.agents.test_cli_container_docker import (
    agent_logs,
    attempt,
    engine,
    mounted,
    script,
)

__all__ = ["engine", "script"]  # the fixtures, imported for pytest
pytestmark = pytest.mark.docker

PROBE = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for pid in map(int, sys.argv[1:]):
    tries = []
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        tries.append("ptrace ok")
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
    else:
        tries.append("ptrace " + os.strerror(ctypes.get_errno()))
    for name, mode in (("mem", os.O_RDWR), ("environ", os.O_RDONLY)):
        try:
            os.close(os.open(f"/proc/{pid}/{name}", mode))
            tries.append(name + " ok")
        except OSError as exc:
            tries.append(f"{name} {exc.strerror}")
    print("; ".join(tries))
"""


def test_the_agent_can_neither_trace_nor_read_nor_write_the_cli(
        engine: Any, script: Any, tmp_path: Path) -> None:
    script([f"cat > /tmp/probe.py <<'EOF'\n{PROBE}EOF",
            # $PPID: the CLI, which started this shell; then a process of the agent's own.
            # (SIGKILL: the attach left it stopped, and a stopped process ignores SIGTERM)
            "sleep 60 > /dev/null 2>&1 & python3 /tmp/probe.py $PPID $! "
            "> /logs/agent/probe.txt; kill -9 $!",
            "id -u > /logs/agent/ids.txt; id -g >> /logs/agent/ids.txt; "
            "grep -E '^(Uid|Gid)' /proc/$PPID/status >> /logs/agent/ids.txt"])
    record = attempt(tmp_path, "csv-column-stats", "real", mounted(ClaudeCodeAgent))
    assert record.cause is None and record.valid, (record.cause, record.invalid_reason)
    cli, own = (agent_logs(tmp_path) / "probe.txt").read_text().splitlines()
    assert cli == "ptrace Operation not permitted; mem Permission denied; " \
        "environ Permission denied", cli
    assert own == "ptrace ok; mem ok; environ ok", own  # the probe works where it may
    ids = (agent_logs(tmp_path) / "ids.txt").read_text().split("\n")
    assert ids[0] == ids[1] != "0"  # the agent's commands: the user's own group, no other
    assert ids[3].split()[1:] == [ids[1], "64999", "64999", "64999"], ids  # the CLI's
