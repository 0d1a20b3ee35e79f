"""``fire-exp power panel=NAME [pilot=RUN_OR_ATTEMPTS_FILE] [out=DIR] [overrides]``.

Simulates the power of the panel's preregistered analysis over a grid of task counts,
attempts per task and effects, writes ``power.csv``, ``mde.csv``/``.md``, ``power.json`` and
``power.png``/``.pdf`` into ``out`` (default ``RESULTS_DIR/power/PANEL``), and prints one line
saying how many tasks to preregister. The Hydra overrides of ``run`` apply; the keys of
``configs/power/default.yaml`` may be given bare (``tasks=[10,20] effects=[0,25]``) or as
``power.KEY=VALUE``.
"""

from __future__ import annotations

import sys

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from fire_exp.analysis.plan import load_plan
from fire_exp.analysis.run import resolve_plan
from fire_exp.cli._hydra import to_run_config
from fire_exp.paths import CONFIG_DIR
from fire_exp.power.output import write_power
from fire_exp.power.panel import panel_power
from fire_exp.power.sequential import sequential_grid, sequential_sentence, write_sequential
from fire_exp.power.settings import PowerSettings, power_settings

__all__ = ["main", "power_overrides"]

_KEYS = set(PowerSettings.__dataclass_fields__) - {"seed"}  # seed= is the run's seed


def power_overrides(argv: list[str]) -> list[str]:
    """Hydra overrides: bare power keys become ``power.KEY``; the power group is added.

    >>> power_overrides(["panel=demo", "pilot=runs/x", "power.n_sims=10"])
    ['+power=default', 'panel=demo', 'power.pilot=runs/x', 'power.n_sims=10']
    """
    out = ["+power=default"]
    for arg in argv:
        key = arg.split("=", 1)[0]
        out.append(f"power.{arg}" if "=" in arg and key in _KEYS else arg)
    return out


def _usage_error(message: str) -> int:
    print(f"fire-exp power: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if any(a in {"-h", "--help"} for a in argv):
        print(__doc__)
        return 0
    if any(a in {"-m", "--multirun"} for a in argv):
        return _usage_error("power takes no -m: its grid is power.tasks/attempts/effects")
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("config", overrides=power_overrides(argv))
        raw = OmegaConf.to_container(cfg.power, resolve=True)
    except (HydraException, OmegaConfBaseException) as exc:
        return _usage_error(str(exc).splitlines()[0])
    config = to_run_config(cfg)
    settings = power_settings(raw if isinstance(raw, dict) else None)  # type: ignore[arg-type]
    result = panel_power(config, settings)
    plan = load_plan(resolve_plan(config.panel.analysis, field="panel.analysis"))
    paths = write_power(result.out, result.grid, result.mde, result.meta,
                        target=settings.target_power,
                        title=f"panel {result.meta['panel']}: {result.meta['primary']} on "
                              f"{result.meta['cohort']} tasks, α = {result.meta['alpha']:g}, "
                              f"{result.meta['source']}", panel_tasks=result.panel_tasks)
    for note in result.meta["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {', '.join(p.name for p in paths)} to {result.out}", file=sys.stderr)
    print(result.count.sentence(str(result.meta["panel"]), result.panel_tasks))
    if plan.sequential is not None and result.spec is not None:
        grid = sequential_grid(result.spec, plan.sequential, arms=len(config.panel.arms),
                               price_usd=settings.price_usd)
        written = write_sequential(result.out, grid, result.grid)
        print(f"wrote {', '.join(p.name for p in written)} to {result.out}", file=sys.stderr)
        print(sequential_sentence(grid, result.panel_tasks, config.panel.attempts,
                                  settings.target_effect, settings.target_power))
    return 0
