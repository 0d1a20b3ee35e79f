"""`fire-exp report` as a user runs it."""

from __future__ import annotations

import shutil

import pandas as pd

from tests.conftest import run_cli
from tests.report.helpers import DEMO_RUN, REPO


def test_report_of_a_run_folder_uses_the_preregistered_plan(tmp_path):
    run = tmp_path / "x"
    shutil.copytree(DEMO_RUN, run)
    proc = run_cli("report", str(run), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "Contrasts: real minus each comparator" in proc.stdout
    assert "NOTE: partial" not in proc.stdout
    out = run / "report"
    assert (out / "fig_pass_k.pdf").is_file() and (out / "suite.tex").is_file()
    prereg = (out / "prereg.md").read_text()
    assert "The analysis plan used (demo.yaml) matches the preregistered plan." in prereg
    analyze = run_cli("analyze", str(run), "--plan", "demo", "--out", str(tmp_path / "a"))
    assert analyze.returncode == 0, analyze.stderr
    a = pd.read_csv(tmp_path / "a" / "contrasts.csv")
    r = pd.read_csv(out / "contrasts.csv")
    pd.testing.assert_frame_equal(a[r.columns], r, check_exact=True)


def test_report_of_an_attempts_file_defaults_next_to_it(tmp_path):
    src = tmp_path / "attempts.jsonl"
    shutil.copy(DEMO_RUN / "attempts.jsonl", src)
    proc = run_cli("report", str(src), "--plan", "demo", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "attempts-report" / "contrasts.md").is_file()


def test_report_errors_name_the_file(tmp_path):
    proc = run_cli("report", str(tmp_path / "missing"), "--plan", "demo", cwd=REPO)
    assert proc.returncode == 2
    assert "missing" in proc.stderr and "no such attempts file" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": 1, "kind": "finished"}\n')
    proc = run_cli("report", str(bad), "--plan", "demo", cwd=REPO)
    assert proc.returncode == 2 and "line 1" in proc.stderr
