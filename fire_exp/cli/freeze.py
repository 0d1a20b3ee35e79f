"""``fire-exp freeze panel=NAME [power_table=DIR] [--force] [overrides]``: write the
preregistration manifest; ``power_table=`` records a ``fire-exp power`` output in it
(docs/power.md).

An existing manifest is never replaced silently: ``freeze`` refuses unless ``--force`` (or
``force=true``) is given, and then keeps the old one beside it as
``NAME.prereg.json.STAMP.bak``. A file there that is not a manifest is never replaced.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fire_exp.cli._hydra import hydra_main
from fire_exp.config import RunConfig
from fire_exp.errors import InputError
from fire_exp.manifest import read_manifest
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.prereg import record_power, write_manifest

_FORCE = frozenset({"--force", "force=true", "+force=true", "force=1", "+force=1"})


def default_prereg_path(config: RunConfig) -> Path:
    """Where the panel's manifest is frozen: ``prereg=``, else ``panels/PANEL.prereg.json``."""
    return Path(config.prereg or f"panels/{config.panel.name}.prereg.json")


def _check_target(path: Path, force: bool) -> None:
    """Refuse to replace a manifest without ``--force``, and anything else at all."""
    if path.suffix != ".json":
        raise InputError(path, "prereg", "a manifest is a .json file",
                         "name a file ending in .prereg.json")
    if not path.exists():
        return
    try:
        read_manifest(path)
    except InputError:
        raise InputError(path, "<file>", "exists and is not a preregistration manifest",
                         "freeze never replaces a file it did not write: choose another "
                         "prereg= path, or move the file") from None
    if not force:
        raise InputError(path, "<file>", "the panel is already frozen here",
                         "a new preregistration replaces it only on purpose: pass --force, "
                         "and the old manifest is kept as a .bak beside it")


def backup_path(path: Path) -> Path:
    """A free ``NAME.STAMP.bak`` beside ``path``, stamped with the old manifest's time."""
    stamp = str(read_manifest(path).get("frozen_at", "")).replace(":", "")[:17] or "old"
    candidate, n = path.with_name(f"{path.name}.{stamp}.bak"), 1
    while candidate.exists():
        candidate, n = path.with_name(f"{path.name}.{stamp}-{n}.bak"), n + 1
    return candidate


def _freeze(config: RunConfig, power_table: str | None = None, force: bool = False) -> int:
    path = default_prereg_path(config)
    _check_target(path, force)  # before the panel is built: nothing to undo
    panel = build_panel(config)
    prepare_panel(panel)  # a panel that cannot run is not frozen
    power = None
    if power_table:  # checked before anything is written
        from fire_exp.analysis.plan import load_plan
        from fire_exp.power.manifest import power_record

        power = power_record(power_table, panel=panel.name,
                             plan_sha256=load_plan(panel.analysis_plan).plan_hash())
    backup = None
    if path.exists():
        backup = backup_path(path)
        shutil.copy2(path, backup)
    manifest = write_manifest(panel, path)
    if power is not None:
        record_power(path, power)
    print(f"froze panel {panel.name!r}: {len(manifest['hashes'])} hashes, "
          f"{manifest['n_attempts']} scheduled attempts -> {path}"
          + (f"; power table from {power_table}" if power_table else "")
          + (f"; the previous manifest is kept as {backup}" if backup else ""))
    return 0


def main(argv: list[str]) -> int:
    tables = [a.split("=", 1)[1] for a in argv if a.startswith("power_table=")]
    force = any(a in _FORCE for a in argv)
    rest = [a for a in argv if not a.startswith("power_table=") and a not in _FORCE]
    return hydra_main("freeze", rest, lambda config: _freeze(
        config, tables[-1] if tables else None, force))
