"""Records against the preregistration: only what the run's frozen schedule holds is analysed.

A run's ``prereg.json`` freezes its schedule: every (task, cohort, arm, replicate) with its
attempt id ``task/arm/rN``. Before an attempts file is analysed, every record is checked
against it (:func:`check_conformance`):

- its task, arm and replicate are a scheduled cell, and its cohort is the cell's;
- its attempt id is the cell's (``task/arm/rN``), or a replacement ``task/arm/rN#k`` that
  another record of the file declared (``lineage.replaced_by``);
- its panel is the manifest's, and its config hash (panel, agent, environment and seed
  as composed) the manifest's ``config_hash``;
- its seed is the cell's for an original attempt, and for replacement ``#k`` the one the
  manifest's panel seed derives for it (:func:`fire_exp.attempt_seeds.replacement_seed`,
  as the runner drew it); its task digest is the one the manifest froze for the task
  (``hashes["task:NAME"]``): a record of another seed or of a task edited since freezing
  is not the attempt preregistered.

A hand-edited or merged file, or a line from another panel, is refused at its first
offending line; so is an attempt recorded twice (two finished records of one attempt id,
as a CSV refuses a task/arm/replicate twice), whether or not the run has a manifest. A
malformed schedule names the manifest and the entry.
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.attempt_seeds import replacement_seed
from fire_exp.errors import InputError
from fire_exp.files import read_text
from fire_exp.records import AttemptRecord, ReadResult

__all__ = ["Cell", "check_conformance", "check_one_record_per_attempt", "scheduled_cells"]

_REFREEZE = "the manifest is damaged: restore it from panels/PANEL.prereg.json"
_NOT_SCHEDULED = ("the run's prereg.json never scheduled it: remove the line, or analyse "
                  "the file it came from")


@dataclass(frozen=True)
class Cell:
    """One scheduled attempt: where it is in the panel."""

    task: str
    cohort: str
    arm: str
    replicate: int
    seed: int | None = None  # None: a schedule entry without one (checked when present)

    @property
    def attempt_id(self) -> str:
        return f"{self.task}/{self.arm}/r{self.replicate}"


def _cell(manifest_path: Path, index: int, item: Any) -> Cell:
    where = f"schedule[{index}]"
    if not isinstance(item, dict):
        raise InputError(manifest_path, where, f"expected an object, got {item!r:.60}",
                         _REFREEZE)
    for key in ("task", "cohort", "arm"):
        if not isinstance(item.get(key), str) or not item[key]:
            raise InputError(manifest_path, f"{where}.{key}",
                             f"expected a name, got {item.get(key)!r:.60}", _REFREEZE)
    replicate = item.get("replicate")
    if isinstance(replicate, bool) or not isinstance(replicate, int) or replicate < 0:
        raise InputError(manifest_path, f"{where}.replicate",
                         f"expected a whole number >= 0, got {replicate!r:.60}", _REFREEZE)
    seed = item.get("seed")
    return Cell(item["task"], item["cohort"], item["arm"], replicate,
                seed if isinstance(seed, int) and not isinstance(seed, bool) else None)


def scheduled_cells(manifest: Mapping[str, Any], manifest_path: Path) -> dict[str, Cell]:
    """The manifest's schedule by attempt id.

    Raises:
        InputError: a missing or malformed schedule, naming the entry and field.
    """
    schedule = manifest.get("schedule")
    if not isinstance(schedule, list) or not schedule:
        raise InputError(manifest_path, "schedule", "missing, empty or not a list", _REFREEZE)
    cells: dict[str, Cell] = {}
    for index, item in enumerate(schedule):
        cell = _cell(manifest_path, index, item)
        if cell.attempt_id in cells:
            raise InputError(manifest_path, f"schedule[{index}]",
                             f"schedules {cell.attempt_id} twice", _REFREEZE)
        cells[cell.attempt_id] = cell
    return cells


class _Schedule:
    """A schedule's cells, and what a record's fields are checked against."""

    def __init__(self, cells: Mapping[str, Cell]) -> None:
        self.cells = cells
        self.tasks = {c.task for c in cells.values()}
        self.arms = {c.arm for c in cells.values()}

    def check(self, path: Path, where: str, task: str, arm: str, replicate: int,
              cohort: str | None) -> Cell:
        """The scheduled cell of these fields; raises naming the first field that is not
        (``cohort`` None: not recorded, so not checked)."""
        if task not in self.tasks:
            raise InputError(path, where.format("task"), f"task {task!r} is not scheduled"
                             f"{_hint(task, self.tasks)}", _NOT_SCHEDULED)
        if arm not in self.arms:
            raise InputError(path, where.format("arm"), f"arm {arm!r} is not scheduled"
                             f"{_hint(arm, self.arms)}", _NOT_SCHEDULED)
        cell = self.cells.get(Cell(task, "", arm, replicate).attempt_id)
        if cell is None:
            raise InputError(path, where.format("replicate"), f"replicate {replicate} of "
                             f"{task}/{arm} is not scheduled", _NOT_SCHEDULED)
        if cohort is not None and cell.cohort != cohort:
            raise InputError(path, where.format("cohort"), f"task {task!r} was frozen in "
                             f"cohort {cell.cohort!r}, not {cohort!r}",
                             "fix the label: a task's cohort is preregistered")
        return cell


def _hint(name: str, known: set[str]) -> str:
    """``; did you mean 'x'?``, or the names when few, or nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=2, cutoff=0.6)
    if close:
        return f"; did you mean {' or '.join(map(repr, close))}?"
    return f"; scheduled: {', '.join(sorted(known))}" if len(known) <= 8 else ""


