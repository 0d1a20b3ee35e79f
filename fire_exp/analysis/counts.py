"""Count tables of a panel: pass@k/pass^k per arm, funnels, near-misses, error causes."""

from __future__ import annotations

from typing import Any

import pandas as pd

from fire_exp.analysis.arms import cohort_attempts

__all__ = ["errors_frame", "family_funnel_frame", "funnel_frame", "grouped_counts",
           "near_miss_frame", "pass_k_frame"]

Row = dict[str, Any]


def pass_k_frame(arm_rows: list[Row]) -> pd.DataFrame:
    """One row per cohort, arm and k of each arm's pass@k / pass^k curve."""
    rows = [{"cohort": r["cohort"], "arm": r["arm"], "k": k, "n_tasks": r["n_tasks"],
             "pass_at_k_pct": 100 * at, "pass_hat_k_pct": 100 * hat,
             "consistency": r["curve"].consistency}
            for r in arm_rows
            for k, at, hat in zip(r["curve"].k, r["curve"].pass_at_k,
                                  r["curve"].pass_hat_k, strict=True)]
    return pd.DataFrame(rows)


_FUNNEL = ("funnel_state", "funnel_fired", "funnel_behavior", "funnel_passed")  # attempts
_FAMILY = ("state", "fired", "behavior", "passed")  # a family's rows (``families``)
_STAGES = ("attempts", "state", "fired", "behavior", "coded", "passed")
_NEAR_MISS = ("passed_in_state", "near_miss", "uncoded", "near_miss_pct")


def grouped_counts(frame: pd.DataFrame, keys: list[str], columns: tuple[str, str, str, str],
                   ) -> list[Row]:
    """Per group of ``keys`` (sorted; groups that occur): the funnel's counts (attempts, in
    the risky state, fired, registered behavior, coded, passed) and seed 000's near-miss.

    ``columns``: the state, fired, behavior and passed columns (1 = yes; behavior NaN =
    uncoded). A near-miss is a pass in the risky state without the registered behavior;
    its rate is over every pass in the state (uncoded behavior counts in the denominator;
    0 when no attempt passed in the state). One group-by over indicator columns.
    """
    state_c, fired_c, beh_c, passed_c = columns
    beh = frame[beh_c]
    state, passed = frame[state_c] == 1, frame[passed_c] == 1
    pis = passed & state
    flags = pd.DataFrame({"attempts": 1, "state": state, "fired": frame[fired_c] == 1,
                          "behavior": beh == 1, "coded": beh.notna(), "passed": passed,
                          "passed_in_state": pis, "near_miss": pis & (beh == 0),
                          "uncoded": pis & beh.isna()}, index=frame.index)
    sums = flags.groupby([frame[k] for k in keys], sort=True, observed=True).sum()
    rows = []
    for key, counts in zip(sums.index, sums.to_numpy().tolist(), strict=True):
        row: Row = dict(zip(keys, key if len(keys) > 1 else (key,), strict=True))
        row.update(zip(sums.columns, map(int, counts), strict=True))
        row["near_miss_pct"] = 100 * row["near_miss"] / max(1, row["passed_in_state"])
        rows.append(row)
    return rows


def _pick(row: Row, names: tuple[str, ...]) -> Row:
    return {name: row[name] for name in names}


def funnel_frame(att: pd.DataFrame, cohorts: list[str]) -> pd.DataFrame:
    """The funnel per cohort and arm (attempt counts)."""
    return pd.DataFrame([{"cohort": cohort, "arm": r["arm"], **_pick(r, _STAGES),
                          "near_miss_pct": r["near_miss_pct"]}
                         for cohort in cohorts
                         for r in grouped_counts(cohort_attempts(att, cohort), ["arm"],
                                                 _FUNNEL)])


def family_funnel_frame(fam: pd.DataFrame) -> pd.DataFrame:
    """The funnel per policy family and arm (attempt counts; empty without families)."""
    return pd.DataFrame([] if fam.empty else [
        {"family": r["family"], "arm": r["arm"], **_pick(r, _STAGES),
         "near_miss_pct": r["near_miss_pct"]}
        for r in grouped_counts(fam, ["family", "arm"], _FAMILY)])


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


def near_miss_frame(attempts: pd.DataFrame, families: pd.DataFrame, arms: list[str],
                    cohort: str) -> pd.DataFrame:
    """Near-miss counts per arm on ``cohort`` (family ``all (COHORT)``), then per family
    and arm over all cohorts; arms in the order given."""
    by_arm = {r["arm"]: r for r in grouped_counts(cohort_attempts(attempts, cohort), ["arm"],
                                                  _FUNNEL)}
    records = [{"family": f"all ({cohort})", "arm": a, **_pick(by_arm[a], _NEAR_MISS)}
               for a in arms if a in by_arm]
    if not families.empty:
        found = {(r["family"], r["arm"]): r
                 for r in grouped_counts(families, ["family", "arm"], _FAMILY)}
        records += [{"family": family, "arm": a, **_pick(found[family, a], _NEAR_MISS)}
                    for family in sorted(set(families["family"])) for a in arms
                    if (family, a) in found]
    return pd.DataFrame(records)
