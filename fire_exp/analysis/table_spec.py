"""What a table of the analysis is: the columns it needs resampled, then its frame.

The analysis draws one set of task resamples per cohort for every interval of every table
(``resamples.SharedBootstrap``), so a table is made in two phases, and the types keep them
apart:

1. ``Table.request(run, resamples)``: given the analysed run (``AnalysisInputs``) and a
   ``ResampleRequest`` (it can only ``add`` columns), it asks for the per-task columns it
   needs and returns its ``Builder``.
2. ``Builder(built)``: given ``Built``, which exists only once the resamples are drawn (its
   ``results``) and holds the tables built before it, it returns its frame.

A table built from the run alone is ``Table.of_run(name, frame)``; it is built first, while
the resamples may still be drawing. The tables of an analysis are
``fire_exp.analysis.tables.TABLES``, in order; adding one is one entry there
(docs/architecture.md, "Add a table").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd

from fire_exp.analysis.cohorts import CohortMatrices
from fire_exp.analysis.frame import LoadedAttempts
from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.resamples import BootstrapResults
from fire_exp.analysis.run import PlanChoice, RunInputs
from fire_exp.analysis.suite import Suite
from fire_exp.stats import CohortAggregates

__all__ = ["AnalysisInputs", "Builder", "Built", "ResampleRequest", "Table", "TableRequest"]


@dataclass(frozen=True)
class AnalysisInputs:
    """A run that passed validation and conformance, read once for every table.

    Attributes:
        choice: the plan analysed with and where it came from.
        run: the run's records, manifest and loaded attempts.
        attempts: the scored attempts.
        aggregates: every attempt grouped by (cohort, task, arm), once.
        k: the most attempts of a task under an arm (the one K of every table).
        primary: each cohort's task matrices, in the plan's order.
        arms: the arms present, in the paper's order.
        main_cohort: the primary contrast's cohort if present, else ``all``.
        suite: what the suite tables read (suite cohort, reference arm).
        notes: what was skipped and why; tables append to it while they ask for columns.
    """

    choice: PlanChoice
    run: RunInputs
    attempts: pd.DataFrame
    aggregates: CohortAggregates
    k: int
    primary: list[CohortMatrices]
    arms: list[str]
    main_cohort: str
    suite: Suite
    notes: list[str] = field(default_factory=list)

    @property
    def plan(self) -> AnalysisPlan:
        """The plan analysed with."""
        return self.choice.plan

    @property
    def loaded(self) -> LoadedAttempts:
        """The loaded attempts (scored, superseded, families)."""
        return self.run.loaded


class ResampleRequest(Protocol):
    """The first phase's view of the shared resamples: columns can be asked for, nothing
    read (``resamples.SharedBootstrap.add``)."""

    def add(self, scope: str, cohort: str, columns: Mapping[str, pd.Series],
            ratios: Mapping[str, tuple[pd.Series, pd.Series]] | None = None) -> None:
        """Ask for intervals of ``columns`` (task means) and ``ratios`` on ``cohort``'s
        resamples, under ``scope``."""


@dataclass(frozen=True)
class Built:
    """The second phase's view: the drawn resamples and the tables built so far.

    Attributes:
        inputs: the analysed run.
        results: every interval asked for in the first phase.
        tables: name -> frame of the tables built before this one.
        metadata: what a table says about how it was made (into the result's metadata).
    """

    inputs: AnalysisInputs
    results: BootstrapResults
    tables: Mapping[str, pd.DataFrame]
    metadata: dict[str, object]

    def frame(self, name: str) -> pd.DataFrame:
        """A table built earlier: one before it in ``TABLES``, or any ``Table.of_run``."""
        if name not in self.tables:
            raise KeyError(f"table {name!r} is not built yet: a table reads only the tables "
                           f"before it (built: {', '.join(self.tables) or 'none'})")
        return self.tables[name]


Builder = Callable[[Built], pd.DataFrame]


class TableRequest(Protocol):
    """A table's first phase: ask ``resamples`` for its columns, return its builder."""

    def __call__(self, run: AnalysisInputs, resamples: ResampleRequest, /) -> Builder: ...


@dataclass(frozen=True)
class Table:
    """One table of the analysis: its name (``NAME.csv``) and its two phases.

    ``reads_resamples`` false (``Table.of_run``): the table is built from the run alone,
    before every table that reads resamples, while they may still be drawing.
    """

    name: str
    request: TableRequest
    reads_resamples: bool = True

    @classmethod
    def of_run(cls, name: str, frame: Callable[[AnalysisInputs], pd.DataFrame]) -> Table:
        """A table that reads no resample and no other table: ``frame(run)``."""
        return cls(name, _needs_nothing(frame), reads_resamples=False)


def _needs_nothing(frame: Callable[[AnalysisInputs], pd.DataFrame]) -> TableRequest:
    """The request of a table that asks for no column: its builder is ``frame(run)``."""

    def request(run: AnalysisInputs, resamples: ResampleRequest, /) -> Builder:
        return lambda built: frame(built.inputs)

    return request
