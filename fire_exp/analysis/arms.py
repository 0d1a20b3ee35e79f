"""Which arm is the reference, which cohort is the main one, and the order arms are shown in.

These choices are made once, here, so every table of an analysis (and every rendering of
it) agrees on them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan, parse_contrast

__all__ = ["ARM_ORDER", "arms_in_order", "main_cohort", "reference_arm", "suite_cohort"]

ARM_ORDER = ("real", "sham", "always_verify", "reconsider", "baseline")


def arms_in_order(arms: Iterable[str]) -> list[str]:
    """The paper's arm order, then any other arm alphabetically.

    >>> arms_in_order(["baseline", "x", "real"])
    ['real', 'baseline', 'x']
    """
    present = set(arms)
    known = [a for a in ARM_ORDER if a in present]
    return known + sorted(present - set(known))


def reference_arm(plan: AnalysisPlan, arms: list[str]) -> str:
    """The arm the suite compares with: ``baseline``, else the primary comparator, else the
    last arm in the paper's order."""
    if "baseline" in arms:
        return "baseline"
    comparator = parse_contrast(plan.primary.contrast)[1]
    return comparator if comparator in arms else arms[-1]


def main_cohort(plan: AnalysisPlan, attempts: pd.DataFrame) -> str:
    """The primary contrast's cohort if the attempts have it, else ``all``."""
    return plan.primary.cohort if plan.primary.cohort in set(attempts["cohort"]) else "all"


def suite_cohort(plan: AnalysisPlan, main: str) -> str:
    """``all`` when the plan analyses it, else the main cohort."""
    return "all" if "all" in plan.cohorts else main
