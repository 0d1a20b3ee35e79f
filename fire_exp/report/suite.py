"""Paper tables of suite metrics per arm (FIRE Tables 5 and 7) and transitions (Table 6),
rendered from the analysis' ``suite`` and ``suite_transitions`` tables."""

from __future__ import annotations

from fire_exp.analysis import AnalysisResult
from fire_exp.report.design import runs_policies
from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p
from fire_exp.report.tables import arm_label

__all__ = ["suite_table", "transitions_table"]


def suite_table(result: AnalysisResult) -> ReportTable:
    """Per arm: pass@1 with CI, Δ vs reference, pass@2, pass^2, terminations, cost, time."""
    cohort, ref, data = result.suite_cohort, result.reference, result.suite
    fired = runs_policies(result)  # a panel whose arms run no policy has no "fired" column
    rows = []
    for r in data.to_dict("records"):
        own = r["arm"] == ref
        mark = "" if r["delta_planned"] else "*"
        rows.append((arm_label(r["arm"]), f"{fmt_num(r['pass_at_1_pct'])} "
                     f"{fmt_ci(r['ci_low_pct'], r['ci_high_pct'])}",
                     "–" if own else f"{fmt_num(r['delta_pp'])}{mark} "
                     f"{fmt_ci(r['delta_ci_low_pp'], r['delta_ci_high_pp'])}",
                     fmt_p(r["delta_p"]), fmt_num(r["pass_at_2_pct"]),
                     fmt_num(r["pass_hat_2_pct"]),
                     "–" if own else f"{int(r['improved'])}/{int(r['regressed'])}",
                     *([f"{r['tasks_fired']}/{r['n_tasks']}"] if fired else []),
                     fmt_int(r["gave_up"]),
                     fmt_int(r["timeouts"]), fmt_int(r["crashes"]),
                     fmt_num(r["total_cost_usd"], 2), fmt_num(r["mean_agent_seconds"])))
    notes = [f"{cohort} tasks; pass@1 % with 95 % task-bootstrap CI; Δ vs {ref} in "
             "points with CI and sign-flip p; pass@2, pass^2 in % (unbiased estimators).",
             f"improved/regressed: tasks whose pass rate rose/fell vs {ref}; "
             + ("fired: tasks where the policy fired at least once; " if fired else "")
             + "timeouts: agent or verifier timeout; crashes: every other recorded failure "
             "cause.",
             "cost: total USD over scored attempts; time: mean agent seconds per attempt."]
    if len(data) and not data["delta_planned"].all():
        notes.append("* not in the analysis plan: exploratory, not multiplicity-adjusted.")
    return ReportTable("suite", f"Suite metrics per arm ({cohort} tasks; FIRE Tables 5 and 7)",
                       ("arm", "pass@1 %", f"Δ vs {ref}", "p", "pass@2 %",
                        "pass^2 %", "impr./regr.", *(["fired"] if fired else []), "gave up",
                        "timeouts", "crashes", "cost $", "agent s"),
                       tuple(rows), data, notes=tuple(notes))


def transitions_table(result: AnalysisResult) -> ReportTable:
    """Per arm: tasks by successes out of K under the reference (rows) and the arm (columns).

    Only tasks with all K attempts in both arms enter; the note says how many were left out.
    """
    cohort, ref, k, data = result.suite_cohort, result.reference, result.k, \
        result.suite_transitions
    labels = [f"{i}/{k}" for i in range(k + 1)]
    rows, rules = [], []
    for i, r in enumerate(data.to_dict("records")):
        rows.append((arm_label(r["arm"]), f"{ref} {r['from']}", *[str(r[c]) for c in labels]))
        if i + 1 == len(data) or data["arm"].iloc[i + 1] != r["arm"]:
            rules.append(i)
    notes = [f"{cohort} tasks by successes out of {k}: rows under {ref}, columns "
             "under the arm; above the diagonal a task gained successes."]
    left_out = int(str(result.metadata.get("suite_transitions_left_out", 0)))
    if left_out:
        notes.append(f"Up to {left_out} task(s) per arm lack {k} attempts in one of the two "
                     "arms and are left out.")
    return ReportTable("transitions", f"Per-task transitions vs {ref} (FIRE Table 6)",
                       ("arm", "from", *[f"to {x}" for x in labels]), tuple(rows), data,
                       align="ll" + "r" * len(labels), notes=tuple(notes),
                       rules_after=tuple(rules))
