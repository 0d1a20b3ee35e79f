"""One set of bootstrap resamples per cohort, shared by every table of an analysis.

Every interval of an analysis reads its cohort's B resamples of the tasks: per-arm pass
rates, contrasts and cost per success of each cohort, the sensitivity analysis, the suite's
exploratory deltas, reliability's Δpass^K and the interaction. Each cohort (``eligible``,
``silent``, ``all``) resamples its own tasks from its own stream
``("bootstrap", "success", cohort)``; ``all`` is resampled as one pool of tasks, as FIRE's
published intervals are, not stratified by cohort.

The tables first say what they need (``add``: a scope such as ``primary:eligible`` or
``reliability``, the cohort whose resamples it reads, and per-task columns), then ``run``
draws every cohort's resamples once and multiplies every column at once; each table then
reads its intervals (``BootstrapResults.scope``). Sums are exact (fixed point), so a
column's interval does not depend on which other columns share the product: adding a
contrast changes no other number.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fire_exp.analysis.arms import cohort_attempts
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.stats import (
    BootstrapInterval,
    Distributions,
    PendingDistributions,
    Stratum,
    child_rng,
    start_bootstrap_distributions,
)

__all__ = ["BootstrapResults", "SharedBootstrap"]

_SEP = "|"


class BootstrapResults:
    """The intervals (and resampled values) of every column an analysis asked for.

    The resamples may still be drawing (in a child process) when this is made; the first
    ``scope`` or ``resampled`` waits for them.
    """

    def __init__(self, pending: PendingDistributions | None, confidence_level: float) -> None:
        self._pending, self._level = pending, confidence_level
        self._intervals: dict[str, BootstrapInterval] | None = None

    @property
    def distributions(self) -> Distributions | None:
        return None if self._pending is None else self._pending.result()

    @property
    def intervals(self) -> Mapping[str, BootstrapInterval]:
        if self._intervals is None:
            dist = self.distributions
            self._intervals = {} if dist is None else dist.intervals(self._level)
        return self._intervals

    def scope(self, scope: str) -> dict[str, BootstrapInterval]:
        """name -> interval of one scope's columns (a column with no task is absent)."""
        head = scope + _SEP
        return {key[len(head):]: iv for key, iv in self.intervals.items()
                if key.startswith(head)}

    def resampled(self, scope: str, name: str) -> np.ndarray:
        """The B resampled values of one column (for statistics built on top of them)."""
        dist = self.distributions
        if dist is None:
            raise KeyError(f"{scope}{_SEP}{name}")
        return dist.of(f"{scope}{_SEP}{name}")


class SharedBootstrap:
    """Collects every table's per-task columns, then resamples each cohort's tasks once.

    Args:
        plan: resample count, confidence level and root seed.
        attempts: the scored attempts (``task`` and ``cohort`` columns).
    """

    def __init__(self, plan: AnalysisPlan, attempts: pd.DataFrame) -> None:
        self._plan = plan
        self._attempts = attempts
        self._blocks: dict[str, tuple[pd.Index, int]] = {}  # cohort -> (tasks, first row)
        self._rows = 0
        self._columns: dict[str, tuple[str, pd.Series]] = {}
        self._ratios: dict[str, tuple[str, pd.Series, pd.Series]] = {}
        self._drawn = False

    def _block(self, cohort: str) -> tuple[pd.Index, int]:
        if cohort not in self._blocks:
            sub = cohort_attempts(self._attempts, cohort)
            tasks = pd.Index(sorted(set(sub["task"].tolist())))
            self._blocks[cohort] = (tasks, self._rows)
            self._rows += len(tasks)
        return self._blocks[cohort]

    def add(self, scope: str, cohort: str, columns: Mapping[str, pd.Series],
            ratios: Mapping[str, tuple[pd.Series, pd.Series]] | None = None) -> None:
        """Ask for intervals, on ``cohort``'s resamples, of task means (``columns``: task
        -> value, NaN or absent for a task the column leaves out) and of ratios of sums
        (``ratios``).

        Raises:
            RuntimeError: the resamples are already drawn (``run``): a column asked for
                afterwards would have no interval.
        """
        if self._drawn:
            raise RuntimeError(f"columns of {scope!r} asked for after the resamples were "
                               "drawn: ask in a table's first phase")
        self._block(cohort)
        for name, values in columns.items():
            if values.notna().any():  # a column with no task gets no interval
                self._columns[f"{scope}{_SEP}{name}"] = (cohort, values)
        for name, (num, den) in (ratios or {}).items():
            self._ratios[f"{scope}{_SEP}{name}"] = (cohort, num, den)

    def _align(self, cohort: str, values: pd.Series) -> np.ndarray:
        tasks, start = self._blocks[cohort]
        pos = tasks.get_indexer(values.index)
        if (pos < 0).any():
            raise ValueError(f"tasks outside cohort {cohort!r}: "
                             f"{list(values.index[pos < 0])[:3]}")
        out = np.full(self._rows, np.nan)
        out[start + pos] = values.to_numpy(dtype=float)
        return out

    def run(self) -> BootstrapResults:
        """Start drawing each cohort's resamples once (in a child process when the work is
        large); the intervals of every column asked for, when they are read."""
        plan = self._plan
        self._drawn = True
        if not self._columns and not self._ratios:
            return BootstrapResults(None, plan.bootstrap.confidence_level)
        strata = [Stratum(slice(start, start + len(tasks)),
                          child_rng(plan.seed, "bootstrap", "success", cohort))
                  for cohort, (tasks, start) in self._blocks.items()]
        columns = {key: self._align(cohort, v) for key, (cohort, v) in self._columns.items()}
        ratios = {key: (self._align(cohort, num), self._align(cohort, den))
                  for key, (cohort, num, den) in self._ratios.items()}
        pending = start_bootstrap_distributions(
            columns, ratios=ratios, n_resamples=plan.bootstrap.n_resamples, strata=strata)
        return BootstrapResults(pending, plan.bootstrap.confidence_level)
