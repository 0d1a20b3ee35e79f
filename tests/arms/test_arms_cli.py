"""The worked panel from the command line: declared arms run, are analysed with the plan's
contrasts and reported with what each changed; bad declarations are one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

SMALL = ["panel=agents-md", "panel.eligible=[serve-status-page]",
         "panel.silent=[csv-column-stats]", "panel.attempts=1", "executor.workers=2"]


@pytest.mark.parametrize(("override", "message"), [
    ("panel.arms=[agents_md,nofile]", "unknown arm 'nofile' (did you mean 'no_file'?"),
    ("+panel.declare.agents_md.environment={base_image: x}",
     "declare.agents_md.environment.base_image: not an environment setting an arm may change"),
    ("+panel.declare.no_file.agent={think_s: -1}",
     "declare.no_file: configs/agent/simulated.yaml: think_s: -1 is below 0 "
     "(set panel.declare.no_file.agent.think_s to 0 or more)"),
    # the panel's agent (simulated) takes no temperature: named as unknown, not a range
    ("+panel.declare.no_file.agent={temperature: -1}", "temperature: unknown parameter"),
    ("+panel.declare.no_file.agent={tmperature: 1}", "tmperature"),
])
def test_a_bad_declaration_is_one_line_and_records_nothing(tmp_path: Path, override: str,
                                                           message: str) -> None:
    proc = run_cli("run", *SMALL, f"results_dir={tmp_path}", override, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "agents-md").exists()


@pytest.mark.slow
def test_the_worked_panel_runs_and_reports_what_each_arm_changed(tmp_path: Path) -> None:
    proc = run_cli("run", *SMALL, f"results_dir={tmp_path}", "run=w", timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "agents-md" / "w"
    records = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    finished = [r for r in records if r["kind"] == "finished"]
    assert {r["arm"] for r in finished} == {"agents_md", "generic_md", "no_file"}
    commands = (run / "attempts" / "csv-column-stats" / "agents_md" / "r0" / "logs" / "agent"
                / "commands.jsonl").read_text().splitlines()
    assert json.loads(commands[0])["command"] == "cat AGENTS.md"
    contrasts = (run / "report" / "contrasts.md").read_text()
    assert "agents_md − no_file" in contrasts and "agents_md − generic_md" in contrasts
    arms = (run / "report" / "arms.md").read_text()
    assert "file AGENTS.md from arms/agents-md/AGENTS.md" in arms and "| no_file | nothing" in arms
    manifest = json.loads((run / "prereg.json").read_text())
    assert "arm_file:agents_md:AGENTS.md" in manifest["hashes"]
