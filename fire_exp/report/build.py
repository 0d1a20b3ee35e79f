"""The report of a run: every paper table and figure, rendered from its ``AnalysisResult``.

``render_report`` writes an analysis as paper tables (``.tex``/``.md``/``.csv``), figures
(``.png``/``.pdf``), ``report.md`` with every table in reading order, and the analysis'
own tables under ``data/``. ``build_report`` analyses a run (with the plan frozen with it
unless one is given) and renders it; ``fire-exp report`` and the summary ``fire-exp run``
prints both go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fire_exp.analysis import AnalysisPlan, AnalysisResult, RunStatus, analyze, compare_tiers
from fire_exp.analysis.sequential import sequential_markdown
from fire_exp.errors import InputError
from fire_exp.report.ablation import ablation_figure, ablation_table
from fire_exp.report.accounting import accounting_table, prereg_table
from fire_exp.report.arm_changes import arm_changes_table, arm_design_table
from fire_exp.report.cohorts import interaction_table, tasks_table
from fire_exp.report.design import runs_policies
from fire_exp.report.figures import figure_cohorts, pass_rate_figure
from fire_exp.report.plots import funnel_figure, heatmap_figure, pass_k_figure
from fire_exp.report.reliability import reliability_table
from fire_exp.report.render import (
    DATA_DIR,
    ReportTable,
    default_out,
    markdown_table,
    write_table,
    write_tables,
)
from fire_exp.report.rounding import fixed
from fire_exp.report.sequential import looks_table
from fire_exp.report.suite import suite_table, transitions_table
from fire_exp.report.tables import (
    contrasts_table,
    family_funnel_table,
    funnel_table,
    near_miss_table,
)
from fire_exp.report.tiers import tiers_table

__all__ = ["DATA_DIR", "TABLE_BUILDERS", "Report", "build_report", "build_tier_report",
           "render_report"]

TABLE_BUILDERS: tuple[Callable[[AnalysisResult], ReportTable], ...] = (
    contrasts_table, funnel_table, family_funnel_table, near_miss_table, suite_table,
    transitions_table, interaction_table, tasks_table, reliability_table, accounting_table,
    prereg_table)
# Tables of what policies did: left out of a panel whose arms run none.
POLICY_TABLES = (funnel_table, family_funnel_table, near_miss_table)


@dataclass(frozen=True)
class Report:
    """What ``render_report`` wrote.

    Attributes:
        out: the report folder.
        tables: every paper table, in reading order.
        figures: every figure file (.png and .pdf).
        result: the analysis the tables render.
    """

    out: Path
    tables: tuple[ReportTable, ...]
    figures: tuple[Path, ...]
    result: AnalysisResult

    @property
    def status(self) -> RunStatus:
        """Whether the run was finished."""
        return self.result.status

    @property
    def tier(self) -> str:
        """The run's agent tier (or the run's name when records name none or several)."""
        return self.result.tier

    @property
    def reference(self) -> str:
        """The arm the suite compares with."""
        return self.result.reference

    def table(self, name: str) -> ReportTable:
        """One table by file stem."""
        return next(t for t in self.tables if t.name == name)

    def summary(self) -> str:
        """What the terminal shows: the plan used, a partial-run note, pass rates per arm,
        the contrasts and where everything went."""
        parts = [f"{self.result.metadata.get('plan_used', '')}"]
        if self.status.partial:
            parts.append(f"NOTE: partial run: {self.status.message}.")
        contrasts = self.result.contrasts
        if contrasts.empty or not (contrasts["role"] == "primary").any():
            # `analyze` exits 1 here; the report (and the run it ends) says it first
            primary = self.result.plan.primary
            parts.append(f"NOTE: the primary contrast '{primary.contrast}' on "
                         f"'{primary.cohort}' could not be computed (the attempts lack an "
                         "arm or the cohort; notes.md says which): no preregistered "
                         "question is answered.")
        if self.result.sequential is not None and self.result.sequential.get("line"):
            parts.append(f"sequential test: {self.result.sequential['line']}")
        pr = self.result.pass_rates
        if not pr.empty:
            wide = pr.pivot(index="arm", columns="cohort", values="pass_rate_pct")
            wide = wide.map(lambda v: "" if pd.isna(v) else fixed(v))  # as the report's
            order = [a for a in self.result.arms if a in wide.index]
            parts.append("# Pass rate (%) per arm\n\n" + markdown_table(
                wide.loc[order].reset_index()) + "\n")
        parts.append(self.tables[0].markdown())
        parts.append(f"{len(self.tables)} tables (.tex .md .csv) and "
                     f"{len(self.figures) // 2} figures (.png .pdf) in {self.out}/; "
                     f"all tables: {self.out / 'report.md'}; the analysis' tables: "
                     f"{self.out / DATA_DIR}/")
        return "\n".join(parts)


def _figures(result: AnalysisResult, out: Path) -> list[Path]:
    paths = pass_rate_figure(result.pass_rates, out / "fig_pass_rates",
                             figure_cohorts(list(result.pass_rates["cohort"].unique()),
                                            result.main_cohort), result.reference)
    f = result.funnel
    if runs_policies(result) and not f.empty and \
            f[["state", "fired", "behavior"]].to_numpy().any():
        paths += funnel_figure(f, out / "fig_funnel", result.main_cohort)
    if not result.pass_k.empty:
        paths += pass_k_figure(result.pass_k, out / "fig_pass_k", result.suite_cohort)
    paths += heatmap_figure(result.tasks, out / "fig_tasks", result.plan.cohorts)
    return paths


def render_report(result: AnalysisResult, out: Path | str) -> Report:
    """Write ``result`` as the report in ``out``: paper tables, figures, ``report.md`` and
    the analysis' tables in ``out/data/``."""
    out = Path(out)
    policies = runs_policies(result)
    tables = [build(result) for build in TABLE_BUILDERS
              if policies or build not in POLICY_TABLES]
    tables.insert(1, arm_design_table(result))
    looks = looks_table(result)
    tables[1:1] = [looks] if looks is not None else []
    tables += [ablation_table(result.ablation)] if not result.ablation.empty else []
    tables += [arm_changes_table(result.arm_changes)] if not result.arm_changes.empty else []
    banner = result.status.message if result.status.partial else ""
    for table in tables:
        write_table(table, out, banner)
    write_tables(result, out / DATA_DIR)
    figures = _figures(result, out) + ablation_figure(result.ablation, out / "fig_ablation")
    plan = result.plan
    source = Path(str(result.metadata.get("source")))
    run = source.parent if source.name == "attempts.jsonl" else source
    # Named from the run's folder, not this machine's: a report travels with a paper.
    named = f"{run.name}/{source.name}" if run != source else source.name
    head = (f"# Report: {named}\n\nanalysis plan {plan.name} (seed {plan.seed}); every "
            f"attempt in the browser: `fire-exp view {run.name}` (from the folder holding "
            "the run)\n\n")
    if banner:
        head += f"> **Partial run: {banner}**\n\n"
    if result.sequential is not None:  # the primary result of a sequential plan
        head += sequential_markdown(result.sequential).replace("### ", "# ", 1) + "\n"
    (out / "report.md").write_text(
        head + "\n".join(t.markdown() for t in tables) + "\n# Figures\n\n"
        + "".join(f"![{p.stem}]({p.name})\n\n" for p in figures if p.suffix == ".png"),
        encoding="utf-8")
    return Report(out, tuple(tables), tuple(figures), result)


