"""One attempt's page data: its record, its logs, the conversation and the policy events,
in the order they happened.

Reads the attempt's log files (``files.py`` says where): the command log (one step a line:
a command, a file edit or a stop), the policy's non-allow decisions, the conversation
(``conversation.py``), the verifier's output and ``setup.log``. A ``PreToolUse`` or
``PostToolUse`` event with ``step`` s belongs to the s-th command (the session numbers
commands from 1, denied ones included); the n-th ``Stop`` event belongs to the n-th stop;
``SessionStart`` to the session's start. An event that fits nowhere is kept as unplaced,
never dropped. The conversation's messages go before the steps they caused
(``interleave``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fire_exp.records import AttemptRecord
from fire_exp.view.box_paths import box_names, in_box_names, task_workdir
from fire_exp.view.collect import Redact
from fire_exp.view.conversation import read_conversation
from fire_exp.view.files import attempt_files

__all__ = ["TEXT_KEPT", "attempt_detail", "interleave", "is_near_miss", "timeline"]

# Record fields that hold no text the box printed (kept byte for byte: ids, seeds, hashes).
_NOT_TEXT = frozenset({"attempt_id", "seed", "config_hash", "log_dir", "log_files"})
TEXT_KEPT = 20_000  # characters of one output or log kept in the page; the rest is elided


def is_near_miss(record: AttemptRecord) -> bool | None:
    """DESIGN's near-miss: the risky state arose, the behavior did not follow, yet it passed.

    The analysis' ``near_miss_pct`` counts the same attempts. None when the attempt's state
    or behavior could not be coded (no eligible family, or an uncodable marker).
    """
    f = record.funnel
    if f.state is None or f.behavior is None:
        return None
    return f.state and not f.behavior and record.passed


def _clip(text: str, redact: Redact) -> str:
    text = redact(text)
    if len(text) <= TEXT_KEPT:
        return text
    return text[:TEXT_KEPT] + f"\n… [{len(text) - TEXT_KEPT} more characters in the log file]"


def _read_text(path: Path, redact: Redact) -> str | None:
    if not path.is_file():
        return None
    return _clip(path.read_text(encoding="utf-8", errors="replace"), redact)


def _read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects of a JSONL log, and a problem line for each line that is not one."""
    if not path.is_file():
        return [], []
    rows, problems = [], []
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace")
                                  .splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name}:{lineno}: not JSON ({exc.msg})")
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            problems.append(f"{path.name}:{lineno}: not a JSON object")
    return rows, problems


def _event(raw: dict[str, Any], redact: Redact) -> dict[str, Any]:
    keep = ("seq", "event", "step", "family", "rule", "decision", "duration_ms")
    out = {k: raw.get(k) for k in keep}
    out["text"] = _clip(str(raw.get("text") or ""), redact)
    return out


