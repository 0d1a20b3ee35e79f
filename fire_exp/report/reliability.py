"""The paper table of reliability over repeated attempts (seed 003), rendered from the
analysis' ``reliability`` table: pass^k for k = 1..K, consistency, per-replicate pass^1
and its spread, Δpass^K against the reference with its interval, McNemar b/c and p."""

from __future__ import annotations

import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p
from fire_exp.report.tables import arm_label

__all__ = ["reliability_table"]


def reliability_table(result: AnalysisResult) -> ReportTable:
    """pass^k for k = 1..K, consistency, per-replicate pass^1 and spread, McNemar."""
    data, k_max, ref = result.reliability, result.k, result.reference
    reps = [c[len("pass1_replicate_"):-len("_pct")] for c in data.columns
            if c.startswith("pass1_replicate_")]
    rows = []
    for r in data.to_dict("records"):
        own = r["arm"] == ref
        rows.append((arm_label(r["arm"]),
                     *[fmt_num(r[f"pass_hat_{k}_pct"]) for k in range(1, k_max + 1)],
                     fmt_num(r["consistency"], 2),
                     *[fmt_num(r[f"pass1_replicate_{x}_pct"]) for x in reps],
                     fmt_num(r["pass1_pstd_pct"]),
                     "–" if own or pd.isna(r["delta_pass_all_pp"]) else
                     f"{fmt_num(r['delta_pass_all_pp'])} "
                     f"{fmt_ci(r['delta_ci_low_pp'], r['delta_ci_high_pp'])}",
                     "–" if own else f"{fmt_int(r['mcnemar_b'])}/{fmt_int(r['mcnemar_c'])}",
                     fmt_p(r["mcnemar_p"])))
    header = ("arm", *[f"pass^{k} %" for k in range(1, k_max + 1)],
              f"pass^{k_max}/pass^1", *[f"T{i + 1} %" for i in range(len(reps))],
              "σ pp", f"Δpass^{k_max} pp", "b/c", "p")
    notes = (f"{result.suite_cohort} tasks. pass^k: unbiased share of tasks on which k "
             f"attempts all pass; pass^{k_max}/pass^1: consistency ratio.",
             "T1…: pass^1 of each replicate (trial); σ: their population standard deviation.",
             f"Δpass^{k_max}: share of tasks passing all {k_max} attempts, arm minus "
             f"{ref}, points, with a 95 % paired task-bootstrap interval.",
             f"b/c: tasks passing all {k_max} attempts only under the arm / only under "
             f"{ref}; p: exact McNemar pooled over cohort strata (per-task pass^"
             f"{k_max} as the paired outcome).")
    return ReportTable("reliability", "Reliability over repeated attempts (pass^k, seed 003)",
                       header, tuple(rows), data, notes=notes)
