"""Power of a sequential design beside the fixed one: the same simulated panels, tested by
the plan's anytime-valid rule after every task instead of once at the end.

For each design (at most ``n`` tasks of the primary cohort, ``K`` attempts per task and
arm) and effect, panels are drawn as :mod:`fire_exp.power.simulate` draws them (task pass
rates from the source; the treated arm's rate from the effect model) and the e-process of
:func:`fire_exp.stats.sequential.e_process` runs over their per-task differences in task
order. A panel rejects when the e-value reaches 1/alpha at some task; it stops there, or
for futility when the plan preregisters it, or at ``n`` tasks. Reported per design and
effect: the rejection rate (power; at effect 0 the type-I error), the share stopped for
efficacy and for futility, the expected number of tasks run (to a decision or the end)
and the expected attempts and cost at a stated price per attempt, with Monte Carlo errors.

Randomness: each design draws from its own child streams, keyed ``sequential`` and the
design, so a design's numbers depend on nothing but the seed. Every effect reuses the
same uniforms (common random numbers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.plan_sequential import SequentialPlan
from fire_exp.power.simulate import PowerSpec
from fire_exp.power.sources import effect_model
from fire_exp.stats import child_rng
from fire_exp.stats.sequential import e_process

__all__ = ["SEQUENTIAL_COLUMNS", "sequential_design", "sequential_grid", "sequential_sentence",
           "write_sequential"]

SEQUENTIAL_COLUMNS = ["design", "n_tasks", "attempts", "effect_pp", "power", "mc_se",
                      "efficacy_share", "futility_share", "expected_tasks",
                      "expected_tasks_se", "expected_attempts", "expected_cost_usd",
                      "fixed_attempts", "fixed_cost_usd", "n_sims", "alpha", "method"]


def _stopping(paths: np.ndarray, rule: SequentialPlan) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """Per panel: rejected, stopped for futility, and tasks run (1-based stopping time)."""
    n = paths.shape[1]
    tasks = np.arange(1, n + 1)
    crossed = paths >= (1.0 / rule.alpha) * (1 - 1e-12)
    first_cross = np.where(crossed.any(axis=1), crossed.argmax(axis=1), n)
    if rule.futility is not None:
        futile = (paths <= rule.futility.e_below) & (tasks >= rule.futility.min_tasks)
        first_futile = np.where(futile.any(axis=1), futile.argmax(axis=1), n)
    else:
        first_futile = np.full(paths.shape[0], n)
    rejected = (first_cross < n) & (first_cross <= first_futile)
    futility = (first_futile < n) & (first_futile < first_cross)
    run = np.minimum(np.minimum(first_cross, first_futile), n - 1) + 1
    return rejected, futility, run


def sequential_design(spec: PowerSpec, rule: SequentialPlan, n_tasks: int, attempts: int,
                      *, arms: int, price_usd: float | None = None,
                      ) -> list[dict[str, Any]]:
    """The sequential design of at most ``n_tasks`` tasks, at each effect of ``spec``.

    Args:
        spec: the power spec (source, effect model, effects, alpha unused: the rule's is).
        rule: the plan's sequential section.
        n_tasks, attempts: the design.
        arms: arms per task (attempts per task = arms x attempts).
        price_usd: the price of one attempt (None: no cost columns).

    >>> from fire_exp.power.sources import FixedRate
    >>> spec = PowerSpec("real - sham", alpha=0.05, tasks=(20,), attempts=(2,),
    ...                  effects_pp=(0.0, 40.0), n_sims=400, seed=1, source=FixedRate(0.4))
    >>> rows = sequential_design(spec, SequentialPlan(), 20, 2, arms=2)
    >>> rows[0]["power"] <= 0.05 < rows[1]["power"]
    True
    """
    keys = ("sequential", f"tasks={n_tasks}", f"attempts={attempts}")
    model = effect_model(spec.effect_model, spec.source)
    p = spec.source.draw(spec.n_sims, n_tasks, rng=child_rng(spec.seed, *keys, "task-rates"))
    control = child_rng(spec.seed, *keys, "arm:control").binomial(attempts, p)
    u = child_rng(spec.seed, *keys, "arm:treated").random((spec.n_sims, n_tasks, attempts))
    per_task = arms * attempts
    rows = []
    for effect in spec.effects_pp:
        q = model.treated(p, model.parameter(effect))
        diffs = ((u < q[:, :, None]).sum(axis=2) - control) / attempts
        paths = e_process(diffs, method=rule.method, max_bet=rule.max_bet,
                          grid_size=rule.grid_size, bet_on=rule.bet_on)
        rejected, futility, run = _stopping(paths, rule)
        power = float(rejected.mean())
        expected = float(run.mean())
        rows.append({
            "design": "sequential", "n_tasks": n_tasks, "attempts": attempts,
            "effect_pp": float(effect), "power": power,
            "mc_se": float(np.sqrt(power * (1 - power) / spec.n_sims)),
            "efficacy_share": power, "futility_share": float(futility.mean()),
            "expected_tasks": expected,
            "expected_tasks_se": float(run.std(ddof=1) / np.sqrt(spec.n_sims))
            if spec.n_sims > 1 else 0.0,
            "expected_attempts": expected * per_task,
            "expected_cost_usd": expected * per_task * price_usd
            if price_usd is not None else None,
            "fixed_attempts": n_tasks * per_task,
            "fixed_cost_usd": n_tasks * per_task * price_usd if price_usd is not None else None,
            "n_sims": spec.n_sims, "alpha": rule.alpha,
            "method": rule.method + (" (signs)" if rule.bet_on == "sign" else "")})
    return rows


def sequential_grid(spec: PowerSpec, rule: SequentialPlan, *, arms: int,
                    price_usd: float | None = None) -> pd.DataFrame:
    """Every design of ``spec``'s grid as a sequential design; columns
    ``SEQUENTIAL_COLUMNS``."""
    rows = [row for n in spec.tasks for k in spec.attempts
            for row in sequential_design(spec, rule, n, k, arms=arms, price_usd=price_usd)]
    return pd.DataFrame(rows, columns=SEQUENTIAL_COLUMNS)


def write_sequential(out: Path, grid: pd.DataFrame, fixed: pd.DataFrame) -> list[Path]:
    """Write ``sequential.csv`` (the sequential designs) and ``sequential.md`` (beside the
    fixed designs' primary power) into ``out``; returns the paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = folder / "sequential.csv", folder / "sequential.md"
    grid.to_csv(csv_path, index=False, lineterminator="\n")
    primary = fixed[fixed["role"] == "primary"][["n_tasks", "attempts", "effect_pp", "power"]]
    both = grid.merge(primary.rename(columns={"power": "fixed_power"}),
                      on=["n_tasks", "attempts", "effect_pp"], how="left")
    cols = ["n_tasks", "attempts", "effect_pp", "fixed_power", "power", "futility_share",
            "expected_tasks", "expected_cost_usd", "fixed_cost_usd"]
    lines = ["# sequential design beside the fixed one", "",
             "Power of the fixed design (one sign-flip test at the end) and of the sequential "
             "design (the plan's e-process after every task; at most n_tasks), the expected "
             "tasks run and the cost at power.price_usd per attempt.", "",
             "| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for row in both[cols].itertuples(index=False):
        lines.append("| " + " | ".join("" if v is None or v != v else
                                       f"{v:.3g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [csv_path, md_path]


def sequential_sentence(grid: pd.DataFrame, n_tasks: int, attempts: int,
                        effect_pp: float, target: float = 0.8) -> str:
    """One line: the sequential design's power and expected tasks at the panel's design,
    and the smallest cap of the grid that reaches ``target`` power at ``effect_pp``."""
    rows = grid[(grid["n_tasks"] == n_tasks) & (grid["attempts"] == attempts)]
    if rows.empty:
        return "sequential design: the panel's design is not in the grid"
    at = rows.iloc[(rows["effect_pp"] - effect_pp).abs().argmin()]
    null = rows[rows["effect_pp"] == 0.0]
    type1 = (f"; type-I error {float(null['power'].iloc[0]):.3f}" if len(null) else "")
    cost = (f", expected cost ${float(at['expected_cost_usd']):,.0f} (fixed "
            f"${float(at['fixed_cost_usd']):,.0f})" if at["expected_cost_usd"] is not None
            and at["expected_cost_usd"] == at["expected_cost_usd"] else "")
    same = grid[(grid["attempts"] == attempts) & (grid["effect_pp"] == at["effect_pp"])
                & (grid["power"] >= target)].sort_values("n_tasks")
    cap = (f"; {target:.0%} power needs a cap of {int(same['n_tasks'].iloc[0])} tasks "
           f"(expected {float(same['expected_tasks'].iloc[0]):.1f})" if len(same) else
           f"; no cap in the grid reaches {target:.0%} power")
    return (f"sequential design (at most {n_tasks} tasks x {attempts}): power "
            f"{float(at['power']):.2f} at +{float(at['effect_pp']):g} points, expected "
            f"{float(at['expected_tasks']):.1f} tasks to a decision{cost}{type1}{cap}")
