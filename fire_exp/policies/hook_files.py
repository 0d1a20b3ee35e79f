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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from fire_exp.errors import InputError
from fire_exp.files import DuplicateKeyError, json_loads, parse_json, read_text
from fire_exp.policies.hook_settings import CODEX_HOOKS_FEATURE  # the key, in one place

MARK = "# added by fire-exp export-hooks"
_OURS = re.compile(r"\bhook\s+\w+\s+--portfolio\s.*--state\s.*--cli\s")


def is_ours(handler: Any) -> bool:
    """Whether a hook handler is one fire-exp wrote."""
    return isinstance(handler, dict) and bool(_OURS.search(str(handler.get("command", ""))))


def without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every fire-exp hook handler removed (emptied groups and events go too)."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    touched = False
    for event in list(hooks):
        groups, ours = [], False
        for group in hooks[event] if isinstance(hooks[event], list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h) for h in handlers):
                ours = True
                group = group | {"hooks": [h for h in handlers if not is_ours(h)]}
                if not group["hooks"]:
                    continue
            groups.append(group)
        if groups or not ours:  # an event the user left empty stays as it was
            hooks[event] = groups if ours else hooks[event]
        else:
            del hooks[event]
        touched = touched or ours
    if not hooks and touched:
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
        text = read_text(path) or "{}"
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"not valid JSON ({exc.msg})",
                         _LEFT_ALONE) from None
    except DuplicateKeyError as exc:  # the hooks the CLI would run are not the ones we see
        parse_json(text, path, fix=_LEFT_ALONE)  # names the key and its line
        raise InputError(path, "<json>", str(exc), _LEFT_ALONE) from None
    except (RecursionError, ValueError):  # nested too deeply; a 5,000-digit integer
        raise InputError(path, "<json>", "nested too deeply, or an integer of thousands of "
                         "digits", _LEFT_ALONE) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("hooks", {}), dict):
        raise InputError(path, "hooks", "expected a JSON object with a `hooks` object",
                         _LEFT_ALONE)
    check_hook_shapes(path, doc.get("hooks", {}))
    return doc


_LEFT_ALONE = "fix the file; fire-exp does not overwrite it"
_GROUP = '{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}'


def check_hook_shapes(path: Path, hooks: dict[str, Any]) -> None:
    """Refuse an event entry in a shape the CLIs do not read, rather than drop or misread
    it: each event holds a list of matcher groups, each group a ``hooks`` list of handler
    objects (Claude Code's and Codex's documented shape; ``matcher`` is optional).

    Raises:
        InputError: naming the event (and group) and the shape expected.
    """
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise InputError(path, f"hooks.{event}", f"expected a list of matcher groups, got "
                             f"{_json_kind(groups)}", f"write it as [{_GROUP}]; {_LEFT_ALONE}")
        for i, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) \
                    or not all(isinstance(h, dict) for h in handlers) \
                    or not isinstance(group.get("matcher", ""), str):
                raise InputError(path, f"hooks.{event}[{i}]", "expected a matcher group "
                                 f"{_GROUP}", _LEFT_ALONE)


def _json_kind(value: Any) -> str:
    return {dict: "an object", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


# The line an export appends to config.toml: what it set, and what was there before
# (``none``: no features table; ``absent``: the table without the key; else the old value
# as TOML), so ``--remove`` restores exactly that, whatever form the table has.
_RECORD = re.compile(r"^# added by fire-exp export-hooks: features\.(\w+) = true; before: "
                     r"(.*)$", re.M)


def _toml(text: str, where: str = ".codex/config.toml") -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except (TOMLKitError, RecursionError, ValueError) as exc:
        raise InputError(where, "<toml>", f"not valid TOML ({exc})",
                         "fix the file; fire-exp does not overwrite it") from None


def _features(doc: tomlkit.TOMLDocument, where: str) -> Any:
    features = doc.get("features")
    if features is not None and not isinstance(features, dict):
        raise InputError(where, "features", f"expected a table, got {features!r:.40}",
                         "fix the file; fire-exp does not overwrite it")
    return features


def with_feature_flag(text: str, where: str = ".codex/config.toml") -> str:
    """``config.toml`` text with ``[features].hooks = true``, edited as TOML (tomlkit keeps
    the user's formatting), so one ``features`` table remains whether the file writes it
    as a table, an inline table or dotted keys. The appended record line (:data:`MARK`)
    says what was there before, for :func:`without_feature_flag`.

    Raises:
        InputError: the text is not TOML, or ``features`` is not a table.
    """
    doc = _toml(text, where)
    features = _features(doc, where)
    key = CODEX_HOOKS_FEATURE
    if features is not None and features.get(key) is True:
        return text
    if features is None:
        before = "none"
        doc["features"] = tomlkit.table()
        features = doc["features"]
    else:
        before = "absent" if key not in features else tomlkit.item(features[key]).as_string()
    features[key] = True
    out = tomlkit.dumps(doc)
    tail = "" if not out or out.endswith("\n") else "\n"
    return f"{out}{tail}{MARK}: features.{key} = true; before: {before}\n"


def without_feature_flag(text: str, where: str = ".codex/config.toml") -> str:
    """``config.toml`` text with what :func:`with_feature_flag` changed undone."""
    records = list(_RECORD.finditer(text))
    if not records:
        return _without_marked_lines(text)  # written by an older fire-exp
    for record in records:
        text = text.replace(record.group(0) + "\n", "", 1).replace(record.group(0), "", 1)
    doc = _toml(text, where)
    features = _features(doc, where)
    for record in reversed(records):
        key, before = record.group(1), record.group(2).strip()
        if features is None:
            continue
        if before == "none" and set(features) <= {key}:
            del doc["features"]
            features = None
            out = tomlkit.dumps(doc).rstrip("\n")  # the blank line before the table too
            doc = _toml(out + "\n" if out else "", where)
        elif before in ("none", "absent"):
            features.pop(key, None)
        else:
            features[key] = tomlkit.parse(f"v = {before}")["v"]
    return tomlkit.dumps(doc)


def _without_marked_lines(text: str) -> str:
    """Undo an older export, which marked each line it added or changed."""
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

    Raises:
        InputError: ``path`` is a folder or another thing that is not a file; nothing is
            written (no temporary file is left in the user's project either).
    """
    if path.exists() and not path.is_file():
        raise InputError(path, "<file>", "is a folder, not a file" if path.is_dir() else
                         "is not a regular file", _LEFT_ALONE)
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
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)  # written and moved, or failed: never left behind
    return True, backup
