"""Reliability over repeated attempts (seed 003): pass^k curves, consistency, McNemar.

Per arm on the suite cohort: pass^k for k = 1..K (the analysis' ``pass_k`` rows), the
consistency ratio pass^K / pass^1, pass^1 of each replicate ("trial") and its population
standard deviation, the difference in per-task pass^K against the reference arm with a
paired task-bootstrap interval, and a pooled stratified exact McNemar test against the
reference with per-task pass^K (all K attempts passed) as the paired outcome and cohorts
as strata.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fire_exp.report.render import ReportTable, fmt_ci, fmt_int, fmt_num, fmt_p
from fire_exp.report.suite import suite_cohort
from fire_exp.report.tables import ReportInputs, arm_label
from fire_exp.stats import (
    BootstrapInterval,
    McNemarResult,
    aggregate_tasks,
    child_rng,
    mcnemar_pooled,
    paired_bootstrap,
)

__all__ = ["delta_pass_all", "per_replicate_pass1", "reliability_table", "task_pass_all",
           "versus_reference"]


def per_replicate_pass1(att: pd.DataFrame, arm: str) -> dict[int, float]:
    """pass^1 of each replicate of ``arm``: the mean over tasks of that replicate's pass."""
    g = att[att["arm"] == arm]
    return {int(r): float(x["passed"].astype(float).mean())
            for r, x in g.groupby("replicate", sort=True)}


