"""``fire-exp import KIND SOURCE... (--map MAP.yaml | --arm-from FIELD) [--out FILE]``.

Turns another harness's results into a fire-exp attempts file that ``fire-exp analyze``,
``report`` and ``view`` read. KIND is an importer registered in the registry (built in:
``harbor`` job folders, ``inspect`` eval logs; a plugin can add one); ``fire-exp import``
alone lists them. The arm of each result comes from a mapping YAML (patterns over a field)
or, with ``--arm-from``, is that field's value itself: the same rules for every kind. See
docs/importers.md.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.importers.contract import Imported, Importer

__all__ = ["main"]


def _kinds() -> str:
    """One line per registered importer: its name and what it reads."""
    from fire_exp.registry import REGISTRY

    lines = []
    for name in REGISTRY.names("importer"):
        try:
            summary = _importer(name).summary
        except InputError as exc:  # a plugin whose module does not load still shows
            summary = f"(not available: {exc.problem})"
        lines.append(f"  {name:<10} {summary}")
    return "\n".join(lines)


def _importer(kind: str) -> Importer:
    from fire_exp.registry import REGISTRY

    if kind not in REGISTRY.names("importer"):
        raise InputError("fire-exp import", "KIND", f"unknown importer {kind!r}",
                         f"known: {', '.join(REGISTRY.names('importer'))}")
    importer = REGISTRY.get("importer", kind)()
    if not isinstance(importer, Importer):
        raise InputError("fire-exp import", "KIND", f"importer {kind!r} does not follow "
                         "fire_exp.importers.Importer", "fix the plugin")
    return importer


def _parser(importer: Importer) -> argparse.ArgumentParser:
    fields = importer.arm_fields
    parser = argparse.ArgumentParser(prog=f"fire-exp import {importer.kind}",
                                     description=importer.summary)
    parser.add_argument("sources", type=Path, nargs="+", metavar="SOURCE",
                        help=importer.sources)
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--map", type=Path, help="mapping YAML: arm_from, arms, cohorts")
    how.add_argument("--arm-from", metavar="FIELD",
                     help=f"take the arm from this field's value: {', '.join(fields.names)}, "
                          f"or a dotted path into {fields.into} (e.g. {fields.example})")
    parser.add_argument("--cohort", default="all",
                        help="cohort of every task with --arm-from (default: all)")
    parser.add_argument("--out", type=Path, default=Path("attempts.jsonl"),
                        help="attempts file to write (default: ./attempts.jsonl)")
    parser.add_argument("--run", default=None, help="run name (default: the importer's)")
    importer.add_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Import another harness's results; returns the exit status."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(f"usage: fire-exp import KIND SOURCE... (--map MAP.yaml | --arm-from FIELD)\n"
              f"{__doc__.splitlines()[2].strip()}\n\nkinds:\n{_kinds()}\n\n"
              "fire-exp import KIND --help shows a kind's sources and options.")
        return 0
    from fire_exp.importers.mapping import (
        ArmMapping,
        check_arm_from,
        check_cohort_tasks,
        load_mapping,
    )

    importer = _importer(argv[0])
    args = _parser(importer).parse_args(argv[1:])
    mapping = load_mapping(args.map, importer.arm_fields) if args.map else ArmMapping(
        arm_from=check_arm_from(args.arm_from, "--arm-from", importer.arm_fields),
        default_cohort=args.cohort)
    if args.out.exists():
        raise InputError(args.out, "<file>", "already exists", "remove it or pass --out")
    imported = importer.read(args.sources, mapping, args.run or
                             importer.default_run(args.sources), args)
    unused = check_cohort_tasks(mapping, {r.task for r in imported.records},
                                args.map or "--cohort")
    if unused:
        imported = replace(imported, notes=[*imported.notes, unused])
    _write(imported, args, importer)
    return 0


def _write(imported: Imported, args: argparse.Namespace, importer: Importer) -> None:
    """Write the attempts file and say what it holds, what was skipped and counted."""
    from fire_exp.records import append_records

    records = imported.records
    if not records:
        raise InputError(args.map or "--arm-from", "arms", "no result matched any arm pattern",
                         f"check the patterns against the values of {args.arm_from or 'arm_from'}"
                         f" ({', '.join(importer.arm_fields.names)} or a dotted path)")
    append_records(args.out, records)
    arms = sorted({r.arm for r in records})
    print(f"{len(records)} attempts ({len({r.task for r in records})} tasks; arms "
          f"{', '.join(arms)}) written to {args.out}")
    if imported.skipped:
        print(f"{len(imported.skipped)} result(s) matched no arm and were skipped, e.g. "
              f"{imported.skipped[0]}")
    for note in imported.notes:
        print(note)
    causes = sorted({r.cause.value for r in records if r.cause})
    if causes:
        print(f"failure causes recorded: {', '.join(causes)}")
    print(f"next: fire-exp report {args.out} --plan PLAN.yaml")
