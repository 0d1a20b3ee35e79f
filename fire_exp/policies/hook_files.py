"""Merge fire-exp's hooks into a project's CLI settings, and take them out again.

``fire-exp export-hooks`` writes into files a user already has (``.claude/settings.json``,
``.codex/hooks.json``, ``.codex/config.toml``). Every other key and hook stays; a second
export changes nothing; ``--remove`` takes out exactly what an export put in. fire-exp's own
hook handlers are recognised by their command (``... hook EVENT --portfolio ...``), and the
lines it adds to ``config.toml`` carry the comment :data:`MARK`.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError

MARK = "# added by fire-exp export-hooks"
_OURS = re.compile(r"\bhook\s+\w+\s+--portfolio\s.*--state\s.*--cli\s")
_FEATURES = re.compile(r"^\s*\[features\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")
_HOOKS_LINE = re.compile(r"^\s*hooks\s*=")


def is_ours(handler: Any) -> bool:
    """Whether a hook handler is one fire-exp wrote."""
    return isinstance(handler, dict) and bool(_OURS.search(str(handler.get("command", ""))))


def without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every fire-exp hook handler removed (emptied groups and events go too)."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = []
        for group in hooks[event] if isinstance(hooks[event], list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h) for h in handlers):
                group = group | {"hooks": [h for h in handlers if not is_ours(h)]}
                if not group["hooks"]:
                    continue
            groups.append(group)
        if groups:
            hooks[event] = groups
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def merged(doc: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with fire-exp's previous handlers replaced by the groups of ``ours``."""
    out = without_ours(doc)
    hooks = out.setdefault("hooks", {})
    for event, groups in ours["hooks"].items():
        hooks.setdefault(event, []).extend(copy.deepcopy(groups))
    return out


def read_json(path: Path) -> dict[str, Any]:
    """The settings document at ``path`` ({} when the file does not exist).

    Raises:
        InputError: the file is not a JSON object (nothing is written over it).
    """
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"not valid JSON ({exc.msg})",
                         "fix the file; fire-exp does not overwrite it") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("hooks", {}), dict):
        raise InputError(path, "hooks", "expected a JSON object with a `hooks` object",
                         "fix the file; fire-exp does not overwrite it")
    return doc


def with_feature_flag(text: str) -> str:
    """``config.toml`` text with ``[features].hooks = true`` (the current key; the docs keep
    ``codex_hooks`` only as a deprecated alias). Lines added or changed carry :data:`MARK`."""
    try:
        features = tomllib.loads(text).get("features", {})
    except tomllib.TOMLDecodeError as exc:
        raise InputError(".codex/config.toml", "<toml>", f"not valid TOML ({exc})",
                         "fix the file; fire-exp does not overwrite it") from None
    if features.get("hooks") is True:
        return text
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _FEATURES.match(line)), None)
    if start is None:
        tail = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{tail}\n[features]  {MARK}\nhooks = true  {MARK}\n"
    end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    for i in range(start + 1, end):
        if _HOOKS_LINE.match(lines[i]):
            lines[i] = f"hooks = true  {MARK} (was: {lines[i].strip()})"
            return "\n".join(lines) + "\n"
    lines.insert(start + 1, f"hooks = true  {MARK}")
    return "\n".join(lines) + "\n"


def without_feature_flag(text: str) -> str:
    """``config.toml`` text with the lines :func:`with_feature_flag` added taken out again."""
    out = []
    for line in text.splitlines():
        if MARK not in line:
            out.append(line)
        elif "(was: " in line:
            out.append(line.split("(was: ", 1)[1].rstrip(")"))
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def write_with_backup(path: Path, text: str) -> tuple[bool, Path | None]:
    """Write ``text`` to ``path`` unless it already holds it; back the old file up first.

    Returns whether the file changed, and the backup's path (None: there was no file).
    """
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if old == text:
        return False, None
    backup = None
    if old is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        backup = path.with_name(f"{path.name}.fire-exp-backup-{stamp}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".fire-exp-tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True, backup
