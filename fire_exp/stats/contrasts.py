"""Derived contrasts: the cohort interaction, improved/regressed counts, transitions.

The interaction of a contrast between two cohorts (eligible − silent) is the difference of
the two cohorts' mean paired differences. Its interval resamples tasks *within* each cohort
(the cohorts are fixed by preregistration); its p-value permutes the per-task differences
between the cohorts (two-sided, |Δ*| >= |Δ|): exactly when that is cheap (differences on a
1/K lattice, counted by a dynamic programme over subset sizes and sums, or few enough
relabellings to enumerate), else by Monte Carlo. ``p_method`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from fire_exp.stats.permutation import lattice_resolution
from fire_exp.stats.resample import count_matrix_sums

__all__ = ["ImprovementCounts", "InteractionResult", "improvement_counts", "interaction",
           "transition_counts", "transition_labels", "transition_table"]

_REL_TOL = 1e-14  # ties within rounding of the terms summed (as in permutation.py)
_MAX_EXACT_WORK = 20_000_000  # cell updates the exact lattice count may spend
_MAX_ENUMERATION = 200_000  # relabellings enumerated one by one off a lattice


@dataclass(frozen=True)
class InteractionResult:
    """Difference of mean paired differences between two cohorts.

    Attributes:
        estimate: mean(d_first) − mean(d_second).
        ci_low, ci_high: percentile interval, tasks resampled within each cohort.
        p_value: two-sided permutation p of the cohort labels: the exact share of
            relabellings with |Δ*| >= |Δ|, or (1 + hits) / (1 + B) by Monte Carlo.
        p_method: ``exact-lattice``, ``exact-enumeration``, ``monte-carlo`` or
            ``degenerate`` (no variation: p = 1).
        n_resamples: bootstrap resamples per cohort.
        n_permutations: B for the p-value (0 when exact).
        mc_se: Monte Carlo standard error of p (0 when exact).
        n_first, n_second: tasks per cohort.
    """

    estimate: float
    ci_low: float
    ci_high: float
    p_value: float
    p_method: str
    n_resamples: int
    n_permutations: int
    mc_se: float
    n_first: int
    n_second: int


def _subset_sums(d: np.ndarray, n_first: int, n_permutations: int,
                 rng: np.random.Generator) -> np.ndarray:
    values, counts = np.unique(d, return_counts=True)
    if values.size <= 64:
        # Few distinct values (lattice outcomes): draw the composition of the first cohort.
        comp = rng.multivariate_hypergeometric(counts, n_first, size=n_permutations,
                                               method="marginals")
        sums: np.ndarray = comp @ values
        return sums
    out = np.empty(n_permutations)
    chunk = max(1, 262_144 // d.size)
    for start in range(0, n_permutations, chunk):
        rows = min(chunk, n_permutations - start)
        keys = rng.random((rows, d.size))
        idx = np.argpartition(keys, n_first - 1, axis=1)[:, :n_first]
        out[start:start + rows] = d[idx].sum(axis=1)
    return out


def interaction(d_first: ArrayLike, d_second: ArrayLike, *, n_resamples: int = 10_000,
                n_permutations: int = 100_000, confidence_level: float = 0.95,
                rng_first: np.random.Generator | None = None,
                rng_second: np.random.Generator | None = None,
                rng_permutation: np.random.Generator,
                resampled: tuple[ArrayLike, ArrayLike] | None = None) -> InteractionResult:
    """Interaction of a paired contrast between two cohorts (a difference of differences).

    Args:
        d_first, d_second: per-task paired differences in each cohort.
        n_resamples: bootstrap resamples (drawn within each cohort).
        n_permutations: random relabellings of tasks between cohorts.
        confidence_level: level of the percentile interval.
        rng_first, rng_second: bootstrap streams of the two cohorts.
        rng_permutation: stream of the permutation test.
        resampled: instead of the two streams, each cohort's mean difference in the same
            number of resamples already drawn (an analysis's shared resamples); the
            interval is then their difference, resample by resample.

    >>> g = np.random.default_rng
    >>> r = interaction([1, 1, 0.5], [0, 0, 0.5], n_permutations=999, rng_first=g(0),
    ...                 rng_second=g(1), rng_permutation=g(2))
    >>> round(r.estimate, 4), r.n_first
    (0.6667, 3)
    """
    a, b = np.asarray(d_first, dtype=float), np.asarray(d_second, dtype=float)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or b.size == 0:
        raise ValueError("each cohort needs at least one task")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("differences must be finite")
    est = float(a.mean() - b.mean())
    if resampled is not None:
        first, second = (np.asarray(r, dtype=float) for r in resampled)
        if first.shape != second.shape or first.ndim != 1:
            raise ValueError("resampled: two 1-d arrays of the same length")
        dist, n_resamples = first - second, first.size
    elif rng_first is None or rng_second is None:
        raise ValueError("give rng_first and rng_second, or resampled")
    else:
        dist = (count_matrix_sums(a[:, None], n_resamples=n_resamples, rng=rng_first)[:, 0]
                / a.size
                - count_matrix_sums(b[:, None], n_resamples=n_resamples, rng=rng_second)[:, 0]
                / b.size)
    alpha = (1 - confidence_level) / 2
    low, high = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)])
    pooled = np.concatenate([a, b])
    if np.all(pooled == pooled[0]):
        return InteractionResult(est, float(low), float(high), 1.0, "degenerate", n_resamples,
                                 0, 0.0, a.size, b.size)
    exact = _exact_p(pooled, a.size)
    if exact is not None:
        return InteractionResult(est, float(low), float(high), exact[0], exact[1],
                                 n_resamples, 0, 0.0, a.size, b.size)
    k = lattice_resolution(pooled)
    values = pooled if k is None else np.rint(pooled * k).astype(np.int64)
    sums = _subset_sums(values, a.size, n_permutations, rng_permutation)
    hits = int(np.count_nonzero(_at_least_as_extreme(sums, values, a.size)))
    p = (1 + hits) / (1 + n_permutations)
    return InteractionResult(est, float(low), float(high), p, "monte-carlo", n_resamples,
                             n_permutations, float(np.sqrt(p * (1 - p) / n_permutations)),
                             a.size, b.size)


def _at_least_as_extreme(sums: np.ndarray, values: np.ndarray, n_first: int) -> np.ndarray:
    """Whether each relabelling's first-cohort sum gives |Δ*| >= |Δ| (Δ of the data).

    n1·n2·Δ = s·N − T·n1 for a first-cohort sum s: in integers for lattice values, so ties
    with the observed Δ are counted exactly; in floats, within rounding of the terms (of
    size Σ|v|·N), so a Δ that is 0 in exact arithmetic still ties its relabellings.
    """
    n_all, total = values.size, values.sum()
    obs = abs(values[:n_first].sum() * n_all - total * n_first)
    null = np.abs(sums * n_all - total * n_first)
    if values.dtype.kind == "i":
        return np.asarray(null >= obs)
    return np.asarray(null >= obs - _REL_TOL * float(np.abs(values).sum()) * n_all)


def _exact_p(pooled: np.ndarray, n_first: int) -> tuple[float, str] | None:
    """The exact permutation p when it is cheap, with its method; None otherwise."""
    n_all = pooled.size
    k = lattice_resolution(pooled)
    if k is not None:
        values = np.rint(pooled * k).astype(np.int64)
        counts = _lattice_sum_counts(values, n_first)
        if counts is not None:
            sums = np.arange(counts.size) + n_first * int(values.min())
            hit = _at_least_as_extreme(sums, values, n_first)
            return float(min(1.0, counts[hit].sum() / comb(n_all, n_first))), "exact-lattice"
    if comb(n_all, n_first) <= _MAX_ENUMERATION:
        sums = np.array([pooled[list(c)].sum() for c in combinations(range(n_all), n_first)])
        hit = _at_least_as_extreme(sums, pooled, n_first)
        return float(np.count_nonzero(hit) / sums.size), "exact-enumeration"
    return None


def _lattice_sum_counts(values: np.ndarray, n_first: int) -> np.ndarray | None:
    """How many first-cohort subsets of ``values`` have each sum (shifted by n1·min).

    counts[j, s]: subsets of size j with shifted sum s, built one distinct value at a time
    (choosing t of its c copies in C(c, t) ways). Float counts are exact below 2^53 and
    accurate to rounding above; None when the table would cost too much or overflow.
    """
    shifted = values - values.min()
    distinct, copies = np.unique(shifted, return_counts=True)
    width = n_first * int(distinct.max()) + 1
    work = int(np.sum(copies + 1)) * (n_first + 1) * width
    if work > _MAX_EXACT_WORK or values.size > 1000:  # C(1000, 500) nears float's range
        return None
    table = np.zeros((n_first + 1, width))
    table[0, 0] = 1.0
    for u, c in zip(distinct.tolist(), copies.tolist(), strict=True):
        new = np.zeros_like(table)
        for t in range(min(c, n_first) + 1):
            shift = t * u
            new[t:, shift:] += comb(c, t) * table[: n_first + 1 - t, : width - shift]
        table = new
    row: np.ndarray = table[n_first]
    return row


@dataclass(frozen=True)
class ImprovementCounts:
    """Tasks where arm A scored higher than B (improved), lower (regressed), or the same."""

    improved: int
    regressed: int
    tied: int


def improvement_counts(a: ArrayLike, b: ArrayLike) -> ImprovementCounts:
    """Count tasks improved / regressed / tied from A's and B's per-task values.

    >>> improvement_counts([1, 0.5, 0], [0, 0.5, 1])
    ImprovementCounts(improved=1, regressed=1, tied=1)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError("a and b must hold the same tasks")
    return ImprovementCounts(int(np.sum(x > y)), int(np.sum(x < y)), int(np.sum(x == y)))


def transition_counts(from_successes: ArrayLike, to_successes: ArrayLike, k: int,
                      ) -> np.ndarray:
    """(K+1) x (K+1) counts of tasks by successes out of K: row i the comparator's (from)
    i successes, column j the arm's (to) j.

    >>> transition_counts([0, 0, 2], [2, 1, 2], 2).tolist()
    [[0, 1, 1], [0, 0, 0], [0, 0, 1]]
    """
    f, t = np.asarray(from_successes), np.asarray(to_successes)
    if f.shape != t.shape or np.any(f < 0) or np.any(t < 0) or np.any(f > k) or np.any(t > k):
        raise ValueError(f"successes must be paired counts in 0..{k}")
    table = np.zeros((k + 1, k + 1), dtype=np.int64)
    np.add.at(table, (f.astype(np.intp), t.astype(np.intp)), 1)
    return table


def transition_labels(k: int) -> list[str]:
    """The labels of ``transition_counts``' rows and columns: ``"0/K"`` … ``"K/K"``."""
    return [f"{i}/{k}" for i in range(k + 1)]


def transition_table(from_successes: ArrayLike, to_successes: ArrayLike, k: int,
                     ) -> pd.DataFrame:
    """``transition_counts`` as a frame labelled ``"0/2"``, ``"1/2"``, ``"2/2"`` (index
    ``from``, columns ``to``).

    >>> transition_table([0, 0, 2], [2, 1, 2], 2).loc["0/2"].tolist()
    [0, 1, 1]
    """
    labels = transition_labels(k)
    return pd.DataFrame(transition_counts(from_successes, to_successes, k),
                        index=pd.Index(labels, name="from"), columns=pd.Index(labels, name="to"))
