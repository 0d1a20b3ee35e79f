"""The attempt store: torn tails, one driver per run folder, started lines, progress."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.records import AttemptRecord, StartedRecord, read_records, record_to_line
from fire_exp.runner.progress import PlainProgress, RichProgress, make_progress
from fire_exp.runner.store import AttemptStore


def _record(attempt_id: str, reward: float = 1.0) -> AttemptRecord:
    return AttemptRecord(run="r", panel="p", attempt_id=attempt_id, task="t", task_digest="",
                         cohort="silent", arm="real", replicate=0, order=0, seed=1,
                         agent="a", environment="local", reward=reward, passed=reward >= 1)


def test_torn_tail_is_ignored_then_cut(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    good = record_to_line(_record("t/real/r0"))
    torn = record_to_line(_record("t/real/r1"))[:40]
    path.write_text(good + "\n" + torn)
    read = read_records(path)
    assert read.torn_tail and [r.attempt_id for r in read.finished] == ["t/real/r0"]
    with AttemptStore(path) as store:
        store.finished(_record("t/real/r1", 0.0))
        store.started(StartedRecord(run="r", attempt_id="t/real/r2", task="t", arm="real",
                                    replicate=2, started_at="now"))
    read = read_records(path)
    assert not read.torn_tail
    assert [r.attempt_id for r in read.finished] == ["t/real/r0", "t/real/r1"]
    assert [r.attempt_id for r in read.started] == ["t/real/r2"]
    assert path.read_text().count("\n") == 3


def test_one_driver_per_run_folder(tmp_path: Path) -> None:
    with AttemptStore(tmp_path / "attempts.jsonl"):
        with pytest.raises(InputError, match="in use by pid"):
            AttemptStore(tmp_path / "attempts.jsonl")
    AttemptStore(tmp_path / "attempts.jsonl").close()  # released when the first closed


def test_progress_displays() -> None:
    plain = io.StringIO()
    progress = make_progress(2, plain)
    assert isinstance(progress, PlainProgress)
    progress.finished(_record("t/real/r0"))
    assert plain.getvalue().startswith("[1/2] t/real/r0: reward=1.0")
    live = io.StringIO()
    rich = RichProgress(2, live)
    rich.add(1)
    rich.finished(_record("t/real/r0"))
    rich.finished(_record("t/real/r1", 0.0))
    rich.close()
    text = live.getvalue()
    assert "attempts 2/3" in text and "1/2" in text and "real" in text


def test_a_malformed_complete_line_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "attempts.jsonl"
    path.write_text(record_to_line(_record("t/real/r0")) + "\n" + '{"schema_version": 1}\n'
                    + record_to_line(_record("t/real/r1")) + "\n")
    with AttemptStore(path) as store, pytest.raises(InputError, match="line 2"):
        store.read()
