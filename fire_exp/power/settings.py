"""The typed ``power`` config group (``configs/power/default.yaml``), checked once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fire_exp.errors import InputError

__all__ = ["CEILINGS", "SOURCES", "Ceilings", "PowerSettings", "check_ceilings",
           "power_settings"]

SOURCES = ("auto", "pilot", "tier", "beta", "fixed")
_WHERE = "configs/power/default.yaml"
DEFAULT_TASKS = (10, 20, 30, 40, 60, 80, 100)
DEFAULT_ATTEMPTS = (1, 2, 3, 4)
DEFAULT_EFFECTS = (0.0, 10.0, 20.0, 30.0, 40.0)


@dataclass(frozen=True)
class Ceilings:
    """The largest grid ``fire-exp power`` simulates unless told ``ceilings=false``.

    A block of 500 simulated panels holds every task's attempts of every arm, so memory
    grows with tasks × attempts (about 1 GB at 10,000 × 4); time grows with the simulated
    attempts of the whole grid (the default grid simulates 35 million per arm, in seconds;
    the ceiling, 2 billion, takes minutes).

    Attributes:
        tasks: the largest task count of the grid, and of ``max_tasks``.
        attempts: the most attempts per task and arm.
        n_sims: the most simulated panels per design.
        simulated_attempts: tasks × attempts × effects × n_sims summed over the designs.
    """

    tasks: int = 10_000
    attempts: int = 10
    n_sims: int = 100_000
    simulated_attempts: int = 2_000_000_000


CEILINGS = Ceilings()


@dataclass(frozen=True)
class PowerSettings:
    """What ``fire-exp power`` simulates; None means "derive it from the panel or plan"."""

    pilot: str | None = None
    pilot_arm: str | None = None
    source: str = "auto"
    beta: tuple[float, float] = (2.0, 3.0)
    rate: float = 0.4
    effect_model: str = "share"
    tasks: tuple[int, ...] | None = None
    attempts: tuple[int, ...] | None = None
    effects: tuple[float, ...] | None = None
    target_effect: float = 20.0
    target_power: float = 0.8
    n_sims: int = 2000
    alpha: float | None = None
    seed: int | None = None
    secondary: bool = True
    max_tasks: int = 400
    ceilings: bool = True
    out: str | None = None
    price_usd: float | None = None  # one attempt's price, for the sequential design's cost

    def grid(self, panel_tasks: int, panel_attempts: int,
             ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
        """Task counts, attempts and effects: as given, or defaults that include the panel."""
        tasks = self.tasks or tuple(sorted({*DEFAULT_TASKS, panel_tasks}))
        attempts = self.attempts or tuple(sorted({*DEFAULT_ATTEMPTS, panel_attempts}))
        return tasks, attempts, self.effects or DEFAULT_EFFECTS


def _bad(key: str, problem: str, fix: str = "") -> InputError:
    return InputError(_WHERE, f"power.{key}", problem, fix)


def _numbers(data: dict[str, Any], key: str, kind: type) -> tuple[Any, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        value = [value]
    if not value or any(isinstance(v, bool) or not isinstance(v, int | float)
                        or not math.isfinite(v) for v in value) \
            or (kind is int and any(int(v) != v for v in value)):
        raise _bad(key, f"expected a list of {kind.__name__}s, got {value!r}",
                   f"e.g. power.{key}=[1,2]")
    return tuple(sorted({kind(v) for v in value}))


def _flag(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise _bad(key, f"expected true or false, got {value!r}")
    return value


def _whole(data: dict[str, Any], key: str, default: int) -> int:
    """A count of 1 or more (``n_sims=2.5`` was read as 2)."""
    value = _number(data, key, default, 1, math.inf)
    if value != int(value):
        raise _bad(key, f"expected a whole number, got {value!r}")
    return int(value)


def _number(data: dict[str, Any], key: str, default: Any, low: float, high: float) -> Any:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not low <= value <= high:
        raise _bad(key, f"expected a number in [{low:g}, {high:g}], got {value!r}")
    return value


def check_ceilings(tasks: Sequence[int], attempts: Sequence[int], n_effects: int,
                   n_sims: int, max_tasks: int, ceilings: Ceilings = CEILINGS) -> None:
    """Refuse a grid above ``ceilings`` before anything is simulated.

    Raises:
        InputError: the first ceiling the grid passes, and how to lift it.
    """
    lift = "pass ceilings=false to run it anyway"
    largest = max(max(tasks), max_tasks)
    key = "tasks" if max(tasks) >= max_tasks else "max_tasks"
    if largest > ceilings.tasks:
        raise _bad(key, f"{largest:,} tasks is above the ceiling of {ceilings.tasks:,}; "
                   "memory grows with tasks x attempts", lift)
    if max(attempts) > ceilings.attempts:
        raise _bad("attempts", f"{max(attempts):,} attempts is above the ceiling of "
                   f"{ceilings.attempts:,}; memory grows with tasks x attempts", lift)
    if n_sims > ceilings.n_sims:
        raise _bad("n_sims", f"{n_sims:,} simulations per design is above the ceiling of "
                   f"{ceilings.n_sims:,}", lift)
    work = sum(n * k for n in tasks for k in attempts) * n_effects * n_sims
    if work > ceilings.simulated_attempts:
        raise _bad("tasks", f"the grid simulates {work:,} attempts per arm (tasks x attempts "
                   f"x effects x n_sims), above the ceiling of "
                   f"{ceilings.simulated_attempts:,}", "shrink the grid or " + lift)


def power_settings(data: dict[str, Any] | None) -> PowerSettings:
    """Check the resolved ``power`` group; errors name the key and what to do."""
    data = dict(data or {})
    known = set(PowerSettings.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise _bad(unknown[0], "unknown key", f"known keys: {', '.join(sorted(known))}")
    source = data.get("source", "auto")
    if source not in SOURCES:
        raise _bad("source", f"unknown source {source!r}", f"use one of {SOURCES}")
    if data.get("effect_model", "share") not in {"share", "logit"}:
        raise _bad("effect_model", f"{data['effect_model']!r}", "use share or logit")
    beta = data.get("beta", (2.0, 3.0))
    if not isinstance(beta, list | tuple) or len(beta) != 2 or \
            not all(isinstance(v, int | float) and not isinstance(v, bool)
                    and 0 < v < math.inf for v in beta):  # true is not Beta's 1
        raise _bad("beta", f"expected two positive numbers [a, b], got {beta!r}")
    tasks, attempts = _numbers(data, "tasks", int), _numbers(data, "attempts", int)
    effects = _numbers(data, "effects", float)
    for key, values, low in (("tasks", tasks, 1), ("attempts", attempts, 1),
                             ("effects", effects, 0)):
        if values is not None and min(values) < low:
            raise _bad(key, f"{min(values)} < {low}")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise _bad("seed", f"expected a non-negative integer, got {seed!r}")
    for key in ("pilot", "pilot_arm", "out"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise _bad(key, f"expected a string, got {data[key]!r}")
    return PowerSettings(
        pilot=data.get("pilot"), pilot_arm=data.get("pilot_arm"), source=source,
        beta=(float(beta[0]), float(beta[1])), rate=_number(data, "rate", 0.4, 0, 1),
        effect_model=data.get("effect_model", "share"), tasks=tasks, attempts=attempts,
        effects=effects, target_effect=_number(data, "target_effect", 20.0, 0, 100),
        target_power=_number(data, "target_power", 0.8, 0.01, 0.999),
        n_sims=_whole(data, "n_sims", 2000),
        alpha=_number(data, "alpha", None, 1e-9, 0.5), seed=seed,
        secondary=_flag(data, "secondary"), ceilings=_flag(data, "ceilings"),
        max_tasks=_whole(data, "max_tasks", 400), out=data.get("out"),
        price_usd=_number(data, "price_usd", None, 0, 1_000_000))
