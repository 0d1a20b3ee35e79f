"""File-edit tools are actions (issue 11, point 4): Claude Code's Edit, MultiEdit, Write and
NotebookEdit and Codex's apply_patch become write events the families track, and the
transcript parsers read them so the extractors code them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fire_exp.agents.coding_agents import parse_claude_stream, parse_codex_json
from fire_exp.policies.hooks import HookBridge, load_arm_families, parse_payload
from fire_exp.policies.model import Step
from fire_exp.policies.tool_payloads import patch_paths
from tests.agents.protocol_fixtures import fixture, lines
from tests.policies.test_hook_payloads import BINARY_TASK, REPLACE_TASK, kind

FAMILIES = {f.name: f for f in load_arm_families("fire-core", "real")}
CLAUDE_EDITS = {"Edit": "claude-code-hooks-reference__PreToolUse-Edit.json",
                "MultiEdit": "claude-code-hooks-reference__PreToolUse-MultiEdit.json",
                "Write": "claude-code-hooks-reference__PreToolUse-Write.json",
                "NotebookEdit": "claude-code-hooks-reference__PreToolUse-NotebookEdit.json"}
APPLY_PATCH_PRE = "codex-hooks-doc-2026-05__PreToolUse-apply_patch.json"
APPLY_PATCH_POST = "codex-hooks-doc-2026-05__PostToolUse-apply_patch.json"


def edit_payload(name: str, event: str, path: str) -> dict[str, Any]:
    return fixture(name, session="s1", event=event, path=path)


def prompt(task: str) -> Any:
    return parse_payload("UserPromptSubmit", {"session_id": "s1", "prompt": task})


@pytest.mark.parametrize("tool", sorted(CLAUDE_EDITS))
def test_claude_edit_tools_are_write_events_with_their_path(tool: str) -> None:
    call = parse_payload("PreToolUse", edit_payload(CLAUDE_EDITS[tool], "PreToolUse",
                                                    "/app/docs/guide.md"))
    assert call.paths == ("/app/docs/guide.md",) and call.command == ""
    assert call.tool_name == tool


def test_apply_patch_is_a_write_event_for_every_file_it_touches() -> None:
    call = parse_payload("PreToolUse", edit_payload(APPLY_PATCH_PRE, "PreToolUse",
                                                    "docs/guide.md"))
    assert call.paths == ("docs/guide.md", "docs/new.md", "docs/old_name.md", "docs/renamed.md",
                          "docs/gone.md")
    assert patch_paths("echo hi") == ()


@pytest.mark.parametrize("tool", sorted(CLAUDE_EDITS))
def test_an_edit_under_a_replacement_map_gets_the_allowlist_first(tool: str,
                                                                  tmp_path: Path) -> None:
    bridge = HookBridge([FAMILIES["exact_replacement"]], tmp_path, "real", "claude-code")
    bridge.handle(prompt(REPLACE_TASK))
    pre = bridge.handle(parse_payload("PreToolUse", edit_payload(
        CLAUDE_EDITS[tool], "PreToolUse", "/app/docs/guide.md")))
    assert kind(pre) == "instruct" and "byte-level allowlist" in str(pre)
    post = edit_payload("claude-code-hooks-reference__PostToolUse-Write.json", "PostToolUse",
                        "/app/docs/guide.md")
    assert bridge.handle(parse_payload("PostToolUse", post)) is None
    stop = bridge.handle(parse_payload("Stop", {"session_id": "s1", "stop_hook_active": False}))
    assert kind(stop) == "instruct" and "diff each edited file" in str(stop)  # it wrote


def test_codex_apply_patch_gets_the_allowlist_with_its_result(tmp_path: Path) -> None:
    bridge = HookBridge([FAMILIES["exact_replacement"]], tmp_path, "real", "codex")
    bridge.handle(prompt(REPLACE_TASK))
    pre = bridge.handle(parse_payload("PreToolUse", edit_payload(APPLY_PATCH_PRE, "PreToolUse",
                                                                 "docs/guide.md")))
    assert pre is None  # Codex takes nothing but a deny at PreToolUse
    post = bridge.handle(parse_payload("PostToolUse", edit_payload(
        APPLY_PATCH_POST, "PostToolUse", "docs/guide.md")))
    assert kind(post) == "instruct" and "byte-level allowlist" in str(post)


@pytest.mark.parametrize(("cli", "name"), [("claude-code", CLAUDE_EDITS["Write"]),
                                           ("codex", APPLY_PATCH_PRE)])
def test_a_written_candidate_is_tracked_until_it_runs(cli: str, name: str,
                                                      tmp_path: Path) -> None:
    bridge = HookBridge([FAMILIES["binary_equivalence"]], tmp_path, "real", cli)  # type: ignore
    bridge.handle(prompt(BINARY_TASK))
    bridge.handle(parse_payload("PreToolUse", edit_payload(name, "PreToolUse", "/app/enc.py")))
    run = {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "python3 enc.py"}}
    answer = bridge.handle(parse_payload("PreToolUse", run))
    if cli == "codex":
        assert answer is None
        answer = bridge.handle(parse_payload("PostToolUse", run | {"tool_response": "ok"}))
    assert kind(answer) == "instruct" and "first run of your reimplementation" in str(answer)


def test_the_claude_transcript_reads_edit_tool_blocks() -> None:
    out = parse_claude_stream(lines("claude-code-headless-docs__stream-json-bash-edit-write.jsonl"))
    edits = [(c.command, c.paths) for c in out.commands if c.paths]
    assert edits == [("Edit", ("/app/docs/guide.md",)), ("MultiEdit", ("/app/docs/faq.md",)),
                     ("Write", ("/app/enc.py",)), ("NotebookEdit", ("/app/nb.ipynb",))]
    assert [c.command for c in out.commands if not c.paths] == [
        "cat docs/guide.md", "diff <(git show HEAD:docs/guide.md) docs/guide.md"]
    assert out.model == "claude-sonnet-4-5-20250929" and out.cost_usd == pytest.approx(0.0213)
    assert out.cached_input_tokens == 4000 and out.input_tokens == 5500


def test_the_codex_transcript_reads_file_change_items() -> None:
    out = parse_codex_json(lines("codex-exec-json-docs__command-file-change-usage.jsonl"))
    assert [(c.command, c.paths) for c in out.commands] == [  # bare, as the hooks see them
        ("cat docs/guide.md", ()),
        ("apply_patch", ("/app/docs/guide.md", "/app/enc.py")),
        ("diff docs/guide.md.orig docs/guide.md", ())]
    assert (out.input_tokens, out.cached_input_tokens, out.output_tokens) == (24763, 24448, 122)


@pytest.mark.parametrize("parse", ["claude", "codex"])
def test_the_extractors_code_edits_from_transcripts(parse: str) -> None:
    out = parse_claude_stream(lines("claude-code-headless-docs__stream-json-bash-edit-write.jsonl")) \
        if parse == "claude" else \
        parse_codex_json(lines("codex-exec-json-docs__command-file-change-usage.jsonl"))
    trajectory = [Step(i, "edit" if c.paths else "command", c.command, c.exit_code, c.output,
                       paths=c.paths) for i, c in enumerate(out.commands)]
    trajectory.append(Step(len(trajectory), "stop"))
    codes = FAMILIES["exact_replacement"].code(trajectory, REPLACE_TASK)
    assert codes.state is True and codes.behavior is True  # a write, then a diff
    without_diff = [s for s in trajectory if "diff" not in s.command]
    assert FAMILIES["exact_replacement"].code(without_diff, REPLACE_TASK).behavior is False
