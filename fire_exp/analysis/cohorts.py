"""Each cohort's task matrices, and the contrast and per-arm rows computed from them.

A cohort of the plan (``eligible``, ``silent``, ``all``) is read once into per-task
matrices (``CohortMatrices``: tasks x arms of pass rate, successes and attempts); the
contrast, transition, pass-rate, cost and pass@k tables are built from them. A contrast's
row holds its sign-flip test, paired t interval and counts; its percentile interval is
added from the analysis's shared resamples (``with_interval``), so the rows are made in two
steps: what needs no resample, then the interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan, parse_contrast
from fire_exp.stats import (
    BootstrapInterval,
    CohortAggregates,
    child_rng,
    holm,
    improvement_counts,
    paired_t_interval,
    pass_curve,
    sign_flip_test,
    task_matrices,
    transition_counts,
    transition_labels,
)

__all__ = ["CONTRAST_LEADING_COLUMNS", "CohortMatrices", "Transitions", "arm_rows",
           "cohort_matrices", "contrast_frame", "contrast_rows", "contrast_transitions",
           "transitions_frame", "with_interval"]

CONTRAST_LEADING_COLUMNS = ["contrast", "cohort", "n_tasks", "estimate_pp", "ci_low_pp",
                            "ci_high_pp", "p_value", "p_method"]
Row = dict[str, Any]
_SMALL = 30  # below this many tasks percentile intervals under-cover: read the t interval


@dataclass(frozen=True)
class CohortMatrices:
    """One cohort's per-task aggregates and the contrasts it can estimate.

    Attributes:
        name: the cohort.
        scope: where its columns sit in the shared resamples (``primary:eligible``,
            ``sensitivity:all``).
        keys: the random streams' keys of its tests (``()`` or ``("sensitivity",)``).
        agg: its (task, arm) aggregates.
        arms: the arms present, sorted.
        usable: the plan's contrasts it can estimate (both arms on some task).
        tasks: the rows of the matrices below.
        rate: tasks x arms pass rate (NaN: no attempt).
        successes: tasks x arms successes.
        attempts: tasks x arms attempts.
        cost: tasks x arms cost in USD.
    """

    name: str
    scope: str
    keys: tuple[str, ...]
    agg: pd.DataFrame
    arms: list[str]
    usable: list[str]
    tasks: pd.Index
    rate: np.ndarray
    successes: np.ndarray
    attempts: np.ndarray
    cost: np.ndarray

    def difference(self, contrast: str) -> np.ndarray:
        """Per task, A's pass rate minus B's (NaN where either has no attempt)."""
        a, b = parse_contrast(contrast)
        diff: np.ndarray = self.rate[:, self.arms.index(a)] - self.rate[:, self.arms.index(b)]
        return diff

    def contrast_columns(self) -> dict[str, pd.Series]:
        """``contrast:NAME`` -> per-task difference, for the shared resamples."""
        return {f"contrast:{name}": pd.Series(self.difference(name), index=self.tasks)
                for name in self.usable}

    def arm_columns(self) -> dict[str, pd.Series]:
        """``arm:NAME`` -> per-task pass rate, for the shared resamples."""
        return {f"arm:{arm}": pd.Series(self.rate[:, i], index=self.tasks)
                for i, arm in enumerate(self.arms)}

    def cost_ratios(self) -> dict[str, tuple[pd.Series, pd.Series]]:
        """``cost:NAME`` -> per-task (cost, successes): cost per success as a ratio of sums."""
        return {f"cost:{arm}": (pd.Series(np.nan_to_num(self.cost[:, i]), index=self.tasks),
                                pd.Series(np.nan_to_num(self.successes[:, i]),
                                          index=self.tasks))
                for i, arm in enumerate(self.arms)}


def cohort_matrices(plan: AnalysisPlan, aggs: CohortAggregates, keys: tuple[str, ...],
                    notes: list[str]) -> list[CohortMatrices]:
    """Every cohort of the plan that has attempts, in the plan's order; what is skipped
    (a cohort without attempts, a contrast without its arms) is said in ``notes``."""
    found = []
    for cohort in plan.cohorts:
        agg = aggs.of(cohort)
        if agg.empty:
            notes.append(f"cohort '{cohort}': no attempts; skipped")
            continue
        arms = sorted(agg["arm"].unique())
        tasks, (rate, cost, succ, n) = task_matrices(
            agg, ("pass_rate", "cost_usd", "successes", "attempts"), arms)
        usable = []
        for name in plan.contrasts:
            a, b = parse_contrast(name)
            if a not in arms or b not in arms:
                notes.append(f"contrast '{name}' on '{cohort}': arm(s) "
                             f"{[x for x in (a, b) if x not in arms]} absent; skipped")
                continue
            if np.all(np.isnan(rate[:, arms.index(a)] - rate[:, arms.index(b)])):
                notes.append(f"contrast '{name}' on '{cohort}': no task has both arms; "
                             "skipped")
                continue
            usable.append(name)
        scope = f"{'/'.join(keys) or 'primary'}:{cohort}"
        found.append(CohortMatrices(cohort, scope, keys, agg, arms, usable, pd.Index(tasks),
                                    rate, succ, n, cost))
    return found


def _role(plan: AnalysisPlan, contrast: str, cohort: str) -> str:
    if contrast == plan.primary.contrast:
        return "primary" if cohort == plan.primary.cohort else "supportive"
    return "secondary"


def _pair(c: CohortMatrices, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
    """A contrast's (rate, successes, attempts) columns (A, B) and its tasks with both."""
    a, b = parse_contrast(name)
    pick = [c.arms.index(a), c.arms.index(b)]
    rate = c.rate[:, pick]
    return rate, c.successes[:, pick], c.attempts[:, pick], ~np.isnan(rate).any(axis=1)


