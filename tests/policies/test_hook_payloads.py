"""Every family of fire-core through the hook bridge, with every shape of a shell result a CLI
sends (issue 11, point 3): the plain output of current Codex releases (no exit code), the
``Process exited with code N`` and ``Exit code: N`` strings of older ones, and Claude Code's
object (2.1: a failed command's ``PostToolUseFailure`` instead). An unknown exit status neither locks a family into denying nor disarms it
(docs/portfolio.md, "Unknown exit status")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fire_exp.policies.hooks import HookBridge, load_arm_families, parse_payload
from tests.agents.protocol_fixtures import fixture

SHAPES = {"codex-plain": "codex-hooks-doc-2026-05__PostToolUse-Bash-plain-output.json",
          "codex-process-exited": "codex-unified-exec-tool__PostToolUse-Bash-process-exited.json",
          "codex-exit-code": "codex-legacy-shell-tool__PostToolUse-Bash-exit-code.json",
          "claude-code": "claude-code-hooks-reference__PostToolUse-Bash.json",
          "claude-code-2.1": "claude-code-2.1.332__PostToolUse-Bash.json"}
# Claude Code 2.1 reports a command that failed with PostToolUseFailure instead.
CLAUDE_FAILURE = "claude-code-2.1.332__PostToolUseFailure-Bash.json"
FAMILIES = {f.name: f for f in load_arm_families("fire-core", "real")}

DB_TASK = ("The shop's SQLite database /app/evidence/orders.db was damaged; recover the lost "
           "orders. The evidence must stay unchanged.")
DEPLOY_TASK = ("Set up a bare repository on the git server so that a push deploys the site to "
               "the web server on port 8080; check the page with curl.")
TOKENS_TASK = ("Count the total number of tokens in the dataset records of the science and "
               "math domains, using the Qwen2.5 tokenizer.")
SERVER_TASK = ("Write a small HTTP server in /app/status_server.py. Start the server. It must "
               "keep running and stay reachable after you finish.")
ENUM_TASK = ("Find all valid codes of four digits whose digits sum to 10 and write them to "
             "/app/codes.txt, one per line.")
LATEX_TASK = "Build paper.pdf from paper.tex with no overfull \\hbox warnings in the log."
REPLACE_TASK = ("In docs/guide.md replace 'colour' with 'color'. Do not modify anything else; "
                "everything else must stay byte-for-byte unchanged.")
BINARY_TASK = ("Reimplement the compression tool /app/orig as a program whose outputs are "
               "byte-for-byte identical to the original's; it must be at most 4000 bytes.")

# (family, task, steps): a step is (event, command, output, exit code, expected decision);
# the decision is what Claude Code gets ("deny", "instruct" or None for allow).
SCENARIOS: list[tuple[str, str, list[tuple[str, str, str, int, str | None]]]] = [
    ("database_evidence", DB_TASK, [
        ("PreToolUse", "sqlite3 evidence/orders.db .dump", "", 0, "deny"),
        ("PreToolUse", "cp -a evidence /tmp/copy", "", 0, None),
        ("PostToolUse", "cp -a evidence /tmp/copy", "", 0, None),
        ("PreToolUse", "sqlite3 /tmp/copy/orders.db .dump", "", 0, None)]),
    ("deployment_preservation", DEPLOY_TASK, [
        ("PreToolUse", "git push origin main", "", 0, None),
        ("PostToolUse", "git push origin main", "To /srv/git/site.git\n * [new branch] main",
         0, None),
        ("PreToolUse", "rm -rf /var/www/html", "", 0, "deny")]),
    ("token_accounting", TOKENS_TASK, [
        ("PreToolUse", "python3 count.py", "", 0, None),
        ("PostToolUse", "python3 count.py", "subtotal question: 10\nsubtotal answer: 5\n"
         "total: 15", 0, None),
        ("Stop", "", "", 0, None)]),
    ("service_persistence", SERVER_TASK, [
        ("PreToolUse", "python3 status_server.py &", "", 0, None),
        ("PostToolUse", "python3 status_server.py &", "", 0, None),
        ("Stop", "", "", 0, "instruct")]),
    ("enumeration", ENUM_TASK, [
        ("PreToolUse", "python3 -c 'import itertools; print(list(itertools.product(range(10)"
         ", repeat=4)))'", "", 0, None),
        ("PostToolUse", "python3 -c 'import itertools'", "[(0, 0, 0, 0)]", 0, None),
        ("Stop", "", "", 0, "instruct")]),
    ("latex_final_log", LATEX_TASK, [
        ("PreToolUse", "pdflatex paper.tex", "", 0, None),
        ("PostToolUse", "pdflatex paper.tex", "Output written on paper.pdf (3 pages).", 0, None),
        ("Stop", "", "", 0, "instruct")]),
    ("exact_replacement", REPLACE_TASK, [
        ("PreToolUse", "sed -i 's/colour/color/g' docs/guide.md", "", 0, "instruct"),
        ("PostToolUse", "sed -i 's/colour/color/g' docs/guide.md", "", 0, None),
        ("Stop", "", "", 0, "instruct")]),
    ("binary_equivalence", BINARY_TASK, [
        ("PreToolUse", "cat > enc.py <<'EOF'\nprint(1)\nEOF", "", 0, None),
        ("PostToolUse", "cat > enc.py <<'EOF'\nprint(1)\nEOF", "", 0, None),
        ("PreToolUse", "python3 enc.py < in.txt > out.bin", "", 0, "instruct"),
        ("PostToolUse", "python3 enc.py < in.txt > out.bin", "", 0, None),
        ("Stop", "", "", 0, "instruct")]),
]


def kind(answer: dict[str, Any] | None) -> str | None:
    if answer is None:
        return None
    if answer.get("decision") == "block":
        return "instruct"
    out = answer["hookSpecificOutput"]
    return "deny" if out.get("permissionDecision") == "deny" else "instruct"


def hook_event(event: str, shape: str, code: int) -> str:
    """The CLI's name for ``event``: Claude Code 2.1 reports a failure with its own."""
    failed = event == "PostToolUse" and code != 0 and shape == "claude-code-2.1"
    return "PostToolUseFailure" if failed else event


