"""What a CLI's tool payload says: the command, the files an edit writes, the exit status.

Pure functions over the JSON the CLIs send (hook payloads) or print (transcripts), apart
from how that JSON arrives, so the hook bridge, the transcript parsers and an in-container
shim share them. The shapes follow:

- Claude Code hooks reference (https://docs.anthropic.com/en/docs/claude-code/hooks):
  ``Bash`` ``tool_input.command``; ``Edit`` ``{file_path, old_string, new_string}``,
  ``MultiEdit`` ``{file_path, edits}``, ``Write`` ``{file_path, content}``,
  ``NotebookEdit`` ``{notebook_path, new_source}``; the Bash ``tool_response`` is
  ``{stdout, stderr, interrupted, isImage, noOutputExpected}`` with no exit code
  (PostToolUse follows a success); a failed call gets ``PostToolUseFailure`` instead, with
  ``error`` (a command's is ``Exit code N`` and its output on the next lines) and
  ``is_interrupt`` (Claude Code 2.1.332, observed).
- Codex hooks (https://developers.openai.com/codex/hooks): the shell tool reports as
  ``Bash``, ``apply_patch`` with the raw patch as ``tool_input.command``; the shell
  ``tool_response`` is a string in one of three shapes — the plain output (current
  releases), ``Process exited with code N … Final output:`` or ``Exit code: N … Output:``
  (older ones).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "local_shell", "exec_command"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"})
KEPT = 4000
_EXIT = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)", re.M)
_CLAUDE_EXIT = re.compile(r"\A(?:Error: )?Exit code (-?\d+)(?:\n|\Z)")
_OUTPUT = re.compile(r"^(?:Final output|Output):\n", re.M)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$",
                         re.M)


def shell_command(tool_input: Any) -> str:
    """The command of a shell tool call (Codex's older shell tool passes argv)."""
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    if isinstance(command, list):
        return shlex.join(str(c) for c in command)
    return command if isinstance(command, str) else ""


def patch_paths(patch: str) -> tuple[str, ...]:
    """Every file an ``apply_patch`` body adds, updates, deletes or moves to, in order."""
    found = [a or b for a, b in _PATCH_FILE.findall(patch)]
    return tuple(dict.fromkeys(p for p in found if p))


def edit_paths(tool_name: str | None, tool_input: Any) -> tuple[str, ...]:
    """The files a file-edit tool call writes (empty for any other tool)."""
    if tool_name not in EDIT_TOOLS or not isinstance(tool_input, dict):
        return ()
    if tool_name == "apply_patch":
        body = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
        return patch_paths(body) if isinstance(body, str) else ()
    path = tool_input.get("file_path") or tool_input.get("notebook_path") \
        or tool_input.get("path")
    return (path,) if isinstance(path, str) and path else ()


def tool_output(response: Any) -> tuple[str, int | None]:
    """The output and exit code of a tool response (None: the payload does not say)."""
    if response is None:
        return "", None
    if isinstance(response, str):
        match = _EXIT.search(response)
        split = _OUTPUT.search(response)
        output = response[split.end():] if split and match else response
        return output[-KEPT:], int(match.group(1)) if match else None
    if not isinstance(response, dict):
        return json.dumps(response)[-KEPT:], None
    parts = [response.get(k) for k in ("stdout", "stderr", "output", "aggregated_output")]
    text = "\n".join(p for p in parts if isinstance(p, str) and p)
    code = next((response[k] for k in ("exit_code", "exitCode", "returncode")
                 if isinstance(response.get(k), int)), None)
    if code is None and response.get("interrupted") is not None:
        # Claude Code's Bash response has no exit code; PostToolUse follows a success.
        code = 1 if response.get("interrupted") else 0
    if code is None and isinstance(response.get("success"), bool):  # an edit tool's result
        code = 0 if response["success"] else 1
    return text[-KEPT:], code


def failure_output(error: Any) -> tuple[str, int]:
    """The output and exit code of a failed call, from Claude Code's ``error`` text.

    A command's error is ``Exit code N`` and then its output; any other failure (an edit
    that found nothing to replace, a command interrupted or timed out) states no code and
    counts as 1: the CLI said it failed, so no reading of its output may make it a success.

    >>> failure_output("Exit code 2\\nls: cannot access 'x'")
    ("ls: cannot access 'x'", 2)
    >>> failure_output("String to replace not found in file.")
    ('String to replace not found in file.', 1)
    """
    text = error if isinstance(error, str) else json.dumps(error)
    return command_exit(text) or (text[-KEPT:], 1)


def command_exit(text: str) -> tuple[str, int] | None:
    """The output and exit code of a command Claude Code reports as failed (``Exit code
    N`` and its output, in a ``PostToolUseFailure`` error or an error ``tool_result``);
    None: ``text`` is no command's exit (a hook's deny, an interrupt)."""
    match = _CLAUDE_EXIT.match(text)
    if match is None:
        return None
    return text[match.end():][-KEPT:], int(match.group(1))
