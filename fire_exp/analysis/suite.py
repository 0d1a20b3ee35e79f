"""Suite metrics per arm against the reference arm (FIRE Tables 5–8).

``suite_frame``: per arm on the suite cohort, pass@1 with its interval, Δ against the
reference arm, pass@2 and pass^2, terminations, cost and time. A Δ the plan lists is
taken from the plan's contrasts; one it does not list is computed with the same engine
(its interval from the analysis's shared resamples, scope ``suite``; its sign-flip p on a
child stream keyed ``("report", "suite", contrast, "signflip", cohort)``) and is marked
exploratory (``delta_planned`` false). ``suite_transitions_frame``: tasks by
successes out of K under the reference and under each arm. ``tasks_frame``: every task
under every arm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.records import TIMEOUT_CAUSES
from fire_exp.stats import (
    BootstrapInterval,
    CohortAggregates,
    child_rng,
    improvement_counts,
    sign_flip_test,
    task_matrices,
    task_matrix,
    transition_counts,
    transition_labels,
)

__all__ = ["SUITE_SCOPE", "PassAll", "Suite", "suite_columns", "suite_frame",
           "suite_transitions_frame", "tasks_frame"]

SUITE_SCOPE = "suite"


class PassAll:
    """Per (cohort, task) of the suite cohort, each arm's 1.0 (passed all K attempts), 0.0,
    or NaN (fewer than K attempts), as arrays over the rows of ``table`` (index
    (cohort, task), one column per arm)."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.columns = {str(arm): table[arm].to_numpy(dtype=float) for arm in table.columns}
        self.strata = table.index.get_level_values(0).to_numpy()
        self.tasks = table.index.get_level_values("task")

    def paired(self, arm: str, reference: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows with K attempts in both arms: (their mask, arm passed all, reference did)."""
        if arm not in self.columns or reference not in self.columns:
            none = np.zeros(0, dtype=bool)
            return none, none, none
        x, y = self.columns[arm], self.columns[reference]
        ok = ~np.isnan(x) & ~np.isnan(y)
        return ok, x[ok].astype(bool), y[ok].astype(bool)



@dataclass(frozen=True)
class Suite:
    """What the suite tables are computed from.

    Attributes:
        plan: the analysis plan.
        attempts: the scored attempts of the suite cohort.
        arms: the arms present, in the paper's order.
        reference: the arm the others are compared with.
        cohort: the suite cohort's name.
        k: attempts per task and arm (the one K of every table).
        aggregates: the analysis's per-cohort aggregates (every attempt, grouped once).
    """

    plan: AnalysisPlan
    attempts: pd.DataFrame
    arms: list[str]
    reference: str
    cohort: str
    k: int
    aggregates: CohortAggregates

    @cached_property
    def tasks(self) -> pd.DataFrame:
        """Per (task, arm) aggregates of the suite cohort."""
        return self.aggregates.of(self.cohort)

    @cached_property
    def pass_all(self) -> PassAll:
        """Per (cohort, task), per arm: passed all K attempts, or not, or fewer than K
        attempts (computed once)."""
        agg = self.aggregates.rows_of(self.cohort)
        agg = agg[agg["attempts"] == self.k]
        pa = agg.assign(pass_all=(agg["successes"] == self.k).astype(float))
        return PassAll(pa.pivot_table(index=["cohort", "task"], columns="arm",
                                      values="pass_all", aggfunc="first"))


def _paired_rates(s: Suite, arm: str) -> tuple[pd.Index, np.ndarray]:
    """Tasks with both ``arm`` and the reference, and their pass rates (arm, reference)."""
    tasks, rate = task_matrix(s.tasks, "pass_rate", [arm, s.reference])
    ok = ~np.isnan(rate).any(axis=1)
    return pd.Index(tasks)[ok], rate[ok]


def suite_columns(s: Suite, planned: set[str]) -> dict[str, pd.Series]:
    """The per-task differences of the exploratory Δs (``arm - reference`` contrasts the
    plan does not list on the suite cohort), for the shared resamples."""
    out = {}
    for arm in s.arms:
        name = f"{arm} - {s.reference}"
        if arm == s.reference or name in planned or arm not in set(s.tasks["arm"].unique()):
            continue
        tasks, rate = _paired_rates(s, arm)
        out[name] = pd.Series(rate[:, 0] - rate[:, 1], index=tasks)
    return out


def _delta(s: Suite, planned: Mapping[str, dict[str, Any]], arm: str,
           boot: Mapping[str, BootstrapInterval]) -> dict[str, object]:
    """The plan's contrast ``arm - reference`` if it has one (``planned``: the suite
    cohort's contrast rows by name), else an exploratory one."""
    name = f"{arm} - {s.reference}"
    r = planned.get(name)
    if r is not None:
        return {"delta_pp": r["estimate_pp"], "delta_ci_low_pp": r["ci_low_pp"],
                "delta_ci_high_pp": r["ci_high_pp"], "delta_p": r["p_value"],
                "delta_p_method": r["p_method"], "delta_planned": True,
                "improved": int(r["improved"]), "regressed": int(r["regressed"])}
    bi = boot.get(name)
    if bi is None:  # no task has both arms
        return _NO_DELTA | {"delta_planned": False}
    _, rate = _paired_rates(s, arm)
    d = rate[:, 0] - rate[:, 1]
    plan = s.plan
    sf = sign_flip_test(d, n_resamples=plan.permutation.n_resamples,
                        max_enumeration=plan.permutation.max_enumeration,
                        method=plan.permutation.method,
                        rng=child_rng(plan.seed, "report", "suite", name, "signflip", s.cohort))
    ic = improvement_counts(rate[:, 0], rate[:, 1])
    return {"delta_pp": 100 * sf.statistic, "delta_ci_low_pp": 100 * bi.ci_low,
            "delta_ci_high_pp": 100 * bi.ci_high, "delta_p": sf.p_value,
            "delta_p_method": sf.method, "delta_planned": False,
            "improved": ic.improved, "regressed": ic.regressed}


_NO_DELTA = {"delta_pp": np.nan, "delta_ci_low_pp": np.nan, "delta_ci_high_pp": np.nan,
             "delta_p": np.nan, "delta_p_method": "", "delta_planned": True,
             "improved": np.nan, "regressed": np.nan}


def _rows_by(frame: pd.DataFrame, cohort: str, key: str) -> dict[str, dict[str, Any]]:
    """The rows of ``cohort`` in ``frame``, by their ``key`` column (first row wins)."""
    rows: dict[str, dict[str, Any]] = {}
    for row in frame[frame["cohort"] == cohort].to_dict("records"):
        rows.setdefault(str(row[key]), row)
    return rows


def suite_frame(s: Suite, pass_rates: pd.DataFrame, cost: pd.DataFrame,
                contrasts: pd.DataFrame, pass_k: pd.DataFrame,
                boot: Mapping[str, BootstrapInterval]) -> pd.DataFrame:
    """Per arm: pass@1 with CI, Δ vs reference, pass@2, pass^2, terminations, cost, time.

    ``boot``: the intervals of ``suite_columns`` (the analysis's scope ``suite``)."""
    pr, costs = _rows_by(pass_rates, s.cohort, "arm"), _rows_by(cost, s.cohort, "arm")
    planned = _rows_by(contrasts, s.cohort, "contrast") if len(contrasts) else {}
    two = pass_k[(pass_k["cohort"] == s.cohort) & (pass_k["k"] == 2)]
    at_hat_2 = {arm: (float(at), float(hat)) for arm, at, hat in zip(
        two["arm"].tolist(), two["pass_at_k_pct"].tolist(), two["pass_hat_k_pct"].tolist(),
        strict=True)}
    # Per attempt of the suite cohort, as arrays: each arm's counts are masks over them.
    att = s.attempts
    of_arm, task = att["arm"].to_numpy(), att["task"].to_numpy()
    fired = att["funnel_fired"].to_numpy() == 1
    gave_up = att["gave_up"].to_numpy(dtype=bool)
    timeout = att["cause"].isin(TIMEOUT_CAUSES).to_numpy(dtype=bool)
    crash = ((att["cause"] != "") & ~att["cause"].isin(TIMEOUT_CAUSES)).to_numpy(
        dtype=bool, na_value=False)
    records = []
    for arm in [a for a in s.arms if a in pr]:
        mine = of_arm == arm
        r = pr[arm]
        delta = _NO_DELTA if arm == s.reference else _delta(s, planned, arm, boot)
        at2, hat2 = at_hat_2.get(arm, (float("nan"), float("nan")))
        records.append({
            "arm": arm, "n_tasks": int(r["n_tasks"]), "attempts": int(r["attempts"]),
            "pass_at_1_pct": r["pass_rate_pct"], "ci_low_pct": r["ci_low_pct"],
            "ci_high_pct": r["ci_high_pct"],
            **{k: delta[k] for k in ("delta_pp", "delta_ci_low_pp", "delta_ci_high_pp",
                                     "delta_p", "delta_p_method", "delta_planned")},
            "pass_at_2_pct": at2, "pass_hat_2_pct": hat2,
            "improved": delta["improved"], "regressed": delta["regressed"],
            "tasks_fired": len(set(task[mine & fired])),
            "gave_up": int(gave_up[mine].sum()),
            "timeouts": int(timeout[mine].sum()),
            "crashes": int(crash[mine].sum()),
            "total_cost_usd": float(costs[arm]["total_cost_usd"]),
            "mean_agent_seconds": float(costs[arm]["mean_agent_seconds"])})
    return pd.DataFrame(records)


def suite_transitions_frame(s: Suite) -> tuple[pd.DataFrame, int]:
    """Per arm: tasks by successes out of K under the reference (``from``) and the arm
    (columns ``0/K`` … ``K/K``); returns the frame and the most tasks left out of an arm
    for lacking K attempts in one of the two arms."""
    labels = transition_labels(s.k)
    agg = s.tasks
    blocks, left_out = [], 0
    for arm in [a for a in s.arms if a != s.reference]:
        _, (succ, n) = task_matrices(agg, ("successes", "attempts"), [s.reference, arm])
        full = (n[:, 0] == s.k) & (n[:, 1] == s.k)
        left_out = max(left_out, int((~full).sum()))
        counts = transition_counts(succ[full, 0], succ[full, 1], s.k)
        blocks += [{"arm": arm, "reference": s.reference, "from": label,
                    **{c: int(n) for c, n in zip(labels, row, strict=True)}}
                   for label, row in zip(labels, counts, strict=True)]
    return pd.DataFrame(blocks), left_out


def tasks_frame(aggregates: CohortAggregates) -> pd.DataFrame:
    """Every (cohort, task, arm): attempts, successes, pass rate, cost and agent time."""
    agg = aggregates.by_cohort
    return agg[["cohort", "task", "arm", "attempts", "successes", "pass_rate", "cost_usd",
                "agent_seconds"]].reset_index(drop=True)
