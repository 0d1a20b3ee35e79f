"""The report's view of the leave-one-family-out arms (``AnalysisResult.ablation``): each
family's contribution, as a table (``ablation.{tex,md,csv}``) and a figure
(``fig_ablation.{png,pdf}``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fire_exp.report.render import (  # noqa: E402
    ReportTable,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_pct,
)

__all__ = ["ablation_figure", "ablation_table"]


def ablation_table(frame: pd.DataFrame) -> ReportTable:
    """Each family's contribution: real − (real without F) on the tasks where F is eligible."""
    header = ("family", "tasks", "real %", "without F %", "Δ (pts)", "95 % CI", "p",
              "p (Holm)", "improved / regressed")
    rows = tuple((str(r.family), fmt_int(r.n_tasks), fmt_pct(r.pass_real_pct),
                  fmt_pct(r.pass_ablated_pct), fmt_num(r.estimate_pp),
                  fmt_ci(r.ci_low_pp, r.ci_high_pp), fmt_p(r.p_value), fmt_p(r.p_holm),
                  f"{fmt_int(r.improved)} / {fmt_int(r.regressed)}")
                 for r in frame.itertuples(index=False))
    notes = ("Δ = real − (real without F), per-task pass rates paired by task, on the tasks "
             "where F is eligible; percentile interval from the task bootstrap; two-sided "
             "sign-flip p; Holm across the families (exploratory, outside the plan's "
             "secondaries).",
             *(f"{r.family}: {r.note}" for r in frame.itertuples(index=False) if r.note))
    return ReportTable("ablation", "Leave-one-family-out: each family's contribution",
                       header, rows, frame, notes=notes)


def ablation_figure(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Each family's contribution with its interval, largest on top (``out``.png/.pdf);
    nothing when no family has an estimate."""
    if frame.empty or not frame["estimate_pp"].notna().any():
        return []
    shown = frame[frame["estimate_pp"].notna()].sort_values("estimate_pp")
    height = 1.0 + 0.35 * max(1, len(shown))
    with plt.rc_context({"font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False}):
        fig, ax = plt.subplots(figsize=(5.5, height), layout="constrained")
        y = range(len(shown))
        est = shown["estimate_pp"].to_numpy(float)
        err = [est - shown["ci_low_pp"].to_numpy(float),
               shown["ci_high_pp"].to_numpy(float) - est]
        ax.errorbar(est, list(y), xerr=err, fmt="o", color="#0072B2", ms=4, capsize=2)
        ax.axvline(0, color="#555555", lw=0.8, ls="--")
        ax.set_yticks(list(y), [f"{f} ({n} task{'s' if n != 1 else ''})" for f, n in
                                zip(shown["family"], shown["n_tasks"], strict=True)])
        ax.set_ylim(-0.6, len(shown) - 0.4)
        ax.set_xlabel("real − (real without the family), points, 95 % CI")
        ax.set_title("Each family's contribution on its eligible tasks", fontsize=9)
        paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
        for path in paths:
            fig.savefig(path, dpi=200)
        plt.close(fig)
    return paths
