"""The tables of an analysis, registered in one place (``TABLES``), in the order they are
built and written.

Each entry is a ``table_spec.Table``: its first phase asks the shared resamples for the
per-task columns it needs, its builder makes its frame once they are drawn. For each cohort
of the plan: per-arm pass rates, every contrast (estimate, percentile interval, sign-flip p,
paired t interval, Holm-adjusted p for the secondary contrasts), their transitions, pass@k/
pass^k and cost per success; then the sensitivity analysis without infrastructure failures,
the interaction, error rates, funnels and near-misses, the suite and reliability tables
against the reference arm, every task under every arm, and the run's accounting. Every
random stream is a child of the plan's seed keyed by its name; every interval comes from its
cohort's one set of task resamples. A builder reads only the tables before it.
"""

from __future__ import annotations

import pandas as pd

from fire_exp.analysis.ablation import ablation_contrasts
from fire_exp.analysis.accounting import accounting_frame, prereg_frame
from fire_exp.analysis.arm_changes import arm_changes_frame
from fire_exp.analysis.cohorts import (
    CONTRAST_LEADING_COLUMNS,
    arm_rows,
    cohort_matrices,
    contrast_frame,
    contrast_rows,
    contrast_transitions,
    transitions_frame,
    with_interval,
)
from fire_exp.analysis.counts import (
    errors_frame,
    family_funnel_frame,
    funnel_frame,
    near_miss_frame,
    pass_k_frame,
)
from fire_exp.analysis.plan import parse_contrast
from fire_exp.analysis.reliability import (
    RELIABILITY_SCOPE,
    reliability_columns,
    reliability_frame,
)
from fire_exp.analysis.suite import (
    SUITE_SCOPE,
    suite_columns,
    suite_frame,
    suite_transitions_frame,
    tasks_frame,
)
from fire_exp.analysis.table_spec import (
    AnalysisInputs,
    Builder,
    Built,
    ResampleRequest,
    Table,
)
from fire_exp.stats import CohortAggregates, child_rng, interaction

__all__ = ["CONTRAST_LEADING_COLUMNS", "TABLES"]

_PASS_COLUMNS = ["cohort", "arm", "n_tasks", "attempts", "successes", "pass_rate_pct",
                 "ci_low_pct", "ci_high_pct", "mean_reward"]
_COST_COLUMNS = ["cohort", "arm", "n_tasks", "attempts", "successes", "total_cost_usd",
                 "cost_per_success_usd", "cost_ci_low_usd", "cost_ci_high_usd",
                 "mean_agent_seconds"]


def _arm_intervals(run: AnalysisInputs, done: Built, kind: str, names: tuple[str, str, str],
                   columns: list[str], *, percent: bool = False) -> pd.DataFrame:
    """One row per cohort and arm: the arm's counts and its resampled ``kind:ARM`` column's
    estimate and interval under ``names`` (as percentages where ``percent``)."""
    rows = []
    for c in run.primary:
        boot = done.results.scope(c.scope)
        for r in arm_rows(c):
            ci = boot[f"{kind}:{r['arm']}"]
            values: tuple[float, ...] = (ci.estimate, ci.ci_low, ci.ci_high)
            if percent:
                values = tuple(100 * v for v in values)
            rows.append({**r, **dict(zip(names, values, strict=True))})
    return pd.DataFrame([{key: r[key] for key in columns} for r in rows])


