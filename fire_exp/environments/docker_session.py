"""Who runs what in an attempt's container, and whose failure a broken session is.

The session host (``session_host.py``) runs as root. Where the agent runs unprivileged
(``Environment.run_agent_as``; a coding-agent CLI's default) every agent command runs as
that user, made here if the image lacks it, who gets only what it writes: the task's
working folder, ``/logs/agent`` and a home in the agent's folder. The agent's folder
itself, the hook settings in it, the session host and the CLI's output capture
(``CAPTURE_DIR``) stay root's.

When the session breaks, the evidence decides whose failure it is, by what the agent
cannot fake: the engine answers, the container runs, nothing in it was killed for want of
memory (``docker inspect``'s ``OOMKilled`` and the cgroup's ``oom_kill`` count) — then a
session host that died or stopped, a CLI ended by a signal someone sent, an output capture
that changed after the host recorded it, or a process holding the CLI's output when it
ended, is the agent's own doing (``AgentCausedFailure``, ``agent_error``).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from fire_exp.attempt_paths import AGENT_LOGS, in_box
from fire_exp.environments.base import AgentCausedFailure, EnvironmentFailure
from fire_exp.tasks.model import Task

AGENT_DIR = "/opt/fire-exp/agent"
AGENT_HOME = f"{AGENT_DIR}/home"
CAPTURE_DIR = "/opt/fire-exp/capture"  # root's 0700: the CLI's recorded output
LOGS = "/logs"
# Signals someone sends (a fault the process caused itself, SIGSEGV or SIGABRT, is not one).
SENT_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 9: "SIGKILL", 15: "SIGTERM"}

Shell = Callable[[str], tuple[int, str]]  # a root housekeeping command: (exit code, output)

# Makes the agent's user (argv: name, home) where the image lacks it, without useradd.
_MAKE_USER = """
import grp, pwd, sys
name, home = sys.argv[1], sys.argv[2]
try:
    pwd.getpwnam(name)
except KeyError:
    taken = {p.pw_uid for p in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()}
    uid = next(i for i in range(2000, 60000) if i not in taken)
    for path, line in (("/etc/group", f"{name}:x:{uid}:"),
                       ("/etc/passwd", f"{name}:x:{uid}:{uid}:fire-exp agent:{home}:/bin/bash")):
        with open(path, "a+") as fh:
            fh.seek(0)
            text = fh.read()
            fh.write(("" if not text or text.endswith("\\n") else "\\n") + line + "\\n")
"""


def grant_script(task: Task, user: str, python: Sequence[str] = ("python3",)) -> str:
    """The root command that makes ``user`` (a minimal image may lack ``useradd``: the
    lines go to /etc/passwd and /etc/group, written by ``python``, the box runtime's
    python3 in a container) and gives it the working folder,
    ``/logs/agent`` and its home; the agent folder's subfolders (a CLI's own home, such as
    ``CODEX_HOME``) become sticky, so it may add files there but never replace the
    harness's. Raises EnvironmentFailure for a working folder that cannot be handed over."""
    workdir = task.environment.workdir
    if workdir.rstrip("/") == "":
        raise EnvironmentFailure(f"task {task.name}: the working folder is /, which cannot "
                                 f'be handed to {user}; set [agent] user = "root" in its '
                                 "task.toml")
    logs = in_box(LOGS, AGENT_LOGS)
    q_user, q_work = shlex.quote(user), shlex.quote(workdir)
    return (f"{shlex.join(python)} -c {shlex.quote(_MAKE_USER)} {q_user} {AGENT_HOME} && "
            f"mkdir -p {q_work} {AGENT_HOME} {logs} && chmod 755 {AGENT_DIR} && "
            f"chown -R {q_user}: {q_work} {AGENT_HOME} {logs} && chmod 700 {AGENT_HOME} && "
            f"find {AGENT_DIR} -mindepth 1 -maxdepth 1 -type d ! -path {AGENT_HOME} "
            "-exec chmod 1777 {} +")


def oom_kills(sh: Shell) -> int | None:
    """The container cgroup's out-of-memory kills so far (None: unreadable)."""
    code, out = sh("cat /sys/fs/cgroup/memory.events 2>/dev/null")
    for line in out.splitlines() if code == 0 else []:
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def _healthy(container: Any) -> bool:
    """The engine answers, the container runs and was not OOM-killed."""
    container.reload()
    state = container.attrs["State"]
    return bool(state.get("Running")) and not state.get("OOMKilled")


def blame(container: Any, sh: Shell, host_pid: int | None, oom_base: int | None,
          exc: EnvironmentFailure) -> EnvironmentFailure:
    """``exc`` (the session was lost), or the agent's failure when the evidence says its
    own processes killed or stopped the session host."""
    if not _healthy(container) or oom_kills(sh) not in (None, oom_base):
        return exc
    code, stat = sh(f"cat /proc/{host_pid}/stat 2>/dev/null")
    fields = stat[stat.rfind(")") + 2:].split() if code == 0 and ")" in stat else []
    if fields and fields[0] in ("T", "t"):
        what = "stopped"
    elif not fields or fields[0] in ("Z", "X"):
        what = "killed"
    else:
        return exc
    return AgentCausedFailure(f"the agent's own processes {what} its session host: the "
                              "container is still running, its engine answers and nothing "
                              f"in it was killed for want of memory ({exc})")


def capture_damage(reply: dict[str, Any], files: dict[str, bytes]) -> list[str]:
    """How the fetched capture differs from what the session host recorded."""
    damage = []
    for name, made in (reply.get("capture") or {}).items():
        data = files[name]
        if len(data) != made["bytes"] or hashlib.sha256(data).hexdigest() != made["sha256"]:
            damage.append(f"{name}: {len(data)} bytes where the session host recorded "
                          f"{made['bytes']}")
    return damage


def sabotage(container: Any, reply: dict[str, Any], damage: list[str]) -> str | None:
    """What the agent's own processes did to a captured command (None: nothing seen)."""
    if damage:
        return ("the agent's own processes altered the CLI's output capture after it was "
                "recorded (" + "; ".join(damage) + ")")
    if reply.get("holders"):
        return (f"the agent's own processes (pids {reply['holders']}) held the CLI's output "
                "streams when it exited; they were killed")
    name = SENT_SIGNALS.get(reply.get("signal") or 0)
    if name is None or reply.get("timed_out") or reply.get("oom_kills") or not _healthy(container):
        return None
    return (f"the agent's own processes killed the CLI with {name} while the agent ran (the "
            "container was running, no out-of-memory kill)")
