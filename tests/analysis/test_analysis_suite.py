"""The suite, transition, reliability and near-miss tables against direct fire_exp.stats
calls and hand counts (the numbers the report renders)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import analyze, load_attempts
from fire_exp.records import append_records
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
from tests.analysis.analysis_helpers import DATA, REPO
from tests.report.helpers import panel_records

DEMO_RUN = REPO / "tests" / "report" / "data" / "demo_run"


@pytest.fixture(scope="module")
def demo(request):
    from fire_exp.analysis import load_plan

    plan = load_plan(REPO / "analysis" / "default.yaml")
    fast = plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(update={"n_resamples": 500}),
        "permutation": plan.permutation.model_copy(update={"n_resamples": 2000})})
    return analyze(DEMO_RUN, fast), load_attempts(DEMO_RUN).attempts


def test_suite_against_stats(demo):
    res, att = demo
    assert res.reference == "baseline" and res.suite_cohort == "all" and res.k == 2
    suite = res.suite.set_index("arm")
    assert list(suite.index) == ["real", "sham", "always_verify", "reconsider", "baseline"]
    agg = aggregate_tasks(att)
    for arm in suite.index:
        g = agg[agg["arm"] == arm]
        n, c = g["attempts"].astype(int), g["successes"].astype(int)
        assert suite.loc[arm, "pass_at_2_pct"] == pytest.approx(100 * pass_at_k(n, c, 2).mean())
        assert suite.loc[arm, "pass_hat_2_pct"] == pytest.approx(
            100 * pass_hat_k(n, c, 2).mean())
        assert suite.loc[arm, "gave_up"] == int(att.loc[att["arm"] == arm, "gave_up"].sum())
    planned = res.contrasts.set_index(["contrast", "cohort"]).loc[("real - baseline", "all")]
    assert suite.loc["real", "delta_pp"] == planned["estimate_pp"]
    assert suite.loc["real", "delta_p"] == planned["p_value"] and suite.loc["real",
                                                                            "delta_planned"]
    # an arm without a planned contrast: the same engine, marked exploratory (exact p)
    _, rate = task_matrix(agg, "pass_rate", ["always_verify", "baseline"])
    sf = sign_flip_test(rate[:, 0] - rate[:, 1], rng=child_rng(0, "unused"))
    assert not suite.loc["always_verify", "delta_planned"]
    assert suite.loc["always_verify", "delta_pp"] == pytest.approx(100 * sf.statistic)
    assert suite.loc["always_verify", "delta_p"] == pytest.approx(sf.p_value)
    assert np.isnan(suite.loc["baseline", "delta_pp"])


def test_suite_transitions_against_stats_and_plan_transitions(demo):
    res, att = demo
    agg = aggregate_tasks(att)
    _, succ = task_matrix(agg, "successes", ["baseline", "real"])
    expected = transition_table(succ[:, 0], succ[:, 1], 2)
    st = res.suite_transitions
    got = st[st["arm"] == "real"].set_index("from")[["0/2", "1/2", "2/2"]]
    assert got.to_numpy().tolist() == expected.to_numpy().tolist()
    plan_rows = res.transitions[(res.transitions["contrast"] == "real - baseline")
                                & (res.transitions["cohort"] == "all")]
    wide = plan_rows.pivot(index="comparator", columns="arm", values="n_tasks")
    assert wide.to_numpy().tolist() == got.to_numpy().tolist()


def test_reliability_against_stats(demo):
    res, att = demo
    rel = res.reliability.set_index("arm")
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
    delta = rel.loc["real", "pass_hat_2_pct"] - rel.loc["baseline", "pass_hat_2_pct"]
    assert rel.loc["real", "delta_pass_all_pp"] == pytest.approx(delta)
    assert rel.loc["real", "delta_ci_low_pp"] <= delta <= rel.loc["real", "delta_ci_high_pp"]
    assert np.isnan(rel.loc["baseline", "mcnemar_p"])


def test_near_miss_by_hand(fast_plan):
    path = DATA / "fire_eligible_funnel.jsonl"
    res = analyze(path, fast_plan)
    nm = res.near_miss
    overall = nm[nm["family"] == "all (eligible)"].set_index("arm")
    att = load_attempts(path).attempts
    for arm in overall.index:
        g = att[att["arm"] == arm]
        pis = g[(g["funnel_passed"] == 1) & (g["funnel_state"] == 1)]
        assert overall.loc[arm, "passed_in_state"] == len(pis)
        assert overall.loc[arm, "near_miss"] == int((pis["funnel_behavior"] == 0).sum())
        assert overall.loc[arm, "uncoded"] == int(pis["funnel_behavior"].isna().sum())
        assert overall.loc[arm, "near_miss_pct"] == pytest.approx(
            100 * (pis["funnel_behavior"] == 0).sum() / max(1, len(pis)))
    funnel = res.funnel[res.funnel["cohort"] == "eligible"].set_index("arm")
    np.testing.assert_array_equal(overall["near_miss_pct"],
                                  funnel.loc[overall.index, "near_miss_pct"])


def test_one_k_in_a_partial_run(tmp_path, fast_plan):
    """Every table counts successes out of the same K (the panel's attempts per task);
    tasks an arm has not finished K times are left out of transitions and McNemar."""
    records = panel_records()  # 6 tasks x 3 arms x 3 attempts
    keep = [r for r in records if not (r.arm == "sham" and r.replicate > 0)]
    append_records(tmp_path / "attempts.jsonl", keep)
    res = analyze(tmp_path, fast_plan)
    assert res.k == 3 and res.metadata["k"] == 3
    assert {"0/3", "3/3"} <= set(res.suite_transitions.columns)
    assert set(res.transitions["comparator"]) == {f"{i}/3" for i in range(4)}
    sham = res.transitions[res.transitions["contrast"] == "real - sham"]
    assert sham["n_tasks"].sum() == 0  # no sham task has 3 attempts
    assert res.metadata["suite_transitions_left_out"] == 6
    rel = res.reliability.set_index("arm")
    assert pd.isna(rel.loc["sham", "pass_hat_3_pct"]) and pd.isna(rel.loc["sham",
                                                                          "consistency"])
    assert rel.loc["real", "consistency"] >= 0 and rel.loc["sham", "mcnemar_b"] == 0
