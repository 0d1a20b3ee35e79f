"""The analysis layer: plan, loading attempts, the tables of a panel, and writing them."""

from fire_exp.analysis.load import LoadedAttempts, load_attempts, normalize_frame
from fire_exp.analysis.output import markdown_table, summary_markdown, write_tables
from fire_exp.analysis.plan import AnalysisPlan, load_plan, parse_contrast
from fire_exp.analysis.tables import CONTRAST_LEADING_COLUMNS, AnalysisResult, analyze

__all__ = [
    "CONTRAST_LEADING_COLUMNS",
    "AnalysisPlan",
    "AnalysisResult",
    "LoadedAttempts",
    "analyze",
    "load_attempts",
    "load_plan",
    "markdown_table",
    "normalize_frame",
    "parse_contrast",
    "summary_markdown",
    "write_tables",
]
