"""``fire-exp freeze panel=NAME [overrides]``: write the preregistration manifest."""

from __future__ import annotations

from pathlib import Path

from fire_exp.cli._hydra import hydra_main
from fire_exp.config import RunConfig
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.prereg import write_manifest


def default_prereg_path(config: RunConfig) -> Path:
    """Where the panel's manifest is frozen: ``prereg=``, else ``panels/PANEL.prereg.json``."""
    return Path(config.prereg or f"panels/{config.panel.name}.prereg.json")


def _freeze(config: RunConfig) -> int:
    panel = build_panel(config)
    prepare_panel(panel)  # a panel that cannot run is not frozen
    path = default_prereg_path(config)
    manifest = write_manifest(panel, path)
    print(f"froze panel {panel.name!r}: {len(manifest['hashes'])} hashes, "
          f"{manifest['n_attempts']} scheduled attempts -> {path}")
    return 0


def main(argv: list[str]) -> int:
    return hydra_main("freeze", argv, _freeze)
