"""A run's folder, ``results/PANEL/RUN``: claimed for a new run, checked before a resume,
and left empty by none.

A fresh run claims a folder no other run holds (:func:`claim_new_folder`); a run refused
before it wrote anything leaves no folder behind (:func:`remove_if_empty`); a resumed run's
records are checked as the analysis checks them before the first attempt
(:func:`check_records_so_far`).
"""

from __future__ import annotations

from pathlib import Path

from fire_exp.errors import InputError

__all__ = ["check_records_so_far", "claim_new_folder", "first_missing", "remove_if_empty"]


def check_records_so_far(run_dir: Path) -> None:
    """Refuse to resume a run whose attempts file holds records its manifest never
    scheduled (a hand-edited or merged file), or records of a run of another name (the
    folder was renamed): the analysis would refuse them only after the last attempt.
    Checked as the analysis checks them (``analysis/conformance.py``)."""
    path = run_dir / "attempts.jsonl"
    if path.is_file():
        from fire_exp.analysis.conformance import check_conformance
        from fire_exp.manifest import read_prereg
        from fire_exp.records import read_records

        read = read_records(path)
        other = next((r for r in read.finished if r.run != run_dir.name), None)
        if other is not None:
            raise InputError(path, "run", f"records of run {other.run!r} in the folder "
                             f"{run_dir.name!r}: the folder was renamed or another run's "
                             "file copied in", f"rename the folder back to {other.run!r}")
        check_conformance(path, read, read_prereg(run_dir / "prereg.json"))


def claim_new_folder(run_dir: Path) -> Path:
    """A folder no other run holds: ``run_dir``, else ``run_dir-2``, ``-3`` … (two runs
    started in the same second get new_run's one name), created here atomically."""
    for n in range(1, 1000):
        candidate = run_dir if n == 1 else run_dir.with_name(f"{run_dir.name}-{n}")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        return candidate
    raise InputError(run_dir, "run", "a thousand runs of this name exist", "give run=NAME")


def first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: it all exists)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def remove_if_empty(run_dir: Path, made: Path | None) -> None:
    """Leave no empty folder: the run folder, then the parents the run created up to
    ``made``, each only while empty."""
    stop = made.parent if made is not None else run_dir.parent
    folder = run_dir
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