def _record_disagreement(first: AttemptRecord, second: AttemptRecord) -> str:
    for name in ("reward", "passed", "cause", "valid"):
        a, b = getattr(first, name), getattr(second, name)
        if a != b:
            return f"the records disagree ({name} {a!r} there, {b!r} here)"
    return "the records agree, but an attempt is recorded once"


def _numbered(read: ReadResult) -> Iterator[tuple[int, AttemptRecord]]:
    lines = read.lines or tuple(range(1, len(read.finished) + 1))
    return zip(lines, read.finished, strict=True)


def check_one_record_per_attempt(path: Path, read: ReadResult) -> None:
    """Refuse a second finished record of one attempt id (in one run).

    The runner writes each attempt's record once; a second one comes from an edited or
    concatenated file, and which one counts is not for the analysis to guess.

    Raises:
        InputError: naming both lines and how the records differ.
    """
    seen: dict[tuple[str, str], tuple[int, AttemptRecord]] = {}
    for line, record in _numbered(read):
        key = (record.run, record.attempt_id)
        if key in seen:
            first_line, first = seen[key]
            raise InputError(path, f"line {line}, field 'attempt_id'",
                             f"attempt {record.attempt_id!r} was already recorded on line "
                             f"{first_line}; {_record_disagreement(first, record)}",
                             "keep the one record the run wrote, remove the other")
        seen[key] = (line, record)


def _check_records(path: Path, read: ReadResult, manifest: Mapping[str, Any],
                   manifest_path: Path, schedule: _Schedule) -> None:
    panel = manifest.get("panel")
    panel_seed = _panel_seed(manifest, manifest_path)
    declared = {r.lineage.replaced_by for r in read.finished if r.lineage.replaced_by}
    for line, r in _numbered(read):
        where = f"line {line}, field '{{}}'"
        if isinstance(panel, str) and r.panel != panel:
            raise InputError(path, where.format("panel"), f"panel {r.panel!r} is not the "
                             f"run's panel {panel!r}", _NOT_SCHEDULED)
        cell = schedule.check(path, where, r.task, r.arm, r.replicate, r.cohort)
        base, sep, suffix = r.attempt_id.partition("#")
        if base != cell.attempt_id:
            raise InputError(path, where.format("attempt_id"), f"{r.attempt_id!r} is not "
                             f"the attempt of {cell.attempt_id}", "fix or remove the line")
        if sep and r.attempt_id not in declared:
            raise InputError(path, where.format("attempt_id"),
                             f"{r.attempt_id!r} replaces an attempt, but no record declares "
                             "it (lineage.replaced_by)", "remove the line")
        # declared: so ``#k`` with k a whole number (records.py checks every chain's links)
        _check_frozen(path, where, r, cell, manifest, number=int(suffix) if sep else 0,
                      panel_seed=panel_seed)


