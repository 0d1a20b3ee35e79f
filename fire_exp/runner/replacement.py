"""The replacement rule, frozen in the panel, and the chains it builds.

FIRE (appendix C): an attempt that ended before the model had a fair attempt (the
environment, the provider or the harness failed) is replaced by a fresh attempt, up to a
fixed number of times; the analysis keeps the first fair attempt of each chain, else the
last. Failures that belong to the agent (timeouts, step limits, crashes after acting,
giving up) and verifier failures are never replaced.

The rule is the panel's ``replacement:`` block::

    replacement: {max_replacements: 2, causes: [environment_failed, provider_failed]}

A chain is ``task/arm/rN``, then ``task/arm/rN#1``, ``task/arm/rN#2``...; the decision to
replace is taken when a record is written (its ``lineage.replaced_by`` names the successor),
so the attempts file alone says which attempts a resumed run still owes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fire_exp import attempt_seeds as seeds
from fire_exp.errors import InputError
from fire_exp.records import REPLACEABLE_CAUSES, AttemptRecord, Cause
from fire_exp.runner.schedule import ScheduledAttempt

SEPARATOR = "#"
# More replacements than this is far more likely a typo than a rule (each one is a whole
# attempt's cost); ``ceilings=false`` lifts it on purpose.
MAX_REPLACEMENTS_CEILING = 10


@dataclass(frozen=True)
class ReplacementRule:
    """How many times, and for which causes, an attempt is replaced."""

    max_replacements: int = 0
    causes: frozenset[Cause] = frozenset()

    @classmethod
    def from_config(cls, block: Mapping[str, Any], where: str = "configs/panel", *,
                    ceilings: bool = True) -> ReplacementRule:
        """Check and convert the panel's ``replacement:`` block (empty: never replace).

        Raises:
            InputError: an unknown key, a negative count, a count above the ceiling (unless
                ``ceilings`` is false), or a cause that is not replaceable.
        """
        unknown = set(block) - {"max_replacements", "causes"}
        if unknown:
            raise InputError(where, f"replacement.{sorted(unknown)[0]}", "unknown key",
                             "use max_replacements and causes")
        count = block.get("max_replacements", 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(where, "replacement.max_replacements",
                             f"expected a whole number >= 0, got {count!r}")
        if count > MAX_REPLACEMENTS_CEILING and ceilings:
            raise InputError(where, "replacement.max_replacements",
                             f"{count:,} is above the ceiling {MAX_REPLACEMENTS_CEILING}",
                             f"set panel.replacement.max_replacements to "
                             f"{MAX_REPLACEMENTS_CEILING} or less, or set ceilings=false to "
                             "lift the ceiling on purpose")
        causes: set[Cause] = set()
        names = block.get("causes") or []
        if not isinstance(names, list | tuple):  # a string would be read letter by letter
            raise InputError(where, "replacement.causes", f"expected a list of causes, got "
                             f"{names!r:.60}", "e.g. panel.replacement.causes=[CAUSE,...]")
        for name in names:
            try:
                cause = Cause(name)
            except ValueError:
                raise InputError(where, "replacement.causes", f"unknown cause {name!r}",
                                 f"use some of {sorted(c.value for c in REPLACEABLE_CAUSES)}") from None
            if cause not in REPLACEABLE_CAUSES:
                raise InputError(where, "replacement.causes",
                                 f"{name!r} leaves a fair model attempt and is never replaced",
                                 f"use some of {sorted(c.value for c in REPLACEABLE_CAUSES)}")
            causes.add(cause)
        if count and not causes:
            raise InputError(where, "replacement.causes", "empty while max_replacements > 0",
                             "name the causes that are replaced")
        return cls(max_replacements=count, causes=frozenset(causes))

    def successor(self, record: AttemptRecord) -> str | None:
        """The id of the attempt that replaces ``record``, or None if it stands."""
        if record.cause is None or record.cause not in self.causes:
            return None
        base, number = split_id(record.attempt_id)
        if number >= self.max_replacements:
            return None
        return replacement_id(base, number + 1)


def replacement_id(base: str, number: int) -> str:
    """``task/arm/rN`` for the original (number 0), ``task/arm/rN#k`` for replacement k."""
    return base if number == 0 else f"{base}{SEPARATOR}{number}"


def split_id(attempt_id: str) -> tuple[str, int]:
    """``task/arm/rN#k`` -> (``task/arm/rN``, k); an original has k = 0."""
    base, sep, number = attempt_id.partition(SEPARATOR)
    return base, int(number) if sep else 0


def replacement_seed(panel_seed: int, item: ScheduledAttempt, number: int) -> int:
    """Replacement ``number``'s seed, from its own child stream of the panel seed
    (:func:`fire_exp.attempt_seeds.replacement_seed`; number 0: the scheduled seed)."""
    if number == 0:
        return item.seed
    return seeds.replacement_seed(panel_seed, item.task, item.arm, item.replicate, number)


@dataclass(frozen=True)
class Owed:
    """An attempt a run still owes: a scheduled one, or the next link of a chain."""

    item: ScheduledAttempt
    number: int  # 0: the scheduled attempt; k: its k-th replacement
    replaces: AttemptRecord | None = None


def owed_attempts(schedule: Sequence[ScheduledAttempt],
                  finished: Iterable[AttemptRecord]) -> list[Owed]:
    """What a run still has to do, in schedule order, from the records it has written.

    A scheduled attempt without any record is owed; a chain whose last record names a
    successor (``lineage.replaced_by``) without a record owes that successor.
    """
    by_id: dict[str, AttemptRecord] = {}
    for record in finished:
        by_id.setdefault(record.attempt_id, record)
    owed: list[Owed] = []
    for item in schedule:
        first = by_id.get(item.attempt_id)
        if first is None:
            owed.append(Owed(item, 0))
            continue
        record = first
        while record.lineage.replaced_by and record.lineage.replaced_by in by_id:
            record = by_id[record.lineage.replaced_by]
        if record.lineage.replaced_by:
            owed.append(Owed(item, split_id(record.lineage.replaced_by)[1], replaces=record))
    return owed


def replacements_per_arm(finished: Iterable[AttemptRecord]) -> dict[str, int]:
    """How many replacement attempts each arm ran (the run summary reports this)."""
    counts: dict[str, int] = {}
    for record in finished:
        if record.lineage.replaces:
            counts[record.arm] = counts.get(record.arm, 0) + 1
    return counts
