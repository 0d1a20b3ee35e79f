"""Checks on attempts where they enter the analysis, so no consumer sees bad data.

Each attempt (a CSV row or a JSONL record, with its line) is checked for: a finite reward
within the plan's scale, a ``passed`` flag that does not contradict the reward, an arm and a
cohort the plan names (with a did-you-mean), one cohort per task, and one run per file
unless runs are merged on purpose. The first violation raises an ``InputError`` naming the
file, the line and the field.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan, did_you_mean
from fire_exp.errors import InputError

__all__ = ["Entry", "check_columns", "check_entries", "frame_is_clean"]


@dataclass(frozen=True)
class Entry:
    """What the checks need of one attempt: where it is, and its identifying fields."""

    line: int
    task: str
    arm: str
    cohort: str
    reward: float | None
    passed: bool
    run: str = ""


def _check_reward(path: Path, e: Entry, scale: tuple[float, float], column: str) -> None:
    low, high = scale
    where = f"line {e.line}, {column} 'reward'"
    if e.reward is None:
        if e.passed:
            raise InputError(path, where, "is empty but 'passed' is true",
                             "give the reward, or mark the attempt as not passed")
        return
    if not math.isfinite(e.reward):
        raise InputError(path, where, f"{e.reward} is not a finite number",
                         "give a number in the reward scale")
    if not low <= e.reward <= high:
        raise InputError(path, where, f"{e.reward:g} lies outside the reward scale "
                         f"[{low:g}, {high:g}]",
                         "fix the reward, or declare reward_scale: [LOW, HIGH] in the plan")
    if e.passed and e.reward <= low or not e.passed and e.reward >= high:
        raise InputError(path, f"line {e.line}, {column} 'passed'",
                         f"{str(e.passed).lower()} contradicts reward {e.reward:g}",
                         "make passed agree with the reward, or drop the passed column")


def _check_names(path: Path, e: Entry, plan: AnalysisPlan, arms: set[str],
                 cohorts: set[str], column: str) -> None:
    if e.arm not in arms and not plan.analyses_arm(e.arm):
        raise InputError(path, f"line {e.line}, {column} 'arm'",
                         f"arm {e.arm!r} is not named by the plan '{plan.name}'",
                         f"{did_you_mean(e.arm, arms)}; rename it, or list it "
                         "under the plan's arms:")
    if e.cohort not in cohorts:
        raise InputError(path, f"line {e.line}, {column} 'cohort'",
                         f"cohort {e.cohort!r} is not among the plan's cohorts",
                         f"{did_you_mean(e.cohort, cohorts - {'all'})}; fix the label, or "
                         "add the cohort to the plan")


def check_entries(path: Path, entries: Sequence[Entry], *, plan: AnalysisPlan | None,
                  merge_runs: bool, column: str = "column") -> None:
    """Refuse the first attempt that breaks a rule (see the module docstring).

    Args:
        path: the attempts file, for the message.
        entries: the attempts in file order.
        plan: arms, cohorts and reward scale to check against (None: scale [0, 1] only).
        merge_runs: allow attempts of several runs in one file.
        column: ``column`` for a CSV, ``field`` for JSONL, as the message says it.

    Raises:
        InputError: naming the file, the line, the field and what to do.
    """
    scale = plan.reward_scale if plan is not None else (0.0, 1.0)
    arms = set(plan.arm_names) if plan is not None else set()
    cohorts = {*plan.cohort_names, "all"} if plan is not None else set()
    cohort_of: dict[str, tuple[str, int]] = {}
    first_run: tuple[str, int] | None = None
    for e in entries:
        _check_reward(path, e, scale, column)
        if plan is not None:
            _check_names(path, e, plan, arms, cohorts, column)
        seen = cohort_of.setdefault(e.task, (e.cohort, e.line))
        if seen[0] != e.cohort:
            raise InputError(path, f"line {e.line}, {column} 'cohort'",
                             f"task {e.task!r} is {e.cohort!r} here but {seen[0]!r} on line "
                             f"{seen[1]}", "a task belongs to one cohort: fix the label")
        if first_run is None:
            first_run = (e.run, e.line)
        elif e.run != first_run[0] and not merge_runs:
            raise InputError(path, f"line {e.line}, {column} 'run'",
                             f"run {e.run!r} differs from run {first_run[0]!r} of line "
                             f"{first_run[1]}: the file holds several runs",
                             "analyse one run, or pass --merge-runs to pool them on purpose")


def frame_is_clean(frame: pd.DataFrame, *, plan: AnalysisPlan | None, merge_runs: bool,
                   ) -> bool:
    """The checks of ``check_entries`` on a whole frame at once (True: nothing to refuse).

    The fast path of large files; on False the caller runs ``check_entries`` row by row,
    which names the first offending line.
    """
    low, high = plan.reward_scale if plan is not None else (0.0, 1.0)
    reward, passed = frame["reward"].to_numpy(float), frame["passed"].to_numpy(bool)
    if not (np.all(np.isfinite(reward)) and np.all((reward >= low) & (reward <= high))):
        return False
    if np.any(passed & (reward <= low)) or np.any(~passed & (reward >= high)):
        return False
    if plan is not None and not (all(map(plan.analyses_arm, frame["arm"].unique()))
                                 and frame["cohort"].isin([*plan.cohort_names, "all"]).all()):
        return False
    if (frame.groupby("task", sort=False)["cohort"].nunique() > 1).any():
        return False
    return merge_runs or "run" not in frame or frame["run"].nunique() <= 1


def check_columns(path: Path, header: Sequence[str], known: Iterable[str]) -> None:
    """Refuse a column that is not one fire-exp reads but looks like one (``rewrd``,
    ``Cohort``, ``task ``): it would be ignored, and its attempts read without it.
    Columns unlike any known one (``notes``) are ignored, as before.

    Raises:
        InputError: naming the column and the known one it resembles.
    """
    names = sorted(set(known))
    if len(header) == 1 and any(sep in header[0] for sep in ";\t|"):
        sep = next(s for s in ";\t|" if s in header[0])
        raise InputError(path, "line 1 (header)", f"one column {header[0]!r}: the file looks "
                         f"{sep!r}-separated", "save it comma-separated")
    for i, column in enumerate(header):
        # twice: as read, or as pandas renames the second one (task, task.1)
        base = column.rsplit(".", 1)[0] if column.rsplit(".", 1)[-1].isdigit() else None
        if column in names and column in header[:i] or base in names and base in header[:i]:
            raise InputError(path, "line 1 (header)", f"column {base or column!r} appears "
                             "twice", "keep one column of each name")
        if column in names:
            continue
        close = difflib.get_close_matches(column.strip().lower(), names, n=1, cutoff=0.8)
        if close and close[0] not in header:
            raise InputError(path, "line 1 (header)", f"column {column!r} is not a column "
                             f"fire-exp reads; did you mean {close[0]!r}?",
                             "rename it: a column fire-exp does not know is ignored")
