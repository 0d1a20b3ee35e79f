"""Where a panel's manifest lives, freezing it there, and a run's preregistration step.

``fire-exp freeze`` is :func:`freeze_panel`; every run starts with :func:`preregister`
(verify against the committed manifest, or freeze into the run folder at launch). The
manifest itself is built and verified by :mod:`fire_exp.runner.prereg`.

An existing manifest is never replaced silently: :func:`freeze_panel` refuses unless
``force`` is given, and then keeps the old one beside it as ``NAME.prereg.json.STAMP.bak``.
A file there that is not a manifest is never replaced.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from fire_exp.config import RunConfig
from fire_exp.errors import InputError
from fire_exp.manifest import read_manifest
from fire_exp.runner.build import Panel, build_panel, prepare_panel
from fire_exp.runner.prereg import record_power, verify_manifest, write_manifest

__all__ = ["Frozen", "backup_path", "default_prereg_path", "freeze_panel", "preregister"]


def default_prereg_path(config: RunConfig) -> Path:
    """Where the panel's manifest is frozen: ``prereg=``, else ``panels/PANEL.prereg.json``."""
    return Path(config.prereg or f"panels/{config.panel.name}.prereg.json")


def preregister(panel: Panel, run_dir: Path) -> str:
    """Verify the panel against its manifest (or freeze it now); returns what happened."""
    config = panel.config
    frozen = default_prereg_path(config)
    in_run = run_dir / "prereg.json"
    if frozen.is_file():
        verify_manifest(panel, frozen)
        if in_run.is_file():
            verify_manifest(panel, in_run)
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(frozen, in_run)
        return f"verified against {frozen}"
    if in_run.is_file():  # resuming a run that was frozen at launch
        verify_manifest(panel, in_run)
        return f"verified against {in_run}"
    if config.prereg:
        raise InputError(config.prereg, "<file>", "no such preregistration manifest",
                         f"freeze it first: fire-exp freeze panel={config.panel.name}")
    write_manifest(panel, in_run)
    return f"frozen at launch into {in_run} (no {frozen} was committed beforehand)"


@dataclass(frozen=True)
class Frozen:
    """What :func:`freeze_panel` wrote."""

    panel: str
    path: Path  # the manifest
    hashes: int  # frozen items
    n_attempts: int  # scheduled attempts
    power_table: str | None = None  # the fire-exp power output recorded in it
    backup: Path | None = None  # where the manifest it replaced is kept


def _check_target(path: Path, force: bool) -> None:
    """Refuse to replace a manifest without ``force``, and anything else at all."""
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


def freeze_panel(config: RunConfig, power_table: str | None = None,
                 force: bool = False) -> Frozen:
    """Build and prepare the configured panel and freeze its manifest at
    :func:`default_prereg_path`; ``power_table`` (a ``fire-exp power`` output) is recorded
    in it (docs/power.md).

    Raises:
        InputError: the target is a manifest and ``force`` is not given, or not a manifest;
            the power table is not one of this panel and plan (nothing is written).
    """
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
    return Frozen(panel=panel.name, path=path, hashes=len(manifest["hashes"]),
                  n_attempts=manifest["n_attempts"], power_table=power_table or None,
                  backup=backup)
