"""The table of declared arms exists only for a panel that declares arms, and puts what
each arm changed beside its models, tokens and cost."""

from __future__ import annotations

from fire_exp.analysis.arm_changes import ARM_CHANGES_COLUMNS, arm_changes_frame
from fire_exp.records import AttemptRecord, ReadResult, Usage


def _record(arm: str, model: str, tokens: int, cost: float) -> AttemptRecord:
    return AttemptRecord.model_validate({
        "run": "r", "panel": "p", "attempt_id": f"t/{arm}/r0", "task": "t", "task_digest": "d",
        "cohort": "silent", "arm": arm, "replicate": 0, "order": 0, "seed": 0,
        "agent": "a", "environment": "local", "reward": 1.0, "passed": True,
        "usage": Usage(input_tokens=tokens, output_tokens=tokens // 10, cost_usd=cost,
                       model=model).model_dump(),
        "started_at": "x", "finished_at": "y"})


def test_a_panel_of_preset_arms_has_no_table() -> None:
    frame = arm_changes_frame(None, {"hashes": {}}, ["real", "baseline"])
    assert frame.empty and list(frame.columns) == ARM_CHANGES_COLUMNS


def test_models_tokens_and_cost_side_by_side() -> None:
    read = ReadResult([_record("big", "m-large", 1000, 0.5), _record("big", "m-large", 3000, 1.5),
                       _record("small", "m-small", 1000, 0.1)], [], False)
    prereg = {"arms": {"big": {"description": "the large model", "changes": ["agent.model=m-large"]},
                       "small": {"description": "", "changes": ["nothing"]}}}
    frame = arm_changes_frame(read, prereg, ["small", "big"]).set_index("arm")
    assert list(frame.index) == ["small", "big"]
    big = frame.loc["big"]
    assert (big["models"], big["records"], big["input_tokens"], big["output_tokens"]) == (
        "m-large", 2, 4000, 400)
    assert big["tokens_per_record"] == 2200.0 and big["total_cost_usd"] == 2.0
    assert big["cost_per_record_usd"] == 1.0 and big["changes"] == "agent.model=m-large"
    assert frame.loc["small", "cost_per_record_usd"] == 0.1


def test_a_pilot_serves_a_plan_whose_primary_cohort_is_all(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fire_exp.power.inputs import pilot_rates

    rows = ["task,arm,replicate,reward,cohort", "a,no_file,0,1,eligible", "a,no_file,1,0,eligible",
            "b,no_file,0,1,silent", "b,no_file,1,1,silent", "c,no_file,0,0,silent"]
    path = tmp_path / "pilot.csv"
    path.write_text("\n".join(rows) + "\n")
    assert sorted(pilot_rates(path, arm="no_file", cohort="all").rates) == [0.0, 0.5, 1.0]
    assert sorted(pilot_rates(path, arm="no_file", cohort="silent").rates) == [0.0, 1.0]
