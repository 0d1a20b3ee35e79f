"""``analyze``: load -> validate -> conform -> resample -> tables.

Each stage is a function whose input is the previous stage's output, so none can be
skipped or run out of turn:

- ``load`` reads the run (a run folder, an attempts file, a tidy frame or loaded attempts)
  and chooses its plan: ``LoadedRun``.
- ``validate`` checks the attempts against the plan (rewards in its scale, arms and
  cohorts it knows, one cohort per task, one run per file): ``ValidRun``.
- ``conform`` checks every record against the run's frozen schedule and refuses a run
  with nothing scored: ``ConformingRun``.
- ``resample`` reads the run once for every table (``table_spec.AnalysisInputs``), lets
  every registered table (``tables.TABLES``) ask for its per-task columns, then starts the
  one draw of task resamples: ``Resampled``.
- ``build_tables`` builds each table in order from the drawn resamples:
  ``AnalysisResult``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeAlias

import numpy as np
import pandas as pd
import scipy

from fire_exp.analysis.accounting import (
    RunStatus,
    invalid_reasons,
    node_losses,
    run_status,
    tier_label,
)
from fire_exp.analysis.arms import (
    arms_in_order,
    cohort_attempts,
    main_cohort,
    reference_arm,
    suite_cohort,
)
from fire_exp.analysis.cohorts import cohort_matrices
from fire_exp.analysis.conformance import check_conformance
from fire_exp.analysis.frame import FAMILY_COLUMNS, LoadedAttempts, normalize_frame
from fire_exp.analysis.load import validate_attempts
from fire_exp.analysis.plan import AnalysisPlan, load_plan
from fire_exp.analysis.resamples import BootstrapResults, SharedBootstrap
from fire_exp.analysis.result import TABLE_FIELDS, AnalysisResult
from fire_exp.analysis.run import PlanChoice, RunInputs, choose_plan, read_run, resolve_plan
from fire_exp.analysis.sequential import read_stop, sequential_summary
from fire_exp.analysis.suite import Suite
from fire_exp.analysis.table_spec import AnalysisInputs, Builder, Built, Table
from fire_exp.analysis.tables import TABLES
from fire_exp.errors import InputError
from fire_exp.stats import CohortAggregates

__all__ = ["ConformingRun", "LoadedRun", "Resampled", "ValidRun", "analyze", "build_tables",
           "conform", "load", "resample", "validate"]

Source: TypeAlias = str | Path | pd.DataFrame | LoadedAttempts | RunInputs


@dataclass(frozen=True)
class LoadedRun:
    """A run as read, with the plan chosen for it (``load``)."""

    run: RunInputs
    choice: PlanChoice
    merge_runs: bool


@dataclass(frozen=True)
class ValidRun:
    """A run whose attempts the plan accepts (``validate``)."""

    loaded: LoadedRun


@dataclass(frozen=True)
class ConformingRun:
    """A valid run whose records keep its frozen schedule and hold a scored attempt
    (``conform``)."""

    valid: ValidRun

    @property
    def run(self) -> RunInputs:
        return self.valid.loaded.run

    @property
    def choice(self) -> PlanChoice:
        return self.valid.loaded.choice


@dataclass(frozen=True)
class Resampled:
    """Every table's builder and the one draw of resamples they read (``resample``)."""

    inputs: AnalysisInputs
    from_run: tuple[tuple[str, Builder], ...]  # built first, while the draw may run
    builders: tuple[tuple[str, Builder], ...]
    results: BootstrapResults

    @property
    def names(self) -> list[str]:
        """Every table's name, in the order built."""
        return [name for name, _ in self.from_run + self.builders]


def _inputs(source: Source, merge_runs: bool, plan: AnalysisPlan | None) -> RunInputs:
    if isinstance(source, RunInputs):
        return source
    if isinstance(source, LoadedAttempts):
        return RunInputs(source, name=Path(source.source).stem)
    if isinstance(source, pd.DataFrame):
        frame = normalize_frame(source)
        return RunInputs(LoadedAttempts(frame, pd.DataFrame(columns=FAMILY_COLUMNS),
                                        "<frame>", len(frame), 0, 0), name="<frame>")
    return read_run(source, merge_runs=merge_runs, plan=plan)


