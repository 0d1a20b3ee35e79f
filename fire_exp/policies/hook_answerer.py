"""The policies' answer to one hook call, in process: what ``fire-exp hook`` does.

The hook transport (``fire_exp/environments/hook_transport/``) carries a CLI's hook calls
from a box to this process; :class:`HookAnswerer` answers them with the arm's policies.

Everything the policies need stays on this side of the wall: the portfolio (loaded and,
for a frozen manifest, verified here), the session state and the activity log.

One attempt is one CLI session. The answerer pins it: the session of the first call (the
CLI's prompt hook, which comes before the agent can act), or the one it is given. A call
from any other session gets no decision and touches no state; the first few such sessions
are written to the activity log as ``tamper`` lines, which the reconciliation of the
attempt reads (``fire_exp/agents/coding_agents/evidence.py``). So an agent that forges
sessions can create no state file on the host and cannot grow the log without bound.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from fire_exp.files import json_loads
from fire_exp.policies.hook_store import append_activity
from fire_exp.policies.hooks import (
    Cli,
    HookBridge,
    HookCall,
    bridge_error,
    load_arm_families,
    parse_payload,
)
from fire_exp.records import now_iso

# Foreign sessions written to the activity log, one line each; later ones are only counted.
MAX_FOREIGN_LOGGED = 8
FOREIGN_SESSION = "hook call from a foreign session"


class HookAnswerer:
    """One arm's policies as the answer to hook calls (``fire-exp hook``, in process).

    The portfolio is loaded once. A portfolio that does not load (or does not match its
    manifest) answers nothing and logs a load error on every call, as the bridge command
    does, so the validity guard sees it.

    Args:
        portfolio, arm, controls: what ``fire-exp hook`` takes (a name, folder or manifest).
        state_dir: the session state and activity log, on the host.
        cli: ``claude-code`` or ``codex`` (recorded in the activity log).
        session_id: the CLI's session, when it is known before its first call (None: the
            session of the first call).
    """

    def __init__(self, portfolio: str, arm: str, state_dir: Path, cli: Cli,
                 controls: str | None = None, session_id: str | None = None) -> None:
        self.state_dir = state_dir
        self.session_id = session_id
        self.foreign: set[str] = set()  # the foreign sessions logged (at most a few)
        self.refused = 0  # calls refused as foreign
        self._pin = threading.Lock()  # the transport answers calls on worker threads
        self.load_error: str | None = None
        self.bridge: HookBridge | None = None
        try:
            families = load_arm_families(portfolio, arm, controls)
            self.bridge = HookBridge(families, state_dir, arm, cli)
        except Exception as exc:  # noqa: BLE001 - reported on every call, as the command does
            self.load_error = f"policy load error: {exc}"

    def answer(self, event: str, raw: bytes) -> str:
        """The stdout of ``fire-exp hook EVENT`` for the payload ``raw`` ("" for none)."""
        text = raw.decode("utf-8", "replace")
        try:
            call = parse_payload(event, json_loads(text))
        except (json.JSONDecodeError, ValueError) as exc:
            bridge_error(self.state_dir, event, f"malformed hook input: {exc}; got {text[:200]!r}")
            return ""
        if not self._pinned(call):
            return ""
        if self.bridge is None:
            bridge_error(self.state_dir, event, str(self.load_error), session_id=call.session_id,
                         load=True)
            return ""
        try:
            answer = self.bridge.handle(call)
        except Exception as exc:  # noqa: BLE001 - the bridge never blocks the agent
            bridge_error(self.state_dir, event, f"bridge error: {type(exc).__name__}: {exc}",
                         session_id=call.session_id)
            return ""
        return "" if answer is None else json.dumps(answer) + "\n"

    def _pinned(self, call: HookCall) -> bool:
        """Whether ``call`` is of the attempt's session (the first call's pins it); a call of
        another session is refused, and logged once per session up to a bound."""
        with self._pin:
            if self.session_id is None:
                self.session_id = call.session_id
            if call.session_id == self.session_id:
                return True
            self.refused += 1
            session = call.session_id[:200]
            if session in self.foreign or len(self.foreign) >= MAX_FOREIGN_LOGGED:
                return False
            self.foreign.add(session)
        append_activity(self.state_dir, [{
            "timestamp": now_iso(), "sessionId": session,
            "eventType": call.hook_event, "toolName": call.tool_name, "policyName": None,
            "decision": "refused", "reason": f"{FOREIGN_SESSION} (the attempt's is "
            f"{self.session_id!r})", "durationMs": 0.0, "kind": "tamper",
            "command": call.command[:500] or None, "paths": list(call.paths) or None,
            "toolUseId": call.tool_use_id}])
        return False
