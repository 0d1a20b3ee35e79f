"""The report's numbers equal those of `fire-exp analyze` and of direct fire_exp.stats calls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import analyze, load_attempts
from fire_exp.stats import (
    aggregate_tasks,
    child_rng,
    mcnemar_pooled,
    pass_at_k,
    pass_hat_k,
    sign_flip_test,
    task_matrix,
    transition_table,
)
from tests.report.helpers import ANALYSIS_DATA, DEMO_RUN

TABLES = ["contrasts", "funnel", "funnel_family", "near_miss", "suite", "transitions",
          "interaction", "tasks", "reliability", "accounting", "prereg"]
FIGURES = ["fig_pass_rates", "fig_funnel", "fig_pass_k", "fig_tasks"]


@pytest.mark.parametrize("which", ["table3_report", "table4_report", "demo_report"])
def test_every_table_and_figure_exists(request, which):
    report = request.getfixturevalue(which)
    for name in TABLES:
        for ext in ("tex", "md", "csv"):
            path = report.out / f"{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 0, path
    # the CSV fixture carries no funnel: no funnel figure of zeros
    expected = FIGURES if which != "table3_report" else [f for f in FIGURES if f != "fig_funnel"]
    for name in expected:
        for ext in ("png", "pdf"):
            assert (report.out / f"{name}.{ext}").stat().st_size > 1000
    assert (report.out / "fig_funnel.png").exists() == (which != "table3_report")
    assert (report.out / "report.md").read_text().count("\n# ") >= len(TABLES) - 1


def test_contrasts_equal_analyze_and_reproduce_table3(table3_report, plan):
    direct = analyze(ANALYSIS_DATA / "fire_panel_30x2.csv", plan).contrasts
    csv = pd.read_csv(table3_report.out / "contrasts.csv")
    merged = csv.merge(direct, on=["contrast", "cohort"], suffixes=("", "_a"))
    assert len(merged) == len(direct) == 15
    for col in ("estimate_pp", "ci_low_pp", "ci_high_pp", "p_value", "p_holm"):
        np.testing.assert_allclose(merged[col], merged[f"{col}_a"], rtol=0, atol=1e-12)
    md = (table3_report.out / "contrasts.md").read_text()
    # FIRE Table 3, eligible: real - sham 25.0 [7.1, 46.4]; real - baseline 21.4 [7.1, 35.7]
    assert "| real − sham† | 25.0 | [7.1, 46.4] |" in md
    assert "| real − baseline | 21.4 | [7.1, 35.7] |" in md
    tex = (table3_report.out / "contrasts.tex").read_text()
    assert r"real $-$ sham\dag{} & 25.0 & [7.1, 46.4]" in tex


def test_interaction_reproduces_fire(table3_report):
    row = pd.read_csv(table3_report.out / "interaction.csv").iloc[0]
    assert round(row["estimate_pp"], 2) == 18.75
    assert (round(row["ci_low_pp"], 1), round(row["ci_high_pp"], 1)) == (-4.9, 42.9)
    md = (table3_report.out / "interaction.md").read_text()
    assert "| real − sham | 25.0 [7.1, 46.4] | 6.3 [-6.3, 21.9] | 18.8 | [-4.9, 42.9] |" in md


def test_funnel_reproduces_table4(table4_report):
    md = (table4_report.out / "funnel.md").read_text()
    # FIRE Table 4 (state / fired / behavior of 24 coded / pass)
    assert "| real policy | 28 | 26 | 25 | 22 / 24 | 17 |" in md
    assert "| triggered sham | 28 | 26 | 26 | 13 / 24 | 10 |" in md
    assert "| baseline | 28 | 25 | 0 | 11 / 24 | 11 |" in md


def test_near_miss_equals_analysis(table4_report, fast_plan):
    res = analyze(ANALYSIS_DATA / "fire_eligible_funnel.jsonl", fast_plan)
    nm = pd.read_csv(table4_report.out / "near_miss.csv")
    overall = nm[nm["family"].str.startswith("all")].set_index("arm")
    funnel = res.funnel[res.funnel["cohort"] == "eligible"].set_index("arm")
    np.testing.assert_allclose(overall["near_miss_pct"], funnel.loc[overall.index,
                                                                    "near_miss_pct"])
    fam = nm[~nm["family"].str.startswith("all")].set_index(["family", "arm"])
    ff = res.family_funnel.set_index(["family", "arm"])
    np.testing.assert_allclose(fam["near_miss_pct"], ff.loc[fam.index, "near_miss_pct"])
    # by hand: passes in the risky state without the behavior / passes in the state
    att = load_attempts(ANALYSIS_DATA / "fire_eligible_funnel.jsonl").attempts
    real = att[att["arm"] == "real"]
    pis = real[(real["funnel_passed"] == 1) & (real["funnel_state"] == 1)]
    assert overall.loc["real", "passed_in_state"] == len(pis)
    assert overall.loc["real", "near_miss"] == int((pis["funnel_behavior"] == 0).sum())


def test_suite_equals_analysis_and_stats(demo_report, fast_plan):
    res = analyze(DEMO_RUN / "attempts.jsonl", fast_plan)
    suite = pd.read_csv(demo_report.out / "suite.csv").set_index("arm")
    pr = res.pass_rates[res.pass_rates["cohort"] == "all"].set_index("arm")
    np.testing.assert_allclose(suite["pass_at_1_pct"], pr.loc[suite.index, "pass_rate_pct"])
    att = load_attempts(DEMO_RUN).attempts
    agg = aggregate_tasks(att)
    for arm in suite.index:
        g = agg[agg["arm"] == arm]
        n, c = g["attempts"].astype(int), g["successes"].astype(int)
        assert suite.loc[arm, "pass_at_2_pct"] == pytest.approx(100 * pass_at_k(n, c, 2).mean())
        assert suite.loc[arm, "pass_hat_2_pct"] == pytest.approx(
            100 * pass_hat_k(n, c, 2).mean())
        ga = att[att["arm"] == arm]
        assert suite.loc[arm, "gave_up"] == int(ga["gave_up"].sum())
    planned = res.contrasts[(res.contrasts["contrast"] == "real - baseline")
                            & (res.contrasts["cohort"] == "all")].iloc[0]
    assert suite.loc["real", "delta_pp"] == planned["estimate_pp"]
    assert suite.loc["real", "delta_p"] == planned["p_value"]
    assert bool(suite.loc["real", "delta_planned"])
    # an arm without a planned contrast: the report computes it with the same engine
    _, rate = task_matrix(agg, "pass_rate", ["always_verify", "baseline"])
    sf = sign_flip_test(rate[:, 0] - rate[:, 1], rng=child_rng(0, "unused"))
    assert not bool(suite.loc["always_verify", "delta_planned"])
    assert suite.loc["always_verify", "delta_pp"] == pytest.approx(100 * sf.statistic)
    assert suite.loc["always_verify", "delta_p"] == pytest.approx(sf.p_value)


def test_transitions_equal_stats_and_analysis(demo_report, fast_plan):
    res = analyze(DEMO_RUN / "attempts.jsonl", fast_plan)
    tr = pd.read_csv(demo_report.out / "transitions.csv")
    agg = aggregate_tasks(load_attempts(DEMO_RUN).attempts)
    _, succ = task_matrix(agg, "successes", ["baseline", "real"])
    expected = transition_table(succ[:, 0], succ[:, 1], 2)
    got = tr[tr["arm"] == "real"].set_index("from")[["0/2", "1/2", "2/2"]]
    assert got.to_numpy().tolist() == expected.to_numpy().tolist()
    a = res.transitions[(res.transitions["contrast"] == "real - baseline")
                        & (res.transitions["cohort"] == "all")]
    wide = a.pivot(index="comparator", columns="arm", values="n_tasks")
    assert wide.to_numpy().tolist() == got.to_numpy().tolist()


def test_reliability_equals_stats(demo_report):
    rel = pd.read_csv(demo_report.out / "reliability.csv").set_index("arm")
    att = load_attempts(DEMO_RUN).attempts
    agg = aggregate_tasks(att, by=("cohort", "task", "arm"))
    for arm in rel.index:
        g = agg[agg["arm"] == arm]
        n, c = g["attempts"].astype(int), g["successes"].astype(int)
        hat = [pass_hat_k(n, c, k).mean() for k in (1, 2)]
        assert rel.loc[arm, "pass_hat_2_pct"] == pytest.approx(100 * hat[1])
        assert rel.loc[arm, "consistency"] == pytest.approx(hat[1] / hat[0])
        per = [att[(att["arm"] == arm) & (att["replicate"] == r)]["passed"].mean()
               for r in (0, 1)]
        assert rel.loc[arm, "pass1_replicate_1_pct"] == pytest.approx(100 * per[1])
        assert rel.loc[arm, "pass1_pstd_pct"] == pytest.approx(100 * np.std(per))
    # pooled McNemar of per-task pass^2 against baseline, strata = cohorts
    both = agg[agg["successes"] == 2].groupby(["cohort", "task"])["arm"].agg(set)
    b, c = [], []
    for cohort in ("eligible", "silent"):
        tasks = agg[agg["cohort"] == cohort]["task"].unique()
        sets = [both.get((cohort, t), set()) for t in tasks]
        b.append(sum("real" in s and "baseline" not in s for s in sets))
        c.append(sum("baseline" in s and "real" not in s for s in sets))
    expected = mcnemar_pooled(b, c)
    assert (rel.loc["real", "mcnemar_b"], rel.loc["real", "mcnemar_c"]) == (expected.b,
                                                                             expected.c)
    assert rel.loc["real", "mcnemar_p"] == pytest.approx(expected.p_value)
    assert rel.loc["real", "mcnemar_strata"] == 2
    # Δ pass^K with every task at K attempts: the difference of the arms' pass^K
    delta = rel.loc["real", "pass_hat_2_pct"] - rel.loc["baseline", "pass_hat_2_pct"]
    assert rel.loc["real", "delta_pass_all_pp"] == pytest.approx(delta)
    assert rel.loc["real", "delta_ci_low_pp"] <= delta <= rel.loc["real", "delta_ci_high_pp"]


def test_accounting_and_prereg_of_demo_run(demo_report):
    acc = pd.read_csv(demo_report.out / "accounting.csv").set_index("arm")
    assert acc.loc["total", "scheduled"] == 60
    assert acc.loc["total", "finished_records"] == 60
    assert acc.loc["real", "scored"] == 12
    assert not demo_report.status.partial
    pre = pd.read_csv(demo_report.out / "prereg.csv")
    assert "schedule" in set(pre["item"]) and pre["sha256"].str.len().eq(64).all()


def test_tasks_table_lists_every_task_and_arm(demo_report):
    tasks = pd.read_csv(demo_report.out / "tasks.csv")
    assert len(tasks) == 6 * 5 and tasks["attempts"].eq(2).all()
    md = (demo_report.out / "tasks.md").read_text()
    assert md.count("\n| ") == 1 + 1 + 6  # header, rule, six tasks
