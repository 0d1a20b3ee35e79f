"""Where simulated panels get their tasks' pass rates, and how an effect moves them.

A source gives the comparator's per-task pass rates: drawn from a pilot's tasks (resampled
with replacement, so the heterogeneity of real tasks is kept), from the simulated agent's
failure-mode rates at a tier, from a Beta(a, b), or one fixed rate for every task. The
treated arm's rate on a task follows from the comparator's rate ``p`` by an effect model:

- ``share``: a share ``s`` of the comparator's failures turn into passes,
  ``q = p + s (1 − p)``, with ``s = effect / E[1 − p]`` so the mean gain is the effect;
  tasks the comparator always passes cannot gain.
- ``logit``: ``logit q = logit p + δ``, with δ solved so that ``E[q − p]`` is the effect;
  rates of exactly 0 or 1 are first shrunk to ``(s + ½) / (n + 1)`` (pilot) so they can move.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy import optimize, special
from scipy import stats as _st

__all__ = ["BetaRates", "EffectModel", "FixedRate", "PooledRates", "RateSource",
           "effect_model"]


class RateSource(Protocol):
    """Per-task pass rates of the comparator arm."""

    @property
    def label(self) -> str:
        """What the rates come from, for the output."""
        ...

    def draw(self, n_sims: int, n_tasks: int, *, rng: np.random.Generator) -> np.ndarray:
        """Rates for ``n_sims`` panels of ``n_tasks`` tasks (a n_sims x n_tasks array)."""
        ...

    def expect(self, fn: Callable[[Any], Any]) -> float:
        """E[fn(p)] over the source's distribution of task rates."""
        ...


@dataclass(frozen=True)
class PooledRates:
    """Tasks drawn with replacement from a pool of per-task rates (a pilot or a tier)."""

    rates: tuple[float, ...]
    label: str

    def draw(self, n_sims: int, n_tasks: int, *, rng: np.random.Generator) -> np.ndarray:
        pool = np.asarray(self.rates)
        out: np.ndarray = pool[rng.integers(pool.size, size=(n_sims, n_tasks))]
        return out

    def expect(self, fn: Callable[[Any], Any]) -> float:
        return float(np.mean(fn(np.asarray(self.rates))))


@dataclass(frozen=True)
class BetaRates:
    """Task rates from Beta(a, b)."""

    a: float
    b: float
    label: str = ""

    def __post_init__(self) -> None:
        if not (self.a > 0 and self.b > 0):
            raise ValueError(f"Beta parameters must be positive, got ({self.a}, {self.b})")
        if not self.label:
            object.__setattr__(self, "label", f"Beta({self.a:g}, {self.b:g})")

    def draw(self, n_sims: int, n_tasks: int, *, rng: np.random.Generator) -> np.ndarray:
        out: np.ndarray = rng.beta(self.a, self.b, size=(n_sims, n_tasks))
        return out

    def expect(self, fn: Callable[[Any], Any]) -> float:
        return float(_st.beta(self.a, self.b).expect(fn))


@dataclass(frozen=True)
class FixedRate:
    """Every task has the same rate (the case with a closed form)."""

    rate: float
    label: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ValueError(f"a pass rate lies in [0, 1], got {self.rate}")
        if not self.label:
            object.__setattr__(self, "label", f"fixed {self.rate:g}")

    def draw(self, n_sims: int, n_tasks: int, *, rng: np.random.Generator) -> np.ndarray:
        return np.full((n_sims, n_tasks), self.rate)

    def expect(self, fn: Callable[[Any], Any]) -> float:
        return float(fn(np.float64(self.rate)))


@dataclass(frozen=True)
class EffectModel:
    """Maps comparator rates to treated rates for a mean effect in points."""

    kind: str
    source: RateSource

    def max_effect_pp(self) -> float:
        """The largest mean gain possible: every failure of the comparator turned to a pass."""
        return 100 * self.source.expect(lambda p: 1 - p)

    @functools.cache  # noqa: B019 (frozen and hashable; a handful of effects per run)
    def parameter(self, effect_pp: float) -> float:
        """The share s (``share``) or the logit shift δ (``logit``) giving ``effect_pp``."""
        top = self.max_effect_pp()
        if effect_pp < 0 or effect_pp > top + 1e-9:
            raise ValueError(f"effect {effect_pp:g} points is outside [0, {top:.1f}]: the "
                             f"comparator's mean failure rate under {self.source.label}")
        if effect_pp == 0:
            return 0.0
        if self.kind == "share":
            return min(1.0, effect_pp / top)
        target = effect_pp / 100

        def gap(delta: float) -> float:
            return self.source.expect(lambda p: _shift(p, delta) - p) - target

        if gap(40.0) < 0:
            raise ValueError(f"effect {effect_pp:g} points is out of reach of a logit shift "
                             "(too many tasks the comparator never passes or always passes)")
        return float(optimize.brentq(gap, 0.0, 40.0, xtol=1e-10))

    def treated(self, p: np.ndarray, parameter: float) -> np.ndarray:
        """The treated arm's rates given the comparator's rates ``p``."""
        if self.kind == "share":
            return p + parameter * (1 - p)
        return _shift(p, parameter)


def _shift(p: np.ndarray, delta: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        out: np.ndarray = special.expit(special.logit(p) + delta)
    return out


def effect_model(kind: str, source: RateSource) -> EffectModel:
    """The effect model named ``share`` or ``logit`` over ``source``."""
    if kind not in {"share", "logit"}:
        raise ValueError(f"effect model must be 'share' or 'logit', got {kind!r}")
    return EffectModel(kind, source)
