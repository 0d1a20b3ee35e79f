"""`fire-exp export-hooks` merges into a user's settings and takes out only its own entries
(issue 11, point 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fire_exp.policies.hook_files import (
    MARK,
    is_ours,
    with_feature_flag,
    without_feature_flag,
)
from fire_exp.policies.hook_settings import TARGETS

ROOT = Path(__file__).resolve().parents[2]
USER_HOOK = {"type": "command", "command": "npx prettier --write \"$FILE\"", "timeout": 30}
USER_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(git diff:*)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "model": "opus",
    "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [USER_HOOK]}],
              "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]},
}
USER_TOML = 'model = "gpt-5.1-codex"\n\n[features]\nweb_search = true\n\n[projects."/x"]\n' \
            'trust_level = "trusted"\n'


def export(target: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["--portfolio", "fire-core", "--arm", "real"] if "--remove" not in extra else []
    return subprocess.run(
        [sys.executable, "-m", "fire_exp", "export-hooks", "--target", target, "--out",
         str(out), *args, *extra], capture_output=True, text=True, cwd=ROOT, timeout=60,
        env=os.environ | {"PYTHONPATH": str(ROOT)})


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.fire-exp-backup-*"))


@pytest.mark.parametrize("cli", ["claude-code", "codex"])
def test_export_merges_is_idempotent_backs_up_and_removes_exactly_its_own(
        cli: str, tmp_path: Path) -> None:
    path = tmp_path / TARGETS[cli]
    path.parent.mkdir(parents=True)
    original = json.dumps(USER_SETTINGS, indent=2) + "\n"
    path.write_text(original)
    config = tmp_path / ".codex" / "config.toml"
    if cli == "codex":
        config.write_text(USER_TOML)

    first = export(cli, tmp_path)
    assert first.returncode == 0, first.stderr
    doc = json.loads(path.read_text())
    assert {k: v for k, v in doc.items() if k != "hooks"} == \
        {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert USER_HOOK in doc["hooks"]["PostToolUse"][0]["hooks"]  # the user's hook stays
    assert doc["hooks"]["Notification"] == USER_SETTINGS["hooks"]["Notification"]
    ours = [h for groups in doc["hooks"].values() for g in groups for h in g["hooks"]
            if is_ours(h)]
    # UserPromptSubmit, PreToolUse, PostToolUse, Stop; and Claude's PostToolUseFailure
    assert len(ours) == (5 if cli == "claude-code" else 4)
    [backup] = [b for b in backups(path.parent) if b.name.startswith(path.name)]
    assert backup.read_text() == original

    after_first = path.read_text()
    second = export(cli, tmp_path)
    assert second.returncode == 0 and path.read_text() == after_first  # nothing added twice
    assert f"unchanged {path}" in second.stderr

    if cli == "codex":
        flags = tomllib.loads(config.read_text())
        assert flags["features"] == {"web_search": True, "hooks": True}
        assert flags["model"] == "gpt-5.1-codex" and flags["projects"]["/x"]
        assert "codex_hooks" not in config.read_text()
        assert "/hooks" in first.stderr and "trust" in first.stderr

    removed = export(cli, tmp_path, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text()) == USER_SETTINGS
    if cli == "codex":
        assert config.read_text() == USER_TOML


def test_export_into_a_project_without_settings_and_remove_again(tmp_path: Path) -> None:
    assert export("codex", tmp_path).returncode == 0
    assert backups(tmp_path / ".codex") == []  # nothing existed to back up
    assert tomllib.loads((tmp_path / ".codex" / "config.toml").read_text()) == \
        {"features": {"hooks": True}}
    assert export("codex", tmp_path, "--remove").returncode == 0
    assert json.loads((tmp_path / ".codex" / "hooks.json").read_text()) == {}
    assert (tmp_path / ".codex" / "config.toml").read_text() == ""


def test_a_settings_file_that_is_not_json_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / TARGETS["claude-code"]
    path.parent.mkdir(parents=True)
    path.write_text('{"permissions": {\n  "allow": [}\n')
    proc = export("claude-code", tmp_path)
    assert proc.returncode == 2 and "settings.json: line 2: not valid JSON" in proc.stderr
    assert path.read_text() == '{"permissions": {\n  "allow": [}\n'


@pytest.mark.parametrize("cli", ["claude-code", "codex"])
def test_a_settings_path_that_is_a_folder_is_refused_leaving_nothing(tmp_path: Path,
                                                                     cli: str) -> None:
    """Refused, it once left its temporary file in the user's project."""
    path = tmp_path / TARGETS[cli]
    path.mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = export(cli, tmp_path)
    assert proc.returncode == 2 and "is a folder, not a file" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(("before", "features"), [
    ("", {"hooks": True}),
    ("[features]\nhooks = false\n", {"hooks": True}),
    ("[features]\ncodex_hooks = true\n", {"codex_hooks": True, "hooks": True}),
    ("[features]\nhooks = true\n", {"hooks": True}),
    ('x = 1\n[features]\nfoo = "a"\n[tui]\nbar = 2\n', {"foo": "a", "hooks": True}),
    # every form a TOML file can give the table: one features table stays
    ('features = { web_search = true }\nmodel = "o3"\n', {"web_search": True, "hooks": True}),
    ('features = { hooks = false }\n', {"hooks": True}),
    ('features.x = true\nmodel = "o3"\n', {"x": True, "hooks": True}),
    ('model = "o3"\nfeatures.x = true\nfeatures.hooks = false\n', {"x": True, "hooks": True}),
    ('[features]\nhooks = "yes"  # mine\nz = 1\n', {"hooks": True, "z": 1}),
])
def test_the_codex_feature_flag_round_trips(before: str, features: dict[str, Any]) -> None:
    after = with_feature_flag(before)
    assert tomllib.loads(after)["features"] == features
    assert without_feature_flag(after) == before
    assert with_feature_flag(after) == after
    assert (MARK in after) == (before != "[features]\nhooks = true\n")
    assert after.count("[features]") <= 1


