"""Reading a preregistration manifest: the one reader, for the runner and the analysis.

A manifest (``panels/NAME.prereg.json``, copied into each run as ``RUN/prereg.json``) is
written by :mod:`fire_exp.runner.prereg`. Like :mod:`fire_exp.records` this module sits at
the bottom of the import graph, so the analysis can read a run's manifest without importing
the runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import load_json

__all__ = ["FORMAT", "read_manifest", "read_prereg"]

FORMAT = "fire-exp-prereg/1"


def read_prereg(path: Path) -> dict[str, Any] | None:
    """A run's manifest (``RUN/prereg.json``), or None when the run has none."""
    return read_manifest(path) if path.is_file() else None


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and check a manifest.

    Raises:
        InputError: missing, not JSON, or not a manifest of this format.
    """
    try:
        manifest = load_json(path, fix="re-freeze with `fire-exp freeze`")
    except FileNotFoundError as exc:
        raise InputError(path, "<file>", "no such preregistration manifest",
                         "freeze the panel with `fire-exp freeze`") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
            or not isinstance(manifest.get("hashes"), dict):
        raise InputError(path, "format", f"not a {FORMAT} manifest",
                         "re-freeze with `fire-exp freeze`")
    return manifest
