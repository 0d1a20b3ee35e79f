"""Suite metrics per arm (FIRE Table 5 and 7) and the K+1 × K+1 transitions (Table 6).

Numbers the analysis computed (pass rates, plan contrasts, pass@k, cost) are taken from
it. A Δ against the reference arm that the plan does not list is computed here with the
same engine and a child stream keyed ``("report", "suite", contrast, cohort)``, and is
marked exploratory (not multiplicity-adjusted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p
from fire_exp.report.tables import ReportInputs, arm_label
from fire_exp.stats import (
    aggregate_tasks,
    child_rng,
    improvement_counts,
    paired_bootstrap,
    sign_flip_test,
    task_matrix,
    transition_table,
)

__all__ = ["TIMEOUT_CAUSES", "SuiteDelta", "suite_cohort", "suite_delta", "suite_table",
           "transitions_table"]

TIMEOUT_CAUSES = frozenset({"agent_timeout", "verifier_timeout"})


def suite_cohort(inp: ReportInputs) -> str:
    """``all`` when the plan analyses it, else the main cohort."""
    return "all" if "all" in inp.plan.cohorts else inp.main_cohort


@dataclass(frozen=True)
class SuiteDelta:
    """An arm minus the reference arm on the suite cohort."""

    estimate_pp: float
    ci_low_pp: float
    ci_high_pp: float
    p_value: float
    p_method: str
    improved: int
    regressed: int
    planned: bool


def suite_delta(inp: ReportInputs, arm: str, cohort: str) -> SuiteDelta:
    """The plan's contrast ``arm - reference`` if it has one, else an exploratory one."""
    name = f"{arm} - {inp.reference}"
    c = inp.result.contrasts
    hit = c[(c["contrast"] == name) & (c["cohort"] == cohort)]
    if not hit.empty:
        r = hit.iloc[0]
        return SuiteDelta(r["estimate_pp"], r["ci_low_pp"], r["ci_high_pp"], r["p_value"],
                          r["p_method"], int(r["improved"]), int(r["regressed"]), True)
    agg = aggregate_tasks(inp.cohort_attempts(cohort))
    _, rate = task_matrix(agg, "pass_rate", [arm, inp.reference])
    rate = rate[~np.isnan(rate).any(axis=1)]
    d = rate[:, 0] - rate[:, 1]
    plan = inp.plan
    sf = sign_flip_test(d, n_resamples=plan.permutation.n_resamples,
                        max_enumeration=plan.permutation.max_enumeration,
                        method=plan.permutation.method,
                        rng=child_rng(plan.seed, "report", "suite", name, "signflip", cohort))
    bi = paired_bootstrap({"d": d}, n_resamples=plan.bootstrap.n_resamples,
                          confidence_level=plan.bootstrap.confidence_level,
                          rng=child_rng(plan.seed, "report", "suite", name, cohort))["d"]
    ic = improvement_counts(rate[:, 0], rate[:, 1])
    return SuiteDelta(100 * sf.statistic, 100 * bi.ci_low, 100 * bi.ci_high, sf.p_value,
                      sf.method, ic.improved, ic.regressed, False)


def _pass_k(inp: ReportInputs, cohort: str, arm: str, k: int) -> tuple[float, float]:
    pk = inp.result.pass_k
    hit = pk[(pk["cohort"] == cohort) & (pk["arm"] == arm) & (pk["k"] == k)]
    if hit.empty:
        return float("nan"), float("nan")
    return float(hit["pass_at_k_pct"].iloc[0]), float(hit["pass_hat_k_pct"].iloc[0])


