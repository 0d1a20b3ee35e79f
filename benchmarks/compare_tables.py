"""Compare every table file (.csv .md .tex) of two output folders byte for byte.

For refactors that must not change a number: write the tables of the same attempts
files before and after, then

    python -m benchmarks.compare_tables OLD_DIR NEW_DIR [OLD_DIR NEW_DIR ...]

Each pair is compared by name; a table of OLD missing from NEW or differing in a single
byte is listed, and exit status is 1. Tables only NEW has are listed as new. Figures and metadata are
not compared (their bytes carry timestamps and library versions).
"""

from __future__ import annotations

import sys
from pathlib import Path

TABLE_SUFFIXES = (".csv", ".md", ".tex")


def table_files(folder: Path) -> dict[str, bytes]:
    """Every table file under ``folder`` (not recursing), by name."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and p.suffix in TABLE_SUFFIXES}


def compare(old: Path, new: Path) -> list[str]:
    """What differs between the table files of ``old`` and ``new`` (empty: identical)."""
    a, b = table_files(old), table_files(new)
    problems = [f"{old}/{n}: missing in {new}" for n in sorted(set(a) - set(b))]
    problems += [f"{n}: differs" for n in sorted(set(a) & set(b)) if a[n] != b[n]]
    return problems


def added(old: Path, new: Path) -> list[str]:
    """Table files only ``new`` has."""
    return sorted(set(table_files(new)) - set(table_files(old)))


def main(argv: list[str]) -> int:
    """Compare each (old, new) pair of folders; print a line per pair and per difference."""
    if not argv or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = 0
    for old, new in zip(argv[::2], argv[1::2], strict=True):
        problems, extra = compare(Path(old), Path(new)), added(Path(old), Path(new))
        print(f"{'DIFFERS' if problems else 'identical'}: {old} ({len(table_files(Path(old)))}"
              f" table files) vs {new}" + (f"; new there: {', '.join(extra)}" if extra else ""))
        for problem in problems:
            print(f"  {problem}")
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
