"""Report: the paper's tables (.tex .md .csv) and figures (.png .pdf) from an attempts file.

``build_report`` reads only the attempts file, the analysis plan and the run's
``prereg.json``; every number comes from ``fire_exp.analysis`` or ``fire_exp.stats``.
See docs/report.md.
"""

from fire_exp.report.build import Report, build_report, build_tier_report
from fire_exp.report.figures import pass_rate_figure
from fire_exp.report.latex import check_tex, tex_escape
from fire_exp.report.render import ReportTable, write_table
from fire_exp.report.summary import summarize_run

__all__ = [
    "Report",
    "ReportTable",
    "build_report",
    "build_tier_report",
    "check_tex",
    "pass_rate_figure",
    "summarize_run",
    "tex_escape",
    "write_table",
]
