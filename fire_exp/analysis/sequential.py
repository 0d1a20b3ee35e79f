"""The sequential primary analysis of a run: the e-process over its completed tasks.

A pure function of the attempt records, the analysis plan (its ``sequential:`` section and
primary contrast) and the frozen schedule (the task order and each task's cells, from
the run's ``prereg.json``), so the runner's stopping decision and ``analyze``'s report are
the same computation and can be redone from the run folder alone.

A task *counts* once every scheduled cell (arm × attempt) of it, and of every task before
it in the frozen order, has a standing record (one no replacement is owed for). Its
paired difference is the primary contrast's pass rate under A minus under B, scored as
the analysis scores attempts (replacement rule, invalid records left out, infrastructure
failures failing); tasks outside the primary cohort count but leave the e-value unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fire_exp.analysis.load import loaded_from_records
from fire_exp.analysis.plan import AnalysisPlan, parse_contrast
from fire_exp.errors import InputError
from fire_exp.files import json_loads
from fire_exp.records import AttemptRecord, ReadResult
from fire_exp.stats.sequential import SequentialResult, balanced_difference, sequential_test

__all__ = ["STOP_FILE", "FrozenOrder", "SequentialState", "completed_tasks", "read_stop",
           "sequential_markdown", "sequential_state", "sequential_summary", "standing_cells",
           "task_differences", "write_stop"]

STOP_FILE = "stopped.json"  # in the run folder: why the run stopped before its end


@dataclass(frozen=True)
class FrozenOrder:
    """The task order and each task's scheduled cells (arm, replicate), as frozen."""

    tasks: tuple[str, ...]
    cells: Mapping[str, frozenset[tuple[str, int]]]

    @classmethod
    def from_schedule(cls, schedule: Iterable[Mapping[str, Any] | Any]) -> FrozenOrder:
        """From schedule cells (``ScheduledAttempt`` objects or the manifest's dicts)."""
        tasks: dict[str, set[tuple[str, int]]] = {}
        for cell in schedule:
            item = cell if isinstance(cell, Mapping) else vars(cell)
            tasks.setdefault(str(item["task"]), set()).add((str(item["arm"]),
                                                            int(item["replicate"])))
        return cls(tuple(tasks), {t: frozenset(c) for t, c in tasks.items()})


@dataclass(frozen=True)
class SequentialState:
    """Where the sequential test stands.

    Attributes:
        completed: the tasks that count, in the frozen order.
        tasks: those of the primary cohort with both arms scored (the e-process's tasks).
        diffs: their paired differences A − B, in [−1, 1].
        result: the sequential test on ``diffs``.
        contrast, cohort: the primary contrast and its cohort.
    """

    completed: tuple[str, ...]
    tasks: tuple[str, ...]
    diffs: tuple[float, ...]
    result: SequentialResult
    contrast: str
    cohort: str

    @property
    def stopping_task(self) -> str | None:
        """The task after which the rule decided (None while it continues)."""
        stop = self.result.stopped_at
        return None if stop is None else self.tasks[stop - 1]

    def line(self) -> str:
        """One line: the decision, where, and the e-value against its threshold."""
        r = self.result
        head = {"efficacy": "stopped for efficacy", "harm": "stopped for harm",
                "futility": "stopped for futility",
                "continue": "no stopping decision"}[r.decision]
        a, b = (arm.strip() for arm in self.contrast.split(" - ", 1))
        side = {"efficacy": f"; {a} better than {b}",
                "harm": f"; {a} worse than {b}"}.get(r.decision, "")
        where = (f" after {r.stopped_at} of the {self.cohort} tasks (task "
                 f"{self.stopping_task})" if r.stopped_at else f" after {len(self.tasks)} "
                 f"{self.cohort} tasks")
        how = r.method + (", on signs" if r.bet_on == "sign" else "")
        return (f"{head}{where}: {self.contrast} e-value {r.e_value:.3g} (threshold "
                f"{r.threshold:g} = 1/alpha, {how}); sequential p {r.sequential_p:.3g}{side}")


Cell = tuple[str, str, int]  # (task, arm, replicate)


def standing_cells(records: Iterable[AttemptRecord]) -> set[Cell]:
    """The cells with a standing record: one no replacement is owed for."""
    return {(r.task, r.arm, r.replicate) for r in records if r.lineage.replaced_by is None}


