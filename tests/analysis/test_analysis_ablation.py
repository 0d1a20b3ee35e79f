"""The ablation contrasts, real − (real without F) on F's eligible tasks, against the stats
functions run by hand, and their report table and figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis.ablation import ablation_contrasts
from fire_exp.analysis.load import FAMILY_COLUMNS, LoadedAttempts, normalize_frame
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.report.ablation import ablation_figure, ablation_table
from fire_exp.stats import child_rng, holm, paired_bootstrap, sign_flip_test

PLAN = AnalysisPlan(name="t", seed=7, primary={"contrast": "real - sham"},
                    bootstrap={"n_resamples": 2000})
TASKS_A = [f"a{i}" for i in range(8)]
TASKS_B = [f"b{i}" for i in range(6)]


def _loaded(arms: dict[str, dict[str, list[int]]]) -> LoadedAttempts:
    """arms: arm -> task -> passes of its 2 attempts; family a on a*, b on b*."""
    rows = [{"task": t, "arm": arm, "replicate": r, "cohort": "eligible", "passed": bool(p)}
            for arm, tasks in arms.items() for t, passes in tasks.items()
            for r, p in enumerate(passes)]
    frame = normalize_frame(pd.DataFrame(rows))
    fam = pd.DataFrame([{"task": t, "arm": "real", "replicate": 0, "cohort": "eligible",
                         "family": "a" if t.startswith("a") else "b", "state": True,
                         "fired": True, "behavior": True, "passed": True}
                        for t in TASKS_A + TASKS_B], columns=FAMILY_COLUMNS)
    return LoadedAttempts(frame, fam, "test", len(frame), 0, 0)


def _panel(seed: int = 0) -> dict[str, dict[str, list[int]]]:
    rng = np.random.default_rng(seed)
    tasks = TASKS_A + TASKS_B
    real = {t: list(rng.binomial(1, 0.8, 2)) for t in tasks}
    minus_a = {t: (list(rng.binomial(1, 0.3, 2)) if t in TASKS_A else real[t]) for t in tasks}
    minus_b = {t: list(rng.binomial(1, 0.75, 2)) for t in tasks}
    return {"real": real, "real-minus-a": minus_a, "real-minus-b": minus_b}


def test_contrast_is_the_stats_machinery_on_the_familys_eligible_tasks() -> None:
    arms = _panel()
    frame = ablation_contrasts(_loaded(arms), PLAN).set_index("family")
    for family, tasks in (("a", TASKS_A), ("b", TASKS_B)):
        d = np.array([np.mean(arms["real"][t]) - np.mean(arms[f"real-minus-{family}"][t])
                      for t in sorted(tasks)])
        row = frame.loc[family]
        assert row["n_tasks"] == len(tasks) and row["contrast"] == f"real - real-minus-{family}"
        assert row["estimate_pp"] == pytest.approx(100 * d.mean())
        sf = sign_flip_test(d)
        assert row["p_value"] == sf.p_value and row["p_method"] == sf.method
        boot = paired_bootstrap({"d": d}, n_resamples=2000,
                                rng=child_rng(7, "ablation", family, "bootstrap"))["d"]
        assert (row["ci_low_pp"], row["ci_high_pp"]) == (100 * boot.ci_low, 100 * boot.ci_high)
    assert frame["p_holm"].tolist() == holm(frame["p_value"].to_numpy()).tolist()
    assert frame.loc["a", "estimate_pp"] > frame.loc["b", "estimate_pp"]


def test_a_familys_numbers_do_not_depend_on_the_other_arms() -> None:
    arms = _panel()
    both = ablation_contrasts(_loaded(arms), PLAN).set_index("family")
    alone = ablation_contrasts(_loaded({k: arms[k] for k in ("real", "real-minus-a")}), PLAN)
    cols = ["estimate_pp", "ci_low_pp", "ci_high_pp", "p_value"]
    assert alone.set_index("family").loc["a", cols].tolist() == both.loc["a", cols].tolist()


def test_no_ablation_arms_no_rows_and_missing_eligibility_is_a_note() -> None:
    arms = _panel()
    assert ablation_contrasts(_loaded({"real": arms["real"]}), PLAN).empty
    frame = ablation_contrasts(_loaded(arms), PLAN, eligible={"a": set(TASKS_A)})
    assert frame.set_index("family").loc["b", "note"] == "no task where the family is eligible"


def test_report_renders_the_table_and_the_figure(tmp_path: Path) -> None:
    frame = ablation_contrasts(_loaded(_panel()), PLAN)
    table = ablation_table(frame)
    assert table.name == "ablation" and [r[0] for r in table.rows] == ["a", "b"]
    figures = ablation_figure(frame, tmp_path / "fig_ablation")
    assert [p.name for p in figures] == ["fig_ablation.png", "fig_ablation.pdf"]
    assert ablation_figure(frame.iloc[:0], tmp_path / "none") == []
    assert all(p.stat().st_size > 1000 for p in figures)
