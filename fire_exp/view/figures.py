"""The report's figures for the overview, drawn by ``fire_exp.report`` from the same analysis.

Only the PNGs are kept (the site shows images; the report keeps the PDFs). The task × arm
heatmap is not drawn: the explorer's grid is that figure, with links.
"""

from __future__ import annotations

from pathlib import Path

from fire_exp.analysis import AnalysisResult

__all__ = ["draw_figures"]


def draw_figures(result: AnalysisResult, out: Path) -> list[Path]:
    """Pass rates, the funnel and pass^k per arm as PNGs in ``out``; returns their paths.

    The same figures, cohorts and conditions as ``fire_exp.report.build``.

    Args:
        result: the analysis.
        out: the figures folder.
    """
    from fire_exp.report.design import runs_policies
    from fire_exp.report.figures import figure_cohorts, pass_rate_figure
    from fire_exp.report.plots import funnel_figure, pass_k_figure

    out.mkdir(parents=True, exist_ok=True)
    cohorts = figure_cohorts(list(result.pass_rates["cohort"].unique()), result.main_cohort)
    paths = pass_rate_figure(result.pass_rates, out / "fig_pass_rates", cohorts, result.reference)
    f = result.funnel
    if runs_policies(result) and not f.empty and \
            f[["state", "fired", "behavior"]].to_numpy().any():
        paths += funnel_figure(f, out / "fig_funnel", result.main_cohort)
    if not result.pass_k.empty:
        paths += pass_k_figure(result.pass_k, out / "fig_pass_k", result.suite_cohort)
    for pdf in (p for p in paths if p.suffix == ".pdf"):
        pdf.unlink()
    return [p for p in paths if p.suffix == ".png"]
