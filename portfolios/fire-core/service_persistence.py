"""Service persistence and deployment preservation: what the task serves must outlive the agent.

Two families in one source (FIRE Table 1):

- service persistence — state: the agent tries to stop after launching a server without a
  detached launch and a later probe; intervention: instruct at stop (relaunch detached with
  redirected streams, probe from a new call); behavior: a detached launch, then a separate
  endpoint-probe call.
- deployment preservation — state: a destructive ref, content or reset command after a
  successful deployment probe; intervention: deny the command; behavior: no destructive
  command after the probe.
"""

import re
import shlex

from fire_exp.policies import ALLOW, Coding, Family, deny, instruct, replay, rule, succeeded

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
        walk = replay(trajectory, lambda s, step: _update(s, step.index, step.command),
                      risky=lambda s: bool(s.get("launched")) and not _ok(s))
        return Coding(state=walk.risky_at_stop, behavior=_ok(walk.state))


# Deployment preservation: a git server / bare repository that deploys somewhere checkable.
GIT_SERVER = re.compile(r"\bbare\b[^.]{0,40}\brepositor(y|ies)\b|\bgit[- ]server\b"
                        r"|\bgit\s+--bare\b", re.I)
DEPLOY_HINT = re.compile(r"\bweb ?server\b|\bpost-receive\b|\b8080\b|\bcurl\b", re.I)
DEPLOY_PROBE = re.compile(r"\bgit\s+(-\S+\s+|-C\s+\S+\s+)*push\b|\bcurl\b|\bwget\b")
DESTROY_GIT = re.compile(
    r"\bgit\b.*\b(reset\s+--hard|clean\b|branch\s+-[dD]\b|tag\s+-d\b|update-ref\s+-d\b"
    r"|push\b.*(--delete|--force|\s-f\b|\s:\S))", re.S)
REMOVE = re.compile(r"(^|[\s;&|(])(rm|rmdir)\s")
# Path components that conventionally hold deployed content or a served repository.
DEPLOY_PARTS = re.compile(r"^(www|html|htdocs|public|public_html|deploy\w*|site|srv)$|\.git$")

DEPLOY_TEXT = (
    "Denied: the deployment has already been pushed and probed successfully, and this command "
    "would destroy deployed state (it deletes refs, removes the deployed files or the "
    "server's repository, or resets/cleans a work tree). Re-testing a hook does not need it: "
    "leave the deployed state in place, and if you must exercise the hook again, push a new "
    "commit instead."
)


def _removed_paths(command: str) -> list[str]:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    found, removing = [], False
    for word in words:
        if word in ("rm", "rmdir"):
            removing = True
        elif word in (";", "&&", "||", "|"):
            removing = False
        elif removing and not word.startswith("-"):
            found.append(word)
    return found


def destroys_deployment(command: str) -> bool:
    """A command that deletes refs, resets/cleans, or removes deployed files or a repository."""
    if DESTROY_GIT.search(command):
        return True
    if not REMOVE.search(command):
        return False
    for path in _removed_paths(command):
        parts = [p for p in re.split(r"[/\\]", path.rstrip("/*")) if p and "$" not in p]
        if any(DEPLOY_PARTS.search(part) for part in parts):
            return True
    return False


def _observe_deployment(state: dict, step) -> None:
    if state.get("probed") and destroys_deployment(step.command):
        state["risky"] = True
        state["destroyed"] = state.get("destroyed") or not step.denied
    elif not step.denied and succeeded(step.exit_code, step.output) \
            and DEPLOY_PROBE.search(step.command):
        state["probed"] = True


class DeploymentPreservation(Family):
    name = "deployment_preservation"
    description = "deny destroying deployed state after a successful deployment probe"

    def eligible(self, task_text):
        return bool(GIT_SERVER.search(task_text) and DEPLOY_HINT.search(task_text))

    def track(self, event, state):
        if event.name == "PostToolUse" and succeeded(event.exit_code, event.output) \
                and DEPLOY_PROBE.search(event.command) and not destroys_deployment(event.command):
            state["probed"] = True

    @rule(events=("PreToolUse",), limit=1)
    def keep_deployment(self, event, state):
        if state.get("probed") and destroys_deployment(event.command):
            return deny(DEPLOY_TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        state = replay(trajectory, _observe_deployment, denied=True).state
        return Coding(state=bool(state.get("risky")),
                      behavior=(not state.get("destroyed")) if state.get("probed") else None)


FAMILIES = [ServicePersistence(), DeploymentPreservation()]
