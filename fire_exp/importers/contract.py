"""What an importer is: one kind of ``fire-exp import KIND``, registered in the registry.

An importer turns another harness's results into fire-exp attempt records. The command
owns what every kind shares (the arm mapping: ``--map`` or ``--arm-from``, ``--cohort``,
``--out``, ``--run``); the importer says what its sources are, what ``arm_from`` may name
(:class:`~fire_exp.importers.mapping.ArmFields`), adds its own options, and reads. Built-in
kinds are registered in ``fire_exp.registry``; a plugin adds one through the entry-point
group ``fire_exp`` as ``importer.NAME = "module:Class"`` (a class with no arguments).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from fire_exp.importers.mapping import ArmFields, ArmMapping
from fire_exp.records import AttemptRecord

__all__ = ["Imported", "Importer"]


@dataclass(frozen=True)
class Imported:
    """What an importer read.

    Attributes:
        records: the attempts, one per result whose arm the mapping names.
        skipped: results (by file, and item within it) that matched no arm pattern.
        notes: anything else counted rather than imported as it came (a result read twice,
            the samples a partial log never ran), one line each, printed by the command.
    """

    records: list[AttemptRecord]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Importer(Protocol):
    """One kind of ``fire-exp import``.

    Attributes:
        kind: its name on the command line.
        summary: one line for the list of kinds.
        sources: what the positional arguments are (help text).
        arm_fields: what ``arm_from`` may name.
    """

    kind: str
    summary: str
    sources: str
    arm_fields: ArmFields

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Add this kind's own options to the command's parser."""

    def default_run(self, sources: Sequence[Path]) -> str:
        """The run name when ``--run`` is not given."""

    def read(self, sources: Sequence[Path], mapping: ArmMapping, run: str,
             options: argparse.Namespace) -> Imported:
        """The records of ``sources`` under ``mapping``. Raises InputError naming the file,
        the field and the fix for anything that would make a number wrong."""
