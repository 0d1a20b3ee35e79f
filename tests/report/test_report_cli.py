"""`fire-exp report` as a user runs it."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from fire_exp.report.latex import check_tex
from tests.conftest import run_cli
from tests.report.helpers import DEMO_RUN, REPO


def test_report_of_a_run_folder_uses_the_preregistered_plan(tmp_path):
    run = tmp_path / "x"
    shutil.copytree(DEMO_RUN, run)
    proc = run_cli("report", str(run), cwd=tmp_path)  # the frozen path is relative: found by hash
    assert proc.returncode == 0, proc.stderr
    assert "analysis plan demo (" in proc.stdout
    assert "the plan frozen with the run (prereg.json)" in proc.stdout
    assert "Contrasts: real minus each comparator" in proc.stdout
    assert "| arm | all | eligible | silent |" in proc.stdout
    assert "NOTE: partial" not in proc.stdout
    out = run / "report"
    assert (out / "fig_pass_k.pdf").is_file() and (out / "suite.tex").is_file()
    prereg = (out / "prereg.md").read_text()
    assert "The analysis plan used (demo.yaml) matches the preregistered plan." in prereg
    meta = json.loads((out / "data" / "metadata.json").read_text())
    assert meta["plan"] == "demo" and meta["plan_source"] == "frozen"
    assert meta["plan_matches_frozen"] is True


def test_plan_override_is_said_and_recorded(tmp_path):
    run = tmp_path / "x"
    shutil.copytree(DEMO_RUN, run)
    proc = run_cli("report", str(run), "--plan", "default", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "given; it DIFFERS FROM the plan frozen with the run" in proc.stdout
    prereg = (run / "report" / "prereg.md").read_text()
    assert "The analysis plan used (default.yaml) DIFFERS FROM the preregistered plan." in prereg
    meta = json.loads((run / "report" / "data" / "metadata.json").read_text())
    assert meta["plan"] == "default" and meta["plan_source"] == "given"


def test_a_changed_frozen_plan_is_refused(tmp_path):
    run = tmp_path / "x"
    shutil.copytree(DEMO_RUN, run)
    manifest = json.loads((run / "prereg.json").read_text())
    manifest["hashes"]["analysis_plan"]["sha256"] = "ab" * 32
    (run / "prereg.json").write_text(json.dumps(manifest))
    proc = run_cli("report", str(run), cwd=REPO)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "prereg.json: hashes.analysis_plan: the frozen analysis plan" in proc.stderr
    assert "has changed since" in proc.stderr and "--plan" in proc.stderr
    assert not (run / "report").exists()


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


def _tier_run(folder, tier):
    folder.mkdir(parents=True)
    text = (DEMO_RUN / "attempts.jsonl").read_text()
    (folder / "attempts.jsonl").write_text(text.replace('"tier":"mid"', f'"tier":"{tier}"'))
    return folder


# The tests that read the report of two tiers' runs: on one worker, so it is made once.
TIERS = pytest.mark.xdist_group("tiers-report")


@pytest.fixture(scope="module")
def tiers_report(tmp_path_factory):
    """``fire-exp report`` of the demo run as a weak and as a strong tier's: (the two runs'
    folders, the report's folder)."""
    tmp_path = tmp_path_factory.mktemp("tiers")
    weak, strong = _tier_run(tmp_path / "a", "weak"), _tier_run(tmp_path / "b", "strong")
    out = tmp_path / "out"
    proc = run_cli("report", str(weak), str(strong), "--plan", "demo", "--out", str(out),
                   cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return weak, strong, out


@TIERS
@pytest.mark.slow
def test_several_runs_compare_tiers(tmp_path, tiers_report):
    """Slow: the report of two runs (made once for the module's tiers tests)."""
    weak, strong, out = tiers_report
    tiers = pd.read_csv(out / "tiers.csv")
    assert list(dict.fromkeys(tiers["tier"])) == ["weak", "strong"]
    suite = pd.read_csv(out / "weak" / "suite.csv")
    mine = tiers[tiers["tier"] == "weak"].drop(columns=["tier", "cost_change_pct"])
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), suite, check_exact=True)
    base = suite.set_index("arm")["total_cost_usd"]
    change = tiers.set_index(["tier", "arm"]).loc[("weak", "real"), "cost_change_pct"]
    assert change == 100 * (base["real"] / base["baseline"] - 1)
    assert (out / "strong" / "contrasts.tex").is_file()
    assert check_tex((out / "tiers.tex").read_text()) == []
    assert "fired" in (out / "tiers.md").read_text().splitlines()[2]  # the demo's arms fire
    same = run_cli("report", str(weak), str(weak), "--plan", "demo", "--out",
                   str(tmp_path / "o2"), cwd=REPO)
    assert same.returncode == 2 and "second run of tier 'weak'" in same.stderr
    no_out = run_cli("report", str(weak), str(strong), "--plan", "demo", cwd=REPO)
    assert no_out.returncode == 2 and "--out" in no_out.stderr


@TIERS
@pytest.mark.slow
def test_a_tier_table_of_panels_without_policies_has_no_fired_column(tiers_report):
    """Policy words only where an arm runs a policy: the tiers table of panels whose arms
    run none (agents-md's) drops "fired", every row as long as the header. Slow: the
    report of two runs (made once for the module's tiers tests)."""
    from fire_exp.report.tiers import tiers_table

    tiers = pd.read_csv(tiers_report[2] / "tiers.csv")
    for fired in (True, False):
        table = tiers_table(tiers, "baseline", fired=fired)
        assert ("fired" in table.header) is fired
        assert {len(row) for row in table.rows} == {len(table.header)}


