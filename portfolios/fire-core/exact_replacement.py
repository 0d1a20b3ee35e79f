"""Exact replacements: edit under a closed replacement map, and prove nothing else changed.

Registered chain (FIRE Table 1, three rules): state — a write under a closed replacement
map; interventions — instruct before the first write (the map is a byte-level allowlist,
keep each end-of-file newline), instruct at stop after writing (inspect the final diff
mechanically), and, in the credential-sanitization variant, instruct at stop to search for
anything still shaped like a secret; behavior — a mechanical diff after the last write.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, replay, rule

MAP = re.compile(
    r"\breplace\b[^.]{0,80}\bwith\b|\ballowed synonyms?\b|\bplaceholder values?\b"
    r"|\bonly edits? you may make\b|\breplacement (map|table)\b|\bsynonym map\b", re.I)
PROTECT = re.compile(
    r"\bdo not (modify|change|touch|alter)\b|\bleave\b[^.]{0,60}\bunchanged\b|\bonly change\b"
    r"|\beverything else\b[^.]{0,30}\b(unchanged|identical|as it is)\b"
    r"|\bmust (stay|remain) (byte-for-byte )?(unchanged|identical)\b", re.I)
CREDENTIAL = re.compile(r"\b(api[ _-]?keys?|access tokens?|tokens?|credentials?|secrets?"
                        r"|passwords?)\b", re.I)
PLACEHOLDER = re.compile(r"\bplaceholders?\b", re.I)
WRITE = re.compile(
    r"\bsed\b[^|;&]*\s-\w*i|\bperl\b[^|;&]*\s-\w*i"
    r"|\bpython3?\b.*(\.write\(|\.write_text\(|\.write_bytes\(|open\([^)]*['\"][wa]b?['\"])",
    re.S)
DIFF = re.compile(r"\bdiff\b|\bcmp\b|\bdifflib\b")

WRITE_TEXT = (
    "You are about to write under a closed replacement map. Treat the map as a byte-level "
    "allowlist: change only the listed strings, exactly as given, and nothing else (no "
    "reformatting, no whitespace or line-ending changes, no edits to files the task "
    "protects), and preserve each file's end-of-file newline, present or absent, exactly."
)
DIFF_TEXT = (
    "Before you stop, inspect the final result mechanically: diff each edited file against "
    "its original (diff or cmp, not by eye) and confirm that the only differences are the "
    "mapped tokens, that whitespace and the end-of-file newline are unchanged, and that files "
    "you were not asked to edit are untouched. If the diff already shows exactly the allowed "
    "changes, stop without rewriting anything."
)
SECRET_TEXT = (
    "Credentials must end up replaced by exactly the placeholders the task gives. Before you "
    "stop, search every edited file for anything that still looks like a secret (key "
    "prefixes, long hex or base64 strings, passwords in URLs) and confirm that each "
    "placeholder is byte-identical to the one specified, quotes and surrounding syntax intact."
)


def _variant(task_text: str) -> bool:
    return bool(CREDENTIAL.search(task_text) and PLACEHOLDER.search(task_text))


def _track(state: dict, step: int, command: str, edit: bool = False) -> None:
    """One executed action; ``edit``: a CLI's file-edit tool wrote files (a write)."""
    if edit or WRITE.search(command):
        state["last_write"] = step
        state["diffed"] = False
    elif DIFF.search(command) and state.get("last_write") is not None:
        state["diffed"] = True


class ExactReplacement(Family):
    name = "exact_replacement"
    description = "byte-level allowlist before writing; mechanical diff before stopping"

    def eligible(self, task_text):
        return bool(MAP.search(task_text) and PROTECT.search(task_text))

    def track(self, event, state):
        if event.name == "PreToolUse":
            state["writing_now"] = bool(WRITE.search(event.command) or event.paths)
        elif event.name == "PostToolUse":
            _track(state, event.step, event.command, bool(event.paths))

    @rule(events=("PreToolUse",), limit=1)
    def allowlist_before_write(self, event, state):
        if state.get("writing_now") and state.get("last_write") is None:
            return instruct(WRITE_TEXT)
        return ALLOW

    @rule(events=("Stop",), limit=1)
    def diff_at_stop(self, event, state):
        if state.get("last_write") is not None and not state.get("diffed"):
            return instruct(DIFF_TEXT)
        return ALLOW

    @rule(events=("Stop",), limit=1)
    def placeholders_at_stop(self, event, state):
        if _variant(event.task_text) and state.get("last_write") is not None:
            return instruct(SECRET_TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        state = replay(trajectory, lambda s, step: _track(
            s, step.index, step.command, step.kind == "edit")).state
        wrote = state.get("last_write") is not None
        return Coding(state=wrote, behavior=bool(state.get("diffed")) if wrote else None)


FAMILIES = [ExactReplacement()]
