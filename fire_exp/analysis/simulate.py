"""Synthetic five-arm panels for tests, benchmarks and demos (no model, no Docker)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from fire_exp.policies.arms import ARMS

__all__ = ["ARMS", "simulate_panel"]



def simulate_panel(n_tasks: int, *, attempts: int = 2, rng: np.random.Generator,
                   arms: tuple[str, ...] = ARMS, effects: Mapping[str, float] | None = None,
                   eligible_share: float = 0.5, infra_rate: float = 0.0) -> pd.DataFrame:
    """A tidy attempts frame: task difficulty ~ Beta(2, 2), arm effects added in probability.

    >>> f = simulate_panel(3, rng=np.random.default_rng(0)); len(f)
    30
    """
    effects = dict(effects or {})
    base = rng.beta(2, 2, size=n_tasks)
    cohort = np.where(np.arange(n_tasks) < round(eligible_share * n_tasks), "eligible",
                      "silent")
    rows = []
    for t in range(n_tasks):
        for arm in arms:
            p = float(np.clip(base[t] + effects.get(arm, 0.0), 0, 1))
            for r in range(attempts):
                infra = bool(rng.random() < infra_rate)
                passed = bool(rng.random() < p) and not infra
                rows.append({"task": f"t{t:04d}", "arm": arm, "replicate": r,
                             "cohort": cohort[t], "passed": passed, "reward": float(passed),
                             "cost_usd": float(rng.gamma(2.0, 0.05)),
                             "agent_seconds": float(rng.gamma(2.0, 30.0)),
                             "infrastructure_failure": infra})
    return pd.DataFrame(rows)
