"""The tidy attempts frame every loader gives: one scored row per (task, arm, replicate),
its columns, and :class:`LoadedAttempts` (the frame plus what was left out and why)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["ATTEMPT_COLUMNS", "FAMILY_COLUMNS", "KEY", "LoadedAttempts", "normalize_frame"]

KEY = ["task", "arm", "replicate"]
ATTEMPT_COLUMNS = [*KEY, "cohort", "reward", "passed", "cost_usd", "agent_seconds",
                   "infrastructure_failure", "gave_up", "cause", "no_fair_attempt",
                   "funnel_state", "funnel_fired", "funnel_behavior", "funnel_passed"]
FAMILY_COLUMNS = [*KEY, "cohort", "family", "state", "fired", "behavior", "passed"]


@dataclass(frozen=True)
class LoadedAttempts:
    """The scored attempts plus what was left out and why.

    Attributes:
        attempts: one row per (task, arm, replicate), columns ``ATTEMPT_COLUMNS``.
        families: one row per (attempt, eligible family) of the family funnel.
        source: where the attempts came from.
        n_records: finished records (or CSV rows) read.
        n_invalid: records with ``valid=False``, excluded from scoring.
        n_superseded: records dropped by the replacement rule.
        torn_tail: the file's last line was torn by a crash and ignored.
        superseded: the records the replacement rule dropped (task, arm, replicate,
            cause), kept so error rates per arm count every failed attempt.
        coding_errors: scored attempts with a family whose extractor raised (that family
            is uncoded there; the record names the error).
    """

    attempts: pd.DataFrame
    families: pd.DataFrame
    source: str
    n_records: int
    n_invalid: int
    n_superseded: int
    torn_tail: bool = False
    superseded: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=[*KEY, "cause"]))
    coding_errors: int = 0


def normalize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Bring a user frame (CSV columns) to ``ATTEMPT_COLUMNS``, filling optional ones.

    ``passed`` defaults to ``reward >= 1``; ``reward`` defaults to ``passed``.
    """
    f = frame.copy()
    if "reward" not in f and "passed" not in f:
        raise ValueError("the attempts need a reward or a passed column")
    if "passed" not in f:
        f["passed"] = f["reward"].astype(float) >= 1.0
    if "reward" not in f:
        f["reward"] = f["passed"].astype(float)
    if "valid" in f:
        f = f[f["valid"].astype(bool)]
    defaults = {"cohort": "all", "cost_usd": 0.0, "agent_seconds": 0.0,
                "infrastructure_failure": False, "gave_up": False, "cause": "",
                "no_fair_attempt": False, "funnel_state": np.nan, "funnel_fired": 0.0,
                "funnel_behavior": np.nan}
    for col, default in defaults.items():
        if col not in f:
            f[col] = default
    f["passed"] = f["passed"].astype(bool)
    f["funnel_passed"] = f["passed"].astype(float)
    f["replicate"] = f["replicate"].astype(int)
    for col in ("task", "arm", "cohort"):  # names: grouped by their codes from here on
        if not isinstance(f[col].dtype, pd.CategoricalDtype):
            f[col] = pd.Categorical(f[col].astype(str))
    return f[ATTEMPT_COLUMNS].reset_index(drop=True)
