"""A dry analysis at freeze: the whole analysis on a panel's shape, before any attempt runs.

A plan that validates field by field can still fail only when the analysis runs, after the
whole panel has run. ``dry_analysis`` runs :func:`fire_exp.analysis.analyze` on made-up
attempts of the panel's exact shape (every task in its cohort, every arm, every
replicate; rewards alternate so no contrast is degenerate) with the plan's resample
counts capped, after the checks every attempt gets as it enters the analysis (an arm or
cohort the plan does not know), and turns any failure into one error naming the plan.
Nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan
from fire_exp.analysis.validate import Entry, check_entries
from fire_exp.errors import InputError

__all__ = ["dry_analysis", "panel_shaped_frame"]

_DRY_RESAMPLES = 200  # enough to run every code path; the numbers are thrown away


def panel_shaped_frame(tasks: Mapping[str, str], arms: Sequence[str], attempts: int,
                       scale: tuple[float, float] = (0.0, 1.0)) -> pd.DataFrame:
    """One scored attempt per (task, arm, replicate), in the task's cohort, its reward at
    one end of the reward ``scale`` or the other.

    >>> panel_shaped_frame({"t": "eligible"}, ["real", "sham"], 1)["reward"].tolist()
    [0.0, 1.0]
    """
    rows = [{"task": task, "arm": arm, "replicate": r, "cohort": cohort,
             "passed": bool((i + j + r) % 2)}
            for i, (task, cohort) in enumerate(tasks.items())
            for j, arm in enumerate(arms) for r in range(attempts)]
    frame = pd.DataFrame(rows, columns=["task", "arm", "replicate", "cohort", "passed"])
    return frame.assign(reward=[scale[int(p)] for p in frame["passed"]])


def _entries(frame: pd.DataFrame) -> list[Entry]:
    return [Entry(n, str(r.task), str(r.arm), str(r.cohort), float(r.reward), bool(r.passed))
            for n, r in enumerate(frame.itertuples(index=False), start=2)]


def dry_analysis(plan: AnalysisPlan, path: Path | str, tasks: Mapping[str, str],
                 arms: Sequence[str], attempts: int) -> None:
    """Run the plan's whole analysis on a panel-shaped frame; refuse the plan if it fails.

    Args:
        plan: the panel's plan, read from ``path``.
        tasks: task -> cohort, as the panel assigns them.
        arms: every arm the panel runs (ablation arms included).
        attempts: replicates per task and arm.

    Raises:
        InputError: naming the plan and what the analysis could not do.
    """
    from fire_exp.analysis.pipeline import analyze

    cheap = plan.model_copy(update={
        "bootstrap": plan.bootstrap.model_copy(
            update={"n_resamples": min(plan.bootstrap.n_resamples, _DRY_RESAMPLES)}),
        "permutation": plan.permutation.model_copy(
            update={"n_resamples": min(plan.permutation.n_resamples, _DRY_RESAMPLES)})})
    frame = panel_shaped_frame(tasks, arms, attempts, plan.reward_scale)
    try:
        check_entries(Path(path), _entries(frame), plan=plan, merge_runs=False)
        analyze(frame, cheap)
    except InputError as exc:
        raise InputError(path, "<plan>", f"the analysis would refuse this panel's attempts: "
                         f"{exc.problem}", exc.fix or "fix the plan before freezing") from exc
    except Exception as exc:  # noqa: BLE001 - any failure here would stop the real analysis
        raise InputError(path, "<plan>", f"the analysis of this panel would fail "
                         f"({type(exc).__name__}: {exc})", "fix the plan before freezing "
                         "(and report it: the plan checks should have refused it)") from exc
