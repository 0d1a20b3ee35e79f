"""Report: renders an ``AnalysisResult`` as the paper's tables (.tex .md .csv) and figures
(.png .pdf), and the analysis' own tables as .csv/.md. Nothing here computes a statistic:
every number comes from ``fire_exp.analysis``. See docs/report.md.
"""

from fire_exp.report.build import Report, build_report, build_tier_report, render_report
from fire_exp.report.figures import pass_rate_figure
from fire_exp.report.latex import check_tex, tex_escape
from fire_exp.report.render import (
    ReportTable,
    markdown_table,
    summary_markdown,
    write_table,
    write_tables,
)
from fire_exp.report.summary import summarize_run

__all__ = [
    "Report",
    "ReportTable",
    "build_report",
    "build_tier_report",
    "check_tex",
    "markdown_table",
    "pass_rate_figure",
    "render_report",
    "summarize_run",
    "summary_markdown",
    "tex_escape",
    "write_table",
    "write_tables",
]
