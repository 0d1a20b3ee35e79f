"""Write an ``AnalysisResult`` as CSV and Markdown tables plus ``metadata.json``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from fire_exp.analysis.tables import AnalysisResult

__all__ = ["markdown_table", "summary_markdown", "write_tables"]


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:.4f}".rstrip(
            "0").rstrip(".")
    return str(value).replace("|", "\\|")


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table of ``frame`` (floats to 4 decimals, NaN blank).

    >>> print(markdown_table(pd.DataFrame({"arm": ["real"], "p": [0.0625]})))
    | arm | p |
    | --- | --- |
    | real | 0.0625 |
    """
    if frame.empty:
        return "_(empty)_"
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(_fmt(v) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, rule, *body])


def write_tables(result: AnalysisResult, out_dir: Path | str) -> list[Path]:
    """Write every table as ``NAME.csv`` and ``NAME.md``, plus metadata.json and notes.md.

    CSVs use full float precision (repr), so the same analysis gives bit-identical files.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in result.tables().items():
        csv_path, md_path = out / f"{name}.csv", out / f"{name}.md"
        frame.to_csv(csv_path, index=False, lineterminator="\n")
        md_path.write_text(f"# {name}\n\n{markdown_table(frame)}\n", encoding="utf-8")
        written += [csv_path, md_path]
    meta = {**result.metadata, "notes": list(result.notes)}
    (out / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")
    notes = "".join(f"- {n}\n" for n in result.notes) or "- none\n"
    (out / "notes.md").write_text(f"# notes\n\n{notes}", encoding="utf-8")
    return [*written, out / "metadata.json", out / "notes.md"]


def summary_markdown(result: AnalysisResult) -> str:
    """Short Markdown summary: per-arm pass rates by cohort and the contrasts."""
    parts = [f"## Analysis ({result.metadata.get('plan')}, seed {result.metadata.get('seed')})"]
    pr = result.pass_rates
    if not pr.empty:
        wide = pr.pivot(index="arm", columns="cohort", values="pass_rate_pct")
        parts += ["### Pass rate (%) per arm", markdown_table(wide.reset_index())]
    c = result.contrasts
    if not c.empty:
        show = c[["contrast", "cohort", "role", "n_tasks", "estimate_pp", "ci_low_pp",
                  "ci_high_pp", "p_value", "p_method", "p_holm"]]
        parts += ["### Contrasts (points; 95 % percentile CI; sign-flip p)", markdown_table(show)]
    if not result.interaction.empty:
        parts += ["### Interaction", markdown_table(result.interaction[
            ["contrast", "cohort", "estimate_pp", "ci_low_pp", "ci_high_pp", "p_value"]])]
    if result.notes:
        parts += ["### Notes", "\n".join(f"- {n}" for n in result.notes)]
    return "\n\n".join(parts) + "\n"
