"""What ``fire-exp run`` does after the last attempt: the report, as ``fire-exp report``."""

from __future__ import annotations

from pathlib import Path

from fire_exp.report.build import build_report

__all__ = ["summarize_run"]


def summarize_run(run_dir: Path, plan: Path | None = None) -> str:
    """Write the report of ``run_dir`` into ``run_dir/report/``; returns its summary.

    Args:
        run_dir: the run folder.
        plan: the analysis plan; None: the one frozen with the run (its prereg.json).
    """
    return build_report(run_dir, plan).summary()