def task_pass_all(att: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per (task, arm): whether all ``k`` attempts passed; tasks with other counts dropped."""
    agg = aggregate_tasks(att, by=("cohort", "task", "arm"))
    agg = agg[agg["attempts"] == k]
    return agg.assign(pass_all=agg["successes"] == k)[["cohort", "task", "arm", "pass_all"]]


def _paired_pass_all(att: pd.DataFrame, arm: str, reference: str, k: int) -> pd.DataFrame:
    """Per (cohort, task) with K attempts in both arms: did each arm pass all K?"""
    pa = task_pass_all(att, k)
    wide = pa[pa["arm"].isin([arm, reference])].pivot_table(
        index=["cohort", "task"], columns="arm", values="pass_all", aggfunc="first")
    if arm not in wide or reference not in wide:
        return pd.DataFrame(columns=[arm, reference])
    return wide[[arm, reference]].dropna().astype(bool)


def versus_reference(att: pd.DataFrame, arm: str, reference: str, k: int) -> McNemarResult:
    """Pooled stratified exact McNemar of per-task pass^K, ``arm`` against ``reference``.

    b counts tasks where only ``arm`` passed all K attempts, c where only ``reference``
    did, per cohort (stratum); ``mcnemar_pooled`` sums them and runs the exact test.
    """
    wide = _paired_pass_all(att, arm, reference, k)
    b, c = [], []
    for s in sorted(set(wide.index.get_level_values(0))):
        x, y = wide.loc[s, arm], wide.loc[s, reference]
        b.append(int((x & ~y).sum()))
        c.append(int((~x & y).sum()))
    return mcnemar_pooled(b or [0], c or [0])


def delta_pass_all(inp: ReportInputs, att: pd.DataFrame, arm: str, k: int,
                   cohort: str) -> BootstrapInterval | None:
    """Paired task-bootstrap interval of Δ per-task pass^K, ``arm`` minus the reference."""
    wide = _paired_pass_all(att, arm, inp.reference, k)
    if wide.empty:
        return None
    d = wide[arm].to_numpy(dtype=float) - wide[inp.reference].to_numpy(dtype=float)
    plan = inp.plan
    return paired_bootstrap({"d": d}, n_resamples=plan.bootstrap.n_resamples,
                            confidence_level=plan.bootstrap.confidence_level,
                            rng=child_rng(plan.seed, "report", "reliability", arm, cohort))["d"]


def reliability_table(inp: ReportInputs) -> ReportTable:
    """pass^k for k = 1..K, consistency, per-replicate pass^1 and spread, McNemar."""
    cohort = suite_cohort(inp)
    att = inp.cohort_attempts(cohort)
    pk = inp.result.pass_k
    pk = pk[pk["cohort"] == cohort]
    k_max = int(pk["k"].max()) if len(pk) else 1
    reps = sorted(int(r) for r in att["replicate"].unique())
    records, rows = [], []
    for arm in [a for a in inp.arms if a in set(pk["arm"])]:
        curve = pk[pk["arm"] == arm].set_index("k")
        trial = per_replicate_pass1(att, arm)
        values = np.array([trial[r] for r in reps if r in trial])
        rec: dict[str, object] = {"arm": arm, "n_tasks": int(curve["n_tasks"].iloc[0])}
        for k in range(1, k_max + 1):
            rec[f"pass_hat_{k}_pct"] = float(curve["pass_hat_k_pct"].get(k, np.nan))
        # An arm with fewer attempts on some task has a shorter curve: no pass^K to divide.
        rec["consistency"] = float(curve["consistency"].iloc[0]) \
            if int(curve.index.max()) == k_max else np.nan
        for r in reps:
            rec[f"pass1_replicate_{r}_pct"] = 100 * trial.get(r, np.nan)
        rec["pass1_pstd_pct"] = 100 * float(np.std(values, ddof=0)) if values.size else np.nan
        mc = None if arm == inp.reference else versus_reference(att, arm, inp.reference,
                                                                 k_max)
        dk = None if mc is None else delta_pass_all(inp, att, arm, k_max, cohort)
        rec.update({"delta_pass_all_pp": 100 * dk.estimate if dk else np.nan,
                    "delta_ci_low_pp": 100 * dk.ci_low if dk else np.nan,
                    "delta_ci_high_pp": 100 * dk.ci_high if dk else np.nan,
                    "mcnemar_b": mc.b if mc else np.nan, "mcnemar_c": mc.c if mc else np.nan,
                    "mcnemar_strata": mc.n_strata if mc else np.nan,
                    "mcnemar_p": mc.p_value if mc else np.nan,
                    "mcnemar_method": mc.method if mc else ""})
        records.append(rec)
        rows.append((arm_label(arm),
                     *[fmt_num(rec[f"pass_hat_{k}_pct"]) for k in range(1, k_max + 1)],
                     fmt_num(rec["consistency"], 2),
                     *[fmt_num(rec[f"pass1_replicate_{r}_pct"]) for r in reps],
                     fmt_num(rec["pass1_pstd_pct"]),
                     "–" if dk is None else f"{fmt_num(rec['delta_pass_all_pp'])} "
                     f"{fmt_ci(rec['delta_ci_low_pp'], rec['delta_ci_high_pp'])}",
                     "–" if mc is None else f"{fmt_int(mc.b)}/{fmt_int(mc.c)}",
                     fmt_p(rec["mcnemar_p"])))
    header = ("arm", *[f"pass^{k} %" for k in range(1, k_max + 1)],
              f"pass^{k_max}/pass^1", *[f"T{i + 1} %" for i in range(len(reps))],
              "σ pp", f"Δpass^{k_max} pp", "b/c", "p")
    notes = (f"{cohort} tasks. pass^k: unbiased share of tasks on which k attempts all "
             f"pass; pass^{k_max}/pass^1: consistency ratio.",
             "T1…: pass^1 of each replicate (trial); σ: their population standard deviation.",
             f"Δpass^{k_max}: share of tasks passing all {k_max} attempts, arm minus "
             f"{inp.reference}, points, with a 95 % paired task-bootstrap interval.",
             f"b/c: tasks passing all {k_max} attempts only under the arm / only under "
             f"{inp.reference}; p: exact McNemar pooled over cohort strata (per-task pass^"
             f"{k_max} as the paired outcome).")
    return ReportTable("reliability", "Reliability over repeated attempts (pass^k, seed 003)",
                       header, tuple(rows), pd.DataFrame(records), notes=notes)
