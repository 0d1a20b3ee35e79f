"""``fire-exp hook EVENT --portfolio P --arm A --state DIR``: the Claude Code / Codex bridge.

Reads the hook's JSON on stdin, runs the arm's policies (see fire_exp/policies/hooks.py)
and prints the answer the CLI expects. It exits 0 whatever happens inside, because exit
code 2 would block the agent: errors go to the activity log in DIR (and to stderr). Only
bad command-line arguments exit 1, a non-blocking error the CLI shows to the user.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fire_exp.files import json_loads
from fire_exp.policies.hooks import CLIS, HookBridge, bridge_error, load_arm_families, parse_payload


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)  # argparse would exit 2, which blocks the agent


def _parser() -> _Parser:
    parser = _Parser(prog="fire-exp hook", description=__doc__.splitlines()[0])
    parser.add_argument("event", help="the hook event (PreToolUse, PostToolUse, Stop, ...)")
    parser.add_argument("--portfolio", required=True,
                        help="portfolio name or folder, or a frozen *.prereg.json manifest")
    parser.add_argument("--arm", required=True, help="real | sham | always_verify | reconsider")
    parser.add_argument("--state", required=True, help="folder for session state and the log")
    parser.add_argument("--cli", choices=CLIS, default="claude-code")
    parser.add_argument("--controls", default=None,
                        help="control sources (default: the manifest's, or `controls`)")
    return parser


def main(argv: list[str]) -> int:
    """Answer one hook call; see the module docstring for the exit codes."""
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        print(f"fire-exp hook: {exc}", file=sys.stderr)
        return 1
    state = Path(args.state)
    raw = sys.stdin.read()
    try:
        call = parse_payload(args.event, json_loads(raw))
    except (json.JSONDecodeError, ValueError) as exc:
        bridge_error(state, args.event, f"malformed hook input: {exc}; got {raw[:200]!r}")
        return 0
    try:
        families = load_arm_families(args.portfolio, args.arm, args.controls)
    except Exception as exc:  # noqa: BLE001 - a portfolio that fails to load answers nothing
        bridge_error(state, args.event, f"policy load error: {exc}", session_id=call.session_id,
                     load=True)
        print(f"fire-exp hook: policy load error: {exc}", file=sys.stderr)
        return 0
    try:
        answer = HookBridge(families, state, args.arm, args.cli).handle(call)
    except Exception as exc:  # noqa: BLE001 - the bridge never blocks the agent
        bridge_error(state, args.event, f"bridge error: {type(exc).__name__}: {exc}",
                     session_id=call.session_id)
        return 0
    if answer is not None:
        print(json.dumps(answer))
    return 0
