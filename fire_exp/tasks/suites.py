"""Bundled task suites, shipped inside the package under ``fire_exp/suites/``."""

from __future__ import annotations

from pathlib import Path

from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR


def resolve_suite(suite: str) -> Path:
    """A bundled suite's name (``fire-mini``) or a path to a folder of tasks."""
    bundled = SUITES_DIR / suite
    if bundled.is_dir():
        return bundled
    path = Path(suite).expanduser()
    if path.is_dir():
        return path.resolve()
    known = sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir())
    raise InputError("panel.suite", suite, "no bundled suite or folder of that name",
                     f"bundled suites: {', '.join(known)}")