def completed_tasks(standing: Collection[Cell], order: FrozenOrder) -> list[str]:
    """The tasks that count: the longest prefix of the frozen order whose every cell is in
    ``standing``."""
    done = []
    for task in order.tasks:
        if not all((task, arm, rep) in standing for arm, rep in order.cells[task]):
            break
        done.append(task)
    return done


def task_differences(records: Iterable[AttemptRecord], plan: AnalysisPlan,
                     tasks: Iterable[str]) -> dict[str, float | None]:
    """Each task's paired difference A − B of the primary contrast (None: the task is
    outside the primary cohort, or an arm has no scored attempt), scored as ``analyze``
    scores attempts. Betting on signs, the arms are compared on their first k attempts
    by replicate, k the smaller count (:func:`~fire_exp.stats.sequential.balanced_difference`:
    an invalid record dropped and not replaced must not tilt the sign under the null)."""
    wanted = set(tasks)
    a, b = parse_contrast(plan.primary.contrast)
    read = ReadResult(finished=[r for r in records if r.task in wanted], started=[],
                      torn_tail=False)
    frame = loaded_from_records(read, "<records>").attempts
    if plan.primary.cohort != "all":
        frame = frame[frame["cohort"] == plan.primary.cohort]
    if plan.sequential is not None and plan.sequential.bet_on == "sign":
        passes = {key: group.sort_values("replicate")["passed"].to_numpy(float)
                  for key, group in frame.groupby(["task", "arm"])}
        none = np.zeros(0)
        return {task: balanced_difference(passes.get((task, a), none),
                                          passes.get((task, b), none)) for task in wanted}
    rates = frame.groupby(["task", "arm"])["passed"].mean()
    return {task: float(rates[(task, a)]) - float(rates[(task, b)])
            if (task, a) in rates.index and (task, b) in rates.index else None
            for task in wanted}


def sequential_state(records: Sequence[AttemptRecord], plan: AnalysisPlan,
                     order: FrozenOrder, *, standing: Collection[Cell] | None = None,
                     differences: dict[str, float | None] | None = None,
                     ) -> SequentialState:
    """The sequential test of ``plan``'s primary contrast over the tasks that count.

    Args:
        records: every finished record of the run.
        plan: the analysis plan (with a ``sequential:`` section).
        order: the frozen task order and cells.
        standing: ``standing_cells(records)``, if the caller keeps it.
        differences: a cache of :func:`task_differences` the caller keeps across calls (a
            task that counts has all its records, so its difference never changes).

    Raises:
        ValueError: the plan has no ``sequential:`` section.
    """
    rule = plan.sequential
    if rule is None:
        raise ValueError("the analysis plan has no sequential: section")
    completed = completed_tasks(standing_cells(records) if standing is None else standing,
                                order)
    differences = {} if differences is None else differences
    new = [task for task in completed if task not in differences]
    if new:
        differences.update(task_differences(records, plan, new))
    pairs = [(task, d) for task in completed if (d := differences[task]) is not None]
    tasks, diffs = [t for t, _ in pairs], [d for _, d in pairs]
    futility = rule.futility
    result = sequential_test(diffs, alpha=rule.alpha, method=rule.method,
                             max_bet=rule.max_bet, grid_size=rule.grid_size,
                             bet_on=rule.bet_on,
                             futility_below=futility.e_below if futility else None,
                             futility_min_tasks=futility.min_tasks if futility else 1)
    return SequentialState(tuple(completed), tuple(tasks), tuple(diffs), result,
                           plan.primary.contrast, plan.primary.cohort)


def write_stop(run_dir: Path, reason: str, line: str, **details: object) -> Path:
    """Record why the run stopped early (``efficacy``, ``harm``, ``futility``, ``budget_usd``,
    ``budget_attempts``) in ``run_dir/stopped.json``; returns its path."""
    path = run_dir / STOP_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"reason": reason, "line": line, **details}, indent=1,
                              sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_stop(run_dir: Path) -> dict[str, Any] | None:
    """The run's stop record, or None when it ran (or is running) to its end.

    Raises:
        InputError: the file is not a JSON object with a reason.
    """
    path = run_dir / STOP_FILE
    if not path.is_file():
        return None
    try:
        data = json_loads(path.read_text(encoding="utf-8"))  # a key twice is refused
    except (OSError, ValueError) as exc:
        raise InputError(path, "<file>", f"unreadable: {exc}",
                         "delete it to analyse the run as unstopped") from exc
    if not isinstance(data, dict) or not isinstance(data.get("reason"), str):
        raise InputError(path, "reason", "missing", "delete the file, or restore it")
    return data


