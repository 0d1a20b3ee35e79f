"""Counts, chain links and names, where attempts enter (docs/robustness.md, "One meaning per
input"): a negative or NaN cost, time or count, a replacement chain whose links do not
follow, a number Python reads but a spreadsheet never wrote, an empty cost cell, and a
name holding an invisible character are refused naming the file, the line and the field."""

from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from fire_exp.analysis import load_attempts
from fire_exp.errors import InputError
from fire_exp.files import INVISIBLE
from fire_exp.records import RecordsFileError, read_records, record_to_line
from tests.analysis.analysis_helpers import make_record


def _jsonl(tmp_path: Path, **fields: Any) -> Path:
    """One good record, then one with ``fields`` replaced (nested ones merged) as line 2."""
    line = json.loads(record_to_line(make_record("t1", "sham", passed=False)))
    for key, value in fields.items():
        line[key] = line[key] | value if isinstance(value, dict) else value
    path = tmp_path / "attempts.jsonl"
    path.write_text(record_to_line(make_record("t1", "real")) + "\n" + json.dumps(line) + "\n")
    return path


@pytest.mark.parametrize(("fields", "field"), [
    # a cost of -5 made the arm's cost per success negative; a NaN cost was summed as 0
    ({"usage": {"cost_usd": -5.0}}, "usage.cost_usd"),
    ({"usage": {"cost_usd": math.nan}}, "usage.cost_usd"),
    ({"usage": {"input_tokens": -5}}, "usage.input_tokens"),
    ({"timings": {"agent_s": -1.0}}, "timings.agent_s"),
    ({"timings": {"total_s": math.inf}}, "timings.total_s"),
    ({"replicate": -1}, "replicate"),
    ({"order": -1}, "order"),
    ({"events": -3}, "events"),
])
def test_a_negative_or_nan_count_time_or_cost_is_refused(
        tmp_path: Path, fields: dict[str, Any], field: str) -> None:
    with pytest.raises(RecordsFileError) as err:
        load_attempts(_jsonl(tmp_path, **fields))
    assert (err.value.line, err.value.field) == (2, field)
    assert "a finite number of 0 or more" in err.value.problem


@pytest.mark.parametrize(("attempt_id", "lineage", "field"), [
    # a record naming itself as its successor: `run resume=` looped for ever
    ("t1/sham/r0", {"replaced_by": "t1/sham/r0"}, "lineage.replaced_by"),
    ("t1/sham/r0", {"replaced_by": "t1/sham/r0#2"}, "lineage.replaced_by"),
    ("t1/sham/r0#2", {"replaced_by": "t1/sham/r0#1"}, "lineage.replaced_by"),
    ("t1/sham/r0", {"replaces": "t1/sham/r0#1"}, "lineage.replaces"),
    ("t1/sham/r0#2", {"replaces": "t1/sham/r0"}, "lineage.replaces"),
])
def test_a_chain_link_that_does_not_follow_is_refused(
        tmp_path: Path, attempt_id: str, lineage: dict[str, str], field: str) -> None:
    path = _jsonl(tmp_path, attempt_id=attempt_id, lineage=lineage)
    with pytest.raises(RecordsFileError, match="is not the link of") as err:
        read_records(path)
    assert (err.value.line, err.value.field) == (2, field)


def test_the_links_of_a_chain_are_read(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, attempt_id="t1/sham/r0#1",
                  lineage={"replaces": "t1/sham/r0", "replaced_by": "t1/sham/r0#2"})
    assert read_records(path).finished[1].lineage.replaced_by == "t1/sham/r0#2"


HEADER = "task,arm,replicate,reward,cost_usd,agent_seconds\n"


@pytest.mark.parametrize(("cells", "column", "says"), [
    ("0,-5,1", "cost_usd", "-5 is negative"),
    ("0,,1", "cost_usd", "is empty"),  # once read as a cost of 0
    ("0,1,-100", "agent_seconds", "-100 is negative"),
    ("0,1,nan", "agent_seconds", "not a finite number"),
    ("0_1,1,1", "reward", "'0_1' is not a number"),  # Python's float() reads 1.0
    ("\u0661,1,1", "reward", "is not a number"),  # an Arabic-Indic one: float() reads 1.0
])
def test_a_csv_cell_python_would_bend_into_a_number_is_refused(
        tmp_path: Path, cells: str, column: str, says: str) -> None:
    path = tmp_path / "a.csv"
    path.write_text(HEADER + "t1,real,0,1,1,1\n" + "t1,sham,0," + cells + "\n")
    with pytest.raises(InputError) as err:
        load_attempts(path)
    assert err.value.field == f"line 3, column '{column}'" and says in err.value.problem


@pytest.mark.parametrize(("replicate", "says"), [
    ("-1", "-1 is negative"), ("1_0", "'1_0' is not a whole number"),  # int() reads 10
    ("\u0661", "is not a whole number")])
def test_a_replicate_cell_that_is_not_a_whole_number_of_0_or_more_is_refused(
        tmp_path: Path, replicate: str, says: str) -> None:
    path = tmp_path / "a.csv"
    path.write_text(HEADER + "t1,real,0,1,1,1\n" + f"t1,sham,{replicate},0,1,1\n")
    with pytest.raises(InputError) as err:
        load_attempts(path)
    assert err.value.field == "line 3, column 'replicate'" and says in err.value.problem


@pytest.mark.parametrize("name", ["t1\u200b", "\u202et1", "t\u20601", "t1\ufeff", "t\u20281"])
def test_a_name_with_an_invisible_character_is_refused(tmp_path: Path, name: str) -> None:
    """A task ``t1`` + zero-width space was a task of its own that reads as ``t1`` (the
    eligible cohort counted 4 tasks instead of 3)."""
    with pytest.raises(InputError, match="line 2, field 'task'.*invisible character"):
        load_attempts(_jsonl(tmp_path, task=name))
    path = tmp_path / "a.csv"
    path.write_text(f"task,arm,replicate,reward\nt1,real,0,1\n{name},sham,0,0\n")
    with pytest.raises(InputError, match="line 3, column 'task'.*invisible character"):
        load_attempts(path)


def test_every_format_and_separator_character_is_invisible() -> None:
    """Unicode's Cf, Zl and Zp of this Python are all caught; printable names are not."""
    missed = [hex(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp") and not INVISIBLE.match(chr(c))]
    assert not missed
    assert not INVISIBLE.search("dedupe-emails_v2.1 héllo 任务")
