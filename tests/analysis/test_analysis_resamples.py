"""Every interval of an analysis reads its cohort's one set of resamples.

Checked from outside: each table's interval equals a plain ``paired_bootstrap`` (or the
difference of two) on the cohort's stream ``("bootstrap", "success", cohort)``, so the
tables really share resamples, and FIRE's published intervals still come out (see
test_analysis_cli_analyze)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fire_exp.analysis import analyze, load_attempts
from fire_exp.analysis.resamples import SharedBootstrap
from fire_exp.stats import (
    aggregate_tasks,
    bootstrap_distributions,
    child_rng,
    paired_bootstrap,
    task_matrix,
)
from tests.analysis.analysis_helpers import DATA

PANEL = DATA / "fire_panel_30x2.csv"


@pytest.fixture(scope="module")
def panel():
    return load_attempts(PANEL).attempts


@pytest.fixture(scope="module")
def result(fast_plan_module):
    return analyze(PANEL, fast_plan_module)


@pytest.fixture(scope="module")
def fast_plan_module():
    from fire_exp.analysis import load_plan
    from tests.analysis.analysis_helpers import REPO
    plan = load_plan(REPO / "analysis" / "default.yaml")
    return plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(update={"n_resamples": 800}),
        "permutation": plan.permutation.model_copy(update={"n_resamples": 2000})})


def _diff(frame, cohort, a, b):
    sub = frame if cohort == "all" else frame[frame["cohort"] == cohort]
    _, rate = task_matrix(aggregate_tasks(sub), "pass_rate", [a, b])
    return rate[:, 0] - rate[:, 1]


def _stream(plan, cohort):
    return child_rng(plan.seed, "bootstrap", "success", cohort)


def test_contrast_interval_is_the_cohort_bootstrap(result, panel, fast_plan_module):
    plan = fast_plan_module
    row = result.contrasts.set_index(["contrast", "cohort"]).loc[("real - sham", "all")]
    d = _diff(panel, "all", "real", "sham")
    alone = paired_bootstrap({"d": d}, n_resamples=800, rng=_stream(plan, "all"))["d"]
    assert (row["ci_low_pp"], row["ci_high_pp"]) == pytest.approx(
        (100 * alone.ci_low, 100 * alone.ci_high), abs=1e-9)


def test_suite_exploratory_delta_reads_the_suite_cohort_resamples(result, panel,
                                                                  fast_plan_module):
    """always_verify − baseline is not in the plan: its interval is still the all-cohort
    bootstrap of its per-task differences (same resamples as the planned contrasts)."""
    suite = result.suite.set_index("arm")
    assert not suite.loc["always_verify", "delta_planned"]
    d = _diff(panel, "all", "always_verify", "baseline")
    alone = paired_bootstrap({"d": d}, n_resamples=800, rng=_stream(fast_plan_module, "all"))
    assert (suite.loc["always_verify", "delta_ci_low_pp"],
            suite.loc["always_verify", "delta_ci_high_pp"]) == pytest.approx(
        (100 * alone["d"].ci_low, 100 * alone["d"].ci_high), abs=1e-9)


def test_reliability_delta_reads_the_suite_cohort_resamples(result, panel, fast_plan_module):
    agg = aggregate_tasks(panel)
    _, succ = task_matrix(agg, "successes", ["real", "baseline"])
    d = (succ[:, 0] == 2).astype(float) - (succ[:, 1] == 2).astype(float)
    alone = paired_bootstrap({"d": d}, n_resamples=800, rng=_stream(fast_plan_module, "all"))
    rel = result.reliability.set_index("arm")
    assert (rel.loc["real", "delta_ci_low_pp"], rel.loc["real", "delta_ci_high_pp"]) == \
        pytest.approx((100 * alone["d"].ci_low, 100 * alone["d"].ci_high), abs=1e-9)


def test_interaction_interval_is_the_difference_of_the_cohort_resamples(result, panel,
                                                                       fast_plan_module):
    plan = fast_plan_module
    dists = [bootstrap_distributions({"d": _diff(panel, c, "real", "sham")},
                                     n_resamples=800, rng=_stream(plan, c)).of("d")
             for c in ("eligible", "silent")]
    low, high = np.percentile(dists[0] - dists[1], [2.5, 97.5])
    row = result.interaction.iloc[0]
    assert (row["ci_low_pp"], row["ci_high_pp"]) == pytest.approx((100 * low, 100 * high),
                                                                  abs=1e-9)


def test_a_column_is_refused_outside_its_cohort(panel, fast_plan_module):
    boot = SharedBootstrap(fast_plan_module, panel)
    silent_task = panel.loc[panel["cohort"] == "silent", "task"].iloc[0]
    boot.add("x", "eligible", {"d": pd.Series([1.0], index=[silent_task])})
    with pytest.raises(ValueError, match="outside cohort 'eligible'"):
        boot.run()
