"""FIRE Table 5 across runs: the suite metrics of each agent tier side by side."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fire_exp.analysis.result import AnalysisResult

__all__ = ["compare_tiers"]


def compare_tiers(results: Sequence[tuple[str, AnalysisResult]]) -> pd.DataFrame:
    """Per tier and arm: each run's ``suite`` row, plus ``cost_change_pct``, the change of
    total cost against the run's reference arm (columns ``tier``, the suite's columns,
    ``cost_change_pct``)."""
    frames = []
    for tier, result in results:
        data = result.suite.assign(tier=tier)
        ref = data.loc[data["arm"] == result.reference, "total_cost_usd"]
        base = float(ref.iloc[0]) if len(ref) else np.nan
        data["cost_change_pct"] = 100 * (data["total_cost_usd"] / base - 1) if base else np.nan
        frames.append(data)
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(data):
        data = data[["tier", *[c for c in data.columns if c != "tier"]]]
    return data