def _frozen_digest(manifest: Mapping[str, Any], task: str) -> str | None:
    item = (manifest.get("hashes") or {}).get(f"task:{task}")
    digest = item.get("sha256") if isinstance(item, dict) else None
    return digest if isinstance(digest, str) else None


def _panel_seed(manifest: Mapping[str, Any], manifest_path: Path) -> int | None:
    """The manifest's panel seed (None: a manifest without one, so seeds are not derived)."""
    seed = manifest.get("seed")
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(manifest_path, "seed", f"expected a whole number >= 0, got "
                         f"{seed!r:.60}", _REFREEZE)
    return seed


def _frozen_seed(cell: Cell, panel_seed: int | None, number: int) -> int | None:
    """The seed the preregistration fixes for attempt ``number`` of ``cell``'s chain: the
    schedule's for the original, the one derived from the panel seed for a replacement."""
    if number == 0:
        return cell.seed
    if panel_seed is None:
        return None
    return replacement_seed(panel_seed, cell.task, cell.arm, cell.replicate, number)


def _check_frozen(path: Path, where: str, r: AttemptRecord, cell: Cell,
                  manifest: Mapping[str, Any], *, number: int,
                  panel_seed: int | None) -> None:
    """The record's seed, config hash and task digest against what the manifest froze."""
    seed = _frozen_seed(cell, panel_seed, number)
    if seed is not None and r.seed != seed:
        frozen = "frozen" if number == 0 else "the panel seed derives"
        raise InputError(path, where.format("seed"), f"seed {r.seed} is not the seed "
                         f"{seed} {frozen} for {r.attempt_id}", _NOT_SCHEDULED)
    frozen_hash = manifest.get("config_hash")
    if isinstance(frozen_hash, str) and frozen_hash and r.config_hash != frozen_hash:
        raise InputError(path, where.format("config_hash"), f"{r.config_hash[:12]!r}… is not "
                         f"the config hash {frozen_hash[:12]!r}… frozen with the run: the "
                         "attempt ran under another panel, agent, environment or seed",
                         "analyse the run it came from")
    digest = _frozen_digest(manifest, r.task)
    if digest is not None and r.task_digest != digest:
        raise InputError(path, where.format("task_digest"), f"{r.task_digest[:12]!r}… is not "
                         f"the digest {digest[:12]!r}… frozen for task {r.task!r}",
                         "the task changed after freezing, or the line is another run's")


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    for row in reader:
        yield reader.line_num, row


def _check_csv(path: Path, schedule: _Schedule) -> None:
    for line, row in _csv_rows(path):
        try:
            replicate = int(str(row.get("replicate", "")).strip())
        except ValueError:
            continue  # the loader has refused it already
        schedule.check(path, f"line {line}, column '{{}}'", str(row.get("task", "")).strip(),
                       str(row.get("arm", "")).strip(), replicate,
                       None if row.get("cohort") is None else str(row["cohort"]).strip())


def check_conformance(path: Path, read: ReadResult | None,
                      manifest: Mapping[str, Any] | None,
                      manifest_path: Path | None = None) -> None:
    """Check an attempts file against its run's frozen manifest (see the module docstring).

    Args:
        path: the attempts file (JSONL or CSV).
        read: its records, for a JSONL file (None for a CSV).
        manifest: the run's ``prereg.json``, or None when the run has none (then only one
            record per attempt is checked).
        manifest_path: where the manifest lies, for a malformed schedule's message.

    Raises:
        InputError: the first offending line, or the malformed schedule entry.
    """
    if read is not None:
        check_one_record_per_attempt(path, read)
    if manifest is None:
        return
    manifest_path = manifest_path or path.parent / "prereg.json"
    schedule = _Schedule(scheduled_cells(manifest, manifest_path))
    if read is not None:
        _check_records(path, read, manifest, manifest_path, schedule)
    elif path.suffix.lower() == ".csv":
        _check_csv(path, schedule)
