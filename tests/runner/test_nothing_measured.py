"""A run whose first attempts all failed before any model answer stops and says so; one
that had a single answered attempt among its first goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from fire_exp.errors import NothingMeasuredError
from fire_exp.records import Cause, read_records
from fire_exp.runner.build import build_panel
from fire_exp.runner.nothing_measured import FIRST_ATTEMPTS
from fire_exp.runner.panel import run_panel
from fire_exp.runner.progress import PlainProgress
from tests.runner.runner_helpers import run_config

RULE = {"max_replacements": 2, "causes": ["provider_failed"]}
T = "csv-column-stats"
ARMS = ("baseline", "real", "sham", "always_verify", "reconsider")


def _run(tmp: Path, workers: int = 1) -> tuple[Path, list]:  # type: ignore[type-arg]
    panel = build_panel(run_config(tmp, replacement=RULE, arms=ARMS, workers=workers))
    run_dir = tmp / "rt" / "t"
    with open("/dev/null", "w") as sink:
        try:
            run_panel(panel, run_dir, progress=PlainProgress(0, sink))
        finally:
            records = read_records(run_dir / "attempts.jsonl").finished
    return run_dir, records


def test_a_run_whose_first_attempts_never_got_an_answer_stops(tmp_path: Path,
                                                              script) -> None:  # type: ignore[no-untyped-def]
    # Every attempt and replacement fails at the provider, as with an endpoint gone.
    script.provider_fails |= {f"{T}/{arm}/r0{s}" for arm in ARMS for s in ("", "#1", "#2")}
    with pytest.raises(NothingMeasuredError) as caught:
        _run(tmp_path)
    message = str(caught.value)
    assert f"the first {FIRST_ATTEMPTS} attempt(s)" in message and "run stops" in message
    assert "rate limited" in message and "egress.jsonl" in message and "\n" not in message
    records = read_records(tmp_path / "rt" / "t" / "attempts.jsonl").finished
    # What finished is kept (a resumed run goes on from there), and no more ran.
    assert len(records) == FIRST_ATTEMPTS
    assert all(r.cause is Cause.PROVIDER_FAILED for r in records)


def test_one_answered_attempt_among_the_first_lets_the_run_go_on(tmp_path: Path,
                                                                 script) -> None:  # type: ignore[no-untyped-def]
    order = [i.arm for i in build_panel(run_config(tmp_path, replacement=RULE,
                                                   arms=ARMS)).schedule]
    answered = order[1]  # the second attempt to run (one worker: schedule order)
    script.provider_fails |= {f"{T}/{arm}/r0{s}" for arm in ARMS if arm != answered
                              for s in ("", "#1", "#2")}
    _, records = _run(tmp_path)
    assert [r.arm for r in records if r.cause is None] == [answered]
    assert sum(r.cause is Cause.PROVIDER_FAILED for r in records) == 3 * (len(ARMS) - 1)
