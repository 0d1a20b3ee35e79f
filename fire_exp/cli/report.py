"""``fire-exp report RUN [RUN ...] [--plan analysis/NAME.yaml] [--out DIR]``.

RUN is a run folder (``attempts.jsonl``, optional ``prereg.json``) or an attempts file.
Writes every paper table as ``.tex`` (booktabs), ``.md`` and ``.csv``, every figure as
``.png`` and ``.pdf``, and the analysis' own tables under ``data/``, to DIR (default
``RUN/report``). The plan is the one the run's preregistration froze unless ``--plan``
names another (a run without a ``prereg.json`` needs ``--plan``); the output says
which. DIR must be new, empty or an earlier report (``fire_exp/report/outputs.py``). A run still in progress is reported as far as it has finished, and says so.
Several runs (one per agent tier) need ``--out DIR``: each is reported into
``DIR/<tier>/`` and ``DIR/tiers.*`` compares them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Write the report of a run; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp report", description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                        help="run folder or attempts file (JSONL or CSV); several: one per tier")
    parser.add_argument("--plan", default=None,
                        help="analysis plan (default: the one frozen with the run)")
    parser.add_argument("--out", type=Path, default=None, help="report folder")
    args = parser.parse_args(argv)

    from fire_exp.errors import InputError
    from fire_exp.report.build import build_report, build_tier_report
    from fire_exp.report.outputs import check_output_folder
    from fire_exp.report.render import default_out

    if len(args.runs) == 1:
        check_output_folder(args.out or default_out(args.runs[0]), "report")
        print(build_report(args.runs[0], args.plan, args.out).summary())
        return 0
    if args.out is None:
        raise InputError("--out", "--out", "several runs need an output folder",
                         "pass --out DIR (each tier goes to DIR/<tier>/)")
    check_output_folder(args.out, "tiers")
    reports, tiers = build_tier_report(args.runs, args.plan, args.out)
    for report in reports:
        print(f"{report.tier}: {report.result.metadata['plan_used']}")
        if report.status.partial:
            print(f"NOTE: partial run ({report.tier}): {report.status.message}.")
    print(tiers.read_text(encoding="utf-8"))
    print(f"{len(reports)} tiers reported into {args.out}/<tier>/; comparison: {tiers}")
    return 0
