"""Paired task-level percentile bootstrap, every arm, metric and contrast at once.

Each resample draws T task indices with replacement *once* and applies them to every
column (paired by task); ``fire_exp.stats.resample`` gives the resampled sums of every
column in one exact product. Means are Σw·x·m / Σw·m (m masks tasks where a column is
missing); ratio metrics are Σw·num / Σw·den per resample; intervals are percentiles of
those B values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from fire_exp.stats._fork import in_child
from fire_exp.stats._student_t import t_quantile
from fire_exp.stats.resample import (
    PARALLEL_WORK,
    Stratum,
    block_sums,
    fixed_point,
    strata_blocks,
)

__all__ = ["BootstrapInterval", "Distributions", "PendingDistributions", "TInterval",
           "bootstrap_distributions", "paired_bootstrap",
           "paired_t_interval", "start_bootstrap_distributions"]

_Z95 = 1.959963984540054


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval for one statistic.

    Attributes:
        estimate: the statistic on the observed tasks.
        ci_low, ci_high: percentile endpoints (linear interpolation).
        confidence_level: e.g. 0.95.
        n_resamples: B.
        standard_error: standard deviation of the bootstrap distribution.
        mc_error: Monte Carlo standard error of the endpoints (order-statistic estimate).
        n_tasks: tasks contributing to the statistic.
        method: ``"percentile"``, or ``"degenerate"`` when every resample is equal.
    """

    estimate: float
    ci_low: float
    ci_high: float
    confidence_level: float
    n_resamples: int
    standard_error: float
    mc_error: float
    n_tasks: int
    method: str = "percentile"


@dataclass(frozen=True)
class TInterval:
    """Paired t interval for a mean difference (given beside the bootstrap below ~30 tasks).

    ``method`` is ``"degenerate"`` (interval collapses to the estimate) with one task or
    zero spread.
    """

    estimate: float
    ci_low: float
    ci_high: float
    standard_error: float
    df: int
    method: str = "paired-t"


def _check_columns(columns: Mapping[str, ArrayLike],
                   ratios: Mapping[str, tuple[ArrayLike, ArrayLike]], n_resamples: int) -> int:
    lengths = {np.asarray(v).shape for v in columns.values()}
    lengths |= {np.asarray(a).shape for pair in ratios.values() for a in pair}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise ValueError("every column must be a 1-d array over the same tasks")
    t = next(iter(lengths))[0]
    if t == 0:
        raise ValueError("the bootstrap needs at least one task")
    for name, v in columns.items():
        if np.all(np.isnan(np.asarray(v, dtype=float))):
            raise ValueError(f"column {name!r} has no observed task")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(t)


def _check_level(confidence_level: float) -> None:
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")


