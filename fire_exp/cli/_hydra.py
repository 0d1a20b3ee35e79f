"""Compose the Hydra config for the subcommands that take overrides."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import FireExpError
from fire_exp.paths import CONFIG_DIR


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Convert Hydra's DictConfig to the typed RunConfig, once, at the edge (with the file
    each config group was chosen from)."""
    from hydra.core.hydra_config import HydraConfig

    data: Any = OmegaConf.to_container(cfg, resolve=True)
    choices = ({k: str(v) for k, v in HydraConfig.get().runtime.choices.items() if v}
               if HydraConfig.initialized() else {})
    return run_config_from_dict(data, choices)


def hydra_main(prog: str, argv: list[str], body: Callable[[RunConfig], int]) -> int:
    """Run ``body`` under Hydra with ``argv`` as overrides (``-m`` for multirun).

    A FireExpError inside a job prints one line and exits with status 2.
    """
    status = {"code": 0}

    @hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
    def _app(cfg: DictConfig) -> None:
        from fire_exp.cli import UNREADABLE

        try:
            code = body(to_run_config(cfg))
        except (FireExpError, OSError, *UNREADABLE) as exc:
            from fire_exp.cli import error_line

            print(error_line(prog, exc), file=sys.stderr)
            raise SystemExit(2) from None
        status["code"] = max(status["code"], code)

    saved = sys.argv
    sys.argv = [f"fire-exp {prog}", *argv]
    try:
        _app()
    finally:
        sys.argv = saved
    return status["code"]
