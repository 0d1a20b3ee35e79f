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

from fire_exp.analysis.suite import PassAll, Suite
from fire_exp.stats import (
    BootstrapInterval,
    McNemarResult,
    mcnemar_pooled,
)

__all__ = ["RELIABILITY_SCOPE", "reliability_columns", "reliability_frame"]

RELIABILITY_SCOPE = "reliability"


def reliability_columns(s: Suite) -> dict[str, pd.Series]:
    """Per arm but the reference: per task, pass^K of the arm minus the reference's (1, 0
    or −1), for the shared resamples."""
    table = s.pass_all
    out = {}
    for arm in s.arms:
        ok, x, y = table.paired(arm, s.reference)
        if arm != s.reference and x.size:
            out[arm] = pd.Series(x.astype(float) - y.astype(float), index=table.tasks[ok])
    return out


def _mcnemar(table: PassAll, arm: str, reference: str) -> McNemarResult:
    """b: tasks where only ``arm`` passed all K, c: only ``reference``, per cohort stratum;
    ``mcnemar_pooled`` sums them and runs the exact test."""
    ok, x, y = table.paired(arm, reference)
    strata = table.strata[ok] if ok.size else ok
    b, c = [], []
    for stratum in sorted(set(strata)):
        here = strata == stratum
        b.append(int((x & ~y)[here].sum()))
        c.append(int((~x & y)[here].sum()))
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
    hats: dict[str, dict[int, float]] = {}  # arm -> k -> pass^k (%)
    first: dict[str, tuple[int, float]] = {}  # arm -> (n_tasks, consistency) of its curve
    for arm, k, n, hat, consistency in zip(*(pk[c].tolist() for c in (
            "arm", "k", "n_tasks", "pass_hat_k_pct", "consistency")), strict=True):
        hats.setdefault(arm, {})[int(k)] = float(hat)
        first.setdefault(arm, (int(n), float(consistency)))
    reps = sorted(int(r) for r in att["replicate"].unique())
    # pass^1 of each (arm, replicate): the mean over tasks of that replicate's pass
    trials = att["passed"].astype(float).groupby([att["arm"], att["replicate"]],
                                                 observed=True, sort=True).mean()
    per_arm: dict[str, dict[int, float]] = {}
    for (arm, rep), value in trials.items():
        per_arm.setdefault(str(arm), {})[int(rep)] = float(value)
    records = []
    for arm in [a for a in s.arms if a in hats]:
        hat, (n_tasks, consistency) = hats[arm], first[arm]
        trial = per_arm.get(arm, {})
        values = np.array([trial[r] for r in reps if r in trial])
        rec: dict[str, object] = {"arm": arm, "n_tasks": n_tasks}
        for k in range(1, s.k + 1):
            rec[f"pass_hat_{k}_pct"] = hat.get(k, np.nan)
        # An arm with fewer attempts on some task has a shorter curve: no pass^K to divide.
        rec["consistency"] = consistency if max(hat) == s.k else np.nan
        for r in reps:
            rec[f"pass1_replicate_{r}_pct"] = 100 * trial.get(r, np.nan)
        rec["pass1_pstd_pct"] = 100 * float(np.std(values, ddof=0)) if values.size else np.nan
        mc = None if arm == s.reference else _mcnemar(table, arm, s.reference)
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