def _pass_rates(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    for c in run.primary:
        resamples.add(c.scope, c.name, c.arm_columns())

    def build(done: Built) -> pd.DataFrame:
        return _arm_intervals(run, done, "arm", ("pass_rate_pct", "ci_low_pct", "ci_high_pct"),
                              _PASS_COLUMNS, percent=True)

    return build


def _contrasts(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    for c in run.primary:
        resamples.add(c.scope, c.name, c.contrast_columns())

    def build(done: Built) -> pd.DataFrame:
        rows = [contrast_rows(run.plan, c) for c in run.primary]
        return contrast_frame([
            with_interval(r, done.results.scope(c.scope)[f"contrast:{r['contrast']}"])
            for c, cohort_rows in zip(run.primary, rows, strict=True) for r in cohort_rows])

    return build


def _sensitivity(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    """``contrasts`` without the infrastructure failures, when the plan asks and there are
    some."""
    att = run.attempts
    kept = att[~att["infrastructure_failure"].astype(bool)]
    if run.plan.missing_data.sensitivity != "exclude":
        return lambda done: pd.DataFrame()
    if len(kept) == len(att):
        run.notes.append("sensitivity analysis: no infrastructure failures; identical to "
                         "primary")
        return lambda done: pd.DataFrame()
    cohorts = cohort_matrices(run.plan, CohortAggregates(kept), ("sensitivity",), [])
    for c in cohorts:
        resamples.add(c.scope, c.name, c.contrast_columns())

    def build(done: Built) -> pd.DataFrame:
        return contrast_frame([
            with_interval(r, done.results.scope(c.scope)[f"contrast:{r['contrast']}"])
            for c in cohorts for r in contrast_rows(run.plan, c)])

    return build


_INTERACTION = "interaction"


def _interaction(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    """The plan's interaction: its contrast's difference between two cohorts, from each
    cohort's per-task differences."""
    plan, spec = run.plan, run.plan.interaction
    if spec is None:
        return lambda done: pd.DataFrame()
    a, b = parse_contrast(spec.contrast)
    found = {c.name: c for c in run.primary}
    diffs = []
    for cohort in spec.cohorts:
        c = found.get(cohort)
        if c is None or not {a, b} <= set(c.arms):
            run.notes.append(f"interaction of '{spec.contrast}': cohort '{cohort}' lacks "
                             "data; skipped")
            return lambda done: pd.DataFrame()
        d = pd.Series(c.difference(spec.contrast), index=c.tasks).dropna()
        resamples.add(_INTERACTION, cohort, {cohort: d})
        diffs.append(d.to_numpy())

    def build(done: Built) -> pd.DataFrame:
        first, second = spec.cohorts
        res = interaction(diffs[0], diffs[1], n_permutations=plan.permutation.n_resamples,
                          confidence_level=plan.bootstrap.confidence_level,
                          resampled=(done.results.resampled(_INTERACTION, first),
                                     done.results.resampled(_INTERACTION, second)),
                          rng_permutation=child_rng(plan.seed, _INTERACTION, spec.contrast,
                                                    "permutation"))
        return pd.DataFrame([{
            "contrast": spec.contrast, "cohort": f"{first} - {second}",
            "n_tasks": res.n_first + res.n_second, "estimate_pp": 100 * res.estimate,
            "ci_low_pp": 100 * res.ci_low, "ci_high_pp": 100 * res.ci_high,
            "p_value": res.p_value, "p_method": res.p_method, "p_mc_se": res.mc_se,
            "p_resamples": res.n_permutations, "n_resamples": res.n_resamples,
            "n_first": res.n_first, "n_second": res.n_second}])

    return build


def _transitions(run: AnalysisInputs) -> pd.DataFrame:
    return transitions_frame([contrast_transitions(c, name, run.k)
                              for c in run.primary for name in c.usable])


def _pass_k(run: AnalysisInputs) -> pd.DataFrame:
    return pass_k_frame([r for c in run.primary for r in arm_rows(c)])


def _cost(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    for c in run.primary:
        resamples.add(c.scope, c.name, {}, c.cost_ratios())

    def build(done: Built) -> pd.DataFrame:
        return _arm_intervals(run, done, "cost", ("cost_per_success_usd", "cost_ci_low_usd",
                                                  "cost_ci_high_usd"), _COST_COLUMNS)

    return build


def _suite(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    """Per arm against the reference; a Δ the plan does not list is resampled here."""
    s = run.suite
    planned = {n for c in run.primary if c.name == s.cohort for n in c.usable}
    resamples.add(SUITE_SCOPE, s.cohort, suite_columns(s, planned))
    return lambda done: suite_frame(s, done.frame("pass_rates"), done.frame("cost"),
                                    done.frame("contrasts"), done.frame("pass_k"),
                                    done.results.scope(SUITE_SCOPE))


def _suite_transitions(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    def build(done: Built) -> pd.DataFrame:
        frame, left_out = suite_transitions_frame(run.suite)
        done.metadata["suite_transitions_left_out"] = left_out
        return frame

    return build


def _reliability(run: AnalysisInputs, resamples: ResampleRequest) -> Builder:
    resamples.add(RELIABILITY_SCOPE, run.suite.cohort, reliability_columns(run.suite))
    return lambda done: reliability_frame(run.suite, done.frame("pass_k"),
                                          done.results.scope(RELIABILITY_SCOPE))


def _accounting(run: AnalysisInputs) -> pd.DataFrame:
    return accounting_frame(run.loaded, run.run.records, run.run.prereg, run.arms)


# Asked and built in this order, but every ``Table.of_run`` is built first (during the
# draw); contrasts come first of the rest, their sign-flip tests before the first wait.
TABLES: tuple[Table, ...] = (
    Table("contrasts", _contrasts),
    Table("sensitivity", _sensitivity),
    Table("pass_rates", _pass_rates),
    Table("interaction", _interaction),
    Table.of_run("transitions", _transitions),
    Table.of_run("pass_k", _pass_k),
    Table("cost", _cost),
    Table.of_run("errors", lambda run: errors_frame(run.attempts, run.loaded.superseded)),
    Table.of_run("funnel", lambda run: funnel_frame(run.attempts, run.plan.cohorts)),
    Table.of_run("family_funnel", lambda run: family_funnel_frame(run.loaded.families)),
    Table.of_run("near_miss", lambda run: near_miss_frame(
        run.attempts, run.loaded.families, run.arms, run.main_cohort)),
    Table("suite", _suite),
    Table("suite_transitions", _suite_transitions),
    Table("reliability", _reliability),
    Table.of_run("tasks", lambda run: tasks_frame(run.aggregates)),
    Table.of_run("accounting", _accounting),
    Table.of_run("prereg", lambda run: prereg_frame(run.run.prereg)),
    Table.of_run("ablation", lambda run: ablation_contrasts(run.loaded, run.plan)),
    Table.of_run("arm_changes", lambda run: arm_changes_frame(
        run.run.records, run.run.prereg, run.arms)),
)
