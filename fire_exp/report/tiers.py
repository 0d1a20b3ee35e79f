"""FIRE Table 5 across runs: the suite metrics of each agent tier (one run per tier).

``fire-exp report RUN1 RUN2 … --out DIR`` reports each run into ``DIR/<tier>/`` and puts
their suite tables side by side in ``DIR/tiers.{tex,md,csv}`` (``compare_tiers``'s data):
per tier and arm, pass@1, Δ against the reference arm with interval and p, pass@2,
pass^2, improved/regressed tasks, tasks fired, total cost and its change against the
reference arm.
"""

from __future__ import annotations

import pandas as pd

from fire_exp.report.render import ReportTable, fmt_ci, fmt_num, fmt_p
from fire_exp.report.tables import arm_label

__all__ = ["tiers_table"]


def _cell(value: object, fmt: str) -> str:
    return "–" if pd.isna(value) else fmt.format(value)


def tiers_table(data: pd.DataFrame, reference: str, fired: bool = True) -> ReportTable:
    """Per tier and arm, the suite metrics of each run (``data``: ``compare_tiers``);
    ``fired``: whether any arm runs a policy (else no "fired" column, as the suite table)."""
    rows, rules = [], []
    records = data.to_dict("records")
    for i, r in enumerate(records):
        planned = "" if r["delta_planned"] else "*"
        rows.append((r["tier"], arm_label(r["arm"]), fmt_num(r["pass_at_1_pct"]),
                     "–" if pd.isna(r["delta_pp"]) else
                     f"{fmt_num(r['delta_pp'])}{planned} "
                     f"{fmt_ci(r['delta_ci_low_pp'], r['delta_ci_high_pp'])}",
                     fmt_p(r["delta_p"]), fmt_num(r["pass_at_2_pct"]),
                     fmt_num(r["pass_hat_2_pct"]),
                     "–" if pd.isna(r["improved"]) else
                     f"{int(r['improved'])}/{int(r['regressed'])}",
                     *([f"{r['tasks_fired']}/{r['n_tasks']}"] if fired else []),
                     fmt_num(r["total_cost_usd"], 2),
                     "–" if r["arm"] == reference else _cell(r["cost_change_pct"],
                                                              "{:+.1f}")))
        if i + 1 == len(records) or records[i + 1]["tier"] != r["tier"]:
            rules.append(i)
    return ReportTable(
        "tiers", "Suite metrics per tier and arm (FIRE Table 5)",
        ("tier", "arm", "pass@1 %", f"Δ vs {reference}", "p", "pass@2 %", "pass^2 %",
         "impr./regr.", *(["fired"] if fired else []), "cost $", "cost Δ %"), tuple(rows),
        data, align="ll" + "r" * (9 if fired else 8), rules_after=tuple(rules),
        notes=(f"One run per tier; each tier's suite table (suite.csv in its folder). Δ vs "
               f"{reference} in points with 95 % task-bootstrap CI and sign-flip p; cost Δ: "
               f"change of total cost against {reference}.",
               "* not in the analysis plan: exploratory, not multiplicity-adjusted."))
