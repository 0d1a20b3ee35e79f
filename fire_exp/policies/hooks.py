"""The hook bridge: one frozen portfolio as a native hook of Claude Code and Codex.

``fire-exp hook EVENT --portfolio P --arm A --state DIR`` calls :func:`run_hook` with the
JSON the CLI writes on stdin. The CLI's event becomes a runtime :class:`Event`:

==================  ==============  ======================================================
CLI event           runtime event   from the payload
==================  ==============  ======================================================
UserPromptSubmit    SessionStart    ``prompt`` (the first one is the session's task text)
SessionStart        SessionStart    ``prompt`` if present; otherwise only recorded
PreToolUse          PreToolUse      ``tool_input.command`` of a shell tool (``Bash``), or
                                    the files of an edit tool (a write event)
PostToolUse         PostToolUse     the same, ``tool_response`` as output and exit code
PostToolUseFailure  PostToolUse     the same, a failed call's ``error`` as output and exit
                                    code (Claude Code 2.1 sends it instead of PostToolUse)
Stop                Stop            ``stop_hook_active``
==================  ==============  ======================================================

Payload shapes are read by :mod:`fire_exp.policies.tool_payloads`. The combined decision
is answered in the shape of reference/hooks.md: a ``deny`` at PreToolUse as
``hookSpecificOutput.permissionDecision``; an ``instruct`` at Stop as ``{"decision":
"block", "reason": ...}`` (never with an empty reason); an ``instruct`` elsewhere as
``hookSpecificOutput.additionalContext``; ``allow`` as no output. For Codex an instruction
raised at PreToolUse is held in the session state and delivered with the same tool's
PostToolUse (Codex 0.163 would take it alone at PreToolUse, but drops it beside an allow;
docs/agents.md, *Hook protocols*). The bridge
never blocks an agent because of itself: a policy error fails open, and malformed input
or a portfolio that does not load (or does not match its manifest) answers nothing; all
are written to the activity log, where the validity guard finds them.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fire_exp.errors import InputError
from fire_exp.manifest import read_manifest
from fire_exp.policies.arms import build_arm
from fire_exp.policies.hook_store import SessionState, append_activity, locked_session
from fire_exp.policies.loader import Portfolio, load_portfolio, sha256_file
from fire_exp.policies.model import Decision, Event, EventName, Family
from fire_exp.policies.runtime import MAX_STOP_ROUNDS, PolicyRuntime, RuntimeMemory
from fire_exp.policies.tool_payloads import (
    EDIT_TOOLS,
    SHELL_TOOLS,
    edit_paths,
    failure_output,
    shell_command,
    tool_output,
)
from fire_exp.records import now_iso

CLIS = ("claude-code", "codex")
Cli = Literal["claude-code", "codex"]
HOOK_EVENTS: dict[str, EventName] = {"SessionStart": "SessionStart",
                                     "UserPromptSubmit": "SessionStart",
                                     "PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse",
                                     "PostToolUseFailure": "PostToolUse", "Stop": "Stop"}


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
    hashes = read_manifest(path)["hashes"]  # as the runner reads it: a key twice refused
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
    paths: tuple[str, ...] = ()  # the files an edit tool writes
    tool_use_id: str | None = None  # the CLI's id of the tool call (Claude Code, Codex)


def parse_payload(hook_event: str, payload: Any) -> HookCall:
    """Read the fields the bridge uses. Raises ValueError on a payload it cannot read, and
    on an event no CLI sends (``PreTooluse``: once logged as a normal allow)."""
    if hook_event not in HOOK_EVENTS:
        close = difflib.get_close_matches(hook_event, list(HOOK_EVENTS), n=1, cutoff=0.6)
        raise ValueError(f"unknown hook event {hook_event!r}"
                         + (f"; did you mean {close[0]!r}?" if close else
                            f" (known: {', '.join(HOOK_EVENTS)})"))
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("the hook input has no session_id")
    tool_name = payload.get("tool_name")
    tool_name = tool_name if isinstance(tool_name, str) else None
    tool_input = payload.get("tool_input") or {}
    paths = edit_paths(tool_name, tool_input)
    command = "" if tool_name in EDIT_TOOLS else shell_command(tool_input)
    if hook_event == "PostToolUseFailure":  # the failed call's outcome, with its code
        output, code = failure_output(payload.get("error"))
        exit_code: int | None = code
    else:
        output, exit_code = tool_output(payload.get("tool_response"))
    prompt = payload.get("prompt")
    tool_use_id = payload.get("tool_use_id")
    return HookCall(hook_event=hook_event, session_id=session_id, tool_name=tool_name,
                    command=command, output=output, exit_code=exit_code,
                    prompt=prompt if isinstance(prompt, str) else None,
                    stop_hook_active=bool(payload.get("stop_hook_active")), paths=paths,
                    tool_use_id=tool_use_id if isinstance(tool_use_id, str) else None)


def render(hook_event: str, decision: Decision, cli: Cli = "claude-code"
           ) -> dict[str, Any] | None:
    """The stdout JSON a CLI expects for ``decision`` at ``hook_event`` (None: say nothing).

    For Codex a PreToolUse answer is a deny or nothing (an allow or ask fails the hook).
    """
    if decision.is_allow or not decision.text.strip():
        return None
    if cli == "codex" and hook_event == "PreToolUse" and decision.kind != "deny":
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
            decision = self._codex_deferral(call, decision, state)
        answer = render(call.hook_event, decision, self.cli)
        base = self._base(call, start)
        line = base | {"kind": "event", "policyName": None,
                       "decision": "allow" if answer is None else decision.kind,
                       "reason": decision.text if answer is not None else "",
                       "step": event.step if event else 0, "seq": state.events,
                       "command": call.command[:500] or None,
                       "paths": list(call.paths) or None, "toolUseId": call.tool_use_id}
        if call.hook_event == "Stop":  # the CLI's witness that it went on (coding_agents/stops)
            line["stopHookActive"] = call.stop_hook_active
        append_activity(self.state_dir, [*(base | e for e in entries), line])
        return answer

    def _codex_deferral(self, call: HookCall, decision: Decision, state: SessionState
                        ) -> Decision:
        """Codex: hold a PreToolUse instruction for the same tool's PostToolUse."""
        if self.cli != "codex":
            return decision
        if call.hook_event == "PreToolUse" and decision.kind == "instruct":
            state.pending_context = decision.text
        elif call.hook_event == "PostToolUse" and state.pending_context:
            held, state.pending_context = state.pending_context, ""
            text = f"{held}\n\n{decision.text}" if not decision.is_allow else held
            return Decision("instruct", text)
        return decision

    def _event(self, call: HookCall, state: SessionState) -> Event | None:
        name = HOOK_EVENTS.get(call.hook_event)
        if name == "SessionStart":
            if call.prompt is None:
                return None
            state.task_text = state.task_text or call.prompt
            return Event("SessionStart", call.prompt)
        if name in ("PreToolUse", "PostToolUse"):
            shell = call.tool_name in SHELL_TOOLS and bool(call.command)
            if not shell and not call.paths:
                return None
            if name == "PreToolUse":
                state.commands += 1
            return Event(name, state.task_text, command=call.command, output=call.output,
                         exit_code=call.exit_code, step=state.commands, paths=call.paths,
                         tool=call.tool_name or "Bash")
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
