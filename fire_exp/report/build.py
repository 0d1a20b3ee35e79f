"""``build_report``: every paper table and figure of a run, from its attempts and its plan.

Reads only the attempts file, the analysis plan and (when present) the run's
``prereg.json``. Writes each table as ``.tex``/``.md``/``.csv``, each figure as
``.png``/``.pdf``, and ``report.md`` with every table in reading order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fire_exp.analysis import AnalysisPlan, AnalysisResult, analyze, load_attempts, load_plan
from fire_exp.analysis.load import loaded_from_records
from fire_exp.errors import InputError
from fire_exp.records import ReadResult, RecordsFileError, read_records
from fire_exp.report.ablation import ablation_report
from fire_exp.report.accounting import (
    RunStatus,
    accounting_table,
    prereg_table,
    read_prereg,
    run_status,
)
from fire_exp.report.cohorts import interaction_table, tasks_table
from fire_exp.report.figures import pass_rate_figure
from fire_exp.report.plots import funnel_figure, heatmap_figure, pass_k_figure
from fire_exp.report.reliability import reliability_table
from fire_exp.report.render import ReportTable, write_table
from fire_exp.report.suite import suite_cohort, suite_table, transitions_table
from fire_exp.report.tables import (
    ReportInputs,
    contrasts_table,
    family_funnel_table,
    funnel_table,
    near_miss_table,
)
from fire_exp.report.tiers import tier_label, tiers_table

__all__ = ["Report", "TABLE_BUILDERS", "attempts_path", "build_report", "build_tier_report"]

TABLE_BUILDERS: tuple[Callable[[ReportInputs], ReportTable], ...] = (
    contrasts_table, funnel_table, family_funnel_table, near_miss_table, suite_table,
    transitions_table, interaction_table, tasks_table, reliability_table)


@dataclass(frozen=True)
class Report:
    """What ``build_report`` wrote.

    Attributes:
        out: the report folder.
        tables: every table, in reading order.
        figures: every figure file (.png and .pdf).
        status: whether the run was finished.
        result: the analysis the tables come from.
        tier: the run's agent tier (or the run's name when records name none or several).
        reference: the arm the suite compares with.
    """

    out: Path
    tables: tuple[ReportTable, ...]
    figures: tuple[Path, ...]
    status: RunStatus
    result: AnalysisResult
    tier: str = ""
    reference: str = "baseline"

    def table(self, name: str) -> ReportTable:
        """One table by file stem."""
        return next(t for t in self.tables if t.name == name)

    def summary(self) -> str:
        """What the terminal shows: a partial-run note, the contrasts and the files."""
        parts = []
        if self.status.partial:
            parts.append(f"NOTE: partial run: {self.status.message}.")
        first = self.tables[0]
        parts.append(first.markdown())
        parts.append(f"{len(self.tables)} tables (.tex .md .csv) and "
                     f"{len(self.figures) // 2} figures (.png .pdf) in {self.out}/; "
                     f"all tables: {self.out / 'report.md'}")
        return "\n".join(parts)


def attempts_path(run: Path) -> Path:
    """The attempts file of ``run`` (a run folder or the file itself)."""
    path = run / "attempts.jsonl" if run.is_dir() else run
    if not path.is_file():
        raise InputError(path, "<file>", "no such attempts file",
                         "pass a run folder holding attempts.jsonl, or an attempts file")
    return path


def _read(path: Path) -> ReadResult | None:
    if path.suffix.lower() == ".csv":
        return None
    try:
        return read_records(path)
    except RecordsFileError as exc:
        raise InputError(exc.path, f"line {exc.line}, field '{exc.field}'", str(exc),
                         "fix or remove that line") from exc


def _figures(inp: ReportInputs, out: Path) -> list[Path]:
    res = inp.result
    paths = pass_rate_figure(res.pass_rates, out / "fig_pass_rates",
                             tuple(c for c in ("eligible", "silent")
                                   if c in set(res.pass_rates["cohort"])) or ("all",))
    if not res.funnel.empty and res.funnel[["state", "fired", "behavior"]].to_numpy().any():
        paths += funnel_figure(res.funnel, out / "fig_funnel", inp.main_cohort)
    if not res.pass_k.empty:
        paths += pass_k_figure(res.pass_k, out / "fig_pass_k", suite_cohort(inp))
    paths += heatmap_figure(inp.loaded.attempts, out / "fig_tasks", inp.plan.cohorts)
    return paths


def build_report(run: Path | str, plan: AnalysisPlan | Path | str,
                 out: Path | str | None = None) -> Report:
    """Analyse ``run`` with ``plan`` and write the report.

    Args:
        run: a run folder (``attempts.jsonl``, optional ``prereg.json``) or an attempts
            file (JSONL or CSV; a ``prereg.json`` beside it is used).
        plan: the analysis plan (object or YAML path).
        out: report folder (default ``RUN/report`` or ``<file stem>-report``).

    Raises:
        InputError: a missing or malformed attempts file, plan or manifest.
    """
    run = Path(run)
    path = attempts_path(run)
    plan_path = None if isinstance(plan, AnalysisPlan) else Path(plan)
    plan = plan if isinstance(plan, AnalysisPlan) else load_plan(plan)
    out = Path(out) if out is not None else (
        run / "report" if run.is_dir() else run.parent / f"{run.stem}-report")
    read = _read(path)
    prereg = read_prereg(path.parent / "prereg.json")
    loaded = load_attempts(path) if read is None else loaded_from_records(read, path)
    if loaded.attempts.empty:
        raise InputError(path, "<attempts>", "no finished, valid attempt to report yet",
                         "wait for the first attempt to finish")
    inp = ReportInputs(plan, analyze(loaded, plan), loaded)
    status = run_status(read, prereg)
    tables = [build(inp) for build in TABLE_BUILDERS]
    tables += [accounting_table(inp, read, prereg), prereg_table(prereg, plan_path)]
    ablation_tables, ablation_figures = ablation_report(loaded, plan, out)  # without_F arms
    tables += ablation_tables
    banner = status.message if status.partial else ""
    for table in tables:
        write_table(table, out, banner)
    figures = _figures(inp, out) + ablation_figures
    head = f"# Report: {path}\n\nanalysis plan {plan.name} (seed {plan.seed})\n\n"
    if banner:
        head += f"> **Partial run: {banner}**\n\n"
    (out / "report.md").write_text(
        head + "\n".join(t.markdown() for t in tables) + "\n# Figures\n\n"
        + "".join(f"![{p.stem}]({p.name})\n\n" for p in figures if p.suffix == ".png"),
        encoding="utf-8")
    name = run.name if run.is_dir() else run.stem
    return Report(out, tuple(tables), tuple(figures), status, inp.result,
                  tier_label(read, name), inp.reference)


def build_tier_report(runs: Sequence[Path | str], plan: AnalysisPlan | Path | str,
                      out: Path | str) -> tuple[list[Report], Path]:
    """Report several runs (one per agent tier) into ``out/<tier>/`` and ``out/tiers.*``.

    Raises:
        InputError: as ``build_report``, or two runs with the same tier label.
    """
    out = Path(out)
    reports: list[Report] = []
    for run in map(Path, runs):
        tier = tier_label(_read(attempts_path(run)), run.name if run.is_dir() else run.stem)
        if any(r.tier == tier for r in reports):
            raise InputError(run, "tier", f"a second run of tier '{tier}'",
                             "report runs of different tiers together")
        reports.append(build_report(run, plan, out / tier))
    partial = "; ".join(f"{r.tier}: {r.status.message}" for r in reports if r.status.partial)
    table = tiers_table([(r.tier, r.table("suite")) for r in reports], reports[0].reference)
    write_table(table, out, partial)
    return reports, out / "tiers.md"
