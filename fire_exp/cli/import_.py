"""``fire-exp import harbor JOB_DIR... (--map MAP.yaml | --arm-from FIELD) [--out FILE]``.

Turns Harbor job folders (``JOB/TASK__ID/result.json`` per trial) into a fire-exp
attempts file that ``fire-exp analyze`` and ``fire-exp report`` read. The arm of a trial
comes from a mapping YAML (patterns over the job folder, trial, agent or model name, or a
dotted path into result.json) or, with ``--arm-from``, is that field's value itself. See
docs/report.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fire_exp.errors import InputError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Import another harness's results; returns the exit status."""
    parser = argparse.ArgumentParser(prog="fire-exp import", description=__doc__.split("\n")[0])
    parser.add_argument("source", choices=["harbor"], help="the harness the results come from")
    parser.add_argument("jobs", type=Path, nargs="+", help="Harbor job folder(s)")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--map", type=Path, help="mapping YAML: arm_from, arms, cohorts")
    how.add_argument("--arm-from", metavar="FIELD",
                     help="take the arm from this field's value: job, trial, agent, model, or "
                          "a dotted path into result.json (e.g. config.agent.kwargs.harness)")
    parser.add_argument("--cohort", default="all",
                        help="cohort of every task with --arm-from (default: all)")
    parser.add_argument("--out", type=Path, default=Path("attempts.jsonl"),
                        help="attempts file to write (default: ./attempts.jsonl)")
    parser.add_argument("--run", default=None, help="run name (default: the first job's)")
    args = parser.parse_args(argv)

    from fire_exp.importers.harbor import (
        ArmMapping,
        check_arm_from,
        import_harbor,
        load_mapping,
        trials_without_result,
    )
    from fire_exp.records import append_records

    mapping = load_mapping(args.map) if args.map else ArmMapping(
        arm_from=check_arm_from(args.arm_from, "--arm-from"), default_cohort=args.cohort)
    records, skipped = import_harbor(args.jobs, mapping, args.run or args.jobs[0].name)
    if not records:
        raise InputError(args.map or "--arm-from", "arms", "no trial matched any arm pattern",
                         "check the patterns against the job, trial, agent or model names")
    if args.out.exists():
        raise InputError(args.out, "<file>", "already exists", "remove it or pass --out")
    append_records(args.out, records)
    arms = sorted({r.arm for r in records})
    print(f"{len(records)} attempts ({len({r.task for r in records})} tasks; arms "
          f"{', '.join(arms)}) written to {args.out}")
    if skipped:
        print(f"{len(skipped)} trial(s) matched no arm and were skipped, e.g. {skipped[0]}")
    unfinished = trials_without_result(args.jobs)
    if unfinished:
        print(f"{len(unfinished)} trial folder(s) hold no result.json, e.g. {unfinished[0]}: "
              "trials that ended without a result, not imported (their arm is unknown); "
              "the attempts above undercount the jobs by as many")
    causes = sorted({r.cause.value for r in records if r.cause})
    if causes:
        print(f"failure causes recorded: {', '.join(causes)}")
    print(f"next: fire-exp report {args.out} --plan PLAN.yaml")
    return 0
