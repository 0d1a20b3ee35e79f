"""The attempts file: round trip, torn tail, malformed lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fire_exp.records import (
    AttemptRecord,
    Cause,
    RecordsFileError,
    StartedRecord,
    append_records,
    read_records,
)


def record(i: int, **kw) -> AttemptRecord:
    base = dict(run="r", panel="p", attempt_id=f"t{i}/real/r0", task=f"t{i}", task_digest="d",
                cohort="eligible", arm="real", replicate=0, order=0, seed=i, agent="simulated",
                environment="local", reward=1.0, passed=True)
    return AttemptRecord(**(base | kw))


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    records = [record(0), record(1, reward=None, passed=False, cause=Cause.VERIFIER_FAILED,
                                 error="no reward")]
    started = StartedRecord(run="r", attempt_id="t2/real/r0", task="t2", arm="real",
                            replicate=0, started_at="now")
    append_records(path, [records[0], started, records[1]])
    result = read_records(path)
    assert result.finished == records and result.started == [started]
    assert not result.torn_tail
    assert result.finished[1].infrastructure_failure and result.finished[1].fair


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    append_records(path, [record(0)])
    with open(path, "a") as fh:
        fh.write(json.dumps(record(1).model_dump(mode="json"))[:57])  # crash mid-write
    result = read_records(path)
    assert [r.task for r in result.finished] == ["t0"] and result.torn_tail


@pytest.mark.parametrize(("line", "field"), [
    ("{not json", "<json>"),
    ('{"schema_version": 99}', "schema_version"),
    (json.dumps(record(1).model_dump(mode="json") | {"reward": "high"}), "reward"),
    (json.dumps({k: v for k, v in record(1).model_dump(mode="json").items() if k != "arm"}),
     "arm"),
])
def test_a_malformed_line_names_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "attempts.jsonl"
    append_records(path, [record(0)])
    with open(path, "a") as fh:
        fh.write(line + "\n")
    append_records(path, [record(2)])
    with pytest.raises(RecordsFileError) as err:
        read_records(path)
    assert err.value.line == 2 and err.value.field == field
    assert str(path) in str(err.value)
