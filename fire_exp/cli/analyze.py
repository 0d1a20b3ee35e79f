"""``fire-exp analyze PATH [--plan analysis/NAME.yaml] [--out DIR]``.

PATH is an attempts file (JSONL or CSV) or a run folder holding ``attempts.jsonl``. The
plan is the one frozen with the run (its ``prereg.json``) unless ``--plan`` names another;
a file without a ``prereg.json`` is analysed only with ``--plan``, and the output says so. Writes every table of the analysis
as CSV and Markdown, with ``metadata.json`` (the plan used among it), to DIR (default
``<run folder>/report/data``, or ``<file stem>-report/data/`` next to a file) and prints
which plan it used and a short Markdown summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fire_exp.analysis import analyze
from fire_exp.report.outputs import check_output_folder
from fire_exp.report.render import DATA_DIR, default_out, summary_markdown, write_tables

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Analyse an attempts file with an analysis plan; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp analyze", description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="attempts.jsonl, a CSV, or a run folder")
    parser.add_argument("--plan", default=None,
                        help="analysis plan (default: the one frozen with the run)")
    parser.add_argument("--out", type=Path, default=None, help="output folder for the tables")
    parser.add_argument("--merge-runs", action="store_true",
                        help="pool the attempts of several runs in one file (else refused)")
    args = parser.parse_args(argv)

    out = args.out or default_out(args.path) / DATA_DIR
    check_output_folder(out, "tables")  # before the analysis: nothing to undo
    result = analyze(args.path, args.plan, merge_runs=args.merge_runs)
    write_tables(result, out)
    print(result.metadata["plan_used"])
    print(summary_markdown(result))
    if result.metadata.get("torn_tail"):
        print(f"warning: the last line of {args.path} was torn by a crash and ignored "
              "(resume the run to redo that attempt)")
    print(f"tables written to {out}")
    contrasts = result.contrasts
    if contrasts.empty or not (contrasts["role"] == "primary").any():
        plan = result.plan
        print(f"fire-exp analyze: error: {result.metadata['plan_path']}: primary: "
              f"'{plan.primary.contrast}' on '{plan.primary.cohort}' could not be computed "
              "(see the notes above); the attempts lack an arm or the cohort", file=sys.stderr)
        return 1
    return 0
