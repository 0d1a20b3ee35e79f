"""What ``fire-exp run`` does after the last attempt: analyse, write tables, draw, summarise."""

from __future__ import annotations

from pathlib import Path

from fire_exp.analysis import (
    analyze,
    load_attempts,
    load_plan,
    markdown_table,
    summary_markdown,
    write_tables,
)
from fire_exp.report.ablation import ablation_report
from fire_exp.report.figures import pass_rate_figure
from fire_exp.report.render import write_table


def summarize_run(run_dir: Path, plan: Path) -> str:
    """Analyse ``run_dir/attempts.jsonl`` with ``plan``; returns a Markdown summary.

    Writes ``run_dir/analysis/`` (every table as CSV and Markdown) and
    ``run_dir/analysis/pass_rates.{png,pdf}``.
    """
    result = analyze(run_dir / "attempts.jsonl", plan)
    out = run_dir / "analysis"
    write_tables(result, out)
    figures = pass_rate_figure(result.pass_rates, out / "pass_rates")
    ablation, _ = ablation_report(load_attempts(run_dir / "attempts.jsonl"),
                                  load_plan(plan), out)  # leave-one-family-out arms, if any
    for table in ablation:
        write_table(table, out)
    funnel = result.funnel[result.funnel["cohort"] == "eligible"]
    parts = [summary_markdown(result), *(t.markdown() for t in ablation)]
    if not funnel.empty:
        parts.append("### Funnel on eligible tasks (attempts)\n\n" + markdown_table(
            funnel[["arm", "attempts", "state", "fired", "behavior", "passed"]]))
    parts.append(f"tables: {out}/\nfigure: {figures[0]}\n"
                 f"paper tables and figures (.tex .md .csv, .png .pdf): fire-exp report {run_dir}")
    return "\n\n".join(parts)
