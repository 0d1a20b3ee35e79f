"""Exact McNemar tests for paired binary outcomes, single, pooled and stratified.

With b pairs where only A succeeded and c where only B did, under the null each discordant
pair is equally likely either way: b ~ Binomial(b + c, 1/2). Two-sided

    p = min(1, 2 · BinomCDF(min(b, c); b + c, 1/2)),

and p = 1 with no discordant pair (never 0, never NaN, unlike the asymptotic test).
Several attempts per task analysed as separate pairs are correlated: for task-level
inference use the sign-flip test; McNemar serves per-trial comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import lcm

import numpy as np
from numpy.typing import ArrayLike

from fire_exp.stats._binom import half_binom_cdf, half_binom_pmf

__all__ = ["McNemarResult", "mcnemar_exact", "mcnemar_pooled", "mcnemar_stratified"]

_MAX_SUPPORT = 2_000_000
_MAX_DENOMINATOR = 10_000


@dataclass(frozen=True)
class McNemarResult:
    """Result of an exact McNemar test.

    Attributes:
        b: discordant pairs favouring A (summed over strata).
        c: discordant pairs favouring B.
        statistic: b − c, or Σ w_s (b_s − c_s) for the weighted stratified test.
        p_value: two-sided exact p.
        method: ``exact``, ``exact-pooled``, ``exact-stratified`` or ``degenerate``
            (no discordant pair: p = 1).
        n_strata: strata combined.
    """

    b: int
    c: int
    statistic: float
    p_value: float
    method: str
    n_strata: int = 1


def _counts_iv(b: ArrayLike, c: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    b_arr, c_arr = np.atleast_1d(np.asarray(b)), np.atleast_1d(np.asarray(c))
    if b_arr.shape != c_arr.shape or b_arr.ndim != 1 or b_arr.size == 0:
        raise ValueError("b and c must be non-empty 1-d counts of the same length")
    for name, arr in (("b", b_arr), ("c", c_arr)):
        if np.any(arr < 0) or not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"{name} must hold non-negative whole counts")
    return b_arr.astype(np.int64), c_arr.astype(np.int64)


def _exact_p(b: int, c: int) -> float:
    n = b + c
    return 1.0 if n == 0 else float(min(1.0, 2.0 * half_binom_cdf(min(b, c), n)))


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    """Exact McNemar test from the two discordant counts.

    >>> mcnemar_exact(5, 0).p_value, mcnemar_exact(0, 0).method
    (0.0625, 'degenerate')
    """
    b_arr, c_arr = _counts_iv(b, c)
    bi, ci = int(b_arr[0]), int(c_arr[0])
    return McNemarResult(bi, ci, float(bi - ci), _exact_p(bi, ci),
                         "exact" if bi + ci else "degenerate")


def mcnemar_pooled(b: ArrayLike, c: ArrayLike) -> McNemarResult:
    """Sum discordant counts over strata, then the exact test.

    >>> mcnemar_pooled([3, 2], [0, 0]).p_value
    0.0625
    """
    b_arr, c_arr = _counts_iv(b, c)
    bi, ci = int(b_arr.sum()), int(c_arr.sum())
    return McNemarResult(bi, ci, float(bi - ci), _exact_p(bi, ci),
                         "exact-pooled" if bi + ci else "degenerate", int(b_arr.size))


def mcnemar_stratified(b: ArrayLike, c: ArrayLike, weights: ArrayLike) -> McNemarResult:
    """Weighted stratified exact test of S = Σ w_s (b_s − c_s).

    Conditional on n_s = b_s + c_s, b_s ~ Binomial(n_s, 1/2) independently; the exact null
    of S is the convolution of the strata's distributions (each symmetric about 0), and
    p = P(|S*| >= |S|). With equal weights this is the pooled test.

    >>> round(mcnemar_stratified([3, 2], [0, 0], [1.0, 1.0]).p_value, 12)
    0.0625
    """
    b_arr, c_arr = _counts_iv(b, c)
    w = np.asarray(weights, dtype=float)
    if w.shape != b_arr.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite, non-negative, one per stratum")
    n = b_arr + c_arr
    stat = float(np.sum(w * (b_arr - c_arr)))
    if not np.any((n > 0) & (w > 0)):
        return McNemarResult(int(b_arr.sum()), int(c_arr.sum()), stat, 1.0, "degenerate",
                             int(b_arr.size))
    scaled = _integer_weights(w)
    if scaled is not None and 2 * int(np.sum(scaled * n)) + 1 <= _MAX_SUPPORT:
        p = _lattice_tail(scaled, b_arr - c_arr, n)
    else:
        p = _float_tail(w, n, stat)
    return McNemarResult(int(b_arr.sum()), int(c_arr.sum()), stat, p, "exact-stratified",
                         int(b_arr.size))


def _integer_weights(w: np.ndarray) -> np.ndarray | None:
    """Weights times their common denominator L (all integers), or None off a 1/L lattice.

    Fractional weights such as 1/7 and 1/6 become 6 and 7 (L = 42): sums of the null are
    then integers, so a null value equal to the observed one is never lost to rounding.
    """
    fracs = [Fraction(x).limit_denominator(_MAX_DENOMINATOR) for x in w.tolist()]
    if any(abs(float(f) - x) > 1e-12 * max(1.0, abs(x)) for f, x in zip(fracs, w.tolist(),
                                                                          strict=True)):
        return None
    denominator = lcm(*(f.denominator for f in fracs))
    if denominator > _MAX_DENOMINATOR:
        return None
    return np.array([int(f * denominator) for f in fracs], dtype=np.int64)


def _lattice_tail(weights: np.ndarray, diff: np.ndarray, n: np.ndarray) -> float:
    """P(|S*| >= |S|) for integer weights: the strata's null distributions convolved."""
    pmf = np.ones(1)
    low = 0  # the integer value of pmf[0]
    for ws, ns in zip(weights.tolist(), n.tolist(), strict=True):
        if ns == 0 or ws == 0:
            continue
        part = np.zeros(2 * ws * ns + 1)
        part[:: 2 * ws] = half_binom_pmf(ns)
        pmf = np.convolve(pmf, part)
        low -= ws * ns
    s_obs = abs(int(np.sum(weights * diff)))
    support = np.abs(np.arange(pmf.size) + low)
    return float(min(1.0, pmf[support >= s_obs].sum()))


def _float_tail(w: np.ndarray, n: np.ndarray, stat: float) -> float:
    """P(|S*| >= |S|) for weights off any small lattice (equal sums merged to rounding)."""
    values: np.ndarray = np.zeros(1)
    probs: np.ndarray = np.ones(1)
    for ws, ns in zip(w.tolist(), n.tolist(), strict=True):
        if ns == 0 or ws == 0:
            continue
        k = np.arange(ns + 1)
        sv, sp = ws * (2 * k - ns), half_binom_pmf(ns)
        values = (values[:, None] + sv[None, :]).ravel()
        probs = (probs[:, None] * sp[None, :]).ravel()
        key = np.round(values, 9)
        values, inv = np.unique(key, return_inverse=True)
        probs = np.bincount(inv, weights=probs).astype(float)
        if values.size > _MAX_SUPPORT:
            raise ValueError("the stratified null has too many distinct values; use "
                             "rational weights (multiples of 1/L, L <= 10,000)")
    tol = 1e-9 * max(1.0, abs(stat))
    return float(min(1.0, probs[np.abs(values) >= abs(stat) - tol].sum()))
