"""``analyze`` reports the sequential test of a sequential plan beside the fixed-size
tables, marks those as computed after an optional stop, and adds nothing otherwise."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from fire_exp.analysis import analyze
from fire_exp.analysis.sequential import write_stop
from fire_exp.manifest import FORMAT
from fire_exp.records import AttemptRecord, record_to_line
from fire_exp.report.render import summary_markdown, write_tables
from fire_exp.runner.schedule import build_task_block_schedule
from tests.analysis.analysis_helpers import REPO

SEQUENTIAL = REPO / "analysis" / "sequential.yaml"
TASKS = [(f"t{i}", "eligible") for i in range(12)] + [("s0", "silent"), ("s1", "silent")]


def _run(tmp: Path, n_tasks: int, stopped: bool, good: str = "real") -> Path:
    """A run folder: the first ``n_tasks`` task blocks of a real/sham sequential panel in
    which the arm ``good`` always passes and the other never does."""
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    run = tmp / "run"
    run.mkdir()
    tasks = list(dict.fromkeys(s.task for s in schedule))[:n_tasks]
    lines = [record_to_line(AttemptRecord(
        run="run", panel="p", attempt_id=s.attempt_id, task=s.task, task_digest="d",
        cohort=s.cohort, arm=s.arm, replicate=s.replicate, order=s.order, seed=s.seed,
        agent="a", environment="e", reward=float(s.arm == good), passed=s.arm == good))
        for s in schedule if s.task in tasks]
    (run / "attempts.jsonl").write_text("\n".join(lines) + "\n")
    (run / "prereg.json").write_text(json.dumps(
        {"format": FORMAT, "hashes": {}, "schedule": [asdict(s) for s in schedule]}))
    if stopped:
        write_stop(run, "efficacy", "stopped for efficacy (test)")
    return run


def test_a_stopped_run_reports_its_stopping_time_and_marks_the_fixed_tables(tmp_path):
    run = _run(tmp_path, n_tasks=10, stopped=True)
    result = analyze(run, SEQUENTIAL)
    seq = result.sequential
    assert seq is not None
    assert (seq["decision"], seq["stopped_at"], seq["stop_reason"]) == ("efficacy", 7,
                                                                        "efficacy")
    assert seq["e_value"] >= 20 and seq["fixed_size_after_optional_stop"]
    assert [row["difference"] for row in seq["path"]] == [1.0] * seq["tasks_tested"]
    assert seq["task_order_from"] == "the schedule frozen in prereg.json"
    assert any("after an optional stop" in note for note in result.notes)
    assert "### Sequential test" in summary_markdown(result)
    out = tmp_path / "out"
    write_tables(result, out)
    assert json.loads((out / "sequential.json").read_text())["stopped_at"] == 7
    assert "after an optional stop" in (out / "sequential.md").read_text()


def test_a_run_without_a_decision_says_so(tmp_path):
    result = analyze(_run(tmp_path, n_tasks=3, stopped=False), SEQUENTIAL)
    assert result.sequential is not None
    assert result.sequential["decision"] == "continue"
    assert not result.sequential["fixed_size_after_optional_stop"]
    assert not any("optional stop" in note for note in result.notes)


def test_a_plan_without_the_section_adds_nothing(tmp_path):
    result = analyze(_run(tmp_path, n_tasks=3, stopped=False), REPO / "analysis" / "demo.yaml")
    assert result.sequential is None
    write_tables(result, tmp_path / "out")
    assert not (tmp_path / "out" / "sequential.json").exists()
    assert "Sequential" not in summary_markdown(result)


def test_a_run_stopped_by_its_budget_says_so_in_its_status(tmp_path):
    run = _run(tmp_path, n_tasks=3, stopped=False)
    write_stop(run, "budget_usd", "stopped by its budget (panel.budget_usd=5)")
    result = analyze(run, REPO / "analysis" / "demo.yaml")
    assert result.status.partial
    assert result.status.message.startswith("stopped by its budget (panel.budget_usd=5); ")


def test_the_report_leads_with_the_sequential_result(tmp_path):
    from fire_exp.report.build import build_report

    report = build_report(_run(tmp_path, n_tasks=10, stopped=True), SEQUENTIAL)
    text = (report.out / "report.md").read_text()
    assert text.index("# Sequential test") < text.index("# Contrasts")
    assert "sequential test: stopped for efficacy after 7" in report.summary()


def test_a_run_whose_primary_arm_is_worse_stops_for_harm_not_efficacy(tmp_path):
    """Every task favouring sham once read "stopped for efficacy": the decision and the
    line now say which way the test stopped."""
    from fire_exp.analysis.plan import load_plan
    from fire_exp.analysis.sequential import FrozenOrder, sequential_state
    from fire_exp.manifest import read_prereg
    from fire_exp.records import read_records

    run = _run(tmp_path, n_tasks=10, stopped=False, good="sham")
    seq = analyze(run, SEQUENTIAL).sequential
    assert seq is not None and (seq["decision"], seq["stopped_at"]) == ("harm", 7)
    assert seq["line"].startswith("stopped for harm after 7")
    assert seq["line"].endswith("; real worse than sham")
    order = FrozenOrder.from_schedule(read_prereg(run / "prereg.json")["schedule"])
    state = sequential_state(read_records(run / "attempts.jsonl").finished,
                             load_plan(SEQUENTIAL), order)
    assert state.result.decision == "harm"


def test_betting_on_signs_compares_balanced_attempts(tmp_path):
    """An arm with one scored attempt against two (an invalid record dropped): on signs the
    difference is taken over the first attempt of each arm, so the null stays symmetric;
    on differences every scored attempt counts."""
    from fire_exp.analysis.plan import load_plan
    from fire_exp.analysis.sequential import task_differences
    from fire_exp.records import read_records

    run = _run(tmp_path, n_tasks=1, stopped=False)
    records = read_records(run / "attempts.jsonl").finished
    task = records[0].task
    # real: replicate 0 fails, replicate 1 invalid; sham: replicate 0 fails, 1 passes
    records = [r.model_copy(update={"passed": r.arm == "sham" and r.replicate == 1,
                                    "reward": float(r.arm == "sham" and r.replicate == 1),
                                    "valid": not (r.arm == "real" and r.replicate == 1)})
               for r in records]
    plan = load_plan(SEQUENTIAL)
    signs = plan.model_copy(update={"sequential": plan.sequential.model_copy(
        update={"bet_on": "sign"})})
    diffs = plan.model_copy(update={"sequential": plan.sequential.model_copy(
        update={"bet_on": "difference"})})
    assert task_differences(records, signs, [task]) == {task: 0.0}  # 0 against 0
    assert task_differences(records, diffs, [task]) == {task: -0.5}  # 0 against 0.5
