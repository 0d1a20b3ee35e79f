"""What a power grid says about a design: the minimum detectable effect per design, the
smallest p the exact test can reach, and how many tasks to preregister."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fire_exp.power.signflip import LatticeSignFlip
from fire_exp.power.simulate import PowerSpec, simulate_design
from fire_exp.stats.permutation import min_attainable_p

__all__ = ["TaskCount", "minimum_detectable_effects", "tasks_to_preregister"]


def _crossing(effects: np.ndarray, power: np.ndarray, target: float) -> float:
    """Smallest effect at which the (linearly interpolated) curve reaches ``target``."""
    above = np.flatnonzero(power >= target)
    if above.size == 0:
        return float("nan")
    i = int(above[0])
    if i == 0:
        return float(effects[0])
    e0, e1, p0, p1 = effects[i - 1], effects[i], power[i - 1], power[i]
    return float(e0 + (target - p0) * (e1 - e0) / (p1 - p0))


def minimum_detectable_effects(grid: pd.DataFrame, target: float = 0.8) -> pd.DataFrame:
    """Per design (n_tasks, attempts) of the primary contrast: the minimum detectable effect
    at ``target`` power (interpolated between grid effects; NaN when the largest effect of
    the grid falls short) and the smallest p the exact test can reach with that many tasks
    (2 / 2^n, when every task differs).

    >>> g = pd.DataFrame({"n_tasks": [5, 5], "attempts": [2, 2], "effect_pp": [0, 40],
    ...                   "power": [0.0, 0.5], "role": "primary", "alpha": 0.05})
    >>> minimum_detectable_effects(g)[["mde_pp", "min_attainable_p", "can_reject"]].values
    array([[nan, 0.0625, False]], dtype=object)
    """
    primary = grid[grid["role"] == "primary"]
    rows = []
    for (n, k), g in primary.groupby(["n_tasks", "attempts"], sort=True):
        g = g.sort_values("effect_pp")
        alpha = float(g["alpha"].iloc[0])
        min_p = min_attainable_p(int(n))
        rows.append({"n_tasks": int(n), "attempts": int(k),
                     "mde_pp": _crossing(g["effect_pp"].to_numpy(float),
                                         g["power"].to_numpy(float), target),
                     "target_power": target, "max_effect_pp": float(g["effect_pp"].max()),
                     "min_attainable_p": min_p, "alpha": alpha,
                     "can_reject": bool(min_p <= alpha)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class TaskCount:
    """The smallest task count found to reach the target power for one effect and design.

    Attributes:
        n_tasks: that count, or None when no count up to ``max_tasks`` reaches it.
        power, mc_se: its simulated power and Monte Carlo error.
        attempts, effect_pp, target: the design and effect it answers for.
        max_tasks: the largest count tried.
    """

    n_tasks: int | None
    power: float
    mc_se: float
    attempts: int
    effect_pp: float
    target: float
    max_tasks: int

    def sentence(self, panel: str, panel_tasks: int) -> str:
        """The one line the CLI prints."""
        what = (f"to detect +{self.effect_pp:g} points on the primary contrast with "
                f"{self.target:.0%} power at {self.attempts} attempt(s) per task and arm")
        if self.n_tasks is None:
            return (f"{what}: no task count up to {self.max_tasks} suffices; raise "
                    f"power.max_tasks or the attempts (panel {panel} has {panel_tasks})")
        return (f"preregister {self.n_tasks} tasks {what} (power {self.power:.2f} ± "
                f"{self.mc_se:.2f}); panel {panel} has {panel_tasks}")


def _power_at(spec: PowerSpec, n: int, k: int, effect: float,
              tester: LatticeSignFlip) -> tuple[float, float]:
    row = simulate_design(spec, n, k, (effect,), tester=tester, secondary=False)[0]
    return float(row["power"]), float(row["mc_se"])


def tasks_to_preregister(spec: PowerSpec, *, attempts: int, effect_pp: float,
                         target: float = 0.8, max_tasks: int = 400,
                         tester: LatticeSignFlip | None = None) -> TaskCount:
    """The smallest task count whose simulated primary power reaches ``target``.

    Doubles the count from the grid's smallest until the power reaches the target, then
    bisects between the last count that fell short and the first that reached it. Exact
    tests make power a slightly saw-toothed function of the count, so the answer is the
    first count found to reach the target, not a guarantee that every larger count does.
    """
    tester = tester or LatticeSignFlip()
    lo, hi = 0, max(1, min(spec.tasks))
    best = _power_at(spec, hi, attempts, effect_pp, tester)
    while best[0] < target:
        if hi >= max_tasks:
            return TaskCount(None, best[0], best[1], attempts, effect_pp, target, max_tasks)
        lo, hi = hi, min(2 * hi, max_tasks)
        best = _power_at(spec, hi, attempts, effect_pp, tester)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        at_mid = _power_at(spec, mid, attempts, effect_pp, tester)
        if at_mid[0] >= target:
            hi, best = mid, at_mid
        else:
            lo = mid
    return TaskCount(hi, best[0], best[1], attempts, effect_pp, target, max_tasks)
