"""The hook bridge as Claude Code and Codex run it: `fire-exp hook` as a subprocess
(`freeze` and `export-hooks`, which set it up, in this process: ``run_cli``).

Payloads follow each CLI's documented stdin shape and answers are checked against the
documented output shapes (reference/hooks.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fire_exp.policies.hook_settings import MATCHERS, TARGETS
from fire_exp.policies.hook_store import read_activity
from fire_exp.policies.hooks import MAX_STOP_ROUNDS
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
CLIS = ("claude-code", "codex")
SERVER_TASK = ("Write a small HTTP server in /app/status_server.py. Start the server. It must "
               "keep running and stay reachable after you finish.")
DB_TASK = ("The shop's SQLite database /app/evidence/orders.db was damaged; recover the lost "
           "orders. The evidence must stay unchanged.")
PLAIN_TASK = "Write /app/summary.json with the count of each region."


def payload(cli: str, event: str, session: str = "sess-1", **fields: Any) -> dict[str, Any]:
    """A hook's stdin in the documented shape of ``cli``."""
    common: dict[str, Any] = {"session_id": session, "transcript_path": "/tmp/t.jsonl",
                              "cwd": "/app", "hook_event_name": event,
                              "permission_mode": "default"}
    if cli == "codex":
        common |= {"model": "gpt-5-codex", "turn_id": "turn-1"}
        if event == "Stop":
            common["last_assistant_message"] = "Done."
    return common | fields


