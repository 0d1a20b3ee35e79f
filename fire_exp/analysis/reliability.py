"""Reliability over repeated attempts (seed 003): pass^k curves, consistency, McNemar.

Per arm on the suite cohort: pass^k for k = 1..K (the ``pass_k`` rows), the consistency
ratio pass^K / pass^1, pass^1 of each replicate ("trial") and its population standard
deviation, the difference in per-task pass^K against the reference arm with a paired
task-bootstrap interval (from the analysis's shared resamples, scope ``reliability``), and a pooled
exact McNemar test against the reference with per-task pass^K (all K attempts passed)
as the paired outcome and cohorts as strata.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fire_exp.analysis.suite import Suite
from fire_exp.stats import (
    BootstrapInterval,
    McNemarResult,
    mcnemar_pooled,
)

__all__ = ["RELIABILITY_SCOPE", "reliability_columns", "reliability_frame"]

RELIABILITY_SCOPE = "reliability"


def _per_replicate_pass1(att: pd.DataFrame, arm: str) -> dict[int, float]:
    """pass^1 of each replicate of ``arm``: the mean over tasks of that replicate's pass."""
    g = att[att["arm"] == arm]
    return {int(r): float(x["passed"].astype(float).mean())
            for r, x in g.groupby("replicate", sort=True)}


def _paired_pass_all(table: pd.DataFrame, arm: str, reference: str) -> pd.DataFrame:
    """Per (cohort, task) with K attempts in both arms: did each arm pass all K?"""
    if arm not in table or reference not in table:
        return pd.DataFrame(columns=[arm, reference])
    return table[[arm, reference]].dropna().astype(bool)


def reliability_columns(s: Suite) -> dict[str, pd.Series]:
    """Per arm but the reference: per task, pass^K of the arm minus the reference's (1, 0
    or −1), for the shared resamples."""
    table = s.pass_all
    out = {}
    for arm in s.arms:
        wide = _paired_pass_all(table, arm, s.reference)
        if arm != s.reference and not wide.empty:
            d = wide[arm].to_numpy(dtype=float) - wide[s.reference].to_numpy(dtype=float)
            out[arm] = pd.Series(d, index=wide.index.get_level_values("task"))
    return out


def _mcnemar(wide: pd.DataFrame, arm: str, reference: str) -> McNemarResult:
    """b: tasks where only ``arm`` passed all K, c: only ``reference``, per cohort stratum;
    ``mcnemar_pooled`` sums them and runs the exact test."""
    b, c = [], []
    for stratum in sorted(set(wide.index.get_level_values(0))):
        x, y = wide.loc[stratum, arm], wide.loc[stratum, reference]
        b.append(int((x & ~y).sum()))
        c.append(int((~x & y).sum()))
    return mcnemar_pooled(b or [0], c or [0])


def reliability_frame(s: Suite, pass_k: pd.DataFrame,
                      boot: Mapping[str, BootstrapInterval]) -> pd.DataFrame:
    """Per arm: pass^k for k = 1..K, consistency, per-replicate pass^1 and spread,
    Δpass^K against the reference with its interval, McNemar b, c, strata and p.

    ``boot``: the intervals of ``reliability_columns`` (the analysis's scope
    ``reliability``)."""
    att = s.attempts
    table = s.pass_all
    pk = pass_k[pass_k["cohort"] == s.cohort]
    reps = sorted(int(r) for r in att["replicate"].unique())
    records = []
    for arm in [a for a in s.arms if a in set(pk["arm"])]:
        curve = pk[pk["arm"] == arm].set_index("k")
        trial = _per_replicate_pass1(att, arm)
        values = np.array([trial[r] for r in reps if r in trial])
        rec: dict[str, object] = {"arm": arm, "n_tasks": int(curve["n_tasks"].iloc[0])}
        for k in range(1, s.k + 1):
            rec[f"pass_hat_{k}_pct"] = float(curve["pass_hat_k_pct"].get(k, np.nan))
        # An arm with fewer attempts on some task has a shorter curve: no pass^K to divide.
        rec["consistency"] = float(curve["consistency"].iloc[0]) \
            if int(curve.index.max()) == s.k else np.nan
        for r in reps:
            rec[f"pass1_replicate_{r}_pct"] = 100 * trial.get(r, np.nan)
        rec["pass1_pstd_pct"] = 100 * float(np.std(values, ddof=0)) if values.size else np.nan
        wide = None if arm == s.reference else _paired_pass_all(table, arm, s.reference)
        mc = None if wide is None else _mcnemar(wide, arm, s.reference)
        dk = boot.get(arm)
        rec.update({"delta_pass_all_pp": 100 * dk.estimate if dk else np.nan,
                    "delta_ci_low_pp": 100 * dk.ci_low if dk else np.nan,
                    "delta_ci_high_pp": 100 * dk.ci_high if dk else np.nan,
                    "mcnemar_b": mc.b if mc else np.nan, "mcnemar_c": mc.c if mc else np.nan,
                    "mcnemar_strata": mc.n_strata if mc else np.nan,
                    "mcnemar_p": mc.p_value if mc else np.nan,
                    "mcnemar_method": mc.method if mc else ""})
        records.append(rec)
    return pd.DataFrame(records)
