"""A run still in progress is reported as far as it has finished, and says so everywhere."""

from __future__ import annotations

import pandas as pd

from fire_exp.records import StartedRecord, append_records
from fire_exp.report.build import build_report
from tests.conftest import run_cli
from tests.report.helpers import REPO, panel_records, write_prereg


def _run(tmp_path, finished, started=(), scheduled=None):
    run = tmp_path / "run"
    run.mkdir()
    write_prereg(run, scheduled if scheduled is not None else finished)
    append_records(run / "attempts.jsonl", [*started, *finished])
    return run


def _started(record):
    return StartedRecord(run="r", attempt_id=record.attempt_id, task=record.task,
                         arm=record.arm, replicate=record.replicate, started_at="t")


def test_fewer_finished_than_scheduled_is_partial(tmp_path, fast_plan):
    records = panel_records()
    run = _run(tmp_path, records[:40], scheduled=records)
    report = build_report(run, fast_plan)
    assert report.status.partial
    assert "40 of 54 scheduled attempts finished" in report.status.message
    for md in report.out.glob("*.md"):
        assert "Partial run: 40 of 54 scheduled attempts finished" in md.read_text(), md
    for tex in report.out.glob("*.tex"):
        assert tex.read_text().splitlines()[1].startswith("% partial: 40 of 54"), tex
    acc = pd.read_csv(report.out / "accounting.csv").set_index("arm")
    assert acc.loc["total", "scheduled"] == 54 and acc.loc["total", "scored"] == 40
    # sham has one attempt on task-4: its curve stops at k = 1, no consistency ratio
    rel = pd.read_csv(report.out / "reliability.csv").set_index("arm")
    assert pd.isna(rel.loc["sham", "consistency"]) and pd.isna(rel.loc["sham", "pass_hat_3_pct"])
    assert rel.loc["real", "consistency"] > 0
    assert "lack 3 attempts" in (report.out / "transitions.md").read_text()


def test_started_without_finished_is_partial_even_without_prereg(tmp_path, fast_plan):
    records = panel_records()
    run = tmp_path / "run"
    run.mkdir()
    append_records(run / "attempts.jsonl", [*records, _started(records[0].model_copy(
        update={"attempt_id": "extra", "replicate": 9}))])
    report = build_report(run, fast_plan)
    assert report.status.partial and report.status.scheduled is None
    assert "1 started attempt(s) without a finished record" in report.status.message
    acc = pd.read_csv(report.out / "accounting.csv").set_index("arm")
    assert acc.loc["real", "in_flight"] == 1 and pd.isna(acc.loc["total", "scheduled"])


def test_finished_run_has_no_banner(tmp_path, fast_plan):
    records = panel_records()
    run = _run(tmp_path, records, started=[_started(r) for r in records])
    report = build_report(run, fast_plan)
    assert not report.status.partial
    assert not any("Partial run" in md.read_text() for md in report.out.glob("*.md"))
    assert not any("% partial" in t.read_text() for t in report.out.glob("*.tex"))
    assert "NOTE" not in report.summary()  # nor a primary that could not be computed


def test_cli_notes_a_partial_run_in_the_terminal(tmp_path):
    records = panel_records()
    run = _run(tmp_path, records[:30], scheduled=records)
    proc = run_cli("report", str(run), "--plan", "default", "--out", str(tmp_path / "out"),
                   cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "NOTE: partial run: 30 of 54 scheduled attempts finished" in proc.stdout
    assert (tmp_path / "out" / "contrasts.tex").is_file()


def test_a_report_without_its_primary_contrast_says_so_in_the_terminal(tmp_path, fast_plan):
    """A panel run without the primary's comparator (``panel.arms=[real]``) ended its
    report, and ``fire-exp run``, with "_(no rows)_" and not a word of the primary."""
    records = [r for r in panel_records() if r.arm != fast_plan.primary.contrast.split()[-1]]
    run = _run(tmp_path, records)
    summary = build_report(run, fast_plan).summary()
    assert f"NOTE: the primary contrast '{fast_plan.primary.contrast}' on " \
           f"'{fast_plan.primary.cohort}' could not be computed" in summary
