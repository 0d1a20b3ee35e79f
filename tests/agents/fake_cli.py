#!/usr/bin/env python3
"""A stand-in for `claude -p` and `codex exec` in tests: it runs the hooks it is given.

It follows the CLIs' behaviour closely enough to test the wiring: it reads the hook
settings (`--settings FILE`, or `$CODEX_HOME/hooks.json`), runs each matching hook command
with the CLI's stdin, honours a PreToolUse deny and a Stop block, runs the scripted commands
with bash, and prints stream-json (Claude) or `--json` events (Codex).

Versions followed: Claude Code 2.0 (its documented shapes); codex-cli 0.163.0 as observed
(reference/real-cli.md): the call id as `tool_use_id`, a Bash PostToolUse `tool_response`
that is the plain output (no exit code, also for a failed command), `--json` commands shown
as `/bin/bash -lc '…'` with `item.started` before `item.completed`, no item for a denied
call, and no event naming the model.
The script comes from $FAKE_CLI_SCRIPT: {"commands": [...], "after_nudge": [...],
"exit": 0}.
"""

import json
import os
import re
import shlex
import subprocess
import sys

if sys.argv[1:] == ["--version"]:
    print("fake-cli 0.0.1")
    sys.exit(0)
CODEX = len(sys.argv) > 1 and sys.argv[1] == "exec"
SESSION = "fake-session-1"


def emit(obj):
    print(json.dumps(obj), flush=True)


def load_hooks():
    if CODEX:
        path = os.path.join(os.environ.get("CODEX_HOME", ""), "hooks.json")
    else:
        args = sys.argv[1:]
        path = args[args.index("--settings") + 1] if "--settings" in args else ""
    if not path or not os.path.isfile(path):
        return {}
    return json.load(open(path))["hooks"]


HOOKS = {} if os.environ.get("FAKE_CLI_NO_HOOKS") else load_hooks()  # Codex: untrusted


def fire(event, fields):
    payload = {"session_id": SESSION, "transcript_path": None, "cwd": os.getcwd(),
               "hook_event_name": event, "permission_mode": "bypassPermissions"} | fields
    if CODEX:
        payload |= {"model": "gpt-5-codex", "turn_id": "turn-1"}
    answer = None
    for group in HOOKS.get(event, []):
        # A matcher is a regular expression over the tool name (both CLIs' docs).
        if "matcher" in group and not re.fullmatch(group["matcher"], fields.get("tool_name", "")):
            continue
        for handler in group["hooks"]:
            proc = subprocess.run(handler["command"], shell=True, input=json.dumps(payload),
                                  capture_output=True, text=True, timeout=handler["timeout"])
            if proc.returncode == 0 and proc.stdout.strip():
                answer = json.loads(proc.stdout)
    return answer


def run(command, n):
    call_id = f"call_{n}" if CODEX else f"t{n}"
    tool = {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": call_id}
    pre = fire("PreToolUse", tool)
    spec = (pre or {}).get("hookSpecificOutput", {})
    if spec.get("permissionDecision") == "deny":
        output, code = spec["permissionDecisionReason"], None
    else:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
        output, code = proc.stdout + proc.stderr, proc.returncode
        response = ({"stdout": proc.stdout, "stderr": proc.stderr, "interrupted": False,
                     "isImage": False} if not CODEX else output)
        fire("PostToolUse", tool | {"tool_response": response})
    if CODEX:
        if code is not None:  # a denied call has no item
            shown = f"/bin/bash -lc {shlex.quote(command)}"
            emit({"type": "item.started", "item": {
                "id": f"item_{n}", "type": "command_execution", "command": shown,
                "aggregated_output": "", "exit_code": None, "status": "in_progress"}})
            emit({"type": "item.completed", "item": {
                "id": f"item_{n}", "type": "command_execution", "command": shown,
                "aggregated_output": output, "exit_code": code,
                "status": "completed" if code == 0 else "failed"}})
    else:
        emit({"type": "assistant", "message": {"model": "claude-fake-1", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}}]}})
        emit({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": output,
             "is_error": code != 0}]}})


def main():
    script = json.loads(os.environ.get("FAKE_CLI_SCRIPT", "{}"))
    prompt = sys.argv[-1] if CODEX else sys.argv[sys.argv.index("-p") + 1]
    if CODEX:
        emit({"type": "thread.started", "thread_id": SESSION})
    else:
        emit({"type": "system", "subtype": "init", "model": "claude-fake-1",
              "session_id": SESSION})
    if script.get("exit"):
        print("authentication failed", file=sys.stderr)
        return script["exit"]
    fire("UserPromptSubmit", {"prompt": prompt})
    n = 0
    for command in script.get("commands", []):
        n += 1
        run(command, n)
    active = False
    for _ in range(10):
        answer = fire("Stop", {"stop_hook_active": active}
                      | ({"last_assistant_message": "Done."} if CODEX else {}))
        if not answer or answer.get("decision") != "block":
            break
        assert answer["reason"].strip()
        active = True
        for command in script.get("after_nudge", []):
            n += 1
            run(command, n)
    if CODEX:
        emit({"type": "turn.completed", "usage": {
            "input_tokens": 1200, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
            "output_tokens": 300, "reasoning_output_tokens": 0}})
    else:
        emit({"type": "result", "subtype": "success", "is_error": False, "num_turns": n + 1,
              "result": "Done.", "total_cost_usd": 0.0123,
              "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 100,
                        "cache_read_input_tokens": 50, "output_tokens": 250}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
