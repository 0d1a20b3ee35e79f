"""``fire-exp freeze panel=NAME [power_table=DIR] [overrides]``: write the preregistration
manifest; ``power_table=`` records a ``fire-exp power`` output in it (docs/power.md)."""

from __future__ import annotations

from pathlib import Path

from fire_exp.cli._hydra import hydra_main
from fire_exp.config import RunConfig
from fire_exp.runner.build import build_panel, prepare_panel
from fire_exp.runner.prereg import record_power, write_manifest


def default_prereg_path(config: RunConfig) -> Path:
    """Where the panel's manifest is frozen: ``prereg=``, else ``panels/PANEL.prereg.json``."""
    return Path(config.prereg or f"panels/{config.panel.name}.prereg.json")


def _freeze(config: RunConfig, power_table: str | None = None) -> int:
    panel = build_panel(config)
    prepare_panel(panel)  # a panel that cannot run is not frozen
    path = default_prereg_path(config)
    power = None
    if power_table:  # checked before anything is written
        from fire_exp.analysis.plan import load_plan
        from fire_exp.power.manifest import power_record

        power = power_record(power_table, panel=panel.name,
                             plan_sha256=load_plan(panel.analysis_plan).plan_hash())
    manifest = write_manifest(panel, path)
    if power is not None:
        record_power(path, power)
    print(f"froze panel {panel.name!r}: {len(manifest['hashes'])} hashes, "
          f"{manifest['n_attempts']} scheduled attempts -> {path}"
          + (f"; power table from {power_table}" if power_table else ""))
    return 0


def main(argv: list[str]) -> int:
    tables = [a.split("=", 1)[1] for a in argv if a.startswith("power_table=")]
    rest = [a for a in argv if not a.startswith("power_table=")]
    return hydra_main("freeze", rest, lambda config: _freeze(config, tables[-1] if tables
                                                             else None))
