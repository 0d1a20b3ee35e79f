"""Which arm is the reference, which cohort is the main one, and the order arms are shown in.

These choices are made once, here, so every table of an analysis (and every rendering of
it) agrees on them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan, parse_contrast
from fire_exp.policies.arms import ARM_REGISTRY

__all__ = ["ARM_ORDER", "arms_in_order", "cohort_attempts", "main_cohort", "reference_arm",
           "suite_cohort"]

ARM_ORDER = ARM_REGISTRY.names()  # the paper's order, as the arms are registered


def arms_in_order(arms: Iterable[str]) -> list[str]:
    """The registered (paper's) arm order, then any other arm (ablation arms) by name.

    >>> arms_in_order(["baseline", "x", "real"])
    ['real', 'baseline', 'x']
    """
    return ARM_REGISTRY.order(set(arms))


def reference_arm(plan: AnalysisPlan, arms: list[str]) -> str:
    """The arm the suite compares with: ``baseline``, else the primary comparator, else the
    last arm in the paper's order."""
    if "baseline" in arms:
        return "baseline"
    comparator = parse_contrast(plan.primary.contrast)[1]
    return comparator if comparator in arms else arms[-1]


def cohort_attempts(attempts: pd.DataFrame, cohort: str) -> pd.DataFrame:
    """The attempts of one cohort (``all``: every attempt)."""
    return attempts if cohort == "all" else attempts[attempts["cohort"] == cohort]


def main_cohort(plan: AnalysisPlan, attempts: pd.DataFrame) -> str:
    """The primary contrast's cohort if the attempts have it, else ``all``."""
    return plan.primary.cohort if plan.primary.cohort in set(attempts["cohort"].unique()) else "all"


def suite_cohort(plan: AnalysisPlan, main: str) -> str:
    """``all`` when the plan analyses it, else the main cohort."""
    return "all" if "all" in plan.cohorts else main
