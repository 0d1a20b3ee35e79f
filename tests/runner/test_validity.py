"""The validity guard: policy arms that saw no events or loaded no policy; clean baselines."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from fire_exp.records import Cause, read_records
from fire_exp.runner.attempt import AttemptSpec, run_attempt
from fire_exp.runner.build import build_panel
from fire_exp.runner.model import job_for
from fire_exp.runner.panel import run_panel
from fire_exp.runner.progress import PlainProgress
from fire_exp.runner.ray_executor import ray_attempt, received
from fire_exp.runner.validity import (
    BASELINE_WITH_POLICY,
    LOAD_FAILED,
    NO_EVENTS,
    NO_POLICIES,
    check_attempt,
)
from tests.runner.runner_helpers import ScriptedAgent, run_config

T = "csv-column-stats"


def test_policy_arm_without_events_is_invalid(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    script.silent |= {f"{T}/real/r0", f"{T}/baseline/r0"}
    panel = build_panel(run_config(tmp_path, arms=("real", "sham", "baseline")))
    run_panel(panel, tmp_path / "run", progress=PlainProgress(0, open("/dev/null", "w")))
    by_arm = {r.arm: r for r in read_records(tmp_path / "run" / "attempts.jsonl").finished}
    assert not by_arm["real"].valid and by_arm["real"].invalid_reason == NO_EVENTS
    assert by_arm["real"].events == 0
    assert by_arm["sham"].valid and by_arm["sham"].events > 0  # the agent used its session
    assert by_arm["baseline"].valid  # a baseline has no policy to reach


def test_baseline_carrying_policies_is_invalid(tmp_path: Path) -> None:
    panel = build_panel(run_config(tmp_path, arms=("real", "baseline")))
    item = next(i for i in panel.schedule if i.arm == "baseline")
    env = panel.environment.make(panel.tasks[T], tmp_path / "a", item.attempt_id)
    spec = AttemptSpec(run="t", panel="rt", attempt_id=item.attempt_id, task=T,
                       cohort="silent", arm="baseline", replicate=0, order=item.order,
                       seed=item.seed)
    record = run_attempt(spec, env, ScriptedAgent(), panel.arms["real"].families,
                         panel.portfolio.families, rng=np.random.default_rng(0))
    assert not record.valid
    assert record.invalid_reason is not None
    assert record.invalid_reason.startswith(BASELINE_WITH_POLICY)


def test_policies_that_fail_to_load_in_the_worker(tmp_path: Path) -> None:
    broken = tmp_path / "broken-portfolio"
    broken.mkdir()
    (broken / "bad.py").write_text("raise RuntimeError('syntax of the future')\n")
    panel = build_panel(run_config(tmp_path, arms=("real",)))
    job = job_for(panel, tmp_path / "run", panel.schedule[0])
    bad_config = dataclasses.replace(panel.config, panel=dataclasses.replace(
        panel.config.panel, portfolio=str(broken)))
    returned = ray_attempt(bad_config, job)  # as a Ray worker does
    assert returned[0] is None and "syntax of the future" in str(returned[1])
    record = received(panel, job, *returned)  # as the driver does
    assert record.cause is Cause.HARNESS_FAILED and not record.fair
    assert not record.valid and record.invalid_reason is not None
    assert record.invalid_reason.startswith(LOAD_FAILED)
    assert record.task_digest == panel.tasks[T].digest and record.run == "run"
    assert "syntax of the future" in (Path(job.attempt_dir) / "logs" /
                                      "harness-error.txt").read_text()
    # a worker whose sources differ from the driver's preregistered panel refuses too
    record = received(panel, job, *ray_attempt(panel.config, dataclasses.replace(
        job, panel_digest="0" * 64)))
    assert not record.valid and "differ" in (record.invalid_reason or "")


def test_guard_rules() -> None:
    assert check_attempt(True, [], events=3, agent_ran=True).reason == NO_POLICIES
    assert check_attempt(False, [], events=0, agent_ran=True).valid
    # an environment that never started leaves nothing to judge (the rule replaces it)
    panel_families = [object()]
    assert check_attempt(True, panel_families, events=0, agent_ran=False).valid  # type: ignore[arg-type]


def test_the_report_says_why_records_are_invalid(tmp_path: Path, script) -> None:  # type: ignore[no-untyped-def]
    from fire_exp.analysis import analyze
    from fire_exp.report.accounting import accounting_table

    script.silent |= {f"{T}/real/r0"}
    panel = build_panel(run_config(tmp_path, arms=("real", "baseline")))
    run_panel(panel, tmp_path / "run", progress=PlainProgress(0, open("/dev/null", "w")))
    result = analyze(tmp_path / "run", Path(__file__).parents[2] / "analysis" / "default.yaml")
    assert result.metadata["invalid_reasons"] == {NO_EVENTS: 1}
    assert f"invalid records by reason: {NO_EVENTS} 1." in accounting_table(result).notes


def test_a_provider_failure_carries_the_agents_evidence(tmp_path: Path) -> None:
    """A CLI that failed before acting (its output truncated, say) still names what its
    evidence says: the record is invalid, whatever the replacement rule does with it."""
    from fire_exp.agents.base import ProviderError

    class Truncated(ScriptedAgent):
        def run(self, session, *, rng):  # type: ignore[no-untyped-def]
            raise ProviderError("claude exited 1: ", before_action=True,
                                tamper=("hook event with no tool call: PreToolUse `ls`",))

    panel = build_panel(run_config(tmp_path, arms=("real",)))
    item = panel.schedule[0]
    env = panel.environment.make(panel.tasks[T], tmp_path / "a", item.attempt_id)
    spec = AttemptSpec(run="t", panel="rt", attempt_id=item.attempt_id, task=T,
                       cohort="silent", arm="real", replicate=0, order=item.order,
                       seed=item.seed)
    record = run_attempt(spec, env, Truncated(), panel.arms["real"].families,
                         panel.portfolio.families, rng=np.random.default_rng(0))
    assert record.cause is Cause.PROVIDER_FAILED and not record.valid
    assert record.invalid_reason == \
        f"{NO_EVENTS}; hook event with no tool call: PreToolUse `ls`"
