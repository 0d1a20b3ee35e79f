"""``fire-exp analyze PATH [--plan analysis/NAME.yaml] [--out DIR]``.

PATH is an attempts file (JSONL or CSV) or a run folder holding ``attempts.jsonl``. Writes
every table as CSV and Markdown to DIR (default ``<run folder>/analysis``, or
``<file stem>-analysis/`` next to a file) and prints a short Markdown summary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.paths import ANALYSIS_DIR
from fire_exp.records import RecordsFileError

__all__ = ["main", "resolve_plan"]


def resolve_plan(text: str | None) -> Path:
    """Find a plan: a path as given, else under the analysis folder (by path or name)."""
    if text is None:
        return ANALYSIS_DIR / "default.yaml"
    given = Path(text)
    if given.is_file():
        return given
    for candidate in (ANALYSIS_DIR / given.name, ANALYSIS_DIR / f"{given.name}.yaml"):
        if candidate.is_file():
            return candidate
    known = sorted(p.stem for p in ANALYSIS_DIR.glob("*.yaml"))
    raise InputError(given, "--plan", "no such analysis plan",
                     f"known plans in {ANALYSIS_DIR}: {', '.join(known) or 'none'}")


def _default_out(path: Path) -> Path:
    return path / "analysis" if path.is_dir() else path.parent / f"{path.stem}-analysis"


def main(argv: list[str] | None = None) -> int:
    """Analyse an attempts file with an analysis plan; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp analyze", description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="attempts.jsonl, a CSV, or a run folder")
    parser.add_argument("--plan", default=None, help="analysis plan (default: default.yaml)")
    parser.add_argument("--out", type=Path, default=None, help="output folder for the tables")
    args = parser.parse_args(argv)

    from fire_exp.analysis import analyze, load_attempts, load_plan, summary_markdown, write_tables

    plan = load_plan(resolve_plan(args.plan))
    try:
        loaded = load_attempts(args.path)
    except RecordsFileError as exc:  # a reader outside load_attempts may still raise it
        raise InputError(exc.path, f"line {exc.line}, field '{exc.field}'", str(exc)) from exc
    try:
        result = analyze(loaded, plan)
    except ValueError as exc:
        raise InputError(args.path, "<attempts>", str(exc)) from exc
    out = args.out or _default_out(args.path)
    write_tables(result, out)
    print(summary_markdown(result))
    from fire_exp.report.ablation import ablation_report
    from fire_exp.report.render import write_table

    for table in ablation_report(loaded, plan, out)[0]:  # leave-one-family-out arms, if any
        write_table(table, out)
        print(table.markdown())
    print(f"tables written to {out}")
    return 0
