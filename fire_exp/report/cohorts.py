"""Cohort tables: the eligible − silent interaction and every task under every arm (Table 8)."""

from __future__ import annotations

from fire_exp.analysis import AnalysisResult
from fire_exp.report.render import ReportTable, fmt_ci, fmt_num, fmt_p
from fire_exp.report.tables import arm_label, contrast_label

__all__ = ["interaction_table", "tasks_table"]


def interaction_table(result: AnalysisResult) -> ReportTable:
    """The plan's interaction: the contrast in each cohort and their difference."""
    it = result.interaction
    spec = result.plan.interaction
    if it.empty or spec is None:
        return ReportTable("interaction", "Cohort interaction", ("contrast", "note"),
                           (("–", "no interaction in the plan or a cohort lacks data"),),
                           it, align="ll")
    first, second = spec.cohorts
    c = result.contrasts
    r = it.iloc[0]

    def est(cohort: str) -> str:
        hit = c[(c["contrast"] == spec.contrast) & (c["cohort"] == cohort)]
        return "–" if hit.empty else (f"{fmt_num(hit['estimate_pp'].iloc[0])} "
                                      f"{fmt_ci(hit['ci_low_pp'].iloc[0], hit['ci_high_pp'].iloc[0])}")

    row = (contrast_label(spec.contrast), f"{est(first)}", f"{est(second)}",
           fmt_num(r["estimate_pp"]), fmt_ci(r["ci_low_pp"], r["ci_high_pp"]),
           fmt_p(r["p_value"]))
    return ReportTable(
        "interaction", f"Interaction: {first} − {second}",
        ("contrast", f"{first} ({int(r['n_first'])}) Δ", f"{second} ({int(r['n_second'])}) Δ",
         f"{first} − {second}", "95 % CI", "p"), (row,), it.reset_index(drop=True),
        notes=("Points. The interval resamples tasks within each cohort; p permutes the "
               f"per-task differences between the cohorts ({r['p_method']}, "
               f"{int(r['p_resamples']):,} permutations).",))


def tasks_table(result: AnalysisResult) -> ReportTable:
    """Every task under every arm: successes of attempts, and the task's total cost."""
    data, arms = result.tasks, list(result.arms)
    order = [c for c in result.plan.cohorts if c in set(data["cohort"].unique())]
    order += sorted(set(data["cohort"].unique()) - set(order))
    cells = data.assign(cell=data["successes"].astype(int).astype(str) + "/"
                        + data["attempts"].astype(int).astype(str)).pivot(
        index=["cohort", "task"], columns="arm", values="cell").reindex(
        columns=arms).fillna("–")
    cost = data.groupby(["cohort", "task"])["cost_usd"].sum()
    rows, rules = [], []
    for cohort in order:
        part = cells.loc[cohort].sort_index()
        spent = cost.loc[cohort]
        rows += [(task, cohort, *vals, fmt_num(spent[task], 2))
                 for task, vals in zip(part.index, part.itertuples(index=False), strict=True)]
        rules.append(len(rows) - 1)
    return ReportTable("tasks", "Every task under every arm (FIRE Table 8)",
                       ("task", "cohort", *[arm_label(a) for a in arms], "cost $"),
                       tuple(rows), data, align="ll" + "r" * (len(arms) + 1),
                       rules_after=tuple(rules),
                       notes=("Successes / scored attempts per arm; cost: total USD of the "
                              "task's scored attempts over all arms.",))
