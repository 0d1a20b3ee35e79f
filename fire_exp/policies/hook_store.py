"""What the hook bridge keeps between calls: per-session state and the activity log.

A CLI runs ``fire-exp hook`` once per event, each a fresh process, so the policy runtime's
memory lives in the state folder ``DIR``:

- ``DIR/sessions/<session>.json`` — the task text, every family's state, the nudge counts,
  the event counter and the command counter of one CLI session; read and written under an
  exclusive lock (``<session>.lock``), since a CLI may run matching hooks concurrently;
- ``DIR/activity.jsonl`` — one JSON line per hook event and per policy decision or error,
  with failproofai's fields (``timestamp, sessionId, eventType, toolName, policyName,
  decision, reason, durationMs``) plus ``kind`` (``event``, ``policy``, ``error``, and
  ``tamper`` for a call the answerer refused), ``seq``, ``step``, ``arm`` and ``cli``; an
  event line also carries the tool call's ``command``, ``paths`` and ``toolUseId``. The
  runner reads it back with :func:`read_activity`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fire_exp.policies.runtime import LogEntry

ACTIVITY_FILE = "activity.jsonl"


@dataclass
class SessionState:
    """The policy runtime's memory for one CLI session (JSON-serialisable)."""

    task_text: str = ""
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    nudges: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    events: int = 0
    commands: int = 0
    stop_rounds: int = 0  # consecutive Stop calls with stop_hook_active
    pending_context: str = ""  # Codex: a PreToolUse instruction for the PostToolUse


def session_key(session_id: str) -> str:
    """A file name for ``session_id`` (sanitised, with a hash so names cannot collide)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:64] or "session"
    return f"{safe}-{hashlib.sha256(session_id.encode()).hexdigest()[:10]}"


def _encode(value: Any) -> Any:
    """Families keep sets in their state: they must come back as sets, not strings."""
    if isinstance(value, (set, frozenset)):
        return {"__set__": sorted(value, key=repr)}
    return str(value)


def _decode(obj: dict[str, Any]) -> Any:
    return set(obj["__set__"]) if set(obj) == {"__set__"} else obj


@contextmanager
def locked_session(state_dir: Path, session_id: str) -> Iterator[SessionState]:
    """Load a session's state under an exclusive lock; save it when the block ends."""
    folder = state_dir / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    key = session_key(session_id)
    path = folder / f"{key}.json"
    with open(folder / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = SessionState()
            if path.is_file():
                state = SessionState(**json.loads(path.read_text(encoding="utf-8"),
                                                  object_hook=_decode))
            yield state
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(asdict(state), default=_encode), encoding="utf-8")
            tmp.replace(path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append_activity(state_dir: Path, entries: list[dict[str, Any]]) -> None:
    """Append lines to ``DIR/activity.jsonl`` under a lock (concurrent hooks interleave)."""
    if not entries:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / ACTIVITY_FILE, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            for entry in entries:
                fh.write(json.dumps(entry, default=str) + "\n")
            fh.flush()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class HookLine:
    """One ``event`` or ``tamper`` line of the activity log, as the reconciliation of a
    CLI's transcript with the host's hook calls reads it
    (``fire_exp/agents/coding_agents/evidence.py``).

    Attributes:
        kind: ``event`` (a hook call the bridge answered) or ``tamper`` (one it refused).
        event: the CLI's event name (``PreToolUse``, ``PostToolUse``, ``Stop``, ...).
        session_id: the payload's ``session_id`` (None: the line has none).
        tool: the payload's ``tool_name``.
        command: the shell command (first 500 characters; "" for none).
        paths: the files an edit tool writes.
        decision: the answer's kind (``allow``, ``instruct``, ``deny``).
        reason: the answer's text, or why the call was refused.
        tool_use_id: the CLI's id of the tool call (None: the payload has none).
        stop_hook_active: a Stop the CLI fired while going on because of a Stop block.
    """

    kind: str
    event: str
    session_id: str | None = None
    tool: str | None = None
    command: str = ""
    paths: tuple[str, ...] = ()
    decision: str = "allow"
    reason: str = ""
    tool_use_id: str | None = None
    stop_hook_active: bool = False


def _hook_line(entry: dict[str, Any]) -> HookLine:
    def text(key: str) -> str | None:
        value = entry.get(key)
        return value if isinstance(value, str) else None

    paths = entry.get("paths")
    return HookLine(kind=str(entry.get("kind")), event=str(entry.get("eventType")),
                    session_id=text("sessionId"), tool=text("toolName"),
                    command=text("command") or "",
                    paths=tuple(str(p) for p in paths) if isinstance(paths, list) else (),
                    decision=text("decision") or "allow", reason=text("reason") or "",
                    tool_use_id=text("toolUseId"),
                    stop_hook_active=entry.get("stopHookActive") is True)


@dataclass(frozen=True)
class ActivitySummary:
    """The activity log of one attempt, read back.

    Attributes:
        hook_events: hook calls that reached the bridge (``kind == "event"``).
        by_event: those calls by the CLI's event name (``PreToolUse``, ``Stop``, ...).
        decisions: the policies' non-allow decisions and errors, as runtime log entries.
        errors: bridge errors (malformed input, a portfolio that failed to load).
        load_errors: how many of those were portfolio load or verification failures.
        denied_commands: the commands a PreToolUse deny kept from running, in order.
        lines: every ``event`` and ``tamper`` line, in the log's order.
    """

    hook_events: int
    by_event: dict[str, int]
    decisions: tuple[LogEntry, ...]
    errors: tuple[str, ...]
    load_errors: int
    denied_commands: tuple[str, ...] = ()
    lines: tuple[HookLine, ...] = ()

    @property
    def fired(self) -> bool:
        return any(d.decision in ("instruct", "deny") for d in self.decisions)


def read_activity(state_dir: Path, session_id: str | None = None) -> ActivitySummary:
    """Summarise ``DIR/activity.jsonl`` (all sessions, or one). A missing log is empty.

    Lines that are not JSON (a write cut short) count as bridge errors.
    """
    path = state_dir / ACTIVITY_FILE
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    by_event: Counter[str] = Counter()
    decisions: list[LogEntry] = []
    errors: list[str] = []
    load_errors = 0
    denied: list[str] = []
    hook_lines: list[HookLine] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            errors.append(f"unreadable activity line: {line[:80]!r}")
            continue
        if session_id is not None and entry.get("sessionId") not in (session_id, None):
            continue
        kind = entry.get("kind")
        if kind in ("event", "tamper"):
            hook_lines.append(_hook_line(entry))
        if kind == "event":
            by_event[str(entry.get("eventType"))] += 1
            if entry.get("eventType") == "PreToolUse" and entry.get("decision") == "deny":
                denied.append(str(entry.get("command") or ""))
        elif kind == "policy":
            family, _, rule = str(entry.get("policyName") or "").partition(".")
            decisions.append(LogEntry(seq=int(entry.get("seq") or 0),
                                      event=str(entry.get("runtimeEvent") or ""),
                                      step=int(entry.get("step") or 0), family=family,
                                      rule=rule, decision=str(entry.get("decision")),
                                      text=str(entry.get("reason") or ""),
                                      duration_ms=float(entry.get("durationMs") or 0.0)))
        elif kind == "error":
            errors.append(str(entry.get("reason")))
            load_errors += entry.get("policyName") == "<load>"
    return ActivitySummary(hook_events=sum(by_event.values()), by_event=dict(by_event),
                           decisions=tuple(decisions), errors=tuple(errors),
                           load_errors=load_errors, denied_commands=tuple(denied),
                           lines=tuple(hook_lines))
