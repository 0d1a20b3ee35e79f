"""Monte Carlo power of a panel's preregistered analysis over a grid of designs.

One simulated panel: ``n`` tasks, each with a comparator pass rate ``p`` from the source;
every arm of the analysis runs K attempts per task, independent given the task's rates. The
treated arm (the first arm of the primary contrast) passes with the rate the effect model
gives, every other arm with ``p`` — so a contrast between two control arms has no effect,
and its rejections are false positives. Each contrast is tested with the sign-flip test of
``analyze`` on the per-task pass rates; the primary at level α, the secondary contrasts
after Holm's adjustment at α. Power is the share of simulated panels that reject.

Randomness: each block of simulations draws from its own child stream, keyed by the
design, the block and the purpose (task rates, one stream per arm), so a design's numbers
depend neither on the rest of the grid nor on anything but the seed. Within a design every
effect reuses the same draws (common random numbers), which makes power curves smooth in
the effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fire_exp.analysis.plan import parse_contrast
from fire_exp.power.signflip import LatticeSignFlip
from fire_exp.power.sources import RateSource, effect_model
from fire_exp.stats import child_rng, holm
from fire_exp.stats.permutation import min_attainable_p

__all__ = ["POWER_COLUMNS", "PowerSpec", "power_grid", "simulate_design"]

POWER_COLUMNS = ["n_tasks", "attempts", "effect_pp", "power", "mc_se", "contrast", "role",
                 "n_sims", "alpha", "mean_estimate_pp", "min_attainable_p",
                 "mean_nonzero_tasks", "share_cannot_reject"]
BLOCK = 500  # simulations per random stream (fixed: results depend on it, never on memory)


@dataclass(frozen=True)
class PowerSpec:
    """What to simulate: the preregistered analysis and the grid of designs.

    Attributes:
        primary: the plan's primary contrast, ``"A - B"``; A is the treated arm.
        secondary: the plan's secondary contrasts (Holm-adjusted together), possibly empty.
        alpha: the level of every test.
        tasks, attempts, effects_pp: the grid (tasks in the primary cohort, attempts per
            task and arm, mean effect of the treated arm in points).
        n_sims: simulated panels per design.
        seed: root seed of every stream.
        source: the comparator's per-task pass rates.
        effect_model: ``share`` or ``logit`` (see ``fire_exp.power.sources``).
        holm: adjust the secondary contrasts by Holm (the plan's multiplicity method).
    """

    primary: str
    alpha: float
    tasks: tuple[int, ...]
    attempts: tuple[int, ...]
    effects_pp: tuple[float, ...]
    n_sims: int
    seed: int
    source: RateSource
    effect_model: str = "share"
    secondary: tuple[str, ...] = field(default=())
    holm: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if not self.tasks or min(self.tasks) < 1:
            raise ValueError(f"task counts must be positive, got {self.tasks}")
        if not self.attempts or min(self.attempts) < 1:
            raise ValueError(f"attempts must be positive, got {self.attempts}")
        if not self.effects_pp:
            raise ValueError("give at least one effect")
        if self.n_sims < 1:
            raise ValueError(f"n_sims must be positive, got {self.n_sims}")
        effect_model(self.effect_model, self.source).parameter(max(self.effects_pp))

    @property
    def treated(self) -> str:
        """The arm that carries the effect."""
        return parse_contrast(self.primary)[0]

    @property
    def contrasts(self) -> list[tuple[str, str, str]]:
        """(name, arm A, arm B) for the primary, then each distinct secondary."""
        names = list(dict.fromkeys([self.primary, *self.secondary]))
        return [(n, *parse_contrast(n)) for n in names]


def _block_successes(spec: PowerSpec, n_tasks: int, k: int, block: int, rows: int,
                     parameters: list[float]) -> list[dict[str, np.ndarray]]:
    """Successes per arm (rows x tasks) of one block, one mapping per effect."""
    keys = ("power", f"tasks={n_tasks}", f"attempts={k}", f"block={block}")
    model = effect_model(spec.effect_model, spec.source)
    p = spec.source.draw(rows, n_tasks, rng=child_rng(spec.seed, *keys, "task-rates"))
    arms = sorted({arm for _, a, b in spec.contrasts for arm in (a, b)})
    controls = {arm: child_rng(spec.seed, *keys, f"arm:{arm}").binomial(k, p)
                for arm in arms if arm != spec.treated}
    u = child_rng(spec.seed, *keys, f"arm:{spec.treated}").random((rows, n_tasks, k))
    out = []
    for theta in parameters:
        q = model.treated(p, theta)
        out.append(controls | {spec.treated: (u < q[:, :, None]).sum(axis=2)})
    return out


def simulate_design(spec: PowerSpec, n_tasks: int, attempts: int,
                    effects_pp: tuple[float, ...] | None = None, *,
                    tester: LatticeSignFlip | None = None, secondary: bool = True,
                    ) -> list[dict[str, Any]]:
    """Power of every contrast at each effect for one design (``n_tasks`` x ``attempts``).

    Returns:
        One row per effect and contrast, with the columns ``POWER_COLUMNS``;
        ``mean_nonzero_tasks`` and ``share_cannot_reject`` (panels with so few tasks that
        differ that the exact p cannot reach α) describe the primary contrast.
    """
    tester = tester or LatticeSignFlip()
    effects = spec.effects_pp if effects_pp is None else effects_pp
    model = effect_model(spec.effect_model, spec.source)
    parameters = [model.parameter(e) for e in effects]
    contrasts = spec.contrasts if secondary else spec.contrasts[:1]
    rejections = np.zeros((len(effects), len(contrasts)))
    estimates = np.zeros(len(effects))
    # Tasks whose arms differ; with m of them the exact p cannot go below 2 / 2^m.
    nonzero, stuck = np.zeros(len(effects)), np.zeros(len(effects))
    for block, start in enumerate(range(0, spec.n_sims, BLOCK)):
        rows = min(BLOCK, spec.n_sims - start)
        for i, succ in enumerate(_block_successes(spec, n_tasks, attempts, block, rows,
                                                  parameters)):
            diffs = [succ[a] - succ[b] for _, a, b in contrasts]
            p = np.column_stack([tester.p_values(d, attempts=attempts) for d in diffs])
            estimates[i] += diffs[0].sum() / (n_tasks * attempts)
            m = np.count_nonzero(diffs[0], axis=1)
            nonzero[i] += m.sum()
            stuck[i] += np.count_nonzero(min_attainable_p(m) > spec.alpha)
            rejections[i, 0] += np.count_nonzero(p[:, 0] <= spec.alpha)
            if len(contrasts) > 1:
                adjusted = holm(p[:, 1:]) if spec.holm else p[:, 1:]
                rejections[i, 1:] += (adjusted <= spec.alpha).sum(axis=0)
    second = "secondary (Holm)" if spec.holm else "secondary"
    out = []
    for i, effect in enumerate(effects):
        for j, (name, _, _) in enumerate(contrasts):
            power = rejections[i, j] / spec.n_sims
            out.append({"n_tasks": n_tasks, "attempts": attempts, "effect_pp": float(effect),
                        "power": power,
                        "mc_se": float(np.sqrt(power * (1 - power) / spec.n_sims)),
                        "contrast": name, "role": "primary" if j == 0 else second,
                        "n_sims": spec.n_sims, "alpha": spec.alpha,
                        "mean_estimate_pp": 100 * estimates[i] / spec.n_sims,
                        "min_attainable_p": min_attainable_p(n_tasks),
                        "mean_nonzero_tasks": nonzero[i] / spec.n_sims,
                        "share_cannot_reject": stuck[i] / spec.n_sims})
    return out


def power_grid(spec: PowerSpec, *, secondary: bool = True,
               tester: LatticeSignFlip | None = None) -> pd.DataFrame:
    """Power over every design of the grid; columns ``POWER_COLUMNS``.

    >>> from fire_exp.power.sources import FixedRate
    >>> spec = PowerSpec("real - sham", alpha=0.05, tasks=(10,), attempts=(1,),
    ...                  effects_pp=(0.0,), n_sims=200, seed=1, source=FixedRate(0.5))
    >>> float(power_grid(spec)["power"].iloc[0]) <= 0.05
    True
    """
    tester = tester or LatticeSignFlip()
    rows = [row for n in spec.tasks for k in spec.attempts
            for row in simulate_design(spec, n, k, tester=tester, secondary=secondary)]
    return pd.DataFrame(rows, columns=POWER_COLUMNS)