def build_report(run: Path | str, plan: AnalysisPlan | Path | str | None = None,
                 out: Path | str | None = None) -> Report:
    """Analyse ``run`` and write its report.

    Args:
        run: a run folder (``attempts.jsonl``, optional ``prereg.json``) or an attempts
            file (JSONL or CSV; a ``prereg.json`` beside it is used).
        plan: the analysis plan (object, file or name); None: the one frozen with the run.
        out: report folder (default ``RUN/report`` or ``<file stem>-report``).

    Raises:
        InputError: a missing or malformed attempts file, plan or manifest.
    """
    run = Path(run)
    result = analyze(run, plan)
    return render_report(result, Path(out) if out is not None else default_out(run))


def build_tier_report(runs: Sequence[Path | str], plan: AnalysisPlan | Path | str | None,
                      out: Path | str) -> tuple[list[Report], Path]:
    """Report several runs (one per agent tier) into ``out/<tier>/`` and ``out/tiers.*``.

    Raises:
        InputError: as ``build_report``, or two runs with the same tier label.
    """
    out = Path(out)
    results: list[AnalysisResult] = []
    for run in map(Path, runs):
        result = analyze(run, plan)
        if any(r.tier == result.tier for r in results):
            raise InputError(run, "tier", f"a second run of tier '{result.tier}'",
                             "report runs of different tiers together")
        results.append(result)
    reports = [render_report(r, out / r.tier) for r in results]
    partial = "; ".join(f"{r.tier}: {r.status.message}" for r in reports if r.status.partial)
    table = tiers_table(compare_tiers([(r.tier, r) for r in results]), results[0].reference,
                        fired=any(runs_policies(r) for r in results))
    write_table(table, out, partial)
    return reports, out / "tiers.md"
