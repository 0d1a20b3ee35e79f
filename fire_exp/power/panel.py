"""The power of a configured panel's preregistered analysis: from the panel, its plan and the
``power`` settings to the grid, the minimum detectable effects and the task count to
preregister."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import AnalysisPlan, load_plan, parse_contrast
from fire_exp.config import RunConfig
from fire_exp.errors import InputError
from fire_exp.power.design import TaskCount, minimum_detectable_effects, tasks_to_preregister
from fire_exp.power.inputs import pilot_rates, tier_rates
from fire_exp.power.settings import PowerSettings, check_ceilings
from fire_exp.power.signflip import LatticeSignFlip
from fire_exp.power.simulate import PowerSpec, power_grid
from fire_exp.power.sources import BetaRates, FixedRate, RateSource, effect_model
from fire_exp.runner.build import Panel, build_panel

__all__ = ["PanelPower", "panel_power"]


@dataclass(frozen=True)
class PanelPower:
    """A panel's power analysis.

    Attributes:
        grid: power per design, effect and contrast (``power.csv``).
        mde: minimum detectable effect and smallest attainable p per design.
        count: the task count to preregister for the target effect.
        meta: how it was computed (``power.json``).
        out: the output folder.
        panel_tasks: tasks of the primary cohort in the configured panel.
        spec: the simulated analysis and grid.
    """

    grid: pd.DataFrame
    mde: pd.DataFrame
    count: TaskCount
    meta: dict[str, Any]
    out: Path
    panel_tasks: int
    spec: PowerSpec | None = None  # what was simulated (the sequential design reuses it)


def _cohort_tasks(panel: Panel, cohort: str) -> dict[str, Any]:
    names = {t for t, c in panel.cohorts.items() if cohort in {c, "all"}}
    return {t: task for t, task in panel.tasks.items() if t in names}


def _source(config: RunConfig, panel: Panel, plan: AnalysisPlan,
            settings: PowerSettings) -> RateSource:
    kind = settings.source
    if kind == "auto":
        kind = ("pilot" if settings.pilot else
                "tier" if config.agent.name == "simulated" else "beta")
    if kind == "pilot":
        if not settings.pilot:
            raise InputError("configs/power/default.yaml", "power.pilot", "source=pilot "
                             "needs a pilot", "pass pilot=RUN_FOLDER_OR_ATTEMPTS_FILE")
        comparator = parse_contrast(plan.primary.contrast)[1]
        return pilot_rates(settings.pilot, arm=settings.pilot_arm or comparator,
                           cohort=plan.primary.cohort,
                           shrink=settings.effect_model == "logit")
    if kind == "tier":
        tier = str(config.agent.params.get("tier", "mid"))
        return tier_rates(_cohort_tasks(panel, plan.primary.cohort), tier)
    if kind == "fixed":
        return FixedRate(settings.rate)
    return BetaRates(*settings.beta)


def _effects(settings: PowerSettings, source: RateSource) -> tuple[float, ...]:
    """The grid's effects; the default grid keeps the effects the comparator can reach."""
    top = effect_model(settings.effect_model, source).max_effect_pp()
    if settings.effects is not None:
        return settings.effects
    effects = tuple(e for e in (0.0, 10.0, 20.0, 30.0, 40.0) if e < top)
    return effects if len(effects) >= 3 else tuple(np.round(np.linspace(0, 0.9 * top, 5), 1))


def _spec(config: RunConfig, panel: Panel, plan: AnalysisPlan,
          settings: PowerSettings) -> tuple[PowerSpec, list[str]]:
    notes: list[str] = []
    arms = set(config.panel.arms)
    missing = [a for a in parse_contrast(plan.primary.contrast) if a not in arms]
    if missing:
        raise InputError(panel.analysis_plan, "primary.contrast", f"arm(s) {missing} are not "
                         f"arms of panel {panel.name!r}", "fix the plan or the panel's arms")
    secondary = []
    for name in plan.secondary if settings.secondary else []:
        if set(parse_contrast(name)) <= arms:
            secondary.append(name)
        else:
            notes.append(f"secondary contrast '{name}' names an arm the panel lacks; skipped")
    source = _source(config, panel, plan, settings)
    n_panel = len(_cohort_tasks(panel, plan.primary.cohort))
    tasks, attempts, _ = settings.grid(n_panel, config.panel.attempts)
    alpha = settings.alpha if settings.alpha is not None else \
        round(1 - plan.bootstrap.confidence_level, 12)
    try:
        spec = PowerSpec(plan.primary.contrast, alpha=alpha, tasks=tasks, attempts=attempts,
                         effects_pp=_effects(settings, source), n_sims=settings.n_sims,
                         seed=plan.seed if settings.seed is None else settings.seed,
                         source=source, effect_model=settings.effect_model,
                         secondary=tuple(secondary),
                         holm=plan.multiplicity.method == "holm")
    except ValueError as exc:
        raise InputError("configs/power/default.yaml", "power", str(exc),
                         "choose effects the comparator can reach") from exc
    if plan.permutation.method == "monte-carlo":
        notes.append("the plan's sign-flip test draws random sign vectors; power uses the "
                     "exact p they estimate (they differ by its Monte Carlo error)")
    return spec, notes


def panel_power(config: RunConfig, settings: PowerSettings) -> PanelPower:
    """Simulate the power of ``config``'s panel under ``settings``.

    Raises:
        InputError: a bad panel, plan, pilot or power setting.
    """
    panel = build_panel(config)
    plan = load_plan(panel.analysis_plan)
    spec, notes = _spec(config, panel, plan, settings)
    if settings.ceilings:
        check_ceilings(spec.tasks, spec.attempts, len(spec.effects_pp), spec.n_sims,
                       settings.max_tasks)
    tester = LatticeSignFlip()
    grid = power_grid(spec, secondary=settings.secondary, tester=tester)
    mde = minimum_detectable_effects(grid, settings.target_power)
    try:
        count = tasks_to_preregister(spec, attempts=config.panel.attempts,
                                     effect_pp=settings.target_effect,
                                     target=settings.target_power,
                                     max_tasks=settings.max_tasks, tester=tester)
    except ValueError as exc:
        raise InputError("configs/power/default.yaml", "power.target_effect", str(exc)) \
            from exc
    n_panel = len(_cohort_tasks(panel, plan.primary.cohort))
    meta = {"panel": panel.name, "plan": str(panel.analysis_plan),
            "plan_sha256": plan.plan_hash(), "primary": plan.primary.contrast,
            "cohort": plan.primary.cohort, "secondary": list(spec.secondary),
            "alpha": spec.alpha, "seed": spec.seed, "n_sims": spec.n_sims,
            "source": spec.source.label, "effect_model": spec.effect_model,
            "test": "two-sided sign-flip, exact lattice null (as fire_exp.stats."
                    "sign_flip_test); secondaries Holm-adjusted",
            "panel_tasks": n_panel, "panel_attempts": config.panel.attempts,
            "tasks_to_preregister": count.n_tasks, "target_effect_pp": count.effect_pp,
            "target_power": count.target, "power_at_count": count.power,
            "sentence": count.sentence(panel.name, n_panel), "notes": notes,
            "python": platform.python_version(), "numpy": np.__version__}
    out = Path(settings.out or Path(config.results_dir) / "power" / panel.name)
    return PanelPower(grid, mde, count, meta, out, n_panel, spec)
