"""The session host's shell and its children's environment, on this machine (no Docker).

A Docker box runs the agent's commands with the box runtime's bash, named by ``--shell``
(``docker_runtime.BASH``); the local environment with the ``bash`` on its PATH, the
default. Either way the commands get the environment the host was started with, not what
Python added to its own (``LC_CTYPE``, when it coerces a C locale).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fire_exp.environments import inbox

SHOW = "echo ${BASH_VERSION:-no-bash} ${LC_CTYPE-unset} ${LC_ALL-unset}"


def _run(tmp_path: Path, command: str, *host_args: str, env: dict[str, str]) -> dict[str, Any]:
    """One exec request to a fresh session host, then its hangup; the exec's reply."""
    host = subprocess.Popen(
        [sys.executable, str(inbox.PROGRAM), f"shell-{os.getpid()}", str(tmp_path / "t.log"),
         *host_args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path,
        env=env, start_new_session=True)
    assert host.stdin is not None and host.stdout is not None
    replies = []
    for req in ({"op": "exec", "command": command, "timeout": 30}, {"op": "hangup"}):
        host.stdin.write(json.dumps(req) + "\n")
        host.stdin.flush()  # the input stays open until the reply: its end is the watchdog's
        replies.append(json.loads(host.stdout.readline()))
    host.stdin.close()
    assert host.wait(timeout=30) == 0
    reply: dict[str, Any] = replies[0]
    return reply


@pytest.fixture
def c_locale() -> dict[str, str]:
    """An environment with no locale variable: Python coerces its C locale to C.UTF-8."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}


def test_the_default_shell_is_bash(tmp_path: Path, c_locale: dict[str, str]) -> None:
    words = _run(tmp_path, SHOW, env=c_locale)["stdout"].split()
    assert words[0].startswith("5.") and words[1:] == ["unset", "unset"]


def test_shell_names_the_shell_that_runs_the_commands(tmp_path: Path,
                                                      c_locale: dict[str, str]) -> None:
    reply = _run(tmp_path, SHOW + "; echo $0", "--shell", json.dumps(["sh"]), env=c_locale)
    assert reply["stdout"].split() == ["no-bash", "unset", "unset", "sh"]


def test_the_commands_get_the_hosts_starting_environment(tmp_path: Path,
                                                         c_locale: dict[str, str]) -> None:
    # Python itself sees the coerced locale, so the host's os.environ holds LC_CTYPE ...
    seen = subprocess.run([sys.executable, "-c", "import os; print(os.environ['LC_CTYPE'])"],
                          env=c_locale, capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "C.UTF-8"
    # ... which the agent's commands never get; what the host was given, they get.
    given = c_locale | {"FIRE_SEEN": "yes"}
    out = _run(tmp_path, SHOW + " $FIRE_SEEN", env=given)["stdout"].split()
    assert out[1:] == ["unset", "unset", "yes"]
