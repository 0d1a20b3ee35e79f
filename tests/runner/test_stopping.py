"""Stopping a run early: the sequential rule after each completed task block, the budget
before an attempt that could cross it, and a resumed run deciding the same again."""

from __future__ import annotations

import io
import json
import math
from collections import deque
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fire_exp.analysis import load_plan
from fire_exp.analysis.sequential import STOP_FILE, FrozenOrder, read_stop, sequential_state
from fire_exp.config import panel_from_dict
from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, Lineage, Usage, record_to_line
from fire_exp.runner.schedule import ScheduledAttempt, build_task_block_schedule
from fire_exp.runner.stopping import StopMonitor
from tests.runner.runner_helpers import ROOT, cli

PLAN = load_plan(ROOT / "analysis" / "sequential.yaml")
TASKS = [(f"t{i}", "eligible") for i in range(12)] + [("s0", "silent")]


def _record(cell: ScheduledAttempt, passed: bool, cost: float = 0.0,
            replaced_by: str | None = None) -> AttemptRecord:
    return AttemptRecord(run="r", panel="p", attempt_id=cell.attempt_id, task=cell.task,
                         task_digest="d", cohort=cell.cohort, arm=cell.arm,
                         replicate=cell.replicate, order=cell.order, seed=cell.seed,
                         agent="a", environment="e", reward=float(passed), passed=passed,
                         usage=Usage(cost_usd=cost), lineage=Lineage(replaced_by=replaced_by))


def _panel(schedule: list[ScheduledAttempt], plan: Any = PLAN, **budget: Any) -> Any:
    panel_config = SimpleNamespace(budget_usd=budget.get("budget_usd"),
                                   budget_attempts=budget.get("budget_attempts"))
    return SimpleNamespace(plan=plan, schedule=schedule, agent=SimpleNamespace(params={}),
                           config=SimpleNamespace(panel=panel_config,
                                                  cost_pilot=budget.get("cost_pilot")))


def _feed(monitor: StopMonitor, schedule: list[ScheduledAttempt], queue: deque[Any],
          passes: Any) -> int:
    """Run the queue one attempt at a time; returns how many ran."""
    ran = 0
    while queue:
        cell = queue.popleft()
        monitor.started()
        monitor.finished(_record(cell, passes(cell)))
        monitor.check(queue)
        ran += 1
    return ran


def test_the_schedule_runs_task_blocks_in_a_frozen_random_order() -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    order = FrozenOrder.from_schedule(schedule)
    assert sorted(order.tasks) == sorted(t for t, _ in TASKS)
    assert list(order.tasks) != [t for t, _ in TASKS]  # randomized
    seen = [s.task for s in schedule]
    assert all(seen.index(t) + 4 == len(seen) - seen[::-1].index(t) for t in order.tasks)
    assert build_task_block_schedule(TASKS, ["real", "sham"], 2, 3) == schedule


