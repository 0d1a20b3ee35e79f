"""``fire-exp audit-routing portfolio=NAME tasks=PATH [out=DIR]``: which families route where.

Prints the routing table (Markdown) and saves it as CSV and Markdown under ``out``
(default ``results/routing``), named ``PORTFOLIO__TASKS``. ``tasks`` is a bundled suite's
name, a folder of task folders, or one task folder.
"""

from __future__ import annotations

from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR
from fire_exp.policies.loader import load_portfolio
from fire_exp.policies.routing import RoutingTable, route_texts
from fire_exp.tasks.loader import load_tasks

DEFAULTS = {"portfolio": "fire-core", "tasks": "fire-mini", "out": "results/routing"}
USAGE = "usage: fire-exp audit-routing [portfolio=NAME] [tasks=SUITE|PATH] [out=DIR]"


def parse_args(argv: list[str]) -> dict[str, str]:
    """``key=value`` arguments (a leading ``--`` is allowed) over :data:`DEFAULTS`."""
    args = dict(DEFAULTS)
    for arg in argv:
        key, sep, value = arg.removeprefix("--").partition("=")
        if not sep or key not in DEFAULTS or not value:
            raise InputError("audit-routing", arg, "not a known key=value argument", USAGE)
        args[key] = value
    return args


def audit(portfolio: str, tasks: str) -> RoutingTable:
    """The routing table of ``portfolio`` over the tasks at ``tasks``."""
    bundled = SUITES_DIR / tasks
    loaded = load_tasks(bundled if bundled.is_dir() else Path(tasks).expanduser())
    source = load_portfolio(portfolio)
    return route_texts(source.families, {t.name: t.instruction for t in loaded}, source.name)


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    args = parse_args(argv)
    table = audit(args["portfolio"], args["tasks"])
    stem = f"{table.portfolio}__{Path(args['tasks']).name}"
    csv_path, md_path = table.save(Path(args["out"]), stem)
    print(table.to_markdown())
    print(f"saved {csv_path} and {md_path}")
    return 0
