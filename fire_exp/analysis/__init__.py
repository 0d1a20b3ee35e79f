"""The analysis layer: reading a run and its plan, and every table of a panel as data.

``analyze(source, plan)`` returns an ``AnalysisResult``; ``fire_exp.report`` renders it.
"""

from fire_exp.analysis.accounting import RunStatus
from fire_exp.analysis.arms import ARM_ORDER, arms_in_order
from fire_exp.analysis.cohorts import CONTRAST_LEADING_COLUMNS
from fire_exp.analysis.conformance import check_conformance
from fire_exp.analysis.dry_run import dry_analysis
from fire_exp.analysis.load import LoadedAttempts, load_attempts, normalize_frame
from fire_exp.analysis.pipeline import analyze
from fire_exp.analysis.plan import AnalysisPlan, load_plan, parse_contrast
from fire_exp.analysis.result import AnalysisResult
from fire_exp.analysis.run import PlanChoice, RunInputs, choose_plan, read_run, resolve_plan
from fire_exp.analysis.sequential import (
    FrozenOrder,
    SequentialState,
    read_stop,
    sequential_state,
    sequential_summary,
)
from fire_exp.analysis.tiers import compare_tiers

__all__ = [
    "ARM_ORDER",
    "CONTRAST_LEADING_COLUMNS",
    "AnalysisPlan",
    "AnalysisResult",
    "FrozenOrder",
    "LoadedAttempts",
    "PlanChoice",
    "RunInputs",
    "RunStatus",
    "SequentialState",
    "analyze",
    "arms_in_order",
    "check_conformance",
    "choose_plan",
    "compare_tiers",
    "dry_analysis",
    "load_attempts",
    "load_plan",
    "normalize_frame",
    "parse_contrast",
    "read_run",
    "read_stop",
    "resolve_plan",
    "sequential_state",
    "sequential_summary",
]
