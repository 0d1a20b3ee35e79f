"""Bundled task suites, shipped inside the package under ``fire_exp/suites/``."""

from __future__ import annotations

from pathlib import Path

from fire_exp.paths import SUITES_DIR, resolve_folder


def resolve_suite(suite: str) -> Path:
    """A bundled suite's name (``fire-mini``) or a path to a folder of tasks."""
    return resolve_folder(SUITES_DIR, suite, "panel.suite", "suite")
