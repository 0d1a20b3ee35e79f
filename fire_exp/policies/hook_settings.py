"""The hook settings that wire ``fire-exp hook`` into Claude Code or Codex.

Both CLIs read the same JSON shape (reference/hooks.md)::

    {"hooks": {EVENT: [{"matcher": "Bash", "hooks": [{"type": "command",
                                                       "command": "...", "timeout": 60}]}]}}

Claude Code reads it from ``.claude/settings.json`` (or ``claude --settings FILE``); Codex
from ``.codex/hooks.json`` (or ``$CODEX_HOME/hooks.json``). Tool events match the shell and
the file-edit tools (:data:`MATCHERS`: Codex reports its shell tool as ``Bash`` and its
edits as ``apply_patch``); the other events take no matcher. Claude Code 2.1 reports a
failed tool call (a command that exits non-zero) as ``PostToolUseFailure`` instead of
``PostToolUse`` (:data:`FAILURE_EVENTS`): its settings subscribe to both, so the policies
see every result.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.policies.model import Family

TARGETS = {"claude-code": Path(".claude") / "settings.json",
           "codex": Path(".codex") / "hooks.json"}
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
# The event a CLI sends for a failed tool call in place of PostToolUse (checked against
# Claude Code 2.1.332; Codex 0.163 sends PostToolUse for every result).
FAILURE_EVENTS = {"claude-code": "PostToolUseFailure"}
MATCHERS = {"claude-code": "Bash|Edit|MultiEdit|Write|NotebookEdit",
            "codex": "Bash|apply_patch"}
DEFAULT_TIMEOUT_S = 60
# Codex's feature flag for hooks, as ``[features] hooks = true`` in config.toml: ``hooks`` is
# the canonical key since codex-cli 0.130 (``codex_hooks`` a deprecated alias that warns).
CODEX_HOOKS_FEATURE = "hooks"


def needed_events(families: Sequence[Family], cli: str) -> list[str]:
    """The events of ``cli`` an arm needs: the prompt (task text and eligibility), the tool
    events (tracking, and the validity guard's evidence that hooks ran: with ``cli``'s
    failure event, if it has one), and ``Stop`` when a rule acts there."""
    if not families:
        return []
    events = ["UserPromptSubmit", "PreToolUse", "PostToolUse"]
    if cli in FAILURE_EVENTS:
        events.append(FAILURE_EVENTS[cli])
    if any("Stop" in r.events for f in families for r in f.rules()):
        events.append("Stop")
    return events


def hook_command(prefix: str, event: str, *, portfolio: str, arm: str, state_dir: str,
                 cli: str, controls: str | None = None) -> str:
    """The shell command a CLI runs for ``event``."""
    args = ["hook", event, "--portfolio", portfolio, "--arm", arm, "--state", state_dir,
            "--cli", cli]
    if controls:
        args += ["--controls", controls]
    return f"{prefix} {shlex.join(args)}"


def hook_settings(target: str, families: Sequence[Family], *, portfolio: str, arm: str,
                  state_dir: str, prefix: str = "fire-exp", controls: str | None = None,
                  timeout_s: int = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The settings document for ``target`` (``claude-code`` or ``codex``) whose hooks run
    fire-exp's hook command (``prefix hook EVENT --portfolio ...``).

    Raises:
        InputError: an unknown target, or an arm without policies (the baseline runs no
            hooks: a baseline attempt must have no hook configuration at all).
    """
    if target not in TARGETS:
        raise InputError("--target", target, "unknown CLI", f"use one of {', '.join(TARGETS)}")
    if not needed_events(families, target):
        raise InputError("--arm", arm, "this arm runs no policies, so it needs no hooks",
                         "run the baseline without any hook configuration")
    return settings_document(families, lambda event: hook_command(
        prefix, event, portfolio=portfolio, arm=arm, state_dir=state_dir, cli=target,
        controls=controls), MATCHERS[target], timeout_s, cli=target)


def settings_document(families: Sequence[Family], command: Callable[[str], str], matcher: str,
                      timeout_s: int = DEFAULT_TIMEOUT_S, *, cli: str) -> dict[str, Any]:
    """The settings document whose hook for each event of ``cli`` an arm needs runs
    ``command(event)`` (fire-exp's command, or a hook transport's shim); tool events match
    ``matcher``."""
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in needed_events(families, cli):
        handler = {"type": "command", "timeout": timeout_s, "command": command(event)}
        group: dict[str, Any] = {"hooks": [handler]}
        if event in TOOL_EVENTS:
            group = {"matcher": matcher} | group
        hooks[event] = [group]
    return {"hooks": hooks}
