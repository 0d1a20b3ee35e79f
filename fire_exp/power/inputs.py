"""Task pass rates for a power analysis from a pilot run or from the simulated agent's tiers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from fire_exp.agents.simulated import TIERS, load_script
from fire_exp.analysis.load import load_attempts
from fire_exp.errors import InputError
from fire_exp.power.sources import PooledRates
from fire_exp.tasks.model import Task

__all__ = ["pilot_rates", "tier_rates"]


def pilot_rates(path: Path | str, *, arm: str, cohort: str, shrink: bool = False,
                ) -> PooledRates:
    """Per-task pass rates of ``arm`` on ``cohort`` in a pilot run folder or attempts file.

    Infrastructure failures count as failures (as in the primary analysis). A pilot without
    cohort labels (a CSV) contributes all its tasks. With ``shrink``, a task's rate is
    ``(successes + ½) / (attempts + 1)`` so that no task sits at exactly 0 or 1 (for the
    logit effect model).

    Raises:
        InputError: unreadable pilot, arm absent, or fewer than two tasks.
    """
    loaded = load_attempts(path)
    frame = loaded.attempts
    arms = sorted(frame["arm"].unique())
    if arm not in arms:
        if len(arms) != 1:
            raise InputError(path, "arm", f"the pilot has no arm {arm!r} (it has {arms})",
                             "pass power.pilot_arm=NAME")
        arm = arms[0]
    cohorts = set(frame["cohort"].unique())
    where = frame["arm"] == arm
    if cohort in cohorts:
        where &= frame["cohort"] == cohort
    elif cohort != "all" and cohorts - {"all"}:  # a plan's "all": every pilot task
        raise InputError(path, "cohort", f"the pilot has no {cohort!r} tasks (it has "
                         f"{sorted(cohorts)})", "pilot the cohort of the primary contrast")
    per_task = frame[where].groupby("task")["passed"].agg(["sum", "count"])
    if len(per_task) < 2:
        raise InputError(path, "task", f"{len(per_task)} pilot task(s) of arm {arm!r}",
                         "a pilot needs at least two tasks to resample")
    s, n = per_task["sum"].to_numpy(float), per_task["count"].to_numpy(float)
    rates = (s + 0.5) / (n + 1) if shrink else s / n
    label = f"pilot {Path(path).name}: {len(rates)} {cohort} tasks of {arm}"
    return PooledRates(tuple(float(r) for r in rates), label)


def tier_rates(tasks: Mapping[str, Task], tier: str) -> PooledRates:
    """The simulated agent's pass rate on each task without a policy, at ``tier``.

    Without a policy no text reaches the simulated agent, so an attempt passes when none of
    its script's failure modes is drawn: the rate is the product of (1 − rate) over modes.

    Raises:
        InputError: unknown tier, or a task without a ``simulated.yaml``.
    """
    if tier not in TIERS:
        raise InputError("agent.tier", tier, "unknown tier", f"use one of {TIERS}")
    rates = []
    for _, task in sorted(tasks.items()):
        if task.simulation_script is None:
            raise InputError(task.path, "simulated.yaml", "missing",
                             "the tier source needs the simulated agent's script per task")
        script = load_script(task.simulation_script)
        rates.append(float(np.prod([1 - m.rate[tier] for m in script.modes.values()])))
    if len(rates) < 1:
        raise InputError("panel", "eligible", "no tasks to take tier rates from")
    return PooledRates(tuple(rates), f"simulated agent, tier {tier}: {len(rates)} tasks")
