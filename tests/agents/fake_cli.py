#!/usr/bin/env python3
"""A stand-in for `claude -p` and `codex exec` in tests: it runs the hooks it is given.

It follows the CLIs' behaviour closely enough to test the wiring: it reads the hook
settings (`--settings FILE`, or `$CODEX_HOME/hooks.json`), runs each matching hook command
with the CLI's stdin, honours a PreToolUse deny and a Stop block, runs the scripted
commands with bash, and prints stream-json (Claude) or `--json` events (Codex).

As Claude Code it follows 2.1.332 as observed (tests/fixtures/protocols/claude-code-2.1.332__*):
as root it refuses `--permission-mode bypassPermissions` unless IS_SANDBOX=1; Bash
`tool_input {command, description}`; PostToolUse `tool_response {stdout, stderr,
interrupted, isImage, noOutputExpected}` for a success, PostToolUseFailure `{error: "Exit
code N\n<output>", is_interrupt}` for a failure; Stop with `last_assistant_message`;
stream-json `system/init` (model, tools, claude_code_version), one `assistant` line per
content block, `user` tool results with `tool_use_result`, a denied call's result
`PreToolUse:Bash hook error: REASON`, and the final `result` with `usage`, `modelUsage`,
`permission_denials` and `total_cost_usd`.

As Codex it follows codex-cli 0.163.0 as observed (reference/real-cli.md): the call id as
`tool_use_id`, a Bash PostToolUse `tool_response` that is the plain output (no exit code,
also for a failed command), `--json` commands shown as `/bin/bash -lc '…'` with
`item.started` before `item.completed`, no item for a denied call, and no event naming the
model.

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
CLAUDE_VERSION = "2.1.332"
MODEL = "claude-fake-1"
DENIALS = []


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
    else:
        payload |= {"prompt_id": "fake-prompt-1", "effort": {"level": "high"}}
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
    tool_input = {"command": command} if CODEX else {"command": command, "description": "run"}
    call_id = f"call_{n}" if CODEX else f"t{n}"
    tool = {"tool_name": "Bash", "tool_input": tool_input, "tool_use_id": call_id}
    pre = fire("PreToolUse", tool)
    spec = (pre or {}).get("hookSpecificOutput", {})
    if spec.get("permissionDecision") == "deny":
        output, code = spec["permissionDecisionReason"], None
        DENIALS.append({"tool_name": "Bash", "tool_use_id": call_id, "tool_input": tool_input})
    else:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
        output, code = proc.stdout + proc.stderr, proc.returncode
        if CODEX:  # the plain output, no exit code
            fire("PostToolUse", tool | {"tool_response": output})
        elif code == 0:
            fire("PostToolUse", tool | {"tool_response": {
                "stdout": proc.stdout, "stderr": proc.stderr, "interrupted": False,
                "isImage": False, "noOutputExpected": False}, "duration_ms": 5})
        else:  # Claude Code 2.1: a failed command's outcome is PostToolUseFailure
            fire("PostToolUseFailure", tool | {"error": f"Exit code {code}\n{output}".rstrip(),
                                               "is_interrupt": False, "duration_ms": 5})
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
        claude_call(n, tool_input, output, code)


def claude_call(n, tool_input, output, code):
    """A Bash call in Claude Code 2.1's stream-json: a text block and the tool_use block of
    one message (a line each), then the user line with its result."""
    message = {"id": f"msg_{n:02d}", "type": "message", "role": "assistant", "model": MODEL,
               "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
    for block in ({"type": "text", "text": "Running it."},
                  {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": tool_input}):
        emit({"type": "assistant", "message": message | {"content": [block]},
              "session_id": SESSION})
    if code is None:
        content, result = f"PreToolUse:Bash hook error: {output}", f"Error: PreToolUse:Bash " \
            f"hook error: {output}"
    elif code:
        content = f"Exit code {code}\n{output}".rstrip()
        result = f"Error: {content}"
    else:
        content = output.rstrip("\n") or "(Bash completed with no output)"
        result = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False,
                  "noOutputExpected": False}
    emit({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"t{n}", "content": content,
         "is_error": code != 0}]}, "session_id": SESSION, "tool_use_result": result})


def main():
    script = json.loads(os.environ.get("FAKE_CLI_SCRIPT", "{}"))
    prompt = sys.argv[-1] if CODEX else sys.argv[sys.argv.index("-p") + 1]
    if CODEX:
        emit({"type": "thread.started", "thread_id": SESSION})
    else:
        bypass = "bypassPermissions" in sys.argv or "--dangerously-skip-permissions" in sys.argv
        if bypass and os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1":
            print("--dangerously-skip-permissions cannot be used with root/sudo privileges "
                  "for security reasons", file=sys.stderr)
            return 1
        emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SESSION,
              "tools": ["Task", "Bash", "Edit", "Read", "Write", "NotebookEdit"],
              "model": MODEL, "permissionMode": "bypassPermissions",
              "claude_code_version": CLAUDE_VERSION})
        if script.get("retry"):
            emit({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
                  "retry_delay_ms": 500, "error_status": 500, "error": "server_error",
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
        answer = fire("Stop", {"stop_hook_active": active, "last_assistant_message": "Done."}
                      | ({} if CODEX else {"background_tasks": [], "session_crons": []}))
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
              "result": "Done.", "stop_reason": "end_turn", "session_id": SESSION,
              "total_cost_usd": 0.0123,
              "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 100,
                        "cache_read_input_tokens": 50, "output_tokens": 250},
              "modelUsage": {MODEL: {"inputTokens": 1000, "outputTokens": 250,
                                     "cacheReadInputTokens": 50,
                                     "cacheCreationInputTokens": 100, "costUSD": 0.0123}},
              "permission_denials": DENIALS, "terminal_reason": "completed"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