def load(source: Source, plan: AnalysisPlan | str | Path | None = None, *,
         merge_runs: bool = False) -> LoadedRun:
    """Read ``source`` and choose its plan (the given one, else the one frozen with it)."""
    given = resolve_plan(plan) if isinstance(plan, str | Path) else plan  # refuse it first
    # A CSV is read with the given plan: its reward scale says which rewards pass.
    run = _inputs(source, merge_runs, load_plan(given) if isinstance(given, Path) else given)
    return LoadedRun(run, choose_plan(run, given), merge_runs)


def validate(loaded: LoadedRun) -> ValidRun:
    """Check an attempts file against the chosen plan (a frame is taken as it is)."""
    run = loaded.run
    if run.path is not None:
        validate_attempts(run.path, loaded.choice.plan, merge_runs=loaded.merge_runs,
                          read=run.records, loaded=run.loaded)
    return ValidRun(loaded)


def conform(valid: ValidRun) -> ConformingRun:
    """Check the records against the run's frozen schedule; refuse a run with no scored
    attempt."""
    run = valid.loaded.run
    if run.path is not None:
        check_conformance(run.path, run.records, run.prereg)
    if run.loaded.attempts.empty:
        raise InputError(run.loaded.source, "<attempts>", "no finished, valid attempt to "
                         "analyse", "wait for the first attempt to finish")
    return ConformingRun(valid)


def _analysis_inputs(run: ConformingRun) -> AnalysisInputs:
    plan, att, notes = run.choice.plan, run.run.loaded.attempts, list[str]()
    aggs = CohortAggregates(att)  # every attempt grouped by (cohort, task, arm) once
    k = int(aggs.of("all")["attempts"].max())  # K: the most attempts of a task under an arm
    primary = cohort_matrices(plan, aggs, (), notes)
    order = arms_in_order(att["arm"].unique())
    main = main_cohort(plan, att)
    cohort = suite_cohort(plan, main)
    suite = Suite(plan, cohort_attempts(att, cohort), order, reference_arm(plan, order),
                  cohort, k, aggs)
    return AnalysisInputs(run.choice, run.run, att, aggs, k, primary, order, main, suite,
                          notes)


def _check_tables(tables: Sequence[Table]) -> None:
    names = [t.name for t in tables]
    twice = sorted({n for n in names if names.count(n) > 1})
    missing = [n for n in TABLE_FIELDS if n not in names]
    if twice or missing:
        raise ValueError(f"tables registered twice: {twice}; result tables not registered: "
                         f"{missing}")


def resample(run: ConformingRun, tables: Sequence[Table] = TABLES) -> Resampled:
    """Every table asks for its columns, in order; then the resamples are drawn, once (in a
    child process when the work is large)."""
    _check_tables(tables)
    inputs = _analysis_inputs(run)
    boot = SharedBootstrap(inputs.plan, inputs.attempts)
    builders = [(t, t.request(inputs, boot)) for t in tables]
    if inputs.loaded.coding_errors:
        inputs.notes.append(f"{inputs.loaded.coding_errors} scored attempt(s) have a family "
                            "whose extractor raised: that family is uncoded there (see "
                            "coding_errors in the records)")
    return Resampled(inputs, tuple((t.name, b) for t, b in builders if not t.reads_resamples),
                     tuple((t.name, b) for t, b in builders if t.reads_resamples), boot.run())


def _stopped_status(status: RunStatus, inputs: RunInputs) -> RunStatus:
    """The status of a run that stopped before its end (its ``stopped.json``) says why, so
    the report's banner names the rule or the budget that stopped it."""
    stop = read_stop(inputs.path.parent) if inputs.path is not None else None
    if stop is None:
        return status
    message = "; ".join(part for part in (str(stop["line"]), status.message) if part)
    return replace(status, partial=True, message=message)