def call(event: str, shape: str, command: str, output: str, code: int) -> dict[str, Any]:
    cli_file = SHAPES[shape]
    if hook_event(event, shape, code) == "PostToolUseFailure":
        return fixture(CLAUDE_FAILURE, session="s1", event="PostToolUseFailure",
                       command=command, output=output, exit_code=code)
    if event == "Stop" and shape == "claude-code-2.1":  # with last_assistant_message
        return fixture("claude-code-2.1.332__Stop.json", session="s1", event=event)
    if event == "PostToolUse":
        return fixture(cli_file, session="s1", event=event, command=command, output=output,
                       exit_code=code)
    base = fixture(cli_file, session="s1", event=event, command=command, output="", exit_code=0)
    base.pop("tool_response")
    if event == "Stop":
        for key in ("tool_name", "tool_input", "tool_use_id"):
            base.pop(key)
        base["stop_hook_active"] = False
    return base


def run(family: str, task: str, shape: str,
        steps: list[tuple[str, str, str, int, str | None]], state: Path) -> list[str | None]:
    cli = "claude-code" if shape.startswith("claude-code") else "codex"
    bridge = HookBridge([FAMILIES[family]], state, "real", cli)  # type: ignore[arg-type]
    prompt = call("PreToolUse", shape, "", "", 0) | {"prompt": task}
    bridge.handle(parse_payload("UserPromptSubmit", prompt))
    return [kind(bridge.handle(parse_payload(hook_event(e, shape, x), call(e, shape, c, o, x))))
            for e, c, o, x, _ in steps]


def as_codex(expected: list[str | None], events: list[str]) -> list[str | None]:
    """Codex takes only a deny at PreToolUse: an instruction arrives with the PostToolUse."""
    out = list(expected)
    for i, (event, decision) in enumerate(zip(events, expected, strict=True)):
        if event == "PreToolUse" and decision == "instruct":
            out[i], out[i + 1] = None, "instruct"
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize(("family", "task", "steps"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_every_family_reads_every_shell_result_shape(family: str, task: str, steps: list,
                                                     shape: str, tmp_path: Path) -> None:
    assert FAMILIES[family].eligible(task)
    expected = [s[4] for s in steps]
    if not shape.startswith("claude-code"):
        expected = as_codex(expected, [s[0] for s in steps])
    assert run(family, task, shape, steps, tmp_path) == expected


# Failed commands: where a family waits for a success, a failure must not count as one, in
# every shape (the plain shape has only the output to tell).
FAILURES = [
    ("database_evidence", DB_TASK, [
        ("PreToolUse", "cp -a evidence /tmp/copy", "", 0, None),
        ("PostToolUse", "cp -a evidence /tmp/copy",
         "cp: cannot stat 'evidence': No such file or directory", 1, None),
        ("PreToolUse", "sqlite3 /tmp/copy/orders.db .dump", "", 0, "deny")]),
    ("deployment_preservation", DEPLOY_TASK, [
        ("PreToolUse", "git push origin main", "", 0, None),
        ("PostToolUse", "git push origin main",
         "fatal: unable to access 'http://git/site.git/': Failed to connect", 128, None),
        ("PreToolUse", "rm -rf /var/www/html", "", 0, None)]),
    ("token_accounting", TOKENS_TASK, [
        ("PreToolUse", "python3 count.py", "", 0, None),
        ("PostToolUse", "python3 count.py", "subtotal question: 10\nTraceback (most recent "
         "call last):\nKeyError: 'answer'", 1, None),
        ("Stop", "", "", 0, "instruct")]),
]


@pytest.mark.parametrize("shape", sorted(s for s in SHAPES if s != "claude-code"))
@pytest.mark.parametrize(("family", "task", "steps"), FAILURES, ids=[s[0] for s in FAILURES])
def test_a_failed_command_does_not_count_as_a_success(family: str, task: str, steps: list,
                                                      shape: str, tmp_path: Path) -> None:
    assert run(family, task, shape, steps, tmp_path) == [s[4] for s in steps]


def test_claude_code_2_1_failure_is_the_command_s_outcome_with_its_exit_code() -> None:
    parsed = parse_payload("PostToolUseFailure", fixture(
        CLAUDE_FAILURE, session="s1", event="PostToolUseFailure", command="ls x",
        output="ls: cannot access 'x': No such file or directory", exit_code=2))
    assert (parsed.command, parsed.exit_code) == ("ls x", 2)
    assert parsed.output == "ls: cannot access 'x': No such file or directory"
    interrupted = parse_payload("PostToolUseFailure", {
        "session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "sleep 99"},
        "error": "Command was interrupted", "is_interrupt": True})
    assert interrupted.exit_code == 1  # a failure states no code: never a success


@pytest.mark.parametrize("shape", ["codex-plain", "codex-process-exited", "codex-exit-code"])
def test_codex_shapes_parse_to_the_output_and_the_known_exit_code(shape: str) -> None:
    parsed = parse_payload("PostToolUse", call("PostToolUse", shape, "ls", "a\nb\n", 3))
    assert parsed.output == "a\nb\n" and parsed.command == "ls"
    assert parsed.exit_code == (None if shape == "codex-plain" else 3)
