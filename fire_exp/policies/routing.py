"""Routing audits: which families of a portfolio are eligible on which tasks.

Eligibility is a predicate over the task text alone, so routing can be audited before any
attempt runs: per task the eligible families, the pairs of families that cofire (both
eligible on one task; FIRE keeps cofiring rather than assigning a task to one family), and
the tasks no family covers (the silent cohort, if the panel is designed right).

>>> from fire_exp.policies.model import Family
>>> class Loud(Family):
...     name = "loud"
...     def eligible(self, task_text): return "server" in task_text
>>> table = route_texts((Loud(),), {"a": "run a server", "b": "count words"}, "demo")
>>> table.uncovered
('b',)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from fire_exp.policies.model import Family


@dataclass(frozen=True)
class TaskRoute:
    """The families eligible on one task, and those whose eligibility raised."""

    task: str
    families: tuple[str, ...]
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoutingTable:
    """The routing of one portfolio over a set of tasks."""

    portfolio: str
    families: tuple[str, ...]
    routes: tuple[TaskRoute, ...]

    @property
    def uncovered(self) -> tuple[str, ...]:
        """Tasks no family is eligible on."""
        return tuple(r.task for r in self.routes if not r.families)

    @property
    def cofiring(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """Pairs of families eligible together, with the tasks where they are."""
        pairs: dict[tuple[str, str], list[str]] = {}
        for route in self.routes:
            for pair in combinations(sorted(route.families), 2):
                pairs.setdefault(pair, []).append(route.task)
        return {pair: tuple(tasks) for pair, tasks in sorted(pairs.items())}

    def tasks_of(self, family: str) -> tuple[str, ...]:
        """Tasks on which ``family`` is eligible."""
        return tuple(r.task for r in self.routes if family in r.families)

    def to_csv(self) -> str:
        """One row per task, one 0/1 column per family, then the count and any errors."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["task", *self.families, "n_families", "errors"])
        for r in self.routes:
            writer.writerow([r.task, *(int(f in r.families) for f in self.families),
                             len(r.families), ";".join(r.errors)])
        return buf.getvalue()

    def to_markdown(self) -> str:
        """The matrix, per-family coverage, cofiring pairs and uncovered tasks."""
        lines = [f"# Routing of portfolio `{self.portfolio}` over {len(self.routes)} tasks", "",
                 "| task | " + " | ".join(self.families) + " | n |",
                 "| --- | " + " | ".join("---" for _ in self.families) + " | --- |"]
        for r in self.routes:
            marks = " | ".join("x" if f in r.families else "" for f in self.families)
            lines.append(f"| {r.task} | {marks} | {len(r.families)} |")
        lines += ["", "## Coverage per family", ""]
        lines += [f"- {f}: {len(self.tasks_of(f))} task(s) {', '.join(self.tasks_of(f))}"
                  for f in self.families]
        lines += ["", "## Cofiring", ""]
        lines += [f"- {a} + {b}: {', '.join(tasks)}" for (a, b), tasks in self.cofiring.items()]
        if not self.cofiring:
            lines.append("- none")
        lines += ["", f"## Tasks no family covers ({len(self.uncovered)})", ""]
        lines += [f"- {t}" for t in self.uncovered] or ["- none"]
        errors = [r for r in self.routes if r.errors]
        if errors:
            lines += ["", "## Eligibility errors (counted as not eligible)", ""]
            lines += [f"- {r.task}: {', '.join(r.errors)}" for r in errors]
        return "\n".join(lines) + "\n"

    def save(self, folder: Path, stem: str) -> tuple[Path, Path]:
        """Write ``STEM.csv`` and ``STEM.md`` into ``folder``; returns both paths."""
        folder.mkdir(parents=True, exist_ok=True)
        csv_path, md_path = folder / f"{stem}.csv", folder / f"{stem}.md"
        csv_path.write_text(self.to_csv(), encoding="utf-8")
        md_path.write_text(self.to_markdown(), encoding="utf-8")
        return csv_path, md_path


def route_texts(families: Sequence[Family], texts: Mapping[str, str],
                portfolio: str) -> RoutingTable:
    """Route tasks given by name -> instruction text (an eligibility error counts as no)."""
    routes = []
    for task, text in texts.items():
        eligible, errors = [], []
        for family in families:
            try:
                if family.eligible(text):
                    eligible.append(family.name)
            except Exception as exc:  # noqa: BLE001 - same fail-open rule as the runtime
                errors.append(f"{family.name}: {type(exc).__name__}")
        routes.append(TaskRoute(task, tuple(eligible), tuple(errors)))
    return RoutingTable(portfolio, tuple(f.name for f in families), tuple(routes))