def test_efficacy_stops_after_the_block_whose_task_crosses_one_over_alpha(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    monitor = StopMonitor(_panel(schedule), [], tmp_path)
    queue: deque[Any] = deque(schedule)
    ran = _feed(monitor, schedule, queue, lambda cell: cell.arm == "real")
    assert monitor.stop is not None and monitor.stop.reason == "efficacy"
    # Differences of 1 reach e >= 20 at the 7th eligible task under aGRAPA.
    order = FrozenOrder.from_schedule(schedule).tasks
    eligible_seen = [t for t in order if t.startswith("t")][:7]
    last = order.index(eligible_seen[-1]) + 1
    assert ran == 4 * last  # the crossing task's block, nothing after it
    stop = read_stop(tmp_path)
    assert stop is not None and stop["reason"] == "efficacy" and stop["stopped_at"] == 7
    assert stop["e_value"] >= 20


def test_a_resumed_run_decides_the_same_from_its_records_alone(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    first = StopMonitor(_panel(schedule), [], tmp_path)
    _feed(first, schedule, deque(schedule), lambda cell: cell.arm == "real")
    again = StopMonitor(_panel(schedule), first.records, tmp_path)
    queue: deque[Any] = deque(schedule[len(first.records):])
    assert again.check(queue) == first.stop
    assert not queue
    state = sequential_state(first.records, PLAN, FrozenOrder.from_schedule(schedule))
    assert state.result.stopped_at == 7 and state.line().startswith("stopped for efficacy")


def test_a_task_counts_only_when_its_block_and_those_before_it_are_complete() -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    order = FrozenOrder.from_schedule(schedule)
    second = [_record(c, c.arm == "real") for c in schedule if c.task == order.tasks[1]]
    first = [_record(c, c.arm == "real") for c in schedule if c.task == order.tasks[0]]
    assert sequential_state(second, PLAN, order).completed == ()
    assert sequential_state(second + first[:-1], PLAN, order).completed == ()
    owed = first[-1].model_copy(update={"lineage": Lineage(replaced_by="x#1")})
    assert sequential_state(second + first[:-1] + [owed], PLAN, order).completed == ()
    assert len(sequential_state(second + first, PLAN, order).completed) == 2


def test_futility_stops_only_when_preregistered(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    # real passes on even tasks, sham on odd ones: differences alternate +1, -1
    def passes(cell: ScheduledAttempt) -> bool:
        return (cell.arm == "real") == (int(cell.task[1:] or 0) % 2 == 0)
    no_rule = PLAN.model_copy(update={"sequential": PLAN.sequential.model_copy(
        update={"futility": None})})
    monitor = StopMonitor(_panel(schedule, no_rule), [], tmp_path)
    assert _feed(monitor, schedule, deque(schedule), passes) == len(schedule)
    assert monitor.stop is None and not (tmp_path / STOP_FILE).exists()
    strict = PLAN.model_copy(update={"sequential": PLAN.sequential.model_copy(
        update={"futility": PLAN.sequential.futility.model_copy(update={"e_below": 0.6})})})
    monitor = StopMonitor(_panel(schedule, strict), [], tmp_path)
    assert _feed(monitor, schedule, deque(schedule), passes) < len(schedule)
    assert monitor.stop is not None and monitor.stop.reason == "futility"


def test_the_attempt_budget_counts_attempts_in_flight(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    monitor = StopMonitor(_panel(schedule, load_plan(ROOT / "analysis" / "demo.yaml"),
                                 budget_attempts=5), [], tmp_path)
    queue: deque[Any] = deque(schedule)
    for _ in range(2):  # two workers take an attempt each
        queue.popleft()
        monitor.started()
    monitor.check(queue)
    assert len(queue) == 3 and monitor.stop is not None
    assert monitor.stop.reason == "budget_attempts"
    assert not (tmp_path / STOP_FILE).exists()  # a budget's stop is final when the run ends
    stop = monitor.close(len(schedule) - 5)
    assert stop is not None and "47 owed attempts not run" in stop.line
    assert json.loads((tmp_path / STOP_FILE).read_text())["not_started"] == len(schedule) - 5


def test_the_dollar_budget_stops_before_an_attempt_that_could_cross_it(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    monitor = StopMonitor(_panel(schedule, load_plan(ROOT / "analysis" / "demo.yaml"),
                                 budget_usd=1.0), [], tmp_path)
    queue: deque[Any] = deque(schedule)
    costs = iter([0.30, 0.25, 0.30, 0.1, 0.1])
    spent = 0.0
    while queue:
        cell = queue.popleft()
        monitor.started()
        cost = next(costs)
        spent += cost
        monitor.finished(_record(cell, True, cost))
        monitor.check(queue)
    assert spent <= 1.0  # three attempts; a fourth at the dearest cost (0.30) would cross
    assert len(monitor.records) == 3 and monitor.stop is not None
    assert monitor.stop.reason == "budget_usd"


def test_attempts_held_back_by_the_budget_run_when_cheaper_attempts_leave_room(tmp_path,
                                                                             ) -> None:
    schedule = build_task_block_schedule(TASKS * 4, ["real", "sham"], attempts=2, seed=3)
    monitor = StopMonitor(_panel(schedule, load_plan(ROOT / "analysis" / "demo.yaml"),
                                 budget_usd=1.0), [], tmp_path)
    queue: deque[Any] = deque(schedule)
    spent = 0.0
    while queue:
        cell = queue.popleft()
        monitor.started()
        cost = 0.30 if not monitor.records else 0.01  # one dear attempt, then cheap ones
        spent += cost
        monitor.finished(_record(cell, True, cost))
        monitor.check(queue)
    # Attempts ran while one more at the dearest cost ($0.30) still fitted in $1.
    assert 1.0 - 0.30 < spent <= 1.0
    assert len(monitor.records) == 42
    stop = monitor.close(len(schedule) - len(monitor.records))
    assert stop is not None and stop.reason == "budget_usd"


def test_a_pilot_s_cost_guards_the_dollar_budget_before_the_first_cost(tmp_path) -> None:
    schedule = build_task_block_schedule(TASKS, ["real", "sham"], attempts=2, seed=3)
    pilot = tmp_path / "pilot.jsonl"
    pilot.write_text(record_to_line(_record(schedule[0], True, 0.30)) + "\n")
    monitor = StopMonitor(_panel(schedule, load_plan(ROOT / "analysis" / "demo.yaml"),
                                 budget_usd=1.0, cost_pilot=str(pilot)), [], tmp_path)
    queue: deque[Any] = deque(schedule)
    for _ in range(2):  # two workers took an attempt each before any cost was known
        queue.popleft()
        monitor.started()
    monitor.check(queue)
    # $1.00 - 2 in flight x $0.30 leaves room for one more attempt at $0.30
    assert len(queue) == 1 and monitor.stop is not None
    assert monitor.stop.reason == "budget_usd"


@pytest.mark.slow
def test_cli_budget_stop_then_resume_under_a_larger_budget_continues(tmp_path: Path) -> None:
    """Slow: a panel stopped by its budget, one attempt at a time, then resumed."""
    first = cli("run=b", "panel.budget_attempts=3", "executor.workers=1", results=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "stopped by its budget (panel.budget_attempts=3)" in first.stdout
    run = tmp_path / "rt" / "b"
    lines = (run / "attempts.jsonl").read_text().count('"kind":"finished"')
    assert lines == 3 and read_stop(run) is not None
    second = cli("resume=b", "panel.budget_attempts=100", results=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "stopped" not in second.stdout and read_stop(run) is None
    assert (run / "attempts.jsonl").read_text().count('"kind":"finished"') == 10


def test_a_bad_budget_is_refused_where_it_enters() -> None:
    base = {"name": "p", "suite": "s", "eligible": ["t"], "arms": ["real"], "attempts": 1,
            "portfolio": "fire-core"}
    for key, value in (("budget_usd", -1), ("budget_usd", "lots"), ("budget_usd", 0),
                       ("budget_usd", math.inf),  # no cap, written as one: leave it unset
                       ("budget_attempts", 2.5), ("budget_attempts", True)):
        with pytest.raises(InputError) as exc:
            panel_from_dict({**base, key: value})
        assert exc.value.field == key and "expected" in exc.value.problem
    ok = panel_from_dict({**base, "budget_usd": 12, "budget_attempts": 40})
    assert (ok.budget_usd, ok.budget_attempts) == (12.0, 40)
    assert "budget_usd" not in ok.as_dict()  # operational: not hashed


class _ScoringExecutor:
    """Runs nothing: every job's record passes under ``real`` and fails otherwise (the
    runner's stopping machinery is what is tested, not the attempts)."""

    name = "scoring"

    def run(self, panel: Any, queue: Any, on_start: Any, on_done: Any) -> None:
        while queue:
            job = queue.popleft()
            on_start(job)
            item = job.item
            on_done(job, AttemptRecord(
                run=job.run, panel=panel.name, attempt_id=job.attempt_id, task=item.task,
                task_digest=panel.tasks[item.task].digest, cohort=item.cohort, arm=item.arm, replicate=item.replicate,
                order=item.order, seed=item.seed, agent="a", environment="e",
                reward=float(item.arm == "real"), passed=item.arm == "real",
                config_hash=panel.config_hash))  # as the runner's records carry it


def test_run_panel_stops_for_efficacy_and_a_resume_runs_nothing_more(tmp_path) -> None:
    from fire_exp.runner.build import build_panel
    from fire_exp.runner.panel import run_panel
    from fire_exp.runner.progress import PlainProgress
    from tests.runner.runner_helpers import run_config

    config = run_config(tmp_path, arms=("real", "sham"), tasks=())
    eligible = ("serve-status-page", "kv-http-service", "deploy-git-hook",
                "recover-wal-orders", "recover-sensor-readings", "replace-terms-exact",
                "sanitize-credentials", "build-report-log", "reimplement-rle",
                "count-subset-tokens")
    config = replace(config, panel=replace(config.panel, eligible=eligible,
                                           silent=("csv-column-stats",), attempts=2,
                                           analysis=str(ROOT / "analysis" / "sequential.yaml")))
    panel = build_panel(config)
    run_dir = tmp_path / "rt" / "seq"
    progress = PlainProgress(len(panel.schedule), stream=io.StringIO())
    first = run_panel(panel, run_dir, progress=progress, executor=_ScoringExecutor())
    assert first.stop is not None and first.stop.reason == "efficacy"
    stop = read_stop(run_dir)
    assert stop is not None and stop["stopped_at"] == 7
    assert first.ran < len(panel.schedule) and first.ran % 4 == 0  # whole task blocks
    again = run_panel(panel, run_dir, progress=progress, executor=_ScoringExecutor())
    assert again.ran == 0 and again.stop == first.stop
    # The analysis redoes the runner's decision from attempts.jsonl, the plan and prereg.json.
    from fire_exp.analysis import analyze
    from fire_exp.runner.prereg import write_manifest

    write_manifest(panel, run_dir / "prereg.json")
    seq = analyze(run_dir).sequential
    assert seq is not None
    assert (seq["decision"], seq["stopped_at"], seq["stopping_task"], seq["e_value"]) == \
        ("efficacy", stop["stopped_at"], stop["stopping_task"], stop["e_value"])
