"""What the explorer writes: placement of policy events, redaction, escaping, the analysis."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from fire_exp.cli import main as fire_exp_main
from fire_exp.view import build_view, collect, secret_redactor
from fire_exp.view.attempt import interleave, timeline
from fire_exp.view.collect import table_data, without_machine_paths
from fire_exp.view.conversation import claude_messages, codex_messages, openai_messages
from tests.conftest import REPO
from tests.view.conftest import HOSTILE, SECRET

DATA = REPO / "tests" / "analysis" / "data"
# One worker runs the module, so the demo run and its site (conftest) are made once.
pytestmark = pytest.mark.xdist_group("view-demo-run")


def _index(site: Path) -> dict:
    text = (site / "data" / "index.js").read_text(encoding="utf-8")
    assert text.startswith("FIRE_INDEX=") and text.endswith(";\n")
    return json.loads(text[len("FIRE_INDEX="):-2])


def test_events_are_placed_on_the_step_where_they_happened():
    commands = [{"kind": "command", "command": "a", "exit_code": 0, "output": ""},
                {"kind": "command", "command": "b", "denied": True, "output": "no"},
                {"kind": "stop"},
                {"kind": "command", "command": "c", "exit_code": 1, "output": ""},
                {"kind": "stop"}]
    events = [{"seq": 1, "event": "SessionStart", "rule": "hello", "text": "t"},
              {"seq": 5, "event": "PreToolUse", "step": 2, "rule": "deny-b", "text": "d"},
              {"seq": 7, "event": "Stop", "step": 2, "rule": "first-stop", "text": "s1"},
              {"seq": 9, "event": "PostToolUse", "step": 3, "rule": "after-c", "text": "p"},
              {"seq": 11, "event": "Stop", "step": 3, "rule": "second-stop", "text": "s2"},
              {"seq": 12, "event": "PreToolUse", "step": 9, "rule": "nowhere", "text": "x"}]
    steps, unplaced = timeline(commands, events)
    placed = {(s["kind"], s["step"]): [e["rule"] for e in s["events"]] for s in steps}
    assert placed == {("start", 0): ["hello"], ("command", 1): [], ("command", 2): ["deny-b"],
                      ("stop", 2): ["first-stop"], ("command", 3): ["after-c"],
                      ("stop", 3): ["second-stop"]}
    assert [e["rule"] for e in unplaced] == ["nowhere"]
    assert steps[2]["denied"] and steps[2]["command"] == "b"


def test_secret_values_are_redacted_and_short_or_plain_ones_are_not():
    redact = secret_redactor({"OPENAI_API_KEY": "sk-abcdefgh123", "GH_TOKEN": "short",
                              "HOME": "/root/home-folder"})
    assert redact("key sk-abcdefgh123 in /root/home-folder short") == \
        "key *** in /root/home-folder short"


def test_the_site_holds_no_secret_and_no_raw_markup(site):
    for path in site.rglob("*"):
        if path.suffix in {".js", ".html", ".css"}:
            text = path.read_text(encoding="utf-8")
            assert SECRET not in text, path
            assert "<script>window.__pwned" not in text, path
    data = "".join(p.read_text(encoding="utf-8") for p in (site / "data" / "a").rglob("*.js"))
    assert json.dumps(HOSTILE)[1:-1].replace("<", "\\u003c") in data
    assert "key=***" in data


def test_the_site_needs_no_network(site):
    for name in ("index.html", "view.js", "attempt.js", "search.js", "view.css"):
        text = (site / name).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text


def test_overview_tables_are_the_analysis_tables(site, demo_run):
    index = _index(site)
    data = collect(demo_run, REPO / "analysis" / "demo.yaml")
    result = data.result
    expected = [table_data(n, f) for n, f in result.tables().items() if not f.empty]
    # As the analysis computed them, with the building machine's folders left out.
    assert index["tables"] == json.loads(json.dumps(without_machine_paths(expected, data)))
    prereg = next(t for t in index["tables"] if t["name"] == "prereg")
    assert not [row for row in prereg["rows"] if str(REPO) in str(row)]
    assert any(row[1].startswith("configs/") for row in prereg["rows"])
    assert index["notes"] == list(result.notes)
    assert index["prereg"]["panel"] == "demo" and len(index["prereg"]["sha256"]) == 64
    assert sum(n for *_, n in index["grid"]) == result.metadata["n_scored"] == 15
    assert sum(s for *_, s, _ in index["grid"]) == int(result.pass_rates.query(
        "cohort == 'all'")["successes"].sum())


def test_a_csv_attempts_file_gets_grid_and_list(tmp_path):
    site = build_view(DATA / "fire_panel_30x2.csv", REPO / "analysis" / "demo.yaml", tmp_path)
    index = _index(site.out)
    frame = pd.read_csv(DATA / "fire_panel_30x2.csv")
    assert site.n_attempts == len(index["attempts"]) == len(frame)
    assert len(index["grid"]) == frame.groupby(["task", "arm"]).ngroups
    assert index["hasLogs"] is False and index["prereg"] is None


def test_cli_writes_the_site_and_refuses_a_missing_run(demo_run, tmp_path, capsys):
    assert fire_exp_main(["view", str(demo_run), "--out", str(tmp_path / "site")]) == 0
    assert str(tmp_path / "site" / "index.html") in capsys.readouterr().out
    assert len(list((tmp_path / "site" / "data" / "a").rglob("*.js"))) == 15
    assert fire_exp_main(["view", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err and "no such attempts file" in err


@pytest.mark.parametrize("line", ["{not json", '{"schema_version": 1, "kind": "finished"}'])
def test_a_malformed_attempts_file_is_refused_with_its_line(tmp_path, capsys, line):
    path = tmp_path / "attempts.jsonl"
    path.write_text(line + "\n")
    assert fire_exp_main(["view", str(path), "--plan", "demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:" in err and "line 1" in err


def test_the_run_summary_and_report_point_to_the_view(demo_run, tmp_path):
    from fire_exp.report import build_report

    printed = (demo_run.parent.parent / "run-stdout.txt").read_text()
    assert f"every attempt in the browser: fire-exp view {demo_run}" in printed
    report = build_report(demo_run, None, tmp_path / "report")
    md = (report.out / "report.md").read_text()
    # The report names the run by its folder, not by this machine's path to it.
    assert f"`fire-exp view {demo_run.name}`" in md and str(demo_run.parent) not in md


def test_view_out_writes_only_into_an_empty_folder_or_an_earlier_site(demo_run, tmp_path,
                                                                      capsys):
    # The analysis' tables in RUN/report/data are not the explorer's: refused, all kept.
    from fire_exp.report import build_report

    report = build_report(demo_run, REPO / "analysis" / "demo.yaml", tmp_path / "report").out
    before = sorted(p.relative_to(report) for p in report.rglob("*"))
    assert fire_exp_main(["view", str(demo_run), "--out", str(report)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{report}: --out:" in err and ".fire-exp-view" in err
    assert sorted(p.relative_to(report) for p in report.rglob("*")) == before
    # A file, and a folder holding one file of the user's: refused, untouched.
    (tmp_path / "notes.txt").write_text("mine")
    assert fire_exp_main(["view", str(demo_run), "--out", str(tmp_path / "notes.txt")]) == 2
    assert "is a file" in capsys.readouterr().err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data").mkdir()
    (mine / "data" / "keep.csv").write_text("a,b\n")
    assert fire_exp_main(["view", str(demo_run), "--out", str(mine)]) == 2
    assert (mine / "data" / "keep.csv").read_text() == "a,b\n"
    capsys.readouterr()
    # An empty folder, then the same folder again (an earlier site): written, rewritten; a
    # file of the user's beside the site stays.
    site = tmp_path / "site"
    site.mkdir()
    assert fire_exp_main(["view", str(demo_run), "--out", str(site)]) == 0
    assert (site / ".fire-exp-view").is_file()
    (site / "my-notes.md").write_text("kept")
    (site / "data" / "a" / "0" / "stale.js").write_text("old")
    assert fire_exp_main(["view", str(demo_run), "--out", str(site)]) == 0
    assert (site / "my-notes.md").read_text() == "kept"
    assert not (site / "data" / "a" / "0" / "stale.js").exists()
    assert len(list((site / "data" / "a").rglob("*.js"))) == 15
    # A site written before sites carried the marker (nothing but a site's files): replaced.
    (site / "my-notes.md").unlink()
    (site / ".fire-exp-view").unlink()
    assert fire_exp_main(["view", str(demo_run), "--out", str(site)]) == 0
    assert (site / ".fire-exp-view").is_file()


def test_the_run_summary_prints_percentages_with_one_decimal(demo_run):
    printed = (demo_run.parent.parent / "run-stdout.txt").read_text()
    table = printed[printed.index("# Pass rate (%) per arm"):].split("\n\n")[1]
    rows = [line.split(" | ")[1:] for line in table.splitlines()[2:]]
    assert rows and all(re.fullmatch(r"\d+\.\d", c.strip(" |")) for row in rows for c in row)


def test_openai_transcripts_become_messages_bound_to_their_commands():
    rows = [{"role": "system", "content": "be careful"},
            {"role": "user", "content": "the task"},
            {"role": "assistant", "content": "two things", "usage": {"input": 10, "output": 2},
             "tool_calls": [
                 {"id": "a", "type": "function",
                  "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
                 {"id": "b", "type": "function",
                  "function": {"name": "bash", "arguments": "{oops"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "file"},
            {"role": "tool", "tool_call_id": "b", "content": "error: malformed tool call"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "verify first", "source": "policy"},
            {"role": "harness", "event": "stopped"}]
    messages = openai_messages(rows)
    assert [(m["role"], m["actions"], m["stop"]) for m in messages] == [
        ("system", 0, False), ("user", 0, False), ("assistant", 1, False),
        ("tool", 0, False), ("assistant", 0, True), ("harness", 0, False)]
    assert messages[2]["commands"] == ["ls"] and "malformed" in messages[2]["calls"][0]
    assert messages[2]["label"] == "10 tokens in, 2 out"


def test_cli_outputs_become_messages():
    claude = claude_messages([
        {"type": "system", "subtype": "init", "model": "m"},
        {"type": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "I look first"},
            {"type": "tool_use", "id": "1", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "2", "name": "Read", "input": {"file_path": "a.txt"}},
            {"type": "tool_use", "id": "3", "name": "Write", "input": {"file_path": "b.txt"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "1", "content": "a.txt"},
            {"type": "tool_result", "tool_use_id": "2", "content": "text of a"}]}},
        {"type": "result", "subtype": "success", "num_turns": 2}])
    assert [(m["role"], m["label"], m["text"]) for m in claude] == [
        ("assistant", "thinking", "hmm"), ("assistant", "", "I look first"),
        ("tool", "", "text of a"), ("harness", "", "success after 2 turns")]
    assert claude[1]["commands"] == ["ls", "Write b.txt"] and claude[1]["calls"] == ["Read a.txt"]
    codex = codex_messages([
        {"type": "thread.started"},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "plan"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "on it"}},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"type": "file_change",
                                            "changes": [{"path": "x.py", "kind": "add"}]}},
        {"type": "item.completed", "item": {"type": "error", "message": "sandbox"}},
        {"type": "item.completed", "item": {"type": "web_search", "query": "sqlite wal"}},
        {"type": "turn.failed", "error": {"message": "quota"}}])
    assert [(m["role"], m["text"], m["commands"]) for m in codex] == [
        ("assistant", "plan", []), ("assistant", "on it", []), ("assistant", "", ["ls"]),
        ("assistant", "", ["apply_patch x.py"]), ("harness", "error: sandbox", []),
        ("assistant", "", []), ("harness", "turn.failed: quota", [])]
    assert codex[5]["calls"] == ["web_search sqlite wal"]


def test_messages_go_before_the_steps_they_caused():
    steps, _ = timeline([{"kind": "command", "command": "a"}, {"kind": "command", "command": "b"},
                         {"kind": "edit", "command": "Write", "paths": ["x"]},
                         {"kind": "stop"}], [])
    said = openai_messages([
        {"role": "assistant", "content": "first a and b", "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "bash",
                                                         "arguments": '{"command": "a"}'}},
            {"id": "2", "type": "function", "function": {"name": "bash",
                                                         "arguments": '{"command": "b"}'}}]},
        {"role": "assistant", "content": "done"}])
    order = [(x["kind"], x.get("command") or x.get("text")) for x in interleave(steps, said)]
    # The edit no message claims stays where the command log puts it, before the stop.
    assert order == [("start", None), ("message", "first a and b"), ("command", "a"),
                     ("command", "b"), ("edit", "Write"), ("message", "done"), ("stop", None)]
    assert interleave(steps, []) == steps


def test_the_grid_offers_only_contrasts_whose_arms_the_run_has(tmp_path):
    frame = pd.read_csv(DATA / "fire_panel_30x2.csv")
    path = tmp_path / "two-arms.csv"
    frame[frame["arm"].isin(["real", "baseline"])].to_csv(path, index=False)
    site = build_view(path, REPO / "analysis" / "demo.yaml", tmp_path / "site")
    assert [c["name"] for c in _index(site.out)["contrasts"]] == ["real - baseline"]
