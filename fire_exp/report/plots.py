"""The report's figures beyond Figure 1: funnel per arm, pass^k curves, task × arm heatmap.

Same style as :mod:`fire_exp.report.figures` (its ``STYLE`` and arm colours), each
written as ``.png`` and ``.pdf``. Every figure states its n (tasks, attempts) on the page.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fire_exp.report.figures import ARM_LABELS, arm_style, arms_in_order, save, styled

__all__ = ["funnel_figure", "heatmap_figure", "pass_k_figure"]

_STAGES = [("state", "risky state", "#999999", ""), ("fired", "fired", "#E69F00", "//"),
           ("behavior", "registered behavior", "#56B4E9", ".."),
           ("passed", "verifier pass", "#009E73", "xx")]
_HEATMAP_LABELS = 60  # beyond this many tasks, rows are unlabelled
_HEATMAP_CELLS = 40  # beyond this many tasks, cells carry no "s/n" text


def funnel_figure(funnel: pd.DataFrame, out: Path, cohort: str) -> list[Path]:
    """Funnel per arm: share of attempts with the state, fired, behavior and a pass.

    Args:
        funnel: the analysis' ``funnel`` table.
        out: path without suffix.
        cohort: which cohort's rows to draw.
    """
    f = funnel[funnel["cohort"] == cohort].set_index("arm")
    arms = arms_in_order(list(f.index))
    x = np.arange(len(arms))
    width = 0.2
    with styled():
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
        for i, (col, label, colour, hatch) in enumerate(_STAGES):
            n = f.loc[arms, col].to_numpy(dtype=float)
            pct = 100 * n / f.loc[arms, "attempts"].to_numpy(dtype=float)
            bars = ax.bar(x + (i - 1.5) * width, pct, width, label=label, color=colour,
                          hatch=hatch, edgecolor="white", linewidth=0.4)
            for bar, count in zip(bars, n, strict=True):
                ax.annotate(f"{int(count)}", (bar.get_x() + bar.get_width() / 2,
                                              bar.get_height()),
                            xytext=(0, 1.5), textcoords="offset points", ha="center",
                            va="bottom", fontsize=6)
        ax.set_xticks(x, [f"{ARM_LABELS.get(a, a)}\nn = {int(f.loc[a, 'attempts'])}"
                          for a in arms])
        ax.set_ylabel("share of attempts (%)")
        ax.set_ylim(0, 106)
        ax.set_yticks(range(0, 101, 20))
        ax.legend(ncol=4, loc="lower center", frameon=False, bbox_to_anchor=(0.5, 1.0))
        ax.set_title(f"Funnel per arm, {cohort} tasks (numbers: attempts)", pad=20)
        fig.tight_layout()
        return save(fig, out)


def pass_k_figure(pass_k: pd.DataFrame, out: Path, cohort: str) -> list[Path]:
    """pass^k against k per arm (seed 003): how fast reliability falls with repetition."""
    pk = pass_k[pass_k["cohort"] == cohort]
    arms = arms_in_order(list(pk["arm"].unique()))
    k_max = int(pk["k"].max())
    with styled():
        fig, ax = plt.subplots(figsize=(4.8, 3.2))
        for i, arm in enumerate(arms):
            g = pk[pk["arm"] == arm].sort_values("k")
            marker, colour = arm_style(arm, arms)
            # A small horizontal dodge keeps arms with equal values visible.
            dodge = (i - (len(arms) - 1) / 2) * 0.03
            ax.plot(g["k"] + dodge, g["pass_hat_k_pct"], marker=marker, color=colour,
                    label=ARM_LABELS.get(arm, arm), lw=1.2, markersize=5)
        n = int(pk["n_tasks"].max())
        ax.set_xticks(range(1, k_max + 1))
        ax.set_xlim(0.7, k_max + 0.3)
        ax.set_xlabel("k (attempts that must all pass)")
        ax.set_ylabel("pass$^k$ (% of tasks)")
        ax.set_ylim(0, 103)
        ax.legend(frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
        ax.set_title(f"pass$^k$ per arm, {cohort} tasks (n = {n} tasks)")
        fig.tight_layout()
        return save(fig, out)


def heatmap_figure(tasks: pd.DataFrame, out: Path, cohorts: list[str]) -> list[Path]:
    """Per-task success under each arm: rows tasks (grouped by cohort), columns arms.

    Args:
        tasks: the analysis' ``tasks`` table (cohort, task, arm, attempts, successes).
        out: path without suffix.
        cohorts: the plan's cohorts, in the order the row blocks are drawn.
    """
    agg = tasks.set_index(["cohort", "task", "arm"])[["successes", "attempts"]]
    arms = arms_in_order(list(tasks["arm"].unique()))
    order = [c for c in cohorts if c in set(tasks["cohort"].unique())]
    order += sorted(set(tasks["cohort"].unique()) - set(order))
    index = [(c, t) for c in order for t in sorted(set(tasks.loc[tasks["cohort"] == c,
                                                                    "task"]))]
    if len(index) > _HEATMAP_LABELS:
        # Unlabelled rows: sort by mean success within each cohort so structure shows.
        sums = agg.groupby(["cohort", "task"]).sum()
        mean = sums["successes"] / sums["attempts"]
        index = sorted(index, key=lambda ct: (order.index(ct[0]), -mean[ct], ct[1]))
    succ = agg["successes"].unstack("arm").reindex(index=pd.MultiIndex.from_tuples(index),
                                                   columns=arms)
    cnt = agg["attempts"].unstack("arm").reindex(index=succ.index, columns=arms)
    rate = (succ / cnt).to_numpy(dtype=float)
    n_tasks = len(index)
    height = min(9.0, max(3.2, 1.4 + 0.18 * n_tasks)) if n_tasks <= _HEATMAP_LABELS else 6.0
    with styled():
        fig, ax = plt.subplots(figsize=(2.2 + 0.75 * len(arms), height))
        cmap = plt.get_cmap("cividis").with_extremes(bad="#dddddd")
        im = ax.imshow(np.ma.masked_invalid(rate), aspect="auto", cmap=cmap, vmin=0, vmax=1,
                       interpolation="nearest")
        ax.set_xticks(range(len(arms)), [ARM_LABELS.get(a, a) for a in arms], rotation=30,
                      ha="right")
        if n_tasks <= _HEATMAP_LABELS:
            ax.set_yticks(range(n_tasks), [t for _, t in index], fontsize=7)
        else:
            ax.set_yticks([])
            ax.set_ylabel(f"{n_tasks} tasks, by mean success within cohort")
        if n_tasks <= _HEATMAP_CELLS:
            for (i, j), v in np.ndenumerate(rate):
                if not np.isnan(v):
                    ax.text(j, i, f"{int(succ.iat[i, j])}/{int(cnt.iat[i, j])}", ha="center",
                            va="center", fontsize=6.5, color="black" if v > 0.6 else "white")
        start = 0
        for cohort in order:
            size = sum(1 for c, _ in index if c == cohort)
            if start:
                ax.axhline(start - 0.5, color="white", lw=2)
            ax.annotate(cohort, (1.02, 1 - (start + size / 2) / n_tasks),
                        xycoords="axes fraction", rotation=-90, va="center", fontsize=8)
            start += size
        for spine in ax.spines.values():
            spine.set_visible(False)
        bar = fig.colorbar(im, ax=ax, fraction=0.06, pad=0.1)
        bar.set_label("share of attempts passed")
        ax.set_title(f"Per-task success (passed / attempts; {n_tasks} tasks)")
        fig.tight_layout()
        return save(fig, out)