def suite_table(inp: ReportInputs) -> ReportTable:
    """Per arm: pass@1 with CI, Δ vs reference, pass@2, pass^2, terminations, cost, time."""
    cohort = suite_cohort(inp)
    pr = inp.result.pass_rates
    pr = pr[pr["cohort"] == cohort].set_index("arm")
    cost = inp.result.cost
    cost = cost[cost["cohort"] == cohort].set_index("arm")
    att = inp.cohort_attempts(cohort)
    records, rows = [], []
    for arm in [a for a in inp.arms if a in pr.index]:
        g = att[att["arm"] == arm]
        r = pr.loc[arm]
        delta = None if arm == inp.reference else suite_delta(inp, arm, cohort)
        at2, hat2 = _pass_k(inp, cohort, arm, 2)
        fired = g.loc[g["funnel_fired"] == 1, "task"].nunique()
        rec = {"arm": arm, "n_tasks": int(r["n_tasks"]), "attempts": int(r["attempts"]),
               "pass_at_1_pct": r["pass_rate_pct"], "ci_low_pct": r["ci_low_pct"],
               "ci_high_pct": r["ci_high_pct"],
               "delta_pp": delta.estimate_pp if delta else np.nan,
               "delta_ci_low_pp": delta.ci_low_pp if delta else np.nan,
               "delta_ci_high_pp": delta.ci_high_pp if delta else np.nan,
               "delta_p": delta.p_value if delta else np.nan,
               "delta_p_method": delta.p_method if delta else "",
               "delta_planned": delta.planned if delta else True,
               "pass_at_2_pct": at2, "pass_hat_2_pct": hat2,
               "improved": delta.improved if delta else np.nan,
               "regressed": delta.regressed if delta else np.nan,
               "tasks_fired": int(fired), "gave_up": int(g["gave_up"].sum()),
               "timeouts": int(g["cause"].isin(TIMEOUT_CAUSES).sum()),
               "crashes": int(((g["cause"] != "") & ~g["cause"].isin(TIMEOUT_CAUSES)).sum()),
               "total_cost_usd": float(cost.loc[arm, "total_cost_usd"]),
               "mean_agent_seconds": float(cost.loc[arm, "mean_agent_seconds"])}
        records.append(rec)
        mark = "" if rec["delta_planned"] else "*"
        rows.append((arm_label(arm), f"{fmt_num(rec['pass_at_1_pct'])} "
                     f"{fmt_ci(rec['ci_low_pct'], rec['ci_high_pct'])}",
                     "–" if delta is None else f"{fmt_num(rec['delta_pp'])}{mark} "
                     f"{fmt_ci(rec['delta_ci_low_pp'], rec['delta_ci_high_pp'])}",
                     fmt_p(rec["delta_p"]), fmt_num(at2), fmt_num(hat2),
                     "–" if delta is None else f"{delta.improved}/{delta.regressed}",
                     f"{rec['tasks_fired']}/{rec['n_tasks']}", fmt_int(rec["gave_up"]),
                     fmt_int(rec["timeouts"]), fmt_int(rec["crashes"]),
                     fmt_num(rec["total_cost_usd"], 2), fmt_num(rec["mean_agent_seconds"])))
    notes = [f"{cohort} tasks; pass@1 % with 95 % task-bootstrap CI; Δ vs {inp.reference} in "
             "points with CI and sign-flip p; pass@2, pass^2 in % (unbiased estimators).",
             f"improved/regressed: tasks whose pass rate rose/fell vs {inp.reference}; fired: "
             "tasks where the policy fired at least once; timeouts: agent or verifier "
             "timeout; crashes: every other recorded failure cause.",
             "cost: total USD over scored attempts; time: mean agent seconds per attempt."]
    if any(not r["delta_planned"] for r in records):
        notes.append("* not in the analysis plan: exploratory, not multiplicity-adjusted.")
    return ReportTable("suite", f"Suite metrics per arm ({cohort} tasks; FIRE Tables 5 and 7)",
                       ("arm", "pass@1 %", f"Δ vs {inp.reference}", "p", "pass@2 %",
                        "pass^2 %", "impr./regr.", "fired", "gave up", "timeouts",
                        "crashes", "cost $", "agent s"),
                       tuple(rows), pd.DataFrame(records), notes=tuple(notes))


def _successes(inp: ReportInputs, cohort: str, arm: str) -> tuple[list[str], np.ndarray,
                                                                    np.ndarray]:
    agg = aggregate_tasks(inp.cohort_attempts(cohort))
    tasks, succ = task_matrix(agg, "successes", [inp.reference, arm])
    _, n = task_matrix(agg, "attempts", [inp.reference, arm])
    return tasks, succ, n


def transitions_table(inp: ReportInputs) -> ReportTable:
    """Per arm: tasks by successes out of K under the reference (rows) and the arm (columns).

    Only tasks with all K attempts in both arms enter (K = the most attempts of a task);
    the note says how many were left out.
    """
    cohort = suite_cohort(inp)
    arms = [a for a in inp.arms if a != inp.reference]
    blocks, rows, rules, left_out = [], [], [], 0
    k = int(inp.cohort_attempts(cohort).groupby(["task", "arm"]).size().max())
    labels = [f"{i}/{k}" for i in range(k + 1)]
    for arm in arms:
        _, succ, n = _successes(inp, cohort, arm)
        full = (n[:, 0] == k) & (n[:, 1] == k)
        left_out = max(left_out, int((~full).sum()))
        tt = transition_table(succ[full, 0], succ[full, 1], k)
        for label in labels:
            counts = [int(tt.loc[label, c]) for c in labels]
            rows.append((arm_label(arm), f"{inp.reference} {label}", *map(str, counts)))
            blocks.append({"arm": arm, "reference": inp.reference, "from": label,
                           **dict(zip(labels, counts, strict=True))})
        rules.append(len(rows) - 1)
    notes = [f"{cohort} tasks by successes out of {k}: rows under {inp.reference}, columns "
             "under the arm; above the diagonal a task gained successes."]
    if left_out:
        notes.append(f"Up to {left_out} task(s) per arm lack {k} attempts in one of the two "
                     "arms and are left out.")
    return ReportTable("transitions", f"Per-task transitions vs {inp.reference} "
                       "(FIRE Table 6)", ("arm", "from", *[f"to {x}" for x in labels]),
                       tuple(rows), pd.DataFrame(blocks), align="ll" + "r" * len(labels),
                       notes=tuple(notes), rules_after=tuple(rules))