def _contrast_row(plan: AnalysisPlan, name: str, c: CohortMatrices) -> Row:
    """A contrast's row without its bootstrap interval (``with_interval`` adds it)."""
    rate, _, _, ok = _pair(c, name)
    d = rate[ok, 0] - rate[ok, 1]
    sf = sign_flip_test(d, n_resamples=plan.permutation.n_resamples,
                        max_enumeration=plan.permutation.max_enumeration,
                        method=plan.permutation.method,
                        rng=child_rng(plan.seed, *c.keys, name, "signflip", c.name))
    ti = paired_t_interval(d, plan.bootstrap.confidence_level)
    ic = improvement_counts(rate[ok, 0], rate[ok, 1])
    flags = [s for s in (sf.method == "degenerate" and "no non-zero difference",
                         d.size < _SMALL and f"fewer than {_SMALL} tasks: read t interval")
             if s]
    return {"contrast": name, "cohort": c.name, "n_tasks": int(d.size),
            "estimate_pp": 100 * sf.statistic, "ci_low_pp": np.nan,
            "ci_high_pp": np.nan, "p_value": sf.p_value, "p_method": sf.method,
            "role": _role(plan, name, c.name), "p_holm": np.nan, "p_mc_se": sf.mc_se,
            "p_resamples": sf.n_resamples, "n_nonzero": sf.n_nonzero,
            "min_attainable_p": sf.min_attainable_p, "ci_method": "",
            "n_resamples": 0, "ci_mc_error_pp": np.nan,
            "t_ci_low_pp": 100 * ti.ci_low, "t_ci_high_pp": 100 * ti.ci_high,
            "improved": ic.improved, "regressed": ic.regressed, "tied": ic.tied,
            "pass_a_pct": 100 * float(np.mean(rate[ok, 0])),
            "pass_b_pct": 100 * float(np.mean(rate[ok, 1])), "flag": "; ".join(flags)}