def _order(records: Sequence[AttemptRecord], prereg: Mapping[str, Any] | None,
           ) -> tuple[FrozenOrder, str]:
    schedule = (prereg or {}).get("schedule")
    if isinstance(schedule, list) and schedule:
        return FrozenOrder.from_schedule(schedule), "the schedule frozen in prereg.json"
    cells = [{"task": r.task, "arm": r.arm, "replicate": r.replicate} for r in records]
    return FrozenOrder.from_schedule(cells), "the attempts file (no frozen schedule)"


def sequential_summary(records: Sequence[AttemptRecord] | None, plan: AnalysisPlan,
                       prereg: Mapping[str, Any] | None, run_dir: Path | None,
                       ) -> dict[str, Any] | None:
    """The sequential result ``analyze`` reports beside the fixed-size tables, as JSON-ready
    data: the decision, the stopping time, the e-value path, why the run stopped (its
    ``stopped.json``) and whether the fixed-size tables come after an optional stop.
    None when the plan has no ``sequential:`` section.
    """
    rule = plan.sequential
    if rule is None:
        return None
    stop = read_stop(run_dir) if run_dir is not None else None
    if records is None:
        return {"decision": None, "stop_reason": stop and stop["reason"],
                "note": "the sequential test needs the run's attempts.jsonl (its records)"}
    order, source = _order(records, prereg)
    state = sequential_state(records, plan, order)
    r = state.result
    stopped_early = stop is not None or r.decision != "continue"
    return {
        "contrast": state.contrast, "cohort": state.cohort, "method": r.method,
        "alpha": r.alpha, "threshold": r.threshold, "bet_on": rule.bet_on,
        "max_bet": rule.max_bet,
        "grid_size": rule.grid_size,
        "futility_e_below": rule.futility.e_below if rule.futility else None,
        "futility_min_tasks": rule.futility.min_tasks if rule.futility else None,
        "decision": r.decision, "stopped_at": r.stopped_at,
        "stopping_task": state.stopping_task, "e_value": r.e_value,
        "max_e_value": r.max_e_value, "sequential_p": r.sequential_p,
        "mean_difference_pp": 100 * r.mean_difference,
        "tasks_tested": len(state.tasks), "tasks_completed": len(state.completed),
        "tasks_in_order": len(order.tasks), "task_order_from": source,
        "path": [{"task": t, "difference": d, "e_value": float(e)}
                 for t, d, e in zip(state.tasks, state.diffs, r.e_values, strict=True)],
        "stop_reason": stop["reason"] if stop else None,
        "stop_line": stop["line"] if stop else None,
        "line": state.line(),
        "fixed_size_after_optional_stop": stopped_early,
    }


def sequential_markdown(summary: Mapping[str, Any]) -> str:
    """The sequential result as a short Markdown section."""
    if summary.get("decision") is None:
        return f"### Sequential test\n\n{summary.get('note', '')}\n"
    on = " signs" if summary.get("bet_on") == "sign" else ""
    rows = [("rule", f"{summary['method']} e-process on{on} {summary['contrast']} "
             f"({summary['cohort']}), stop at e >= {summary['threshold']:g} = 1/alpha"
             + (f"; futility at e <= {summary['futility_e_below']:g} after "
                f"{summary['futility_min_tasks']} tasks" if summary["futility_e_below"]
                else "")),
            ("decision", summary["line"]),
            ("tasks tested / completed / in order",
             f"{summary['tasks_tested']} / {summary['tasks_completed']} / "
             f"{summary['tasks_in_order']}"),
            ("run stopped", summary["stop_line"] or "no (ran to its end, or is running)")]
    table = "\n".join(["| | |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)])
    note = ("\n\nThe fixed-size tables were computed after an optional stop: their p-values "
            "and intervals are descriptive; the sequential test is the primary result.\n"
            if summary["fixed_size_after_optional_stop"] else "\n")
    return f"### Sequential test\n\n{table}{note}"
