"""Service persistence: a server the task needs must outlive the agent's shell.

Registered chain (FIRE Table 1): state — the agent tries to stop after launching a server
without a detached launch and a later probe; intervention — instruct at stop: relaunch
detached with redirected streams, probe from a new call; behavior — a detached launch,
then a separate endpoint-probe call.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, rule

# Eligible: the text names a server-like thing *and* asks for it to stay up.
SERVER_NOUN = re.compile(
    r"\b(servers?|services?|daemons?|listeners?|endpoints?|ssh|telnet|sockets?|vms?)\b", re.I)
PERSIST = re.compile(
    r"\bkeeps? (running|serving)\b|\bstays? (reachable|up|running|available)\b"
    r"|\bremains? (available|reachable|running|up)\b|\bleave it running\b"
    r"|\blistens? on\b|\blisten(ing)? on\b|should be able to (ssh|curl|connect)",
    re.I,
)
LAUNCH = re.compile(
    r"qemu-system-\S+|\buvicorn\b|\bgunicorn\b|\bflask\s+run\b|-m\s+http\.server"
    r"|\bnginx\b|\bredis-server\b|grpc\S*\s*server|\bnpm\s+start\b"
    r"|\b(python3?|node)\s+\S*(server|serve|service|daemon|listen)\S*\.(py|js)\b"
    r"|\s--(host|port|listen)\b",
    re.I,
)
DETACHED = re.compile(r"\bsetsid\b|\bsystemd-run\b|\bscreen\s+-d|\btmux\s+new(-session)?\b.*\s-d\b")
PROBE = re.compile(
    r"\bcurl\b|\bwget\b|\bgrpcurl\b|\bssh\b|\bnc\s+-z|\bss\s+-\w*l|\blsof\s+-i"
    r"|socket\.(create_connection|socket)|urllib\.request|\brequests\.(get|post)|http\.client"
)

TEXT = (
    "You launched a server from the agent's shell, and that shell ends when you stop: the "
    "server will die with it and the verifier will find nothing listening. Relaunch it in a "
    "new session with every standard stream redirected, for example "
    "`setsid nohup CMD > server.log 2>&1 < /dev/null &`, then probe the endpoint (curl, or a "
    "socket connect) from a separate, later command. A live PID, or a probe chained into "
    "the launch command, is not enough."
)


def _ok(state: dict) -> bool:
    """The last launch was detached and a later command probed it."""
    return state.get("detached_at") is not None and state.get("probed_after_detach", False)


def _update(state: dict, step: int, command: str) -> None:
    if LAUNCH.search(command):
        state["launched"] = True
        state["detached_at"] = step if DETACHED.search(command) else None
        state["probed_after_detach"] = False
    elif PROBE.search(command) and state.get("detached_at") is not None \
            and step > state["detached_at"]:
        state["probed_after_detach"] = True


class ServicePersistence(Family):
    name = "service_persistence"
    description = "relaunch detached with redirected streams and probe before stopping"

    def eligible(self, task_text):
        return bool(SERVER_NOUN.search(task_text) and PERSIST.search(task_text))

    def track(self, event, state):
        if event.name == "PreToolUse":
            _update(state, event.step, event.command)

    @rule(events=("Stop",), limit=1)
    def relaunch_detached(self, event, state):
        if state.get("launched") and not _ok(state):
            return instruct(TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        state: dict = {}
        risky = None
        for step in trajectory:
            if step.kind == "stop":
                if risky is None:
                    risky = bool(state.get("launched")) and not _ok(state)
            elif not step.denied:
                _update(state, step.index, step.command)
        if risky is None:
            risky = bool(state.get("launched")) and not _ok(state)
        return Coding(state=risky, behavior=_ok(state))


FAMILIES = [ServicePersistence()]
