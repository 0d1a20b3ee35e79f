"""The hook bridge: one frozen portfolio as a native hook of Claude Code and Codex.

``fire-exp hook EVENT --portfolio P --arm A --state DIR`` calls :func:`run_hook` with the
JSON the CLI writes on stdin. The CLI's event becomes a runtime :class:`Event`:

==================  ==============  ======================================================
CLI event           runtime event   from the payload
==================  ==============  ======================================================
UserPromptSubmit    SessionStart    ``prompt`` (the first one is the session's task text)
SessionStart        SessionStart    ``prompt`` if present; otherwise only recorded
PreToolUse          PreToolUse      ``tool_input.command`` of a shell tool (``Bash``)
PostToolUse         PostToolUse     ``tool_input.command``, ``tool_response`` as output
Stop                Stop            ``stop_hook_active``
==================  ==============  ======================================================

The combined decision is answered in the shape of reference/hooks.md: a ``deny`` at
PreToolUse as ``hookSpecificOutput.permissionDecision``; an ``instruct`` at Stop as
``{"decision": "block", "reason": ...}`` (never with an empty reason); an ``instruct``
elsewhere as ``hookSpecificOutput.additionalContext``; ``allow`` as no output. The bridge
never blocks an agent because of itself: a policy error fails open, and malformed input
or a portfolio that does not load (or does not match its manifest) answers nothing; all
are written to the activity log, where the validity guard finds them.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fire_exp.errors import InputError
from fire_exp.policies.arms import build_arm
from fire_exp.policies.hook_store import SessionState, append_activity, locked_session
from fire_exp.policies.loader import Portfolio, load_portfolio, sha256_file
from fire_exp.policies.model import Decision, Event, EventName, Family
from fire_exp.policies.runtime import MAX_STOP_ROUNDS, PolicyRuntime, RuntimeMemory
from fire_exp.records import now_iso

CLIS = ("claude-code", "codex")
Cli = Literal["claude-code", "codex"]
HOOK_EVENTS: dict[str, EventName] = {"SessionStart": "SessionStart",
                                     "UserPromptSubmit": "SessionStart",
                                     "PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse",
                                     "Stop": "Stop"}
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "local_shell", "exec_command"})
_KEPT = 4000
_EXIT_LINE = re.compile(r"^Exit code: (-?\d+)", re.M)


def load_arm_families(portfolio: str | Path, arm: str,
                      controls: str | Path | None = None) -> tuple[Family, ...]:
    """The families ``arm`` runs, from a portfolio name/path or a frozen prereg manifest.

    Given a manifest (``*.prereg.json``), the policy and control folders are the ones it
    froze, and every source must match its frozen SHA-256, with no source added.

    Raises:
        InputError: the portfolio or arm is unknown, a source fails to load, or a source
            differs from the manifest.
    """
    path = Path(portfolio)
    if path.suffix == ".json" and path.is_file():
        real, frozen_controls = _from_manifest(path)
        controls_pf = load_portfolio(controls) if controls else frozen_controls
    else:
        real = load_portfolio(portfolio)
        controls_pf = load_portfolio(controls or "controls")
    return build_arm(arm, real, controls_pf).families


def _from_manifest(path: Path) -> tuple[Portfolio, Portfolio]:
    try:
        hashes = json.loads(path.read_text(encoding="utf-8"))["hashes"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(path, "hashes", f"not a preregistration manifest ({exc})",
                         "pass a file written by `fire-exp freeze`") from None
    loaded = []
    for kind in ("policy", "control"):
        frozen = {k.split(":", 1)[1]: v for k, v in hashes.items()
                  if k.startswith(f"{kind}:") and k.endswith(".py")}
        if not frozen:
            raise InputError(path, f"hashes.{kind}:*", f"no {kind} sources frozen")
        folders = {Path(v["path"]).parent for v in frozen.values()}
        if len(folders) != 1:
            raise InputError(path, f"hashes.{kind}:*", "sources in several folders")
        for item in frozen.values():
            source = Path(item["path"])
            actual = sha256_file(source) if source.is_file() else "missing"
            if actual != item["sha256"]:
                raise InputError(source, "sha256", f"is {actual[:16]}…, frozen "
                                 f"{item['sha256'][:16]}… in {path}",
                                 "restore the source or re-freeze the panel")
        portfolio = load_portfolio(folders.pop())
        if portfolio.sources != {n: v["sha256"] for n, v in frozen.items()}:
            extra = sorted(set(portfolio.sources) - set(frozen))
            raise InputError(portfolio.path, "<sources>", f"not frozen in {path}: {extra}",
                             "remove them or re-freeze the panel")
        loaded.append(portfolio)
    sham_text = hashes.get("control:sham_text.md")
    if sham_text and sha256_file(Path(sham_text["path"])) != sham_text["sha256"]:
        raise InputError(sham_text["path"], "sha256", f"differs from {path}",
                         "restore the sham text or re-freeze the panel")
    return loaded[0], loaded[1]


@dataclass(frozen=True)
class HookCall:
    """One hook call, read from the CLI's stdin payload."""

    hook_event: str
    session_id: str
    tool_name: str | None
    command: str
    output: str
    exit_code: int | None
    prompt: str | None
    stop_hook_active: bool


def parse_payload(hook_event: str, payload: Any) -> HookCall:
    """Read the fields the bridge uses. Raises ValueError on a payload it cannot read."""
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("the hook input has no session_id")
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    if isinstance(command, list):  # Codex's older shell tool passes argv
        command = shlex.join(str(c) for c in command)
    output, exit_code = _tool_output(payload.get("tool_response"))
    prompt = payload.get("prompt")
    return HookCall(hook_event=hook_event, session_id=session_id,
                    tool_name=payload.get("tool_name"), command=str(command), output=output,
                    exit_code=exit_code, prompt=prompt if isinstance(prompt, str) else None,
                    stop_hook_active=bool(payload.get("stop_hook_active")))


