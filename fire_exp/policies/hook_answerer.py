"""The policies' answer to one hook call, in process: what ``fire-exp hook`` does.

The hook transport (``fire_exp/environments/hook_transport/``) carries a CLI's hook calls
from a box to this process; :class:`HookAnswerer` answers them with the arm's policies.

Everything the policies need stays on this side of the wall: the portfolio (loaded and,
for a frozen manifest, verified here), the session state and the activity log.
"""

from __future__ import annotations

import json
from pathlib import Path

from fire_exp.policies.hooks import Cli, HookBridge, bridge_error, load_arm_families, parse_payload


class HookAnswerer:
    """One arm's policies as the answer to hook calls (``fire-exp hook``, in process).

    The portfolio is loaded once. A portfolio that does not load (or does not match its
    manifest) answers nothing and logs a load error on every call, as the bridge command
    does, so the validity guard sees it.

    Args:
        portfolio, arm, controls: what ``fire-exp hook`` takes (a name, folder or manifest).
        state_dir: the session state and activity log, on the host.
        cli: ``claude-code`` or ``codex`` (recorded in the activity log).
    """

    def __init__(self, portfolio: str, arm: str, state_dir: Path, cli: Cli,
                 controls: str | None = None) -> None:
        self.state_dir = state_dir
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
            call = parse_payload(event, json.loads(text))
        except (json.JSONDecodeError, ValueError) as exc:
            bridge_error(self.state_dir, event, f"malformed hook input: {exc}; got {text[:200]!r}")
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