def contrast_rows(plan: AnalysisPlan, c: CohortMatrices) -> list[Row]:
    """A cohort's contrast rows before their intervals, Holm-adjusted over its secondary
    contrasts."""
    rows = [_contrast_row(plan, name, c) for name in c.usable]
    secondary = [r for r in rows if r["role"] == "secondary"]
    if secondary and plan.multiplicity.method == "holm":
        for r, p in zip(secondary, holm([r["p_value"] for r in secondary]), strict=True):
            r["p_holm"] = float(p)
    return rows


def with_interval(row: Row, bi: BootstrapInterval) -> Row:
    """A contrast row with its bootstrap interval (the first flag names a degenerate one)."""
    flags = [f for f in ("degenerate bootstrap" if bi.method == "degenerate" else "",
                         str(row["flag"])) if f]
    return {**row, "ci_low_pp": 100 * bi.ci_low, "ci_high_pp": 100 * bi.ci_high,
            "ci_method": bi.method, "n_resamples": bi.n_resamples,
            "ci_mc_error_pp": 100 * bi.mc_error, "flag": "; ".join(flags)}


def contrast_frame(rows: list[Row]) -> pd.DataFrame:
    """Contrast rows as a frame, the leading columns first."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=CONTRAST_LEADING_COLUMNS)
    rest = [c for c in frame.columns if c not in CONTRAST_LEADING_COLUMNS]
    return frame[CONTRAST_LEADING_COLUMNS + rest]


@dataclass(frozen=True)
class Transitions:
    """A contrast's transition counts in long form, one entry per (comparator, arm) cell,
    row by row."""

    contrast: str
    cohort: str
    comparator: np.ndarray
    arm: np.ndarray
    n_tasks: np.ndarray


def contrast_transitions(c: CohortMatrices, name: str, k: int) -> Transitions:
    """Tasks with K attempts under both arms, by successes under B and under A."""
    _, succ, n, ok = _pair(c, name)
    full = ok & (n[:, 0] == k) & (n[:, 1] == k)
    counts = transition_counts(succ[full, 1], succ[full, 0], k)
    labels = np.array(transition_labels(k), dtype=object)
    return Transitions(name, c.name, np.repeat(labels, k + 1), np.tile(labels, k + 1),
                       counts.ravel())


def transitions_frame(parts: list[Transitions]) -> pd.DataFrame:
    """Every contrast's transitions in one frame (built once, not concatenated)."""
    if not parts:
        return pd.DataFrame()
    sizes = [p.n_tasks.size for p in parts]
    return pd.DataFrame({
        "contrast": np.repeat(np.array([p.contrast for p in parts], dtype=object), sizes),
        "cohort": np.repeat(np.array([p.cohort for p in parts], dtype=object), sizes),
        "comparator": np.concatenate([p.comparator for p in parts]),
        "arm": np.concatenate([p.arm for p in parts]),
        "n_tasks": np.concatenate([p.n_tasks for p in parts])})


def arm_rows(c: CohortMatrices) -> list[Row]:
    """Per arm of a cohort: its counts, mean reward, cost and time, and its pass@k curve
    (``curve``); the intervals are the pass-rate and cost tables'."""
    of_arm = c.agg["arm"].to_numpy()
    col = {field: c.agg[field].to_numpy() for field in ("attempts", "successes", "mean_reward",
                                                        "cost_usd", "agent_seconds")}
    rows = []
    for arm in c.arms:
        g = {field: v[of_arm == arm] for field, v in col.items()}
        rows.append({"cohort": c.name, "arm": arm, "n_tasks": len(g["attempts"]),
                     "attempts": int(g["attempts"].sum()),
                     "successes": int(g["successes"].sum()),
                     "mean_reward": float(g["mean_reward"].mean()),
                     "total_cost_usd": float(g["cost_usd"].sum()),
                     "mean_agent_seconds": float(g["agent_seconds"].sum()
                                                 / g["attempts"].sum()),
                     "curve": pass_curve(g["attempts"].astype(int),
                                         g["successes"].astype(int))})
    return rows
