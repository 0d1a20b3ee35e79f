#!/usr/bin/env python3
"""toy-cli: a coding-agent CLI that exists only for the recipe test (test_recipe_cli.py).

    toy_cli.py --prompt TEXT [--hooks FILE]

It speaks Claude Code's hook protocol (settings shape, payloads, answers) but has its own
output: one JSON line per command, ``{"ran": CMD, "exit": N, "output": TEXT}`` or
``{"denied": CMD}``, and a last line ``{"done": true, "model": M, "tokens": [IN, OUT]}``.
Its commands come from $TOY_CLI_SCRIPT (a JSON list of shell strings).
"""

import json
import os
import re
import subprocess
import sys


def fire(hooks, event, fields):
    payload = {"session_id": "toy-1", "transcript_path": None, "cwd": os.getcwd(),
               "hook_event_name": event} | fields
    answer = None
    for group in hooks.get(event, []):
        if "matcher" in group and not re.fullmatch(group["matcher"], fields.get("tool_name", "")):
            continue
        for handler in group["hooks"]:
            proc = subprocess.run(handler["command"], shell=True, input=json.dumps(payload),
                                  capture_output=True, text=True, timeout=handler["timeout"])
            if proc.returncode == 0 and proc.stdout.strip():
                answer = json.loads(proc.stdout)
    return answer


def main():
    args = sys.argv[1:]
    if args == ["--version"]:
        print("toy-cli 1.0")
        return
    hooks = json.load(open(args[args.index("--hooks") + 1]))["hooks"] if "--hooks" in args else {}
    fire(hooks, "UserPromptSubmit", {"prompt": args[args.index("--prompt") + 1]})
    for command in json.loads(os.environ.get("TOY_CLI_SCRIPT", "[]")):
        tool = {"tool_name": "Bash", "tool_input": {"command": command}}
        answer = fire(hooks, "PreToolUse", tool) or {}
        if answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny":
            print(json.dumps({"denied": command}), flush=True)
            continue
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
        fire(hooks, "PostToolUse", tool | {"tool_response": {"stdout": proc.stdout}})
        print(json.dumps({"ran": command, "exit": proc.returncode, "output": proc.stdout}),
              flush=True)
    fire(hooks, "Stop", {"stop_hook_active": False})
    print(json.dumps({"done": True, "model": "toy-1", "tokens": [100, 20]}), flush=True)


if __name__ == "__main__":
    main()
