"""Count tables of a panel: pass@k/pass^k per arm, funnels, near-misses, error causes."""

from __future__ import annotations

from typing import Any

import pandas as pd

from fire_exp.analysis.arms import cohort_attempts

__all__ = ["errors_frame", "funnel_frames", "near_miss_counts", "near_miss_frame",
           "pass_k_frame"]

Row = dict[str, Any]


def pass_k_frame(arm_rows: list[Row]) -> pd.DataFrame:
    """One row per cohort, arm and k of each arm's pass@k / pass^k curve."""
    rows = [{"cohort": r["cohort"], "arm": r["arm"], "k": k, "n_tasks": r["n_tasks"],
             "pass_at_k_pct": 100 * at, "pass_hat_k_pct": 100 * hat,
             "consistency": r["_curve"].consistency}
            for r in arm_rows
            for k, at, hat in zip(r["_curve"].k, r["_curve"].pass_at_k,
                                  r["_curve"].pass_hat_k, strict=True)]
    return pd.DataFrame(rows)


def funnel_frames(att: pd.DataFrame, fam: pd.DataFrame, cohorts: list[str],
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The funnel per cohort and arm, and per family and arm (attempt counts)."""
    def counts(g: pd.DataFrame, state: str, fired: str, beh: str, passed: str) -> Row:
        return {"attempts": len(g), "state": int((g[state] == 1).sum()),
                "fired": int((g[fired] == 1).sum()), "behavior": int((g[beh] == 1).sum()),
                "coded": int(g[beh].notna().sum()), "passed": int((g[passed] == 1).sum()),
                "near_miss_pct": near_miss_counts(g, state, beh, passed)["near_miss_pct"]}
    rows = []
    for cohort in cohorts:
        sub = cohort_attempts(att, cohort)
        for arm, g in sub.groupby("arm", sort=True):
            rows.append({"cohort": cohort, "arm": arm, **counts(
                g, "funnel_state", "funnel_fired", "funnel_behavior", "funnel_passed")})
    fam_rows = [{"family": f, "arm": arm, **counts(g, "state", "fired", "behavior", "passed")}
                for (f, arm), g in fam.groupby(["family", "arm"], sort=True)]
    return pd.DataFrame(rows), pd.DataFrame(fam_rows)


def errors_frame(att: pd.DataFrame, superseded: pd.DataFrame) -> pd.DataFrame:
    """Per arm: scored attempts, infrastructure failures, replaced records and causes.

    Cause counts cover every record, the replaced ones included, so a treatment that
    provokes provider or environment failures shows here even when recovery replaced them.
    """
    rows = []
    for arm, g in att.groupby("arm", sort=True):
        dropped = superseded[superseded["arm"] == arm]
        causes = pd.concat([g["cause"], dropped["cause"]])
        row = {"arm": arm, "attempts": len(g),
               "infrastructure_failures": int(g["infrastructure_failure"].sum()),
               "infrastructure_failure_pct": 100 * float(g["infrastructure_failure"].mean()),
               "no_fair_attempt": int(g["no_fair_attempt"].sum()),
               "replaced_records": len(dropped), "gave_up": int(g["gave_up"].sum())}
        for cause, n in causes[causes != ""].value_counts().sort_index().items():
            row[f"cause:{cause}"] = int(n)
        rows.append(row)
    return pd.DataFrame(rows).fillna(0)


def near_miss_counts(g: pd.DataFrame, state: str, beh: str, passed: str) -> dict[str, float]:
    """Seed 000's near-miss among attempts ``g``: passes in the risky state without the
    registered behavior, over every pass in the risky state (uncoded behavior counts in
    the denominator; the rate is 0 when no attempt passed in the state)."""
    pis = (g[passed] == 1) & (g[state] == 1)
    near = int((pis & (g[beh] == 0)).sum())
    n = int(pis.sum())
    return {"passed_in_state": n, "near_miss": near,
            "uncoded": int((pis & g[beh].isna()).sum()),
            "near_miss_pct": 100 * near / max(1, n)}


def near_miss_frame(attempts: pd.DataFrame, families: pd.DataFrame, arms: list[str],
                    cohort: str) -> pd.DataFrame:
    """Near-miss counts per arm on ``cohort`` (family ``all (COHORT)``), then per family
    and arm over all cohorts; arms in the order given."""
    att = cohort_attempts(attempts, cohort)
    records = [{"family": f"all ({cohort})", "arm": a, **near_miss_counts(
        att[att["arm"] == a], "funnel_state", "funnel_behavior", "funnel_passed")}
        for a in arms if (att["arm"] == a).any()]
    for family in sorted(set(families["family"])) if not families.empty else []:
        for a in arms:
            g = families[(families["family"] == family) & (families["arm"] == a)]
            if len(g):
                records.append({"family": family, "arm": a,
                                **near_miss_counts(g, "state", "behavior", "passed")})
    return pd.DataFrame(records)
