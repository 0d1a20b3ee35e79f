"""Aggregates grouped once per attempts frame equal those grouped cohort by cohort."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis.arms import cohort_attempts
from fire_exp.analysis.load import normalize_frame
from fire_exp.analysis.simulate import simulate_panel
from fire_exp.stats import CohortAggregates, aggregate_tasks


@pytest.mark.parametrize("categorical", [True, False])
def test_each_cohorts_aggregates_equal_grouping_its_attempts_alone(categorical):
    att = simulate_panel(120, attempts=3, rng=np.random.default_rng(2), infra_rate=0.05)
    att = normalize_frame(att)
    if not categorical:
        att = att.astype({"task": str, "arm": str, "cohort": str})
    att = att.sample(frac=1.0, random_state=4).reset_index(drop=True)  # rows out of order
    aggs = CohortAggregates(att)
    for cohort in ("eligible", "silent", "all"):
        alone = aggregate_tasks(cohort_attempts(att, cohort))
        pd.testing.assert_frame_equal(aggs.of(cohort), alone, check_exact=True,
                                      check_categorical=False)
    pd.testing.assert_frame_equal(
        aggs.by_cohort, aggregate_tasks(att, by=("cohort", "task", "arm")), check_exact=True)


def test_a_task_in_two_cohorts_is_pooled_under_all():
    att = normalize_frame(pd.DataFrame({
        "task": ["t1", "t1", "t2"], "arm": ["a", "a", "a"], "replicate": [0, 1, 0],
        "cohort": ["eligible", "silent", "eligible"], "reward": [1.0, 0.0, 1.0]}))
    got = CohortAggregates(att).of("all")
    assert got["attempts"].tolist() == [2.0, 1.0]  # t1's two attempts together
    pd.testing.assert_frame_equal(got, aggregate_tasks(att), check_exact=True)
