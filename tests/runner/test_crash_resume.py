"""SIGKILL at many points of a panel, resume each time: every attempt exactly once.

The driver kills itself through the store's crash hook (``FIRE_EXP_CRASH_AT=N:POINT``):
before its N-th write, in the middle of it (a torn line), or right after it, while other
attempts are in flight. The rewards must equal those of an uninterrupted run.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from fire_exp.records import read_records
from tests.runner.runner_helpers import cli, leftovers

# (write number, point) per killed invocation; each resume counts its own writes.
CRASHES = ["1:before", "3:torn", "2:after", "4:after", "3:before", "2:torn", "5:torn"]


def _rewards(path: Path) -> dict[str, float | None]:
    return {r.attempt_id: r.reward for r in read_records(path).finished}


@pytest.mark.slow
def test_sigkill_anywhere_then_resume(tmp_path: Path) -> None:
    reference = cli("run=ref", results=tmp_path)
    assert reference.returncode == 0, reference.stderr
    expected = _rewards(tmp_path / "rt" / "ref" / "attempts.jsonl")
    assert len(expected) == 10 and len(set(expected.values())) > 1  # passes and failures

    attempts = tmp_path / "rt" / "crash" / "attempts.jsonl"
    torn_seen = orphaned = 0
    for crash in CRASHES:
        proc = cli("run=crash", results=tmp_path, env={"FIRE_EXP_CRASH_AT": crash},
                   subprocess_=True)
        assert proc.returncode == -signal.SIGKILL, (crash, proc.stderr)
        orphaned += bool(leftovers(tmp_path))  # attempts killed mid-way left processes
        if attempts.exists():
            read = read_records(attempts)  # readable after any crash
            torn_seen += read.torn_tail
            assert read.torn_tail == crash.endswith("torn")
            ids = [r.attempt_id for r in read.finished]
            assert len(ids) == len(set(ids)), f"duplicate after {crash}"
    assert torn_seen == 3
    assert orphaned  # so the resume had processes to reap
    before_last = len(read_records(attempts).finished)
    assert 0 < before_last < 10  # the crashes left work for the final resume

    final = cli("resume=crash", results=tmp_path)
    assert final.returncode == 0, final.stderr
    read = read_records(attempts)
    ids = [r.attempt_id for r in read.finished]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    assert _rewards(attempts) == expected
    assert not read.torn_tail
    for record in read.finished:  # each line came after its complete log folder
        assert (tmp_path / "rt" / "crash" / record.log_dir / "logs" / "verifier"
                / "result.json").is_file()
    assert f"ran {10 - before_last} attempts" in final.stdout
    assert not leftovers(tmp_path)  # processes orphaned by the kills were reaped