def _tool_output(response: Any) -> tuple[str, int | None]:
    if response is None:
        return "", None
    if isinstance(response, str):  # Codex: "Exit code: N\nWall time: ...\nOutput:\n..."
        match = _EXIT_LINE.search(response)
        output = response.split("Output:\n", 1)[1] if "Output:\n" in response else response
        return output[-_KEPT:], int(match.group(1)) if match else None
    if not isinstance(response, dict):
        return json.dumps(response)[-_KEPT:], None
    parts = [response.get(k) for k in ("stdout", "stderr", "output", "aggregated_output")]
    text = "\n".join(p for p in parts if isinstance(p, str) and p)
    code = next((response[k] for k in ("exit_code", "exitCode", "returncode")
                 if isinstance(response.get(k), int)), None)
    if code is None and response.get("interrupted") is not None:
        # Claude Code's Bash response has no exit code; PostToolUse follows a success.
        code = 1 if response.get("interrupted") else 0
    return text[-_KEPT:], code


def render(hook_event: str, decision: Decision) -> dict[str, Any] | None:
    """The stdout JSON a CLI expects for ``decision`` at ``hook_event`` (None: say nothing)."""
    if decision.is_allow or not decision.text.strip():
        return None
    if hook_event == "Stop":
        return {"decision": "block", "reason": decision.text}
    if hook_event == "PreToolUse" and decision.kind == "deny":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny",
                                       "permissionDecisionReason": decision.text}}
    return {"hookSpecificOutput": {"hookEventName": hook_event,
                                   "additionalContext": decision.text}}


class HookBridge:
    """The arm's policies behind a CLI's hooks, with state kept in ``state_dir``."""

    def __init__(self, families: Sequence[Family], state_dir: Path, arm: str,
                 cli: Cli = "claude-code") -> None:
        self.families = tuple(families)
        self.state_dir = state_dir
        self.arm, self.cli = arm, cli

    def handle(self, call: HookCall) -> dict[str, Any] | None:
        """Run the policies on one hook call; returns the JSON to answer (or None)."""
        start = time.perf_counter()
        with locked_session(self.state_dir, call.session_id) as state:
            event = self._event(call, state)
            decision, entries = (Decision("allow"), []) if event is None else \
                self._dispatch(event, state)
            if call.hook_event == "Stop" and state.stop_rounds > MAX_STOP_ROUNDS \
                    and not decision.is_allow:
                decision = Decision("allow")  # the backstop: let the agent stop
        answer = render(call.hook_event, decision)
        base = self._base(call, start)
        line = base | {"kind": "event", "policyName": None,
                       "decision": "allow" if answer is None else decision.kind,
                       "reason": decision.text if answer is not None else "",
                       "step": event.step if event else 0, "seq": state.events,
                       "command": call.command[:500] or None}
        append_activity(self.state_dir, [*(base | e for e in entries), line])
        return answer

    def _event(self, call: HookCall, state: SessionState) -> Event | None:
        name = HOOK_EVENTS.get(call.hook_event)
        if name == "SessionStart":
            if call.prompt is None:
                return None
            state.task_text = state.task_text or call.prompt
            return Event("SessionStart", call.prompt)
        if name in ("PreToolUse", "PostToolUse"):
            if call.tool_name not in SHELL_TOOLS or not call.command:
                return None
            if name == "PreToolUse":
                state.commands += 1
            return Event(name, state.task_text, command=call.command, output=call.output,
                         exit_code=call.exit_code, step=state.commands)
        if name == "Stop":
            # Consecutive continuations caused by stop hooks; a stop the agent reaches on
            # its own (stop_hook_active false) starts a new chain.
            state.stop_rounds = state.stop_rounds + 1 if call.stop_hook_active else 1
            return Event("Stop", state.task_text, step=state.commands,
                         stop_hook_active=call.stop_hook_active)
        return None

    def _dispatch(self, event: Event, state: SessionState
                  ) -> tuple[Decision, list[dict[str, Any]]]:
        runtime = PolicyRuntime(self.families, state.task_text or event.task_text)
        runtime.restore(RuntimeMemory(state.states, state.nudges, state.counts, state.events))
        decision = runtime.handle(event)
        memory = runtime.snapshot()
        state.states = state.states | memory.states
        state.nudges, state.counts, state.events = memory.nudges, memory.counts, memory.events
        entries = [{"kind": "policy", "policyName": f"{e.family}.{e.rule}",
                    "decision": e.decision, "reason": e.text, "durationMs": e.duration_ms,
                    "seq": e.seq, "step": e.step, "runtimeEvent": e.event}
                   for e in runtime.log]
        return decision, entries

    def _base(self, call: HookCall, start: float) -> dict[str, Any]:
        return {"timestamp": now_iso(), "sessionId": call.session_id,
                "eventType": call.hook_event, "toolName": call.tool_name, "arm": self.arm,
                "cli": self.cli, "durationMs": round((time.perf_counter() - start) * 1e3, 3)}


def bridge_error(state_dir: Path | None, hook_event: str, reason: str, *,
                 session_id: str | None = None, load: bool = False) -> None:
    """Write a bridge error to the activity log (never raises)."""
    if state_dir is None:
        return
    try:
        append_activity(state_dir, [{
            "timestamp": now_iso(), "sessionId": session_id, "eventType": hook_event,
            "toolName": None, "policyName": "<load>" if load else "<bridge>",
            "decision": "error", "reason": reason, "durationMs": 0.0, "kind": "error"}])
    except OSError:
        pass