def _metadata(choice: PlanChoice, inputs: RunInputs, att: pd.DataFrame, k: int,
              ) -> dict[str, object]:
    plan, loaded, manifest = choice.plan, inputs.loaded, inputs.prereg or {}
    return {"plan": plan.name, "plan_hash": plan.plan_hash(), "seed": plan.seed,
            "plan_path": None if choice.path is None else str(choice.path),
            "plan_source": choice.source, "plan_frozen_sha256": choice.frozen_sha256,
            "plan_matches_frozen": choice.matches_frozen, "plan_used": choice.describe(),
            "source": loaded.source, "k": k,
            "numpy": np.__version__, "scipy": scipy.__version__, "pandas": pd.__version__,
            "n_records": loaded.n_records, "n_scored": len(att),
            "n_invalid": loaded.n_invalid, "n_superseded": loaded.n_superseded,
            "invalid_reasons": invalid_reasons(inputs.records),
            "n_infrastructure_failures": int(att["infrastructure_failure"].sum()),
            "node_losses": node_losses(inputs.records.finished) if inputs.records else [],
            "torn_tail": loaded.torn_tail,
            "prereg": {key: manifest[key] for key in ("panel", "frozen_at", "harness_version",
                                                      "seed") if key in manifest}}


def build_tables(resampled: Resampled) -> AnalysisResult:
    """Every table: those built from the run alone first (while the resamples may still be
    drawing), then the others in order, each seeing the tables built before it."""
    inputs, frames, said = resampled.inputs, dict[str, pd.DataFrame](), dict[str, object]()
    for name, builder in resampled.from_run + resampled.builders:
        frames[name] = builder(Built(inputs, resampled.results, dict(frames), said))
    run, plan, s = inputs.run, inputs.plan, inputs.suite
    sequential = sequential_summary(run.records.finished if run.records else None, plan,
                                    run.prereg, run.path.parent if run.path else None)
    if sequential is not None and sequential.get("fixed_size_after_optional_stop"):
        inputs.notes.append("the fixed-size tables were computed after an optional stop "
                            f"({sequential['line']}): the sequential test is the primary "
                            "result")
    status = _stopped_status(run_status(run.records, run.prereg), run)
    return AnalysisResult(
        **{name: frames[name] for name in TABLE_FIELDS}, plan=plan,
        extra={name: f for name, f in frames.items() if name not in TABLE_FIELDS},
        arms=tuple(inputs.arms), reference=s.reference, main_cohort=inputs.main_cohort,
        suite_cohort=s.cohort, k=s.k, tier=tier_label(run.records, run.name), status=status,
        metadata={**_metadata(inputs.choice, run, inputs.attempts, inputs.k), **said,
                  "run_status": asdict(status)},
        notes=tuple(inputs.notes), sequential=sequential)


def analyze(source: Source, plan: AnalysisPlan | str | Path | None = None, *,
            merge_runs: bool = False, tables: Sequence[Table] = TABLES) -> AnalysisResult:
    """Every table of a run (a run folder, an attempts file, a tidy frame or loaded
    attempts) under an analysis plan.

    Args:
        source: what to analyse; a run folder or attempts file is read with its
            ``prereg.json``.
        plan: a plan (object, file or name under ``analysis/``); None: the plan frozen
            with the run (its ``prereg.json``), else ``analysis/default.yaml``.
        merge_runs: let one attempts file hold several runs (else refused).
        tables: the tables to build, in order (``tables.TABLES``; a table added here and
            not a field of ``AnalysisResult`` is in ``result.extra`` and ``tables()``).

    An attempts file is checked against the chosen plan as it enters: rewards in the
    plan's scale, arms and cohorts the plan knows, one cohort per task, one run per file.

    Same data, same plan (seed) and same numpy build give bit-identical tables.

    Raises:
        InputError: unreadable input, no scored attempt, or a frozen plan that changed.
    """
    loaded = load(source, plan, merge_runs=merge_runs)
    return build_tables(resample(conform(validate(loaded)), tables))