def bash(cli: str, event: str, command: str, output: str = "", **kw: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": command},
                              "tool_use_id": "toolu_1"}
    if event == "PostToolUse":
        fields["tool_response"] = (
            {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
            if cli == "claude-code" else f"Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{output}")
    return payload(cli, event, **fields, **kw)


def hook(event: str, stdin: dict[str, Any] | str, state: Path, *, cli: str = "claude-code",
         portfolio: str | Path = "fire-core", arm: str = "real",
         extra: tuple[str, ...] = ()) -> tuple[int, Any, str]:
    """Run `python -m fire_exp hook` like the CLI does; returns (exit code, JSON|None, stderr)."""
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    proc = subprocess.run(
        [sys.executable, "-m", "fire_exp", "hook", event, "--portfolio", str(portfolio),
         "--arm", arm, "--state", str(state), "--cli", cli, *extra],
        input=text, capture_output=True, text=True, cwd=ROOT, timeout=60,
        env=os.environ | {"PYTHONPATH": str(ROOT)})
    out = proc.stdout.strip()
    return proc.returncode, json.loads(out) if out else None, proc.stderr


def activity(state: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (state / "activity.jsonl").read_text().splitlines()]


# --- the documented output shapes -------------------------------------------------------

def assert_deny(answer: Any) -> None:
    assert set(answer) == {"hookSpecificOutput"}
    out = answer["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    assert isinstance(out["permissionDecisionReason"], str) and out["permissionDecisionReason"]


def assert_block(answer: Any) -> None:
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    assert isinstance(answer["reason"], str) and answer["reason"].strip()  # Codex: non-empty


def assert_context(answer: Any, event: str) -> str:
    assert set(answer) == {"hookSpecificOutput"}
    out = answer["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "additionalContext"}
    assert out["hookEventName"] == event and out["additionalContext"].strip()
    return str(out["additionalContext"])


FAILPROOF_FIELDS = {"timestamp", "sessionId", "eventType", "toolName", "policyName",
                    "decision", "reason", "durationMs"}


@pytest.mark.parametrize("cli", CLIS)
def test_pretooluse_deny_until_the_evidence_is_copied(cli: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, answer, _ = hook("UserPromptSubmit", payload(cli, "UserPromptSubmit", prompt=DB_TASK),
                           state, cli=cli)
    assert (code, answer) == (0, None)
    code, answer, _ = hook("PreToolUse", bash(cli, "PreToolUse", "sqlite3 evidence/orders.db .dump"),
                           state, cli=cli)
    assert code == 0
    assert_deny(answer)
    assert "sidecar" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    # The copy runs and succeeds: the state survives between processes, so the open passes.
    assert hook("PreToolUse", bash(cli, "PreToolUse", "cp -a evidence /tmp/copy"), state,
                cli=cli)[1] is None
    assert hook("PostToolUse", bash(cli, "PostToolUse", "cp -a evidence /tmp/copy"), state,
                cli=cli)[1] is None
    assert hook("PreToolUse", bash(cli, "PreToolUse", "sqlite3 /tmp/copy/orders.db .dump"),
                state, cli=cli)[1] is None
    lines = activity(state)
    assert all(FAILPROOF_FIELDS <= set(line) for line in lines)
    denied = [ln for ln in lines if ln["kind"] == "policy"]
    assert [(d["policyName"], d["decision"]) for d in denied] == \
        [("database_evidence.copy_first", "deny")]
    summary = read_activity(state)
    assert summary.hook_events == 5 and summary.by_event["PreToolUse"] == 3
    assert summary.fired and summary.decisions[0].family == "database_evidence"


@pytest.mark.parametrize("cli", CLIS)
def test_stop_blocks_once_then_honours_stop_hook_active_and_the_limit(cli: str,
                                                                     tmp_path: Path) -> None:
    state = tmp_path / "state"
    hook("UserPromptSubmit", payload(cli, "UserPromptSubmit", prompt=SERVER_TASK), state, cli=cli)
    hook("PreToolUse", bash(cli, "PreToolUse", "python3 status_server.py &"), state, cli=cli)
    code, answer, _ = hook("Stop", payload(cli, "Stop", stop_hook_active=False), state, cli=cli)
    assert code == 0
    assert_block(answer)
    assert "setsid nohup" in answer["reason"]
    code, answer, _ = hook("Stop", payload(cli, "Stop", stop_hook_active=True), state, cli=cli)
    assert (code, answer) == (0, None)  # nudge limit 1


def test_sessions_are_kept_apart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for session in ("a", "b"):
        hook("UserPromptSubmit", payload("claude-code", "UserPromptSubmit", session=session,
                                         prompt=SERVER_TASK), state)
        hook("PreToolUse", bash("claude-code", "PreToolUse", "python3 status_server.py &",
                                session=session), state)
    assert_block(hook("Stop", payload("claude-code", "Stop", session="a"), state)[1])
    assert_block(hook("Stop", payload("claude-code", "Stop", session="b"), state)[1])


def test_a_silent_task_and_the_baseline_answer_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    hook("UserPromptSubmit", payload("codex", "UserPromptSubmit", prompt=PLAIN_TASK), state,
         cli="codex")
    assert hook("Stop", payload("codex", "Stop"), state, cli="codex")[1] is None
    assert hook("Stop", payload("codex", "Stop", session="s2"), tmp_path / "b", cli="codex",
                arm="baseline")[1] is None


@pytest.mark.parametrize("cli", CLIS)
def test_session_start_without_a_prompt_is_only_recorded(cli: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, answer, _ = hook("SessionStart", payload(cli, "SessionStart", source="startup"), state,
                           cli=cli, arm="always_verify")
    assert (code, answer) == (0, None)
    assert read_activity(state).by_event == {"SessionStart": 1}


TALKY = '''
from fire_exp.policies import Family, instruct, rule

class Talky(Family):
    name = "talky"
    def eligible(self, task_text): return True

    @rule(events=("SessionStart",), limit=1)
    def hello(self, event, state): return instruct("Read the task twice.")

    @rule(events=("PreToolUse",), limit=1)
    def before(self, event, state): return instruct("Mind the working folder.")

    @rule(events=("PostToolUse",), limit=1)
    def after(self, event, state): return instruct(f"Exit code was {event.exit_code}.")

    @rule(events=("Stop",), limit=None)
    def again(self, event, state): return instruct("Check once more.")

class Broken(Family):
    name = "broken"
    def eligible(self, task_text): return True

    @rule(events=("PreToolUse",), limit=None)
    def explode(self, event, state): raise RuntimeError("policy bug")

FAMILIES = [Talky(), Broken()]
'''


@pytest.fixture
def talky(tmp_path: Path) -> Path:
    folder = tmp_path / "talky"
    folder.mkdir()
    (folder / "talky.py").write_text(TALKY)
    return folder


@pytest.mark.parametrize("cli", CLIS)
def test_additional_context_shapes_and_a_raising_policy_fails_open(cli: str, tmp_path: Path,
                                                                  talky: Path) -> None:
    state = tmp_path / "state"
    answer = hook("UserPromptSubmit", payload(cli, "UserPromptSubmit", prompt=PLAIN_TASK), state,
                  cli=cli, portfolio=talky)[1]
    assert assert_context(answer, "UserPromptSubmit") == "Read the task twice."
    code, answer, _ = hook("PreToolUse", bash(cli, "PreToolUse", "ls"), state, cli=cli,
                           portfolio=talky)
    assert code == 0  # the broken policy failed open; the other one still speaks
    if cli == "codex":  # Codex takes only a deny at PreToolUse: the text comes with the result
        assert answer is None
    else:
        assert assert_context(answer, "PreToolUse") == "Mind the working folder."
    answer = hook("PostToolUse", bash(cli, "PostToolUse", "ls", output="a b"), state, cli=cli,
                  portfolio=talky)[1]
    expected = "Mind the working folder.\n\nExit code was 0." if cli == "codex" \
        else "Exit code was 0."
    assert assert_context(answer, "PostToolUse") == expected
    errors = [ln for ln in activity(state) if ln["decision"] == "error"]
    assert len(errors) == 1 and errors[0]["policyName"] == "broken.explode"
    assert "RuntimeError: policy bug" in errors[0]["reason"]
    assert FAILPROOF_FIELDS <= set(errors[0])


def test_the_stop_backstop_ends_a_rule_without_a_limit(tmp_path: Path, talky: Path) -> None:
    state = tmp_path / "state"
    hook("UserPromptSubmit", payload("codex", "UserPromptSubmit", prompt=PLAIN_TASK), state,
         cli="codex", portfolio=talky)
    answers = [hook("Stop", payload("codex", "Stop", stop_hook_active=i > 0), state, cli="codex",
                    portfolio=talky)[1] for i in range(MAX_STOP_ROUNDS + 1)]
    for answer in answers[:-1]:
        assert_block(answer)
    assert answers[-1] is None
    # A stop the agent reaches on its own starts a new chain: the rule speaks again.
    assert_block(hook("Stop", payload("codex", "Stop", stop_hook_active=False), state,
                      cli="codex", portfolio=talky)[1])


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"hook_event_name": "Stop"}'])
def test_malformed_stdin_exits_0_without_a_decision(stdin: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, answer, _ = hook("Stop", stdin, state)
    assert (code, answer) == (0, None)
    [line] = activity(state)
    assert line["kind"] == "error" and line["decision"] == "error"
    assert line["reason"].startswith("malformed hook input")


def test_a_portfolio_that_does_not_load_answers_nothing_and_is_logged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, answer, _ = hook("Stop", payload("claude-code", "Stop"), state,
                           portfolio=tmp_path / "nowhere")
    assert (code, answer) == (0, None)
    summary = read_activity(state)
    assert summary.load_errors == 1 and summary.hook_events == 0


def test_bad_arguments_are_a_non_blocking_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "fire_exp", "hook", "Stop"], input="{}",
                          capture_output=True, text=True, cwd=ROOT,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.returncode == 1 and "--portfolio" in proc.stderr  # never 2: 2 blocks


def freeze(tmp_path: Path) -> Path:
    """A real manifest from `fire-exp freeze`, with its policy paths moved to a copy."""
    manifest = tmp_path / "demo.prereg.json"
    frozen = run_cli("freeze", "panel=demo", f"prereg={manifest}", "panel.attempts=1")
    assert frozen.returncode == 0, frozen.stderr
    data = json.loads(manifest.read_text())
    copy = tmp_path / "fire-core"
    shutil.copytree(ROOT / "portfolios" / "fire-core", copy)
    for key, item in data["hashes"].items():
        if key.startswith("policy:"):
            item["path"] = str(copy / Path(item["path"]).name)
    manifest.write_text(json.dumps(data))
    return manifest


def test_a_frozen_manifest_runs_and_a_changed_source_is_refused(tmp_path: Path) -> None:
    manifest = freeze(tmp_path)
    state = tmp_path / "state"
    hook("UserPromptSubmit", payload("claude-code", "UserPromptSubmit", prompt=DB_TASK), state,
         portfolio=manifest)
    assert_deny(hook("PreToolUse", bash("claude-code", "PreToolUse", "sqlite3 evidence/orders.db"),
                     state, portfolio=manifest)[1])
    source = tmp_path / "fire-core" / "database_evidence.py"
    source.write_text(source.read_text() + "\n# edited after freezing\n")
    code, answer, err = hook("PreToolUse", bash("claude-code", "PreToolUse", "sqlite3 x.db"),
                             state, portfolio=manifest)
    assert (code, answer) == (0, None) and "frozen" in err
    assert read_activity(state).load_errors == 1


# --- export-hooks ------------------------------------------------------------------------

# The events each CLI sends (Claude Code 2.1.332's PostToolUseFailure observed).
EVENTS = {"claude-code": {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                          "PostToolUseFailure", "Stop", "SubagentStop", "Notification",
                          "PreCompact", "SessionEnd"},
          "codex": {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
                    "PostToolUse", "Stop", "SubagentStop"}}


def assert_valid_settings(doc: Any, cli: str) -> None:
    """The hooks schema of reference/hooks.md: event -> [{matcher?, hooks: [command]}]."""
    assert isinstance(doc, dict) and set(doc) == {"hooks"}
    for event, groups in doc["hooks"].items():
        assert event in EVENTS[cli], event
        assert isinstance(groups, list) and groups
        for group in groups:
            assert set(group) <= {"matcher", "hooks"} and group["hooks"]
            if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
                assert group["matcher"] == MATCHERS[cli]
            else:
                assert "matcher" not in group  # Stop and UserPromptSubmit take none
            for handler in group["hooks"]:
                assert set(handler) == {"type", "command", "timeout"}
                assert handler["type"] == "command" and isinstance(handler["command"], str)
                assert isinstance(handler["timeout"], int) and handler["timeout"] > 0


def export(target: str, out: Path, arm: str = "real", *extra: str) -> subprocess.CompletedProcess:
    return run_cli("export-hooks", "--target", target, "--portfolio", "fire-core", "--arm", arm,
                   "--out", str(out), "--command", f"{sys.executable} -m fire_exp", *extra)


@pytest.mark.parametrize("cli", CLIS)
def test_exported_settings_are_valid_and_wire_the_bridge(cli: str, tmp_path: Path) -> None:
    assert export(cli, tmp_path).returncode == 0
    doc = json.loads((tmp_path / TARGETS[cli]).read_text())
    assert_valid_settings(doc, cli)
    assert set(doc["hooks"]) == {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} | \
        ({"PostToolUseFailure"} if cli == "claude-code" else set())
    # Run the wired commands as the CLI would (a shell, the payload on stdin).
    env = os.environ | {"PYTHONPATH": str(ROOT)}

    def fire(event: str, stdin: dict[str, Any]) -> Any:
        command = doc["hooks"][event][0]["hooks"][0]["command"]
        proc = subprocess.run(command, shell=True, input=json.dumps(stdin), capture_output=True,
                              text=True, cwd=tmp_path, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    fire("UserPromptSubmit", payload(cli, "UserPromptSubmit", prompt=DB_TASK))
    assert_deny(fire("PreToolUse", bash(cli, "PreToolUse", "sqlite3 evidence/orders.db")))
    summary = read_activity(tmp_path / ".fire-exp" / "hooks")
    assert summary.by_event == {"UserPromptSubmit": 1, "PreToolUse": 1}


def test_export_for_a_control_arm_and_for_the_baseline(tmp_path: Path) -> None:
    export("claude-code", tmp_path, "always_verify")
    doc = json.loads((tmp_path / TARGETS["claude-code"]).read_text())
    assert_valid_settings(doc, "claude-code")
    assert "Stop" in doc["hooks"]
    proc = export("codex", tmp_path / "b", "baseline")
    assert proc.returncode == 2 and "no policies" in proc.stderr
    assert not (tmp_path / "b" / TARGETS["codex"]).exists()


def test_a_misspelt_event_is_logged_as_such_not_as_an_allow(tmp_path: Path) -> None:
    """``PreTooluse`` was logged as a normal allow: the hook setup was wrong unseen."""
    state = tmp_path / "state"
    code, answer, _ = hook("PreTooluse", payload("claude-code", "PreToolUse"), state)
    assert (code, answer) == (0, None)
    [line] = activity(state)
    assert line["kind"] == "error" and line["decision"] == "error"
    assert "unknown hook event 'PreTooluse'; did you mean 'PreToolUse'?" in line["reason"]


def test_a_payload_with_a_key_twice_is_malformed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    text = '{"session_id": "s1", "session_id": "s2", "hook_event_name": "Stop"}'
    assert hook("Stop", text, state)[:2] == (0, None)
    [line] = activity(state)
    assert "key 'session_id' appears twice" in line["reason"]


def test_a_manifest_given_as_portfolio_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    """The hook read ``--portfolio X.prereg.json`` with plain JSON (the second ``hashes``
    won) while every other reader of a manifest refuses a key twice."""
    from fire_exp.errors import InputError
    from fire_exp.manifest import FORMAT
    from fire_exp.policies.hooks import load_arm_families

    manifest = tmp_path / "demo.prereg.json"
    manifest.write_text(f'{{"format": "{FORMAT}", "hashes": {{}}, "hashes": {{}}}}')
    with pytest.raises(InputError, match="key 'hashes' appears twice"):
        load_arm_families(manifest, "real")
