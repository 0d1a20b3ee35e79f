"""``fire-exp analyze PATH [--plan analysis/NAME.yaml] [--out DIR]``.

PATH is an attempts file (JSONL or CSV) or a run folder holding ``attempts.jsonl``. The
plan is the one frozen with the run (its ``prereg.json``) unless ``--plan`` names another;
without a ``prereg.json``, ``analysis/default.yaml``. Writes every table of the analysis
as CSV and Markdown, with ``metadata.json`` (the plan used among it), to DIR (default
``<run folder>/report/data``, or ``<file stem>-report/data/`` next to a file) and prints
which plan it used and a short Markdown summary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Analyse an attempts file with an analysis plan; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp analyze", description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="attempts.jsonl, a CSV, or a run folder")
    parser.add_argument("--plan", default=None,
                        help="analysis plan (default: the one frozen with the run)")
    parser.add_argument("--out", type=Path, default=None, help="output folder for the tables")
    args = parser.parse_args(argv)

    from fire_exp.analysis import analyze
    from fire_exp.report.build import DATA_DIR, default_out
    from fire_exp.report.render import summary_markdown, write_tables

    result = analyze(args.path, args.plan)
    out = args.out or default_out(args.path) / DATA_DIR
    write_tables(result, out)
    print(result.metadata["plan_used"])
    print(summary_markdown(result))
    print(f"tables written to {out}")
    return 0