def _percentiles(part: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """``np.percentile(x, 100 * qs, axis=0)`` (linear method) of a B x J matrix ``part``
    already partitioned at ``_percentile_ranks(B, qs)``: numpy's arithmetic step by step,
    so the values are the same to the bit (tested), without a partition of its own."""
    b = part.shape[0]
    virtual = (b - 1) * qs
    below = np.floor(virtual)
    gamma = (virtual - below)[:, None]
    lower, upper = _percentile_ranks(b, qs)
    a, c = part[lower], part[upper]
    diff = c - a
    out: np.ndarray = a + diff * gamma
    np.subtract(c, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    out[:, np.isnan(part[b - 1])] = np.nan  # NaN sorts last: a column holding one is NaN
    return out


def _percentile_ranks(b: int, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order statistics (0-based) that the linear percentiles ``qs`` of B values read."""
    lower = np.floor((b - 1) * qs).astype(np.intp)
    return lower, np.minimum(lower + 1, b - 1)


def _intervals(dists: np.ndarray, estimates: list[float], level: float,
               n_tasks: list[int]) -> list[BootstrapInterval]:
    """Percentile intervals of every column of ``dists`` (B x J) in one pass."""
    alpha = (1 - level) / 2
    b = dists.shape[0]
    # MC error of a percentile endpoint: half-width of the order-statistic band / z.
    half = _Z95 * np.sqrt(b * alpha * (1 - alpha))
    lo_i = int(max(0, np.floor(b * alpha - half)))
    hi_i = int(min(b - 1, np.ceil(b * alpha + half)))
    qs = np.array([100 * alpha, 100 * (1 - alpha)]) / 100  # as np.percentile divides
    # One partition serves the percentiles, the MC band and the extremes.
    kth = np.unique(np.concatenate([[0, lo_i, hi_i, b - 1], *_percentile_ranks(b, qs)]))
    with np.errstate(invalid="ignore"):
        part = np.partition(dists, kth, axis=0)
        low, high = _percentiles(part, qs)
        # Along each column's own contiguous row: a reduction down axis 0 of the B x J
        # matrix rounds differently with the width J.
        sd = np.std(np.ascontiguousarray(dists.T), axis=1)
    out = []
    for j, (est, n) in enumerate(zip(estimates, n_tasks, strict=True)):
        # Interpolating between two infinite resamples (zero denominators) gives NaN: inf.
        lo, hi = (np.inf if np.isnan(v) else float(v) for v in (low[j], high[j]))
        finite = bool(np.isfinite(part[hi_i, j]))
        mc = float((part[hi_i, j] - part[lo_i, j]) / (2 * _Z95)) if finite else 0.0
        degenerate = bool(part[0, j] == part[b - 1, j])
        out.append(BootstrapInterval(
            estimate=float(est), ci_low=lo, ci_high=hi, confidence_level=level,
            n_resamples=b, standard_error=float(sd[j]) if np.isfinite(sd[j]) else float("inf"),
            mc_error=mc, n_tasks=n, method="degenerate" if degenerate else "percentile"))
    return out


@dataclass(frozen=True)
class Distributions:
    """Bootstrap distributions of task means and ratios from one set of resamples.

    Attributes:
        names: the columns, then the ratios.
        dists: B x len(names): column j's statistic in each resample.
        estimates: each statistic on the observed tasks.
        n_tasks: tasks contributing to each statistic.
    """

    names: tuple[str, ...]
    dists: np.ndarray
    estimates: tuple[float, ...]
    n_tasks: tuple[int, ...]

    def of(self, name: str) -> np.ndarray:
        """The B resampled values of one statistic."""
        return np.asarray(self.dists[:, self.names.index(name)])

    def intervals(self, confidence_level: float = 0.95) -> dict[str, BootstrapInterval]:
        """name -> percentile interval, in ``names`` order."""
        _check_level(confidence_level)
        found = _intervals(self.dists, list(self.estimates), confidence_level,
                           list(self.n_tasks))
        return dict(zip(self.names, found, strict=True))


def _whole_strata_size(mask: np.ndarray, strata: Sequence[Stratum]) -> int | None:
    """Σ T_s when ``mask`` covers whole strata (every resample then has exactly that many
    of the column's tasks, so its denominator needs no product), else None."""
    size = 0
    for block in strata:
        part = mask[block.rows]
        if part.all():
            size += part.size
        elif part.any():
            return None
    return size


def bootstrap_distributions(columns: Mapping[str, ArrayLike], *,
                            ratios: Mapping[str, tuple[ArrayLike, ArrayLike]] | None = None,
                            n_resamples: int = 10_000, rng: np.random.Generator | None = None,
                            strata: Sequence[Stratum] | None = None,
                            chunk_size: int | None = None) -> Distributions:
    """The resampled task means and ratios behind ``paired_bootstrap``, sharing one W.

    Args as ``paired_bootstrap``; ``strata`` (instead of ``rng``) resamples row blocks
    separately, each from its own stream.
    """
    return start_bootstrap_distributions(columns, ratios=ratios, n_resamples=n_resamples,
                                         rng=rng, strata=strata, chunk_size=chunk_size,
                                         background=False).result()


class PendingDistributions:
    """Bootstrap distributions being drawn, maybe in a child process (``result`` waits)."""

    def __init__(self, finish: Callable[[np.ndarray], Distributions],
                 sums: Callable[[], np.ndarray]) -> None:
        self._finish, self._sums = finish, sums
        self._done: Distributions | None = None

    def result(self) -> Distributions:
        """The distributions (waits for the resamples once)."""
        if self._done is None:
            self._done = self._finish(self._sums())
        return self._done


def start_bootstrap_distributions(
        columns: Mapping[str, ArrayLike], *,
        ratios: Mapping[str, tuple[ArrayLike, ArrayLike]] | None = None,
        n_resamples: int = 10_000, rng: np.random.Generator | None = None,
        strata: Sequence[Stratum] | None = None, chunk_size: int | None = None,
        background: bool | None = None) -> PendingDistributions:
    """``bootstrap_distributions``, its resamples drawn while the caller goes on.

    Args as ``bootstrap_distributions``; ``background``: draw in a child process (None:
    when the work is large and the process can fork safely; see ``fire_exp.stats._fork``).
    The result is the same either way: the child runs the same product on the same streams.
    """
    ratios = dict(ratios or {})
    t = _check_columns(columns, ratios, n_resamples)
    blocks = strata_blocks(t, rng, strata)
    mats: list[np.ndarray] = []
    # name -> (column of its numerator, fixed denominator or None, mask or None for a ratio)
    slots: dict[str, tuple[int, int | None, np.ndarray | None]] = {}
    for name, v in columns.items():
        arr = np.asarray(v, dtype=float)
        mask = ~np.isnan(arr)
        size = _whole_strata_size(mask, blocks)
        slots[name] = (len(mats), size, mask)
        mats.append(np.where(mask, arr, 0.0))
        if size is None:  # Σw·m varies between resamples: one more column in the product
            mats.append(mask.astype(float))
    for name, (num, den) in ratios.items():
        n_arr, d_arr = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
        slots[name] = (len(mats), None, None)
        mats += [np.nan_to_num(n_arr), np.nan_to_num(d_arr)]
    fixed, scale = fixed_point(np.column_stack(mats))
    n = int(n_resamples)

    def draw() -> np.ndarray:
        return block_sums(fixed, n, blocks, chunk_size)

    if background is None:
        background = n * t >= PARALLEL_WORK
    sums = in_child(draw, (n, fixed.shape[1]), fork=background)

    def finish(raw: np.ndarray) -> Distributions:
        return _distributions(raw / scale, fixed.sum(axis=0) / scale, slots, ratios)

    return PendingDistributions(finish, sums)


def _distributions(sums: np.ndarray, observed: np.ndarray,
                   slots: dict[str, tuple[int, int | None, np.ndarray | None]],
                   ratios: Mapping[str, tuple[ArrayLike, ArrayLike]]) -> Distributions:
    """Means and ratios of the resampled sums. ``observed``: the sums over the observed
    tasks, from the same fixed-point values as the resamples, so a resample that redraws
    the observed tasks equals the estimate exactly (an interval never excludes it by 1 ulp).
    """
    dists = np.empty((sums.shape[0], len(slots)))
    estimates, n_tasks = [], []
    den: float | np.ndarray
    for col, (name, (j, size, mask)) in enumerate(slots.items()):
        if size is not None:
            den, den_obs = float(size), float(size)
        else:
            den, den_obs = sums[:, j + 1], observed[j + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = sums[:, j] / den
            est = observed[j] / den_obs
        if mask is None:  # ratio: a resample with a zero denominator has an infinite ratio
            dist = np.where(sums[:, j + 1] == 0, np.inf, dist)
            pair = ratios[name]
            seen = ~(np.isnan(np.asarray(pair[0], dtype=float))
                     & np.isnan(np.asarray(pair[1], dtype=float)))
            n_tasks.append(int(seen.sum()))
        else:
            if size is None:  # mean: a resample that drew no observed task keeps the mean
                dist = np.where(sums[:, j + 1] == 0, est, dist)
            n_tasks.append(int(mask.sum()))
        dists[:, col] = dist
        estimates.append(float(est))
    return Distributions(tuple(slots), dists, tuple(estimates), tuple(n_tasks))


def paired_bootstrap(columns: Mapping[str, ArrayLike], *,
                     ratios: Mapping[str, tuple[ArrayLike, ArrayLike]] | None = None,
                     n_resamples: int = 10_000, confidence_level: float = 0.95,
                     rng: np.random.Generator | None = None,
                     strata: Sequence[Stratum] | None = None, chunk_size: int | None = None,
                     ) -> dict[str, BootstrapInterval]:
    """Paired percentile bootstrap of task means and ratio metrics, sharing one W.

    Estimand: for each column, the mean over tasks of a per-task value (a pass rate or a
    paired difference A − B); for each ratio, Σ num / Σ den over tasks (cost per success).
    Unit of analysis: the task. ``NaN`` marks a task missing from a column; it is left out
    of that column's mean (resamples use Σw·x·m / Σw·m). In a ratio, a task missing from
    both its numerator and denominator is left out.

    Args:
        columns: name -> per-task values (all the same length T).
        ratios: name -> (per-task numerators, per-task denominators).
        n_resamples: B, resamples of the T tasks.
        confidence_level: two-sided level of the percentile interval.
        rng: random generator (use a child stream, see ``fire_exp.stats.seeds``).
        strata: instead of ``rng``, blocks of rows resampled separately (each keeps its
            size in every resample), each from its own stream.
        chunk_size: resamples per chunk; memory only, never the result.

    Returns:
        name -> BootstrapInterval, columns first, then ratios.

    References:
        Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13; Davison &
        Hinkley (1997), Bootstrap Methods and their Application, §3.2 (stratified).

    >>> r = paired_bootstrap({"d": [1.0, 0.0, 0.5, 0.5]}, n_resamples=1000,
    ...                      rng=np.random.default_rng(1))
    >>> r["d"].estimate, r["d"].ci_low <= 0.5 <= r["d"].ci_high
    (0.5, True)
    """
    _check_level(confidence_level)
    return bootstrap_distributions(columns, ratios=ratios, n_resamples=n_resamples, rng=rng,
                                   strata=strata, chunk_size=chunk_size
                                   ).intervals(confidence_level)


def paired_t_interval(diffs: ArrayLike, confidence_level: float = 0.95) -> TInterval:
    """Student t interval for the mean of per-task paired differences.

    Percentile bootstrap intervals under-cover below ~30 tasks; this interval is reported
    beside them there.

    >>> round(paired_t_interval([0.0, 0.5, 1.0]).ci_high, 4)
    1.7421
    """
    d = np.asarray(diffs, dtype=float)
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise ValueError("paired_t_interval needs at least one task")
    est = float(d.mean())
    if d.size < 2 or np.all(d == d[0]):
        return TInterval(est, est, est, 0.0, int(d.size - 1), "degenerate")
    se = float(d.std(ddof=1) / np.sqrt(d.size))
    q = t_quantile(0.5 + confidence_level / 2, d.size - 1)
    return TInterval(est, est - q * se, est + q * se, se, int(d.size - 1))
