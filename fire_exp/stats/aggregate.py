"""Per (task, arm) aggregates of a tidy attempts frame: the task is the unit of analysis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["CohortAggregates", "aggregate_tasks", "task_matrices", "task_matrix"]

_REQUIRED = ("task", "arm", "passed", "reward")


def _aggregate_iv(frame: pd.DataFrame) -> None:
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"the attempts frame lacks columns {missing}")


def aggregate_tasks(frame: pd.DataFrame, by: Sequence[str] = ("task", "arm")) -> pd.DataFrame:
    """One row per (task, arm): attempts, successes, pass rate, mean reward, cost, time.

    Args:
        frame: one row per scored attempt with columns ``task``, ``arm``, ``passed``,
            ``reward`` and optionally ``cost_usd``, ``agent_seconds``.
        by: grouping columns.

    Returns:
        Rows sorted by ``by`` with ``attempts``, ``successes``, ``pass_rate``,
        ``mean_reward``, ``cost_usd`` (sum), ``agent_seconds`` (sum).

    >>> f = pd.DataFrame({"task": ["t", "t"], "arm": ["a", "a"], "passed": [True, False],
    ...                   "reward": [1.0, 0.0]})
    >>> aggregate_tasks(f)[["attempts", "successes", "pass_rate"]].to_numpy().tolist()
    [[2.0, 1.0, 0.5]]
    """
    _aggregate_iv(frame)
    work = frame.assign(
        _passed=frame["passed"].astype(float),
        _reward=frame["reward"].astype(float),
        _cost=frame["cost_usd"].astype(float) if "cost_usd" in frame else 0.0,
        _time=frame["agent_seconds"].astype(float) if "agent_seconds" in frame else 0.0)
    g = work.groupby(list(by), sort=True, observed=True)
    out = pd.DataFrame({
        "attempts": g.size().astype(float),
        "successes": g["_passed"].sum(),
        "mean_reward": g["_reward"].mean(),
        "cost_usd": g["_cost"].sum(),
        "agent_seconds": g["_time"].sum(),
    }).reset_index()
    out.insert(len(by) + 2, "pass_rate", out["successes"] / out["attempts"])
    return out


class CohortAggregates:
    """``aggregate_tasks`` of each cohort of one attempts frame, grouped once.

    Group sums run over the same rows in the same order as grouping each cohort's attempts
    alone, so every aggregate is the same number.

    Args:
        attempts: scored attempts with a ``cohort`` column.
    """

    def __init__(self, attempts: pd.DataFrame) -> None:
        self._attempts = attempts
        self.by_cohort = aggregate_tasks(attempts, by=("cohort", "task", "arm"))
        """One row per (cohort, task, arm)."""
        self._of: dict[str, pd.DataFrame] = {}

    def rows_of(self, cohort: str) -> pd.DataFrame:
        """The (cohort, task, arm) rows of one cohort (``all``: every row)."""
        agg = self.by_cohort
        return agg if cohort == "all" else agg[agg["cohort"] == cohort]

    def of(self, cohort: str) -> pd.DataFrame:
        """One row per (task, arm) of a cohort's attempts (``all``: of every attempt), as
        ``aggregate_tasks`` gives them (computed once per cohort)."""
        if cohort not in self._of:
            agg = self.rows_of(cohort)
            if cohort == "all":
                agg = agg.sort_values(["task", "arm"], kind="stable")
            if cohort == "all" and agg.duplicated(["task", "arm"]).any():
                self._of[cohort] = aggregate_tasks(self._attempts)  # a task in two cohorts
            else:
                self._of[cohort] = agg.drop(columns="cohort").reset_index(drop=True)
        return self._of[cohort]


def task_matrix(agg: pd.DataFrame, value: str, arms: Sequence[str],
                tasks: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Pivot aggregates to a T x arms matrix of ``value`` (NaN where a task lacks an arm).

    >>> agg = pd.DataFrame({"task": ["t1", "t1", "t2"], "arm": ["a", "b", "a"],
    ...                     "pass_rate": [1.0, 0.5, 0.0]})
    >>> task_matrix(agg, "pass_rate", ["a", "b"])[1].tolist()
    [[1.0, 0.5], [0.0, nan]]
    """
    order, (out,) = task_matrices(agg, (value,), arms, tasks)
    return order, out


def task_matrices(agg: pd.DataFrame, values: Sequence[str], arms: Sequence[str],
                  tasks: Sequence[str] | None = None) -> tuple[list[str], list[np.ndarray]]:
    """``task_matrix`` of several values, placing the aggregates' rows once."""
    task_col, arm_col = agg["task"], agg["arm"]
    if tasks is None:
        order = sorted(set(task_col.unique().tolist()))
    else:
        order = list(tasks)
    # Index lookups instead of DataFrame.pivot: this runs dozens of times per analysis.
    rows = pd.Index(order).get_indexer(task_col)
    cols = pd.Index(list(arms)).get_indexer(arm_col)
    keep = (rows >= 0) & (cols >= 0)
    cells = rows[keep].astype(np.int64) * len(arms) + cols[keep]
    if cells.size and np.bincount(cells).max() > 1:
        raise ValueError("the aggregates hold a (task, arm) twice")
    found = []
    for value in values:
        out = np.full((len(order), len(arms)), np.nan)
        out[rows[keep], cols[keep]] = agg[value].to_numpy(dtype=float)[keep]
        found.append(out)
    return order, found
