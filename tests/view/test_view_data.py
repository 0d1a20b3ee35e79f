"""What the explorer writes: placement of policy events, redaction, escaping, the analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fire_exp.analysis import analyze
from fire_exp.cli import main as fire_exp_main
from fire_exp.view import build_view, collect, secret_redactor
from fire_exp.view.attempt import timeline
from fire_exp.view.collect import table_data
from fire_exp.view.site import without_machine_paths
from tests.conftest import REPO
from tests.view.conftest import HOSTILE, SECRET

DATA = REPO / "tests" / "analysis" / "data"


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
    for name in ("index.html", "view.js", "view.css"):
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
    assert f"`fire-exp view {demo_run}`" in (report.out / "report.md").read_text()