def timeline(commands: list[dict[str, Any]], events: list[dict[str, Any]],
             redact: Redact = str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent's steps with each policy event attached where it happened.

    Returns ``(steps, unplaced)``: ``steps`` starts with the session start, then one entry
    per line of the command log; ``unplaced`` holds events whose step is not in the log.
    """
    steps: list[dict[str, Any]] = [{"kind": "start", "step": 0, "events": []}]
    by_command: dict[int, dict[str, Any]] = {}
    stops: list[dict[str, Any]] = []
    n_commands = 0
    for raw in commands:
        kind = str(raw.get("kind") or "command")
        entry: dict[str, Any] = {"kind": kind, "events": []}
        if kind in ("command", "edit"):
            if kind == "command":
                n_commands += 1
                by_command[n_commands] = entry
            entry |= {"step": n_commands, "command": _clip(str(raw.get("command") or ""), redact),
                      "exit_code": raw.get("exit_code"), "denied": bool(raw.get("denied")),
                      "output": _clip(str(raw.get("output") or ""), redact),
                      "paths": [str(p) for p in raw.get("paths") or []]}
        else:
            stops.append(entry)
            entry["step"] = n_commands
        steps.append(entry)
    unplaced: list[dict[str, Any]] = []
    n_stop = 0
    for raw in sorted(events, key=lambda e: (e.get("seq") is None, e.get("seq") or 0)):
        event, name = _event(raw, redact), raw.get("event")
        target: dict[str, Any] | None = None
        if name == "SessionStart":
            target = steps[0]
        elif name in {"PreToolUse", "PostToolUse"} and isinstance(raw.get("step"), int):
            target = by_command.get(raw["step"])
        elif name == "Stop":
            target = stops[n_stop] if n_stop < len(stops) else None
            n_stop += 1
        (target["events"] if target is not None else unplaced).append(event)
    return steps, unplaced


def _find(steps: list[dict[str, Any]], kinds: tuple[str, ...], start: int) -> int | None:
    return next((j for j in range(start, len(steps)) if steps[j]["kind"] in kinds), None)


def interleave(steps: list[dict[str, Any]],
               messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps and the conversation in one list, in the order they happened.

    A message that made the session act (``actions`` commands or edits, or a ``stop``) goes
    right before the first step it caused, and its steps follow it; steps no message claims
    stay where the command log puts them; other messages stay where the conversation puts
    them. With no conversation the result is ``steps``.

    Args:
        steps: ``timeline``'s steps (the session start first).
        messages: ``conversation.read_conversation``'s messages.
    """
    out, rest, i = steps[:1], steps[1:], 0
    for message in messages:
        bound: list[int] = []
        j = i
        for _ in range(message["actions"]):
            k = _find(rest, ("command", "edit"), j)
            if k is None:
                break
            bound.append(k)
            j = k + 1
        if message["stop"] and (k := _find(rest, ("stop",), j)) is not None:
            bound.append(k)
        message["bound"] = len(bound)
        if bound:
            out += rest[i:bound[0]]
            out.append(message)
            out += rest[bound[0]:bound[-1] + 1]
            i = bound[-1] + 1
        else:
            out.append(message)
    return out + rest[i:]


def _instruction(task_dir: Path | None, redact: Redact) -> str | None:
    if task_dir is None:
        return None
    from fire_exp.tasks.loader import strip_canary

    path = task_dir / "instruction.md"
    if not path.is_file():
        return None
    return _clip(strip_canary(path.read_text(encoding="utf-8", errors="replace")), redact)


def _raw(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def attempt_detail(record: AttemptRecord, run_dir: Path, task_dir: Path | None,
                   redact: Redact) -> dict[str, Any]:
    """Everything the attempt page shows, as JSON-ready data (texts redacted and clipped)."""
    files = attempt_files(run_dir, record)
    data = record.model_dump(mode="json")
    data["error"] = redact(data["error"]) if data.get("error") else data.get("error")
    data["coding_errors"] = {k: redact(v) for k, v in (data.get("coding_errors") or {}).items()}
    data["near_miss"] = is_near_miss(record)
    data["instruction"] = _instruction(task_dir, redact)
    if files is None or not files.logs.is_dir():
        data |= {"timeline": [], "unplaced": [], "log_problems": [
            "the record names no log folder" if files is None
            else f"no log folder {record.log_dir}/logs"]}
        return data
    commands, bad_c = _read_jsonl(files.commands)
    events, bad_e = _read_jsonl(files.policy_events)
    steps, data["unplaced"] = timeline(commands, events, redact)
    messages = read_conversation(_raw(files.transcript), _raw(files.cli_stdout), record.agent)
    for m in messages:
        m["text"] = _clip(m["text"], redact)
        m["calls"] = [_clip(c, redact) for c in m["calls"]]
        m["commands"] = [_clip(c, redact) for c in m["commands"]]
    data["timeline"] = interleave(steps, messages)
    data["log_problems"] = bad_c + bad_e
    data["verifier"] = {path.name: _read_text(path, redact) for path in
                        (files.test_stdout, files.verifier_result, files.reward_txt)}
    data["setup_log"] = _read_text(files.setup_log, redact)
    data["log_files"] = sorted(str(p.relative_to(files.logs)) for p in files.logs.rglob("*")
                               if p.is_file())
    names = box_names(files.root, task_workdir(task_dir))
    return {k: v if k in _NOT_TEXT else in_box_names(v, names) for k, v in data.items()}