def test_the_older_marked_lines_are_still_removed() -> None:
    older = f"x = 1\n\n[features]  {MARK}\nhooks = true  {MARK}\n"
    assert without_feature_flag(older) == "x = 1\n"


@pytest.mark.parametrize("text", ["features = 5\n", "[features]\nx = 1\n[features]\ny = 2\n",
                                  "a = [" * 10_000])
def test_a_config_toml_fire_exp_cannot_edit_is_refused_and_left_alone(
        tmp_path: Path, text: str) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    proc = export("codex", tmp_path)
    assert proc.returncode == 2 and "config.toml" in proc.stderr
    assert "Traceback" not in proc.stderr and config.read_text() == text
    assert not (tmp_path / ".codex" / "hooks.json").exists()  # nothing written at all


@pytest.mark.parametrize(("entry", "where"), [
    ({"matcher": "Bash", "hooks": [USER_HOOK]}, "hooks.PreToolUse"),
    ("echo hi", "hooks.PreToolUse"),
    (None, "hooks.PreToolUse"),
    ([{"matcher": "Bash", "hooks": USER_HOOK}], "hooks.PreToolUse[0]"),
    ([["echo hi"]], "hooks.PreToolUse[0]"),
    ([{"matcher": "Bash", "hooks": ["echo hi"]}], "hooks.PreToolUse[0]"),
])
def test_an_event_entry_the_clis_do_not_read_is_refused_not_dropped(
        tmp_path: Path, entry: Any, where: str) -> None:
    path = tmp_path / TARGETS["claude-code"]
    path.parent.mkdir(parents=True)
    text = json.dumps({"hooks": {"PreToolUse": entry}})
    path.write_text(text)
    for args in ((), ("--remove",)):
        proc = export("claude-code", tmp_path, *args)
        assert proc.returncode == 2 and f"{where}: expected" in proc.stderr, proc.stderr
        assert path.read_text() == text and not backups(path.parent)


def test_every_documented_entry_shape_is_merged(tmp_path: Path) -> None:
    """Groups without a matcher, with an empty one, with several handlers of other types."""
    path = tmp_path / TARGETS["claude-code"]
    path.parent.mkdir(parents=True)
    user = {"hooks": {
        "PreToolUse": [{"hooks": [USER_HOOK]}, {"matcher": "", "hooks": []},
                       {"matcher": "*", "hooks": [USER_HOOK, {"type": "prompt",
                                                               "prompt": "check"}]}],
        "SessionStart": []}}
    path.write_text(json.dumps(user))
    assert export("claude-code", tmp_path).returncode == 0
    doc = json.loads(path.read_text())
    assert doc["hooks"]["PreToolUse"][:3] == user["hooks"]["PreToolUse"]
    assert export("claude-code", tmp_path, "--remove").returncode == 0
    assert json.loads(path.read_text()) == user


@pytest.mark.parametrize("timeout", ["0", "-5", "1000000"])
def test_a_hook_timeout_outside_a_second_to_a_day_is_refused(tmp_path: Path,
                                                             timeout: str) -> None:
    proc = export("claude-code", tmp_path, "--timeout", timeout)
    assert proc.returncode == 2 and "--timeout" in proc.stderr
    assert not (tmp_path / ".claude").exists()
