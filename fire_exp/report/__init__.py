"""Report: renders an ``AnalysisResult`` as the paper's tables (.tex .md .csv) and figures
(.png .pdf), and the analysis' own tables as .csv/.md. Nothing here computes a statistic:
every number comes from ``fire_exp.analysis``. See docs/report.md.

The public names load on first use (PEP 562), so a command that only formats tables
(``fire-exp analyze``) does not import matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Report": "build", "build_report": "build", "build_tier_report": "build",
    "render_report": "build", "pass_rate_figure": "figures", "check_tex": "latex",
    "tex_escape": "latex", "ReportTable": "render", "markdown_table": "render",
    "summary_markdown": "render", "write_table": "render", "write_tables": "render",
    "summarize_run": "summary",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fire_exp.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fire_exp.report.{module}"), name)
