"""Output folders a command may write into: empty ones, and its own earlier output.

``fire-exp analyze --out DIR`` and ``fire-exp report --out DIR`` write dozens of files
with fixed names (``contrasts.csv``, ``report.md``, ...). They write into a folder that is
missing or empty, or that holds an earlier output of the same kind (recognised by its
``metadata.json``, which carries the plan's hash); any other folder is refused before
anything is written, so a mistyped ``--out`` never overwrites a user's files.
"""

from __future__ import annotations

import json
from pathlib import Path

from fire_exp.errors import InputError

__all__ = ["check_output_folder"]

_KINDS = {"tables": ("metadata.json",), "report": ("data", "metadata.json"),
          "tiers": ("tiers.md",)}


def _is_analysis_metadata(path: Path) -> bool:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and "plan_hash" in meta


def _holds_earlier_output(out: Path, kind: str) -> bool:
    marker = out.joinpath(*_KINDS[kind])
    if kind == "tiers":
        return marker.is_file()
    return _is_analysis_metadata(marker)


def check_output_folder(out: Path, kind: str, flag: str = "--out") -> None:
    """Refuse ``out`` unless it is missing, empty, or an earlier output of ``kind``
    (``tables``, ``report`` or ``tiers``).

    Raises:
        InputError: ``out`` is a file, or a folder holding files fire-exp did not write.
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(out, flag, "is a file, not a folder",
                         "name a folder for the output (it is created if missing)")
    if next(out.iterdir(), None) is None or _holds_earlier_output(out, kind):
        return
    raise InputError(out, flag, f"holds files that are not an earlier fire-exp {kind} "
                     "output; nothing there is overwritten",
                     "name an empty or new folder, or the folder of an earlier output")
