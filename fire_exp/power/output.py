"""Write a power analysis: ``power.csv``, ``mde.csv``/``.md``, ``power.json`` and the figure of
the power curves (``power.png`` and ``power.pdf``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

__all__ = ["power_figure", "write_power"]

# Okabe–Ito, one colour and marker per effect: readable in colour-blind vision and greyscale.
_STYLES = [("#000000", "o"), ("#E69F00", "s"), ("#56B4E9", "^"), ("#009E73", "D"),
           ("#0072B2", "v"), ("#D55E00", "P"), ("#CC79A7", "X")]


def power_figure(grid: pd.DataFrame, out: Path, *, target: float, title: str,
                 panel_tasks: int | None = None) -> list[Path]:
    """Primary power against the number of tasks, one panel per attempts value, one curve
    per effect, with ±2 Monte Carlo standard errors; the target power, α and the configured
    panel's task count are marked."""
    primary = grid[grid["role"] == "primary"]
    attempts = sorted(primary["attempts"].unique())
    effects = sorted(primary["effect_pp"].unique())
    alpha = float(primary["alpha"].iloc[0])
    with plt.rc_context({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8,
                         "axes.spines.top": False, "axes.spines.right": False}):
        fig, axes = plt.subplots(1, len(attempts), figsize=(2.6 * len(attempts) + 1.2, 3.0),
                                 sharey=True, squeeze=False, layout="constrained")
        for ax, k in zip(axes[0], attempts, strict=True):
            for i, effect in enumerate(effects):
                g = primary[(primary["attempts"] == k) & (primary["effect_pp"] == effect)]
                g = g.sort_values("n_tasks")
                colour, marker = _STYLES[i % len(_STYLES)]
                ax.errorbar(g["n_tasks"], g["power"], yerr=2 * g["mc_se"], color=colour,
                            marker=marker, ms=3.5, lw=1.2, capsize=1.5,
                            label=f"+{effect:g} pts")
            ax.axhline(target, ls="--", lw=0.8, color="#555555")
            ax.axhline(alpha, ls=":", lw=0.8, color="#555555")
            if panel_tasks is not None:
                ax.axvline(panel_tasks, lw=0.8, color="#BBBBBB", zorder=0)
            ax.set_title(f"{k} attempt{'s' if k > 1 else ''} per task and arm")
            ax.set_xlabel("tasks in the primary cohort")
            ax.set_ylim(-0.02, 1.02)
        axes[0][0].set_ylabel("power of the primary contrast")
        handles, labels = axes[0][0].get_legend_handles_labels()
        handles += [Line2D([], [], ls="--", lw=0.8, color="#555555"),
                    Line2D([], [], ls=":", lw=0.8, color="#555555")]
        labels += [f"{target:.0%} power", f"α = {alpha:g}"]
        if panel_tasks is not None:
            handles.append(Line2D([], [], lw=0.8, color="#BBBBBB"))
            labels.append(f"panel: {panel_tasks} tasks")
        fig.legend(handles, labels, title="effect", loc="outside right center", frameon=False)
        fig.suptitle(title, fontsize=9)
        paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
        for path in paths:
            fig.savefig(path, dpi=200)
        plt.close(fig)
    return paths


def _markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for row in frame.itertuples(index=False):
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in row]
        if "mde_pp" in cols and cells[cols.index("mde_pp")] == "nan":  # the grid fell short
            cells[cols.index("mde_pp")] = f"> {row.max_effect_pp:g}"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_power(out: Path, grid: pd.DataFrame, mde: pd.DataFrame,
                meta: Mapping[str, object], *, target: float, title: str,
                panel_tasks: int | None = None) -> list[Path]:
    """Write every output of a power analysis into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "power.csv", out / "mde.csv", out / "mde.md", out / "power.json"]
    grid.to_csv(paths[0], index=False)
    mde.to_csv(paths[1], index=False)
    paths[2].write_text(_markdown(mde), encoding="utf-8")
    paths[3].write_text(json.dumps(meta, indent=1, default=str) + "\n", encoding="utf-8")
    return paths + power_figure(grid, out / "power", target=target, title=title,
                                panel_tasks=panel_tasks)
