"""The README's ablation panel ends with a report: the bundled plans analyse the
leave-one-family-out arms ``real-minus-F`` that ``panel.ablation=true`` adds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fire_exp.analysis.plan import check_plan_for_panel, load_plan
from fire_exp.paths import ANALYSIS_DIR
from tests.conftest import run_cli


def test_the_bundled_plans_accept_the_ablation_arms() -> None:
    arms = ["real", "sham", "always_verify", "reconsider", "baseline",
            "real-minus-service_persistence"]
    for name in ("default", "demo"):
        plan = load_plan(ANALYSIS_DIR / f"{name}.yaml")
        check_plan_for_panel(plan, name, arms, arms[:5])  # raises if refused
        assert plan.analyses_arm("real-minus-enumeration") and not plan.analyses_arm("realx")


@pytest.mark.slow
def test_an_ablation_panel_runs_to_its_report(tmp_path: Path) -> None:
    """Slow: a real panel of 18 attempts (2 tasks, 9 arms), its analysis and report."""
    proc = run_cli("run", "panel=demo", "panel.ablation=true", "panel.attempts=1",
                   "panel.eligible=[serve-status-page]", "panel.silent=[csv-column-stats]",
                   f"results_dir={tmp_path}", "run=abl")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = tmp_path / "demo" / "abl" / "report"
    ablation = pd.read_csv(report / "data" / "ablation.csv")
    assert len(ablation) == 8 and set(ablation["contrast"].str.split(" - ").str[0]) == {"real"}
    assert (report / "report.md").is_file()
