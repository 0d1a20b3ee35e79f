"""Power analysis of a panel's preregistered analysis, designed before the panel runs.

``simulate`` draws panels (task pass rates from a pilot, the simulated agent's tiers or a
Beta; an effect on the treated arm), ``signflip`` tests them as ``analyze`` does (the
kernels of ``fire_exp.stats``, batched over panels), ``design`` reads the grid (minimum
detectable effects, tasks to preregister), ``settings`` checks the ``power`` config and the
grid's ceilings, and ``panel`` ties it to a configured panel and its plan.
"""

from fire_exp.power.design import TaskCount, minimum_detectable_effects, tasks_to_preregister
from fire_exp.power.sequential import SEQUENTIAL_COLUMNS, sequential_design, sequential_grid
from fire_exp.power.signflip import LatticeSignFlip, holm_rows
from fire_exp.power.simulate import POWER_COLUMNS, PowerSpec, power_grid, simulate_design
from fire_exp.power.sources import BetaRates, EffectModel, FixedRate, PooledRates, effect_model

__all__ = [
    "POWER_COLUMNS",
    "SEQUENTIAL_COLUMNS",
    "BetaRates",
    "EffectModel",
    "FixedRate",
    "LatticeSignFlip",
    "PooledRates",
    "PowerSpec",
    "TaskCount",
    "effect_model",
    "holm_rows",
    "minimum_detectable_effects",
    "power_grid",
    "sequential_design",
    "sequential_grid",
    "simulate_design",
    "tasks_to_preregister",
]
