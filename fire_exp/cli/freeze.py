"""``fire-exp freeze panel=NAME [power_table=DIR] [--force] [overrides]``: write the
preregistration manifest; ``power_table=`` records a ``fire-exp power`` output in it
(docs/power.md).

An existing manifest is never replaced silently: ``freeze`` refuses unless ``--force`` (or
``force=true``) is given, and then keeps the old one beside it as
``NAME.prereg.json.STAMP.bak``. A file there that is not a manifest is never replaced
(:func:`fire_exp.runner.preregister.freeze_panel`).
"""

from __future__ import annotations

from fire_exp.cli._hydra import hydra_main
from fire_exp.config import RunConfig
from fire_exp.runner.preregister import freeze_panel

_FORCE = frozenset({"--force", "force=true", "+force=true", "force=1", "+force=1"})


def _freeze(config: RunConfig, power_table: str | None = None, force: bool = False) -> int:
    frozen = freeze_panel(config, power_table, force)
    print(f"froze panel {frozen.panel!r}: {frozen.hashes} hashes, "
          f"{frozen.n_attempts} scheduled attempts -> {frozen.path}"
          + (f"; power table from {frozen.power_table}" if frozen.power_table else "")
          + (f"; the previous manifest is kept as {frozen.backup}" if frozen.backup else ""))
    return 0


def main(argv: list[str]) -> int:
    tables = [a.split("=", 1)[1] for a in argv if a.startswith("power_table=")]
    force = any(a in _FORCE for a in argv)
    rest = [a for a in argv if not a.startswith("power_table=") and a not in _FORCE]
    return hydra_main("freeze", rest, lambda config: _freeze(
        config, tables[-1] if tables else None, force))
