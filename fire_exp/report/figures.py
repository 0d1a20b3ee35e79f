"""Figures in one print-readable style (matplotlib, Agg backend).

Every figure is written as ``.png`` (200 dpi) and ``.pdf``: pass rate per arm (FIRE
Figure 1), the funnel per arm, pass^k against k per arm, and a task × arm heatmap.
Colours are Okabe–Ito; each arm also has its own marker so a greyscale print still
tells the arms apart.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from fire_exp.analysis import arms_in_order  # noqa: E402

__all__ = ["ARM_LABELS", "arm_style", "arms_in_order", "figure_cohorts", "pass_rate_figure",
           "pass_rate_title", "save", "styled"]

ARM_LABELS = {"real": "real policy", "sham": "triggered sham", "always_verify": "always verify",
              "reconsider": "reconsider", "baseline": "baseline"}
# Okabe–Ito colours: distinguishable in colour-blind vision and in greyscale print.
COHORT_STYLE = {"eligible": ("o", "#0072B2"), "silent": ("s", "#E69F00"), "all": ("D", "#555555")}
ARM_STYLE = {"real": ("o", "#0072B2"), "sham": ("s", "#D55E00"),
             "always_verify": ("^", "#009E73"), "reconsider": ("D", "#CC79A7"),
             "baseline": ("v", "#000000")}
_EXTRA = [("P", "#E69F00"), ("X", "#56B4E9"), ("*", "#F0E442"), ("h", "#999999")]

STYLE: dict[str, Any] = {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
         "axes.spines.top": False, "axes.spines.right": False, "savefig.dpi": 200}


def styled() -> contextlib.AbstractContextManager[None]:
    """The one style every report figure is drawn in."""
    return plt.rc_context(STYLE)  # type: ignore[arg-type]


def arm_style(arm: str, arms: list[str]) -> tuple[str, str]:
    """(marker, colour) of an arm; arms outside the paper's five cycle through extras."""
    if arm in ARM_STYLE:
        return ARM_STYLE[arm]
    others = [a for a in arms if a not in ARM_STYLE]
    return _EXTRA[others.index(arm) % len(_EXTRA)] if arm in others else _EXTRA[0]


def save(fig: Figure, out: Path) -> list[Path]:
    """Write ``fig`` as ``out.png`` and ``out.pdf`` and close it."""
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path)
    plt.close(fig)
    return paths


def _span(values: pd.Series) -> str:
    """``12`` when every arm has the same count, ``10–12`` when a partial run differs."""
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}–{high}"


def figure_cohorts(cohorts: list[str], primary: str) -> tuple[str, ...]:
    """The cohorts Figure 1 draws: the primary contrast's first, then eligible and silent.

    >>> figure_cohorts(["all", "eligible", "silent"], "all")
    ('all', 'eligible', 'silent')
    >>> figure_cohorts(["eligible", "silent", "all"], "eligible")
    ('eligible', 'silent')
    """
    present = set(cohorts)
    chosen = [c for c in (primary, "eligible", "silent") if c in present]
    return tuple(dict.fromkeys(chosen)) or (("all",) if "all" in present else tuple(cohorts[:1]))


def pass_rate_title(arms: list[str], reference: str) -> str:
    """Figure 1's title: it names the dashed arm only when the panel has it.

    >>> pass_rate_title(["agents_md", "no_file"], "no_file")
    'Pass rate per arm (dashed: no_file)'
    >>> pass_rate_title(["agents_md", "no_file"], "baseline")
    'Pass rate per arm'
    """
    return "Pass rate per arm" + (f" (dashed: {ARM_LABELS.get(reference, reference)})"
                                  if reference in arms else "")


def pass_rate_figure(pass_rates: pd.DataFrame, out: Path, cohorts: tuple[str, ...] =
                     ("eligible", "silent"), reference: str = "baseline") -> list[Path]:
    """FIRE's Figure 1: pass rate per arm with 95 % task-bootstrap intervals, per cohort.

    Args:
        pass_rates: the analysis' ``pass_rates`` table (cohort, arm, n_tasks, attempts,
            pass_rate_pct, ci_low_pct, ci_high_pct).
        out: path without suffix; writes ``out.png`` and ``out.pdf``.
        cohorts: the cohorts drawn, in the legend's order (``figure_cohorts``).
        reference: the arm whose pass rate is drawn dashed, when the panel has it (the
            title names it; a panel without it has no dashed line and says none).
    """
    rows = pass_rates[pass_rates["cohort"].isin(cohorts)]
    arms = arms_in_order(list(rows["arm"].unique()))
    with styled():
        wide = len(cohorts) > 2  # three legend entries do not fit above the axes
        fig, ax = plt.subplots(figsize=(7.2, 3.0) if wide else (5.2, 3.0))
        offsets = {c: (i - (len(cohorts) - 1) / 2) * 0.22 for i, c in enumerate(cohorts)}
        for cohort in cohorts:
            part = rows[rows["cohort"] == cohort].set_index("arm")
            xs = [i + offsets[cohort] for i, a in enumerate(arms) if a in part.index]
            sub = part.loc[[a for a in arms if a in part.index]]
            if sub.empty:
                continue
            marker, colour = COHORT_STYLE.get(cohort, ("o", "black"))
            err = [sub["pass_rate_pct"] - sub["ci_low_pct"], sub["ci_high_pct"] - sub["pass_rate_pct"]]
            label = f"{cohort} ({_span(sub['n_tasks'])} tasks, " \
                    f"{_span(sub['attempts'])} attempts/arm)"
            ax.errorbar(xs, sub["pass_rate_pct"], yerr=err, fmt=marker, color=colour, capsize=3,
                        markersize=6, label=label)
            if reference in sub.index:
                ax.axhline(sub.loc[reference, "pass_rate_pct"], color=colour, lw=0.8,
                           ls="--", alpha=0.7)
        ax.set_xticks(range(len(arms)), [ARM_LABELS.get(a, a) for a in arms], rotation=15)
        ax.set_ylabel("pass rate (%), 95 % CI")
        ax.set_ylim(-3, 103)
        if wide:
            ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
        else:
            ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(cohorts),
                      frameon=False)
        ax.set_title(pass_rate_title(arms, reference), pad=6 if wide else 18)
        fig.tight_layout()
        return save(fig, out)
