"""The projected cost printed before the first attempt: from the run's own attempts, a
pilot's tokens at the agent's prices, or a pilot's cost per attempt; else nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, Usage, record_to_line
from fire_exp.runner.projection import pilot_records, projected_cost
from tests.runner.runner_helpers import cli


def _record(cost: float = 0.0, tokens: tuple[int, int] = (0, 0)) -> AttemptRecord:
    return AttemptRecord(run="r", panel="p", attempt_id="t/real/r0", task="t", task_digest="d",
                         cohort="eligible", arm="real", replicate=0, order=0, seed=1,
                         agent="a", environment="e", reward=1.0, passed=True,
                         usage=Usage(cost_usd=cost, input_tokens=tokens[0],
                                     output_tokens=tokens[1]))


def test_nothing_to_project_from_prints_nothing() -> None:
    assert projected_cost([], 10) is None
    assert projected_cost([_record()], 10, pilot=[_record()]) is None
    assert projected_cost([_record(0.5)], 0) is None


def test_a_resumed_run_projects_from_its_own_attempts() -> None:
    line = projected_cost([_record(0.5), _record(1.5)], 10, pilot=[_record(9.0)])
    assert line is not None and "~$10.00 for 10 owed attempts" in line and "this run" in line


def test_a_pilot_s_tokens_are_priced_with_the_agent_s_prices() -> None:
    pilot = [_record(0.0, (1_000_000, 100_000)), _record(0.0, (3_000_000, 300_000))]
    params = {"model": "m", "prices": {"m": {"input": 1.0, "output": 10.0}}}
    line = projected_cost([], 100, pilot=pilot, agent_params=params)
    # 2M input x $1/M + 0.2M output x $10/M = $4 per attempt
    assert line is not None and "~$400.00" in line and "prices for m" in line
    line = projected_cost([], 100, pilot=[_record(0.25)], agent_params={"model": "x"})
    assert line is not None and "~$25.00" in line and "pilot's cost" in line


def test_a_missing_pilot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cost_pilot"):
        pilot_records(tmp_path / "nope")
    (tmp_path / "attempts.jsonl").write_text(record_to_line(_record(0.1)) + "\n")
    assert len(pilot_records(tmp_path)) == 1


def test_run_prints_the_projection_before_the_first_attempt(tmp_path: Path) -> None:
    pilot = tmp_path / "pilot.jsonl"
    pilot.write_text(record_to_line(_record(0.02)) + "\n")
    done = cli("run=p", f"cost_pilot={pilot}", "panel.budget_attempts=1", results=tmp_path)
    assert done.returncode == 0, done.stderr
    before = done.stderr.split("projected cost:")[0]
    assert "projected cost: ~$0.20 for 10 owed attempts" in done.stderr
    assert "[1/" not in before  # printed before any attempt finished


def test_a_missing_cost_pilot_refuses_the_run_before_anything_is_written(tmp_path: Path,
                                                                         ) -> None:
    done = cli("run=p", f"cost_pilot={tmp_path / 'nope'}", results=tmp_path)
    assert done.returncode == 2
    assert "cost_pilot: no such attempts file" in done.stderr
    assert not (tmp_path / "rt" / "p").exists()
